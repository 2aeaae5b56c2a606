// attention_decode_amd.h (ckgen/ops/attention/device): decode attention for serving on AMD matrix cores (wave64:
// gfx90a, gfx942, gfx950), also the body the CPU emulator runs. op = attention_decode (ops/attention/decode.py).
//
//   template <class Cfg, class... A> CKGEN_DEVICE void attention_decode_amd(A... args);
//
// Arguments, rows, key ranges, the grid and the split-KV hand-off: attention_decode_common.h.
// Cfg: the members of attention_fwd_amd.h's Cfg (its stages scores, softmax and pv run each K/V tile, read from
// LDS as there) plus kPageSize (0 or a multiple of kBlockN: a K/V tile lies in one page). kVarlen must be false.
// A wave's Q^T operands come from its packed rows (per-row addresses); the K/V tiles of the split are walked in
// order, global -> registers -> LDS with the next tile's loads in flight, as attention_fwd_amd.h's mainloop.
#pragma once

#include "attention_decode_common.h"
#include "attention_fwd_amd.h"

namespace ckgen {
namespace attn_dec {

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

  static CKGEN_DEVICE bool row_of(const Args& p, const Work& w, int r, int& h, int& s) {
    return attn_dec::row_of(p, w, r, h, s);
  }
  static CKGEN_DEVICE int keys_of(const Args& p, const Work& w, int s) {
    return attn_dec::keys_of<Cfg::kMask>(p, w, s);
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

  // Rotary Cfg (attn::kRope<Cfg>): the same operands, each element rotated at its row's position len - sq + s
  // (attention_rope.h: element by element from global memory with its pair's partner).
  static CKGEN_DEVICE void load_q_rope(const Args& p, const Work& w, int row0, int lane, BOp (&qf)[kQB][kDC]) {
#pragma unroll
    for (int qb = 0; qb < kQB; ++qb) {
      int h, s;
      const bool in = row_of(p, w, row0 + qb * kN + lane % kN, h, s);
      const T* src = p.Q + w.b * p.q_batch_stride + s * p.q_seq_stride + h * p.q_head_stride;
      const float* cs = in ? attn::decode_rope_row(p, w.len, w.sq, s) : nullptr;
#pragma unroll
      for (int dc = 0; dc < kDC; ++dc)
        qf[qb][dc] = bit_cast<BOp>(
            attn::rope_run<Cfg::kRopeStyle, Cfg::kRopeDim, kBI>(src, L::b_k0(lane) + dc * kK, cs));
    }
  }

  // The K and V tiles of (b, hk): tile t global -> registers (keys past len are zeros), registers -> LDS.
  struct KvTiles {
    typename S::LoadK lk;
    typename S::LoadV lv;
    const Args* p;
    const Work* w;
    bool k_al, v_al;

    CKGEN_DEVICE KvTiles(const Args& a, const Work& wk) : p(&a), w(&wk) {
      k_al = blk::is_aligned(a.K, a.k_seq_stride, Cfg::kVec) && blk::is_aligned(a.K, a.k_page_stride, Cfg::kVec) &&
             blk::is_aligned(a.K, a.k_head_stride, Cfg::kVec);
      v_al = blk::is_aligned(a.V, a.v_seq_stride, Cfg::kVec) && blk::is_aligned(a.V, a.v_page_stride, Cfg::kVec) &&
             blk::is_aligned(a.V, a.v_head_stride, Cfg::kVec);
    }
    CKGEN_DEVICE void gload(int t, int tid) {
      const int n0 = t * Cfg::kBlockN;
      const T* kt = p->K + kv_row<Cfg>(*p, *w, n0, p->k_page_stride, p->k_seq_stride, p->k_head_stride);
      const T* vt = p->V + kv_row<Cfg>(*p, *w, n0, p->v_page_stride, p->v_seq_stride, p->v_head_stride);
      lk.load(kt, p->k_seq_stride, w->len - n0, kD, k_al, tid);
      lv.load(vt, p->v_seq_stride, kD, w->len - n0, v_al, tid);
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
    const typename F::KFrag kf = F::k_frag(fc.lane);
    const int v_frag = L::a_row(fc.lane) * Cfg::kLdsVStride;
    auto gload = [&](int t) { kv.gload(t, fc.tid); };
    auto store = [&](int buf) { kv.store(lds_k, lds_v, buf, fc.tid); };
    auto step = [&](int buf, int t) {
      COp s[kKB][kQB];
      F::scores(lds_k + buf * S::kKElems, kf, qf, s);
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
                                  const float (&m)[kQB], const float (&l)[kQB], const Slots<Cfg>* slots) {
#pragma unroll
    for (int qb = 0; qb < kQB; ++qb) {
      float lse;
      const float inv = attn::finish_row(m[qb], attn::lanes_sum<kN, 64>(l[qb], lane), p.scale, lse);
      const int r = row0 + qb * kN + lane % kN;
      int h, s;
      if (!row_of(p, w, r, h, s)) continue;
      if (slots != nullptr) {
        const int lr = r - w.rt * Cfg::kBlockM;
        if (lane < kN) gstore(slots->lse_of(w, lr), lse);
        float* so = slots->o_row(w, lr);
#pragma unroll
        for (int db = 0; db < kDB; ++db)
#pragma unroll
          for (int r0 = 0; r0 < kCI; r0 += 4) {
            vec<float, 4> v;
#pragma unroll
            for (int e = 0; e < 4; ++e) v.v[e] = o[db][qb][r0 + e] * inv;
            gstore(reinterpret_cast<vec<float, 4>*>(so + db * kM + L::c_row(r0, lane)), v);
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
};

template <class Cfg>
CKGEN_DEVICE void decode(const attn::Args<Cfg>& p) {
  static_assert(attn_amd::check_cfg<Cfg>(), "Cfg");
  using D = Decode<Cfg>;
  using T = typename Cfg::T;
  const Work w = make_work<Cfg>(p);
  if (!has_rows<Cfg>(w)) return;  // a row tile past this sequence's rows
  CKGEN_LDS(T, lds_k, Cfg::kLdsBuffers * D::S::kKElems);
  CKGEN_LDS(T, lds_v, Cfg::kLdsBuffers * D::S::kVElems);

  typename D::F::Ctx fc;
  fc.tid = thread_id();
  fc.lane = lane_id();
  fc.sl2 = p.scale * attn::kLog2e;
  const int row0 = w.rt * Cfg::kBlockM + wave_id() * D::S::kQW;

  typename D::BOp qf[D::kQB][D::kDC];
  if constexpr (attn::kRope<Cfg>) {
    D::load_q_rope(p, w, row0, fc.lane, qf);
  } else {
    D::load_q(p, w, row0, fc.lane, qf);
  }
  typename D::COp o[D::kDB][D::kQB];  // O^T
  float m_run[D::kQB], l_run[D::kQB];
  D::F::init(o, m_run, l_run);
  typename D::KvTiles kv(p, w);
  if (w.t1 > w.t0) D::mainloop(p, w, fc, row0, qf, kv, lds_k, lds_v, o, m_run, l_run);
  if (w.splits == 1) {
    D::finish(p, w, row0, fc.lane, o, m_run, l_run, nullptr);
    return;
  }
  const Slots<Cfg> slots(p, w);
  D::finish(p, w, row0, fc.lane, o, m_run, l_run, &slots);  // the combine kernel merges the slots
}

}  // namespace attn_dec

template <class Cfg, class... A>
CKGEN_DEVICE void attention_decode_amd(A... args) {
  attn_dec::decode<Cfg>(attn::Args<Cfg>{args...});
}

}  // namespace ckgen
