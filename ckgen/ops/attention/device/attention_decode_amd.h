// attention_decode_amd.h (ckgen/ops/attention/device): decode attention for serving on AMD matrix cores (wave64:
// gfx90a, gfx942, gfx950), also the body the CPU emulator runs. op = attention_decode (ops/attention/decode.py).
//
//   template <class Cfg, class... A> CKGEN_DEVICE void attention_decode_amd(A... args);
//
// The arguments, in the ABI's order (ops/attention/decode_abi.py; Cfg::Args declares them):
//
//   const T* Q, K, V; T* O; float* LSE; const int* seqlens_k, block_table; void* workspace;
//   int batch, heads, heads_kv, seqlen_q, seqlen_k, num_pages, max_pages, num_splits;
//   long long q_batch_stride, q_seq_stride, q_head_stride, k_page_stride, k_seq_stride, k_head_stride,
//             v_page_stride, v_seq_stride, v_head_stride, o_batch_stride, o_seq_stride, o_head_stride,
//             lse_batch_stride, lse_head_stride, bt_batch_stride;
//   float scale;
//
// Q, O: element (b, s, h, d) at b * batch_stride + s * seq_stride + h * head_stride + d; LSE (b, h, s) at
// b * lse_batch_stride + h * lse_head_stride + s. Sequence b has len = seqlens_k[b] keys, 0 <= len <= capacity
// (Cfg::kPageSize == 0: seqlen_k; else max_pages * kPageSize), else the workgroup traps. Key j of (b, hk):
//   kPageSize == 0:  K + b * k_page_stride + j * k_seq_stride + hk * k_head_stride
//   kPageSize == P:  K + pg * k_page_stride + (j % P) * k_seq_stride + hk * k_head_stride,
//                    pg = block_table[b * bt_batch_stride + j / P] in 0..num_pages-1 (else trap)
// V likewise. Query token s of sequence b sees key j iff j < len and (kMask == kMaskCausal: j <= s + len -
// seqlen_q). A row that sees no key gets O = 0 and LSE = -inf.
//
// Rows (GQA packing): the heads / heads_kv query heads of KV head hk and the seqlen_q tokens make rows =
// group * seqlen_q rows; row r is query head hk * group + r / seqlen_q, token r % seqlen_q. A workgroup computes
// kBlockM rows (a row tile) against one split of the keys.
//
// Grid: x = row_tiles * splits (row tile x / splits, split x % splits; row_tiles = ceil(rows / kBlockM)),
// y = heads_kv, z = batch. Split sp of a sequence with nt = ceil(len / kBlockN) key tiles takes the tiles
// [sp * per, min(nt, (sp + 1) * per)), per = ceil(nt / splits) (possibly none). With splits == 1 the workgroup
// writes O and LSE itself. Otherwise it writes its rows' normalized output and LSE (f32) to its slot of the
// workspace, and the last workgroup of the row tile to arrive (a device-scope counter) combines the slots in
// split order: LSE = log(sum_s exp(LSE_s)), O = sum_s exp(LSE_s - LSE) O_s (deterministic: no order depends on
// timing), then zeroes the slots and the counter (the workspace contract: zero-filled on entry and exit).
// Workspace: ints counters[tiles] (padded to 256 bytes), floats o[tiles][splits][kBlockM][kHeadDim],
// floats lse[tiles][splits][kBlockM]; tiles = batch * heads_kv * row_tiles, tile (b, hk, rt) =
// (b * heads_kv + hk) * row_tiles + rt.
//
// Cfg: the members of attention_fwd_amd.h's Cfg (its stages score, mask-free softmax and P.V run each K/V
// tile) plus kPageSize (0 or a multiple of kBlockN: a K/V tile lies in one page). kVarlen must be false.
#pragma once

#include "attention_fwd_amd.h"

namespace ckgen {
namespace attn_dec {

// Where one workgroup works: its sequence, KV head, row tile, split and key tiles.
struct Work {
  int b, hk, rt, sp, splits, row_tiles, group, rows, len, t0, t1;
};

template <class Cfg>
struct Decode {
  using F = attn_amd::Fwd<Cfg>;
  using S = typename F::S;
  using T = typename Cfg::T;
  using L = typename S::L;
  using Args = attn::Args<Cfg>;
  using AOp = typename F::AOp;
  using BOp = typename F::BOp;
  using COp = typename F::COp;
  static constexpr int kM = S::kM, kN = S::kN, kK = S::kK;
  static constexpr int kQB = S::kQB, kKB = S::kKB, kDC = S::kDC, kDB = S::kDB, kPC = S::kPC;
  static constexpr int kCI = Cfg::kCItems, kBI = Cfg::kBItems;
  static constexpr int kPage = Cfg::kPageSize;
  static constexpr int kD = Cfg::kHeadDim;
  static_assert(kPage == 0 || kPage % Cfg::kBlockN == 0, "kPageSize must be 0 or a multiple of kBlockN");
  static_assert(!Cfg::kVarlen, "the decode body takes per-sequence lengths (seqlens_k), not cu_seqlens");

  static CKGEN_DEVICE Work work(const Args& p) {
    Work w;
    w.group = p.heads / p.heads_kv;
    w.rows = w.group * p.seqlen_q;
    w.row_tiles = (w.rows + Cfg::kBlockM - 1) / Cfg::kBlockM;
    w.splits = grid_dim(0) / w.row_tiles;
    w.rt = block_id(0) / w.splits;
    w.sp = block_id(0) % w.splits;
    w.hk = block_id(1);
    w.b = block_id(2);
    w.len = gload(p.seqlens_k + w.b);
    const long long cap = kPage ? static_cast<long long>(p.max_pages) * kPage : p.seqlen_k;
    if (w.len < 0 || w.len > cap) trap("attention_decode: seqlens_k[b] outside 0..capacity");
    const int nt = (w.len + Cfg::kBlockN - 1) / Cfg::kBlockN;
    const int per = (nt + w.splits - 1) / w.splits;
    const int t0 = w.sp * per;
    w.t0 = t0 < nt ? t0 : nt;
    w.t1 = w.t0 + per < nt ? w.t0 + per : nt;
    return w;
  }

  // The packed row r's query head and token; false past the rows.
  static CKGEN_DEVICE bool row_of(const Args& p, const Work& w, int r, int& h, int& s) {
    h = w.hk * w.group + r / p.seqlen_q;
    s = r % p.seqlen_q;
    return r < w.rows;
  }

  // The keys token s sees: [0, hi).
  static CKGEN_DEVICE int keys_of(const Args& p, const Work& w, int s) {
    if constexpr (Cfg::kMask == attn::kMaskCausal) {
      const int hi = s + w.len - p.seqlen_q + 1;
      return hi < 0 ? 0 : (hi > w.len ? w.len : hi);
    }
    return w.len;
  }

  // Q^T operands of the wave's rows (B(k = d, j = row) at lane j + kN * (k / kBI), item k % kBI); zeros past
  // the rows.
  static CKGEN_DEVICE void load_q(const Args& p, const Work& w, int row0, int lane, BOp (&qf)[kQB][kDC]) {
    const bool al = blk::is_aligned(p.Q, p.q_batch_stride, kBI) && blk::is_aligned(p.Q, p.q_seq_stride, kBI) &&
                    blk::is_aligned(p.Q, p.q_head_stride, kBI);
#pragma unroll
    for (int qb = 0; qb < kQB; ++qb) {
      int h, s;
      const bool in = row_of(p, w, row0 + qb * kN + lane % kN, h, s);
      const T* src = p.Q + w.b * p.q_batch_stride + s * p.q_seq_stride + h * p.q_head_stride + L::b_k0(lane);
#pragma unroll
      for (int dc = 0; dc < kDC; ++dc) {
        vec<T, kBI> v;
        if (in && al) {
          v = gload(reinterpret_cast<const vec<T, kBI>*>(src + dc * kK));
        } else {
#pragma unroll
          for (int e = 0; e < kBI; ++e) v.v[e] = in ? gload(src + dc * kK + e) : zero<T>();
        }
        qf[qb][dc] = bit_cast<BOp>(v);
      }
    }
  }

  // The K and V tiles of (b, hk): tile t global -> registers (keys past len are zeros), registers -> LDS.
  struct KvTiles {
    typename S::LoadK lk;
    typename S::LoadV lv;
    const Args* p;
    const T* kg;
    const T* vg;
    int len, b;
    bool k_al, v_al;

    CKGEN_DEVICE KvTiles(const Args& a, const Work& w) : p(&a), len(w.len), b(w.b) {
      kg = a.K + w.hk * a.k_head_stride + (kPage ? 0 : w.b * a.k_page_stride);
      vg = a.V + w.hk * a.v_head_stride + (kPage ? 0 : w.b * a.v_page_stride);
      k_al = blk::is_aligned(kg, a.k_seq_stride, Cfg::kVec) && blk::is_aligned(kg, a.k_page_stride, Cfg::kVec);
      v_al = blk::is_aligned(vg, a.v_seq_stride, Cfg::kVec) && blk::is_aligned(vg, a.v_page_stride, Cfg::kVec);
    }
    // Element offsets of key n0's row in K and V (paged: its page from the block table).
    CKGEN_DEVICE void row_offsets(int n0, long long& ko, long long& vo) const {
      long long kr = n0, vr = n0;
      if constexpr (kPage != 0) {
        const int pg = ::ckgen::gload(p->block_table + b * p->bt_batch_stride + n0 / kPage);
        if (pg < 0 || pg >= p->num_pages) trap("attention_decode: block_table entry outside 0..num_pages-1");
        kr = n0 % kPage;
        vr = kr;
        ko = pg * p->k_page_stride;
        vo = pg * p->v_page_stride;
      } else {
        ko = 0;
        vo = 0;
      }
      ko += kr * p->k_seq_stride;
      vo += vr * p->v_seq_stride;
    }
    CKGEN_DEVICE void gload(int t, int tid) {
      const int n0 = t * Cfg::kBlockN;
      long long ko, vo;
      row_offsets(n0, ko, vo);
      lk.load(kg + ko, p->k_seq_stride, len - n0, kD, k_al, tid);
      lv.load(vg + vo, p->v_seq_stride, kD, len - n0, v_al, tid);
    }
    CKGEN_DEVICE void store(T* lds_k, T* lds_v, int buf, int tid) {
      lk.store(lds_k + buf * S::kKElems, tid);
      lv.store(lds_v + buf * S::kVElems, tid);
    }
  };

  // Keys of the tile [n0, n0 + kBlockN) a row does not see -> -inf (its token's keys: keys_of).
  static CKGEN_DEVICE void mask_tile(const Args& p, const Work& w, int row0, int lane, int n0,
                                     COp (&s)[kKB][kQB]) {
#pragma unroll
    for (int qb = 0; qb < kQB; ++qb) {
      int h, tok;
      row_of(p, w, row0 + qb * kN + lane % kN, h, tok);
      const int hi = keys_of(p, w, tok) - n0;
#pragma unroll
      for (int kb = 0; kb < kKB; ++kb)
#pragma unroll
        for (int r = 0; r < kCI; ++r)
          if (kb * kM + L::c_row(r, lane) >= hi) s[kb][qb][r] = attn::kNegInf;
    }
  }

  // Whether some row of the workgroup misses a key of the tile at n0 (token 0 sees the fewest keys).
  static CKGEN_DEVICE bool needs_mask(const Args& p, const Work& w, int n0) {
    return n0 + Cfg::kBlockN > keys_of(p, w, 0);
  }

  // The split's key tiles t0..t1-1 in order, the next tile's global loads in flight during the current tile's
  // MFMAs (kLdsBuffers 2: written to the other buffer; 1: waiting in registers), as attention_fwd_amd.h's
  // mainloop; each tile runs the prefill body's scores, softmax and P.V stages.
  static CKGEN_DEVICE void mainloop(const Args& p, const Work& w, const typename F::Ctx& fc, int row0,
                                    const BOp (&qf)[kQB][kDC], KvTiles& kv, T* lds_k, T* lds_v,
                                    COp (&o)[kDB][kQB], float (&m)[kQB], float (&l)[kQB]) {
    const int k_frag = L::a_row(fc.lane) * Cfg::kLdsKStride + L::a_k0(fc.lane);
    const int v_frag = L::a_row(fc.lane) * Cfg::kLdsVStride;
    auto gload = [&](int t) { kv.gload(t, fc.tid); };
    auto store = [&](int buf) { kv.store(lds_k, lds_v, buf, fc.tid); };
    auto step = [&](int buf, int t) {
      COp s[kKB][kQB];
      F::scores(lds_k + buf * S::kKElems + k_frag, qf, s);
      const int n0 = t * Cfg::kBlockN;
      if (needs_mask(p, w, n0)) mask_tile(p, w, row0, fc.lane, n0, s);
      BOp pf[kQB][kPC];
      F::softmax(s, o, m, l, fc, pf);
      F::pv(lds_v + buf * S::kVElems + v_frag, pf, o, fc.lane);
    };
    const int nt = w.t1 - w.t0;
    if constexpr (Cfg::kLdsBuffers == 2) {
      gload(w.t0);
      store(0);
      barrier();
      for (int j = 0; j < nt; ++j) {
        const int cur = j & 1;
        const bool more = j + 1 < nt;
        if (more) gload(w.t0 + j + 1);
        step(cur, w.t0 + j);
        if (more) store(cur ^ 1);
        barrier();  // buffer cur^1 is complete; every wave is done reading buffer cur
      }
    } else {
      gload(w.t0);
      for (int j = 0; j < nt; ++j) {
        if (j > 0) barrier();  // every wave is done reading the previous tile
        store(0);
        barrier();
        if (j + 1 < nt) gload(w.t0 + j + 1);
        step(0, w.t0 + j);
      }
    }
  }

  // The wave's rows' results: O^T / l and LSE, to O and LSE (splits == 1) or to the workgroup's workspace slot.
  static CKGEN_DEVICE void finish(const Args& p, const Work& w, int row0, int lane, const COp (&o)[kDB][kQB],
                                  const float (&m)[kQB], const float (&l)[kQB], float* slot_o, float* slot_lse) {
#pragma unroll
    for (int qb = 0; qb < kQB; ++qb) {
      float lse;
      const float inv = attn::finish_row(m[qb], attn::lanes_sum<kN, 64>(l[qb], lane), p.scale, lse);
      const int r = row0 + qb * kN + lane % kN;
      int h, s;
      if (!row_of(p, w, r, h, s)) continue;
      if (slot_o != nullptr) {
        const int lr = r - w.rt * Cfg::kBlockM;
        if (lane < kN) gstore(slot_lse + lr, lse);
#pragma unroll
        for (int db = 0; db < kDB; ++db)
#pragma unroll
          for (int r0 = 0; r0 < kCI; r0 += 4) {
            vec<float, 4> v;
#pragma unroll
            for (int e = 0; e < 4; ++e) v.v[e] = o[db][qb][r0 + e] * inv;
            gstore(reinterpret_cast<vec<float, 4>*>(slot_o + lr * kD + db * kM + L::c_row(r0, lane)), v);
          }
        continue;
      }
      if (p.LSE != nullptr && lane < kN) gstore(p.LSE + w.b * p.lse_batch_stride + h * p.lse_head_stride + s, lse);
      T* orow = p.O + w.b * p.o_batch_stride + s * p.o_seq_stride + h * p.o_head_stride;
#pragma unroll
      for (int db = 0; db < kDB; ++db)
#pragma unroll
        for (int r0 = 0; r0 < kCI; r0 += 4)
#pragma unroll
          for (int e = 0; e < 4; ++e) gstore(orow + db * kM + L::c_row(r0, lane) + e, from_float<T>(o[db][qb][r0 + e] * inv));
    }
  }

  // The last workgroup of a row tile: LSE and O of its rows from every split's slot (split order), then the
  // slots zeroed. slots_o / slots_lse: the tile's first slot (split 0).
  static CKGEN_DEVICE void combine(const Args& p, const Work& w, int tid, float* slots_o, float* slots_lse) {
    constexpr int kQuads = kD / 4;
    for (int e = tid; e < Cfg::kBlockM * kQuads; e += Cfg::kThreads) {
      const int lr = e / kQuads, d0 = (e % kQuads) * 4;
      int h, s;
      if (!row_of(p, w, w.rt * Cfg::kBlockM + lr, h, s)) continue;
      float mx = attn::kNegInf;
      for (int sp = 0; sp < w.splits; ++sp) mx = attn::fmax_f32(mx, gload(slots_lse + sp * Cfg::kBlockM + lr));
      float lse = attn::kNegInf, acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (mx != attn::kNegInf) {
        float sum = 0.0f;
        for (int sp = 0; sp < w.splits; ++sp) sum += exp_f32(gload(slots_lse + sp * Cfg::kBlockM + lr) - mx);
        lse = mx + log_f32(sum);
        for (int sp = 0; sp < w.splits; ++sp) {
          const float wt = exp_f32(gload(slots_lse + sp * Cfg::kBlockM + lr) - lse);
          const vec<float, 4> v = gload(reinterpret_cast<const vec<float, 4>*>(
              slots_o + (static_cast<long long>(sp) * Cfg::kBlockM + lr) * kD + d0));
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[i] += wt * v.v[i];
        }
      }
      if (d0 == 0 && p.LSE != nullptr) gstore(p.LSE + w.b * p.lse_batch_stride + h * p.lse_head_stride + s, lse);
      T* orow = p.O + w.b * p.o_batch_stride + s * p.o_seq_stride + h * p.o_head_stride + d0;
#pragma unroll
      for (int i = 0; i < 4; ++i) gstore(orow + i, from_float<T>(acc[i]));
    }
    barrier();  // every slot is read
    const vec<float, 4> z = {};
    const long long quads = static_cast<long long>(w.splits) * Cfg::kBlockM * kQuads;
    for (long long e = tid; e < quads; e += Cfg::kThreads) gstore(reinterpret_cast<vec<float, 4>*>(slots_o) + e, z);
    for (int e = tid; e < w.splits * Cfg::kBlockM; e += Cfg::kThreads) gstore(slots_lse + e, 0.0f);
  }
};

template <class Cfg>
CKGEN_DEVICE void decode(const attn::Args<Cfg>& p) {
  static_assert(attn_amd::check_cfg<Cfg>(), "Cfg");
  using D = Decode<Cfg>;
  using T = typename Cfg::T;
  const Work w = D::work(p);
  CKGEN_LDS(T, lds_k, Cfg::kLdsBuffers * D::S::kKElems);
  CKGEN_LDS(T, lds_v, Cfg::kLdsBuffers * D::S::kVElems);
  CKGEN_LDS(int, ticket, 1);

  typename D::F::Ctx fc;
  fc.tid = thread_id();
  fc.lane = lane_id();
  fc.sl2 = p.scale * attn::kLog2e;
  const int row0 = w.rt * Cfg::kBlockM + wave_id() * D::S::kQW;

  typename D::BOp qf[D::kQB][D::kDC];
  D::load_q(p, w, row0, fc.lane, qf);
  typename D::COp o[D::kDB][D::kQB];  // O^T
  float m_run[D::kQB], l_run[D::kQB];
  D::F::init(o, m_run, l_run);
  typename D::KvTiles kv(p, w);
  if (w.t1 > w.t0) D::mainloop(p, w, fc, row0, qf, kv, lds_k, lds_v, o, m_run, l_run);
  if (w.splits == 1) {
    D::finish(p, w, row0, fc.lane, o, m_run, l_run, nullptr, nullptr);
    return;
  }
  // workspace: counters, then the slots (decode_abi.py's layout)
  const long long tiles = static_cast<long long>(p.batch) * p.heads_kv * w.row_tiles;
  const long long tile = (static_cast<long long>(w.b) * p.heads_kv + w.hk) * w.row_tiles + w.rt;
  int* counters = static_cast<int*>(p.workspace);
  float* all_o = reinterpret_cast<float*>(static_cast<char*>(p.workspace) + (tiles * 4 + 255) / 256 * 256);
  float* all_lse = all_o + tiles * w.splits * Cfg::kBlockM * D::kD;
  float* slots_o = all_o + tile * w.splits * Cfg::kBlockM * D::kD;
  float* slots_lse = all_lse + tile * w.splits * Cfg::kBlockM;
  D::finish(p, w, row0, fc.lane, o, m_run, l_run, slots_o + static_cast<long long>(w.sp) * Cfg::kBlockM * D::kD,
            slots_lse + w.sp * Cfg::kBlockM);
  fence_device();  // release this workgroup's slot
  barrier();
  if (fc.tid == 0) lds_store(ticket, atomic_add(counters + tile, 1));
  barrier();
  if (lds_load(ticket) != w.splits - 1) return;  // another workgroup combines this row tile
  if (fc.tid == 0) gstore(counters + tile, 0);
  fence_device();  // acquire the other splits' slots
  D::combine(p, w, fc.tid, slots_o, slots_lse);
}

}  // namespace attn_dec

template <class Cfg, class... A>
CKGEN_DEVICE void attention_decode_amd(A... args) {
  attn_dec::decode<Cfg>(attn::Args<Cfg>{args...});
}

}  // namespace ckgen
