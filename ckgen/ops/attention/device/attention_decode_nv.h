// attention_decode_nv.h (ckgen/ops/attention/device): decode attention for serving on NVIDIA tensor cores
// (mma.sync m16n8k16, f16/bf16 -> f32; sm_80 and sm_90). op = attention_decode (ops/attention/decode.py). With
// CKGEN_PLATFORM_EMU and CKGEN_EMU_WAVE_SIZE=32 it also runs on the CPU emulator (ckgen/emu/nv.h).
//
//   template <class Cfg, class... A> CKGEN_DEVICE void attention_decode_nv(A... args);
//
// Arguments, rows, key ranges, the grid and the split-KV hand-off: attention_decode_common.h.
// Cfg: the members of attention_fwd_nv.h's Cfg (its stages scores, softmax and pv run each K/V tile from the same
// swizzled shared-memory tiles and cp.async ring) plus kPageSize (0: contiguous; any page size: a tile may span pages).
// The launch passes Cfg::kLdsBytes (>= kSmemBytes) of dynamic shared memory. The Q tile holds the workgroup's packed
// rows (per-row addresses; zeros past the rows); the split's K/V tiles are walked from its last one down with 16-byte
// cp.async copies (per element when unaligned), the same for both layouts; paged, a tile's page ids are read from the
// block table two tiles ahead (PageMap, KvCopy), so that no copy waits on a block-table read. O and LSE (or the split's
// slot) are written straight from the accumulators. Warps split the rows (warp w: rows [16 kMB w, 16 kMB (w + 1)),
// every key of a tile) or, with Cfg::kWarpSplitKeys, the keys (every warp the kBlockM = 16 or 32 rows, kBlockN / kWarps
// keys of each tile; their states merged at the end: attention_decode_nv_keys.h).
#pragma once

#include "attention_decode_common.h"
#include "attention_decode_nv_keys.h"
#include "attention_fwd_nv.h"

namespace ckgen {
namespace attn_dec {

template <class Cfg>
struct DecodeNv {
  using F = attn_nv::Fwd<Cfg>;  // the tiles, the copy ring and the Q fragments
  using M = attn_nv::Fwd<typename WarpMath<Cfg>::type>;  // one warp's math: F, or F's stages on the warp's keys
  using Merge = KeyMerge<Cfg>;
  using T = typename Cfg::T;
  using Args = attn::Args<Cfg>;
  using TileQ = typename F::TileQ;
  using TileKV = typename F::TileKV;
  static constexpr int kD = F::kD, kBM = F::kBM, kBN = F::kBN, kMB = F::kMB, kNB = M::kNB, kDB = F::kDB;
  static constexpr int kKK = M::kKK, kStages = F::kStages, kThreads = F::kThreads, kQM = M::kQM, kQK = M::kQK;
  static constexpr bool kJoint = F::kJoint, kSplit = F::kSplitKeys;
  static_assert(M::kMB == kMB, "one warp's math covers the warp's rows");
  // shared memory: the Q tile, then the K/V stages or (key split, after the walk) the warps' states
  static constexpr int kSmemBytes =
      kSplit && F::kKOff + Merge::kBytes > F::kSmemBytes ? F::kKOff + Merge::kBytes : F::kSmemBytes;
  static_assert(Cfg::kLdsBytes >= kSmemBytes, "kLdsBytes: the Q tile + max(K/V stages, the key split's warp states)");
  static constexpr int kEB = static_cast<int>(sizeof(T));
  static_assert(!Cfg::kVarlen, "the decode body takes per-sequence lengths (seqlens_k), not cu_seqlens");

  struct Ctx {
    int tid, lane, g, t4;  // the lane's mma row group (lane / 4) and column pair (lane % 4)
    int warp, wrow;        // the warp, its first row in the tile
    int wkey0;             // its first key in a K/V tile (key split; else 0)
    int row0;              // the tile's first packed row
    int keys0;             // the keys the fewest-seeing row (token 0) sees
    float sl2;             // scale * log2(e)
    uint32_t s0;           // shared memory: the Q tile, then kStages K and kStages V tiles
  };

  // One 16-byte chunk (kVE elements) at src -> shared memory at dst, zeros when !in (src is then any valid
  // address): cp.async with zero fill (kVec: src 16-byte aligned), else per element, synchronously (visible after
  // the pipeline's barrier like cp.async data).
  template <bool kVec>
  static CKGEN_DEVICE void copy_chunk(uint32_t dst, const T* src, bool in) {
    if constexpr (kVec) {
      nv::cp_async16_zfill(dst, src, in ? 16 : 0);
    } else {
      uint32_t v[4] = {0u, 0u, 0u, 0u};
      unsigned char* vb = reinterpret_cast<unsigned char*>(v);
#pragma unroll
      for (int e = 0; e < TileKV::kVE; ++e) {
        if (in) {
          const T x = gload(src + e);
          __builtin_memcpy(vb + e * kEB, &x, kEB);
        }
      }
      nv::st_shared_v4(dst, v[0], v[1], v[2], v[3]);
    }
  }

  // The Q tile: the packed rows -> shared memory (16-byte cp.async with zero fill, or per element), one group.
  template <bool kVec>
  static CKGEN_DEVICE void load_q_tile(const Args& p, const Work& w, const Ctx& c) {
    constexpr int kCPR = TileQ::kCPR, kVE = TileQ::kVE;
#pragma unroll 1
    for (int ci = c.tid; ci < kBM * kCPR; ci += kThreads) {
      const int r = ci / kCPR, ch = ci % kCPR;
      int h, s;
      const bool in = row_of(p, w, c.row0 + r, h, s);
      const T* src = p.Q + w.b * p.q_batch_stride + s * p.q_seq_stride + h * p.q_head_stride + ch * kVE;
      const uint32_t dst = c.s0 + static_cast<uint32_t>(TileQ::offset(r, ch));
      copy_chunk<kVec>(dst, in ? src : p.Q, in);
    }
    nv::cp_async_commit();
  }

  // Paged K/V: where a thread's rows of a tile lie. Thread tid copies chunk tid % kCPR of rows r0 + it * kRS
  // (r0 = tid / kCPR < kRS); the rows of iteration `it` lie in the page of id slot it / kPer. Tile in one page
  // (kMode 0): one id; kRS a power of two <= the page (1): the tile's kBN / P pages, slot it * kRS / P for every
  // thread; else (2): one id per iteration (its row's own page).
  struct PageMap {
    static constexpr int kP = Cfg::kPageSize > 0 ? Cfg::kPageSize : kBN;
    static constexpr int kRS = TileKV::kRowStep;
    static constexpr int kMode = kP >= kBN ? 0 : (nv::is_pow2(kRS) && kRS <= kP ? 1 : 2);
    static constexpr int kIds = Cfg::kPageSize == 0 || kMode == 0 ? 1 : (kMode == 1 ? kBN / kP : TileKV::kIters);
    static constexpr int kPer = (TileKV::kIters + kIds - 1) / kIds;  // iterations per id slot: it / kPer
    // a key of slot s's page in the tile at n0 (kMode 2: the thread's row of iteration s)
    static CKGEN_DEVICE int key_of(int n0, int r0, int s) {
      return kMode == 0 ? n0 : (kMode == 1 ? n0 + s * kP : n0 + r0 + s * kRS);
    }
    // whether the copy of that tile uses slot s (a key of its page inside the tile, before len)
    static CKGEN_DEVICE bool used(int n0, int r0, int s, int len) {
      return key_of(n0, r0, s) < len && (kMode != 2 || TileKV::kExact || r0 + s * kRS < kBN);
    }
  };
  static_assert(TileKV::kRegular, "a thread's K/V chunks share one column (kThreads a multiple of kCPR)");

  // The cp.async copies of the split's K and V tiles: iteration j (tile t_last - j) into stage j % kStages; past
  // the walk only the group is committed, as attention_fwd_nv.h's KvCopy. Thread tid copies rows r0 + it * kRS of
  // chunk tid % kCPR. Paged: the page ids of a tile are read from the block table two tiles ahead of its copies
  // (ids_k: the next K tile's, ids_n: the one after, ids_v: the next V tile's; the ring calls load_k(t),
  // load_v(t), load_k(t + 1), ...), the first two tiles' together, so no copy but the first waits on a block-table
  // read; ids of pages past len are not read; a bad id traps at its K copy.
  template <bool kVec>
  struct KvCopy {
    using Map = PageMap;
    static constexpr int kIds = Map::kIds;
    const Args* p;
    const Work* w;
    uint32_t s0;
    int tid, nt, t_last;
    mutable int ids_k[kIds], ids_n[kIds], ids_v[kIds];

    CKGEN_DEVICE KvCopy(const Args& p_, const Work& w_, uint32_t s0_, int tid_)
        : p(&p_), w(&w_), s0(s0_), tid(tid_), nt(w_.t1 - w_.t0), t_last(w_.t1 - 1) {
      fetch(0, ids_k);
      fetch(1, ids_n);
    }
    // The page ids of iteration j's tile -> ids (slots of pages at or past len: 0, not read); none past the walk.
    CKGEN_DEVICE void fetch(int j, int (&ids)[kIds]) const {
      if constexpr (Cfg::kPageSize != 0) {
        if (j >= nt) return;
        const int* row = p->block_table + w->b * p->bt_batch_stride;
        const int n0 = (t_last - j) * kBN, r0 = tid / TileKV::kCPR;
#pragma unroll
        for (int s = 0; s < kIds; ++s) {
          ids[s] = Map::used(n0, r0, s, w->len) ? gload(row + Map::key_of(n0, r0, s) / Cfg::kPageSize) : 0;
        }
      }
    }
    // The ids of the tile at n0 that its keys use, checked (read two tiles ago: no wait here but the first).
    CKGEN_DEVICE void check(const int (&ids)[kIds], int n0) const {
      bool bad = false;
      const int r0 = tid / TileKV::kCPR;
#pragma unroll
      for (int s = 0; s < kIds; ++s)
        bad |= Map::used(n0, r0, s, w->len) && static_cast<unsigned>(ids[s]) >= static_cast<unsigned>(p->num_pages);
      if (bad) trap("attention_decode: block_table entry outside 0..num_pages-1");
    }
    // Tile rows n0 .. n0 + kBlockN - 1 -> the stage (zeros past len). Iteration it = s * kPer + i copies key
    // key_s + i * kRS, key_s = n0 + r0 + s * kPer * kRS: one address per id slot (paged: row key_s % P of page
    // ids[s], the slot's rows all in that page) and a fixed step between a thread's rows.
    CKGEN_DEVICE void copy(uint32_t stage, const T* base, long long page_stride, long long seq_stride,
                           long long head_stride, int n0, const int (&ids)[kIds]) const {
      constexpr int kCPR = TileKV::kCPR, kVE = TileKV::kVE, kRS = Map::kRS;
      const int r0 = tid / kCPR, ch = tid % kCPR;
      const T* head = base + w->hk * head_stride + ch * kVE + (Cfg::kPageSize ? 0 : w->b * page_stride);
      const long long step = kRS * seq_stride;
#pragma unroll
      for (int s = 0; s < kIds; ++s) {
        const int key_s = n0 + r0 + s * Map::kPer * kRS;
        const T* first = Cfg::kPageSize
                             ? head + ids[s] * page_stride + static_cast<long long>(key_s & (Map::kP - 1)) * seq_stride
                             : head + static_cast<long long>(key_s) * seq_stride;
#pragma unroll 2
        for (int i = 0; i < Map::kPer; ++i) {
          const int it = s * Map::kPer + i;
          if (!TileKV::kExact && r0 + it * kRS >= kBN) break;
          const bool in = key_s + i * kRS < w->len;
          const uint32_t dst = stage + static_cast<uint32_t>(TileKV::offset(r0 + it * kRS, ch));
          copy_chunk<kVec>(dst, in ? first + i * step : base, in);
        }
      }
    }
    CKGEN_DEVICE void load_k(int j) const {
      if (j < nt) {
        const int n0 = (t_last - j) * kBN;
        if constexpr (Cfg::kPageSize != 0) check(ids_k, n0);
        copy(F::k_stage(s0, j % kStages), p->K, p->k_page_stride, p->k_seq_stride, p->k_head_stride, n0, ids_k);
        if constexpr (Cfg::kPageSize != 0) {
#pragma unroll
          for (int s = 0; s < kIds; ++s) {
            ids_v[s] = ids_k[s];
            ids_k[s] = ids_n[s];
          }
          fetch(j + 2, ids_n);
        }
      }
      if constexpr (!kJoint) nv::cp_async_commit();
    }
    CKGEN_DEVICE void load_v(int j) const {
      if (j < nt) copy(F::v_stage(s0, j % kStages), p->V, p->v_page_stride, p->v_seq_stride, p->v_head_stride,
                       (t_last - j) * kBN, ids_v);
      nv::cp_async_commit();
    }
  };

  // Keys of the tile at n0 a row does not see -> -inf (the lane's rows g and g + 8 of each m16 block).
  static CKGEN_DEVICE void mask_tile(const Args& p, const Work& w, const Ctx& c, int n0, f32x4_t (&s)[kMB][kNB]) {
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        int head, tok;
        row_of(p, w, c.row0 + c.wrow + mb * 16 + c.g + 8 * h, head, tok);
        const int hi = keys_of<Cfg::kMask>(p, w, tok) - n0 - 2 * c.t4;
#pragma unroll
        for (int nb = 0; nb < kNB; ++nb)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (nb * 8 + e >= hi) s[mb][nb].r[2 * h + e] = attn::kNegInf;
      }
  }

  // Iteration j of the split's walk, with attention_fwd_nv.h's copy ring.
  template <bool kVec>
  static CKGEN_DEVICE void tile_step(const Args& p, const Work& w, const Ctx& c, const KvCopy<kVec>& kv,
                                     const typename M::Lanes& ln, const u32x4_t (&qf)[kQM][kQK], int j,
                                     f32x4_t (&o)[kMB][kDB], float (&m)[kMB][2], float (&l)[kMB][2]) {
    const int st = j % kStages;
    if constexpr (kJoint) {
      nv::cp_async_wait<kStages - 2>();  // K[j] and V[j] landed
      barrier();                          // ... for every thread; every warp is done with tile j-1
      kv.load_k(j + kStages - 1);
      kv.load_v(j + kStages - 1);
    } else {
      nv::cp_async_wait<2 * kStages - 2>();  // K[j] landed
      barrier();
      kv.load_v(j + kStages - 1);
    }
    f32x4_t s[kMB][kNB];
    const uint32_t sub = static_cast<uint32_t>(c.wkey0 * F::kRowBytes);  // the warp's keys of the tile
    M::scores(s, qf, c.s0, ln, F::k_stage(c.s0, st) + sub);
    const int n0 = (kv.t_last - j) * kBN + c.wkey0;
    if (n0 + M::kBN > c.keys0) mask_tile(p, w, c, n0, s);
    u32x4_t pa[kMB][kKK];
    M::softmax(s, o, m, l, c.sl2, c.lane, pa);
    if constexpr (!kJoint) {
      nv::cp_async_wait<2 * kStages - 2>();  // V[j] landed
      barrier();
      kv.load_k(j + kStages);
    }
    M::pv(o, pa, F::v_stage(c.s0, st) + sub, ln.v);
  }

  template <bool kVec>
  static CKGEN_DEVICE void mainloop(const Args& p, const Work& w, const Ctx& c, unsigned char* smem,
                                    f32x4_t (&o)[kMB][kDB], float (&m)[kMB][2], float (&l)[kMB][2]) {
    const KvCopy<kVec> kv(p, w, c.s0, c.tid);  // the first tile's page ids on their way
    load_q_tile<kVec>(p, w, c);
    F::prime_kv_ring(kv);
    if constexpr (attn::kRope<Cfg>) {  // Q rotated in shared memory at each row's position len - sq + s
      F::rope_q(smem, c.tid, [&](int r, const float*& cs) {
        int h, s;
        if (!row_of(p, w, c.row0 + r, h, s)) return false;
        cs = attn::decode_rope_row(p, w.len, w.sq, s);
        return true;
      });
    }
    const typename M::Lanes ln(c.lane, c.wrow);
    u32x4_t qf[kQM][kQK];
    if constexpr (Cfg::kQInRegs) M::load_q(c.s0, ln.q, qf);
#pragma unroll 1
    for (int j = 0; j < kv.nt; ++j) tile_step<kVec>(p, w, c, kv, ln, qf, j, o, m, l);
    nv::cp_async_wait<0>();
  }

  // The warp's rows: O / l and LSE to O and LSE (slots == nullptr) or to this split's slot.
  static CKGEN_DEVICE void finish(const Args& p, const Work& w, const Ctx& c, const f32x4_t (&o)[kMB][kDB],
                                  const float (&m)[kMB][2], const float (&l)[kMB][2], const Slots<Cfg>* slots) {
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float lse;
        const float inv = attn_nv::finish_quad_row(m[mb][h], l[mb][h], p.scale, lse, c.lane);
        const int r = c.row0 + c.wrow + mb * 16 + c.g + 8 * h;
        int head, s;
        if (!row_of(p, w, r, head, s)) continue;
        if (slots != nullptr) {
          const int lr = r - w.rt * kBM;
          if (c.t4 == 0) gstore(slots->lse_of(w, lr), lse);
          float* so = slots->o_row(w, lr) + 2 * c.t4;
#pragma unroll
          for (int db = 0; db < kDB; ++db) {
            gstore(so + db * 8, o[mb][db].r[2 * h] * inv);
            gstore(so + db * 8 + 1, o[mb][db].r[2 * h + 1] * inv);
          }
          continue;
        }
        if (p.LSE != nullptr && c.t4 == 0) gstore(p.LSE + w.b * p.lse_batch_stride + head * p.lse_head_stride + s, lse);
        T* orow = p.O + w.b * p.o_batch_stride + s * p.o_seq_stride + head * p.o_head_stride + 2 * c.t4;
#pragma unroll
        for (int db = 0; db < kDB; ++db) {
          gstore(orow + db * 8, from_float<T>(o[mb][db].r[2 * h] * inv));
          gstore(orow + db * 8 + 1, from_float<T>(o[mb][db].r[2 * h + 1] * inv));
        }
      }
  }

  // Key split: the warps' states merged (KeyMerge, in the K/V stages once every warp is done with them), then the
  // kBlockM rows' O / l and LSE (or this split's slot) written by all threads, 4 columns each.
  static CKGEN_DEVICE void finish_merged(const Args& p, const Work& w, const Ctx& c, unsigned char* smem,
                                         const f32x4_t (&o)[kMB][kDB], const float (&m)[kMB][2],
                                         const float (&l)[kMB][2], const Slots<Cfg>* slots) {
    float* area = reinterpret_cast<float*>(smem + F::kKOff);
    barrier();  // every warp's last P.V read of the stages
    Merge::put(area, o, m, l, c.warp, c.lane);
    barrier();
    constexpr int kQuads = kD / 4;
#pragma unroll 1
    for (int e = c.tid; e < kBM * kQuads; e += kThreads) {
      const int lr = e / kQuads, d0 = e % kQuads * 4;
      int head, s;
      if (!row_of(p, w, c.row0 + lr, head, s)) continue;
      float out[4], lse;
      Merge::row(area, lr, d0, p.scale, c.sl2, out, lse);
      if (slots != nullptr) {
        if (d0 == 0) gstore(slots->lse_of(w, lr), lse);
        float* so = slots->o_row(w, lr) + d0;
#pragma unroll
        for (int i = 0; i < 4; ++i) gstore(so + i, out[i]);
        continue;
      }
      if (p.LSE != nullptr && d0 == 0) gstore(p.LSE + w.b * p.lse_batch_stride + head * p.lse_head_stride + s, lse);
      T* orow = p.O + w.b * p.o_batch_stride + s * p.o_seq_stride + head * p.o_head_stride + d0;
#pragma unroll
      for (int i = 0; i < 4; ++i) gstore(orow + i, from_float<T>(out[i]));
    }
  }

  static CKGEN_DEVICE void finish_rows(const Args& p, const Work& w, const Ctx& c, unsigned char* smem,
                                       const f32x4_t (&o)[kMB][kDB], const float (&m)[kMB][2],
                                       const float (&l)[kMB][2], const Slots<Cfg>* slots) {
    if constexpr (kSplit) {
      finish_merged(p, w, c, smem, o, m, l, slots);
    } else {
      finish(p, w, c, o, m, l, slots);
    }
  }

  template <bool kVec>
  static CKGEN_DEVICE void body(const Args& p, const Work& w, unsigned char* smem) {
    Ctx c;
    c.tid = thread_id();
    c.lane = c.tid & 31;
    c.g = c.lane >> 2;
    c.t4 = c.lane & 3;
    c.warp = c.tid >> 5;
    c.wrow = kSplit ? 0 : c.warp * F::kRW;
    c.wkey0 = kSplit ? c.warp * M::kBN : 0;
    c.row0 = w.rt * kBM;
    c.keys0 = keys_of<Cfg::kMask>(p, w, 0);
    c.sl2 = p.scale * attn::kLog2e;
    c.s0 = nv::smem_addr(smem);
    f32x4_t o[kMB][kDB];
    float m_run[kMB][2], l_run[kMB][2];
    F::init(o, m_run, l_run);
    if (w.t1 > w.t0) mainloop<kVec>(p, w, c, smem, o, m_run, l_run);
    if (w.splits == 1) {
      finish_rows(p, w, c, smem, o, m_run, l_run, nullptr);
      return;
    }
    const Slots<Cfg> slots(p, w);
    finish_rows(p, w, c, smem, o, m_run, l_run, &slots);  // the combine kernel merges the slots
  }
};

template <class Cfg>
CKGEN_DEVICE void decode_nv(const attn::Args<Cfg>& p) {
  using D = DecodeNv<Cfg>;
  const Work w = make_work<Cfg>(p);
  if (!has_rows<Cfg>(w)) return;  // a row tile past this sequence's rows
#if defined(__CUDACC__)
  extern __shared__ __align__(1024) unsigned char ckgen_attn_smem[];
  unsigned char* smem = ckgen_attn_smem;
#else
  CKGEN_LDS(unsigned char, smem, D::kSmemBytes);
#endif
  constexpr int kEB = D::kEB;
  const bool vec = nv::aligned16(p.Q, p.q_batch_stride, kEB) && nv::aligned16(p.Q, p.q_seq_stride, kEB) &&
                   nv::aligned16(p.Q, p.q_head_stride, kEB) && nv::aligned16(p.K, p.k_page_stride, kEB) &&
                   nv::aligned16(p.K, p.k_seq_stride, kEB) && nv::aligned16(p.K, p.k_head_stride, kEB) &&
                   nv::aligned16(p.V, p.v_page_stride, kEB) && nv::aligned16(p.V, p.v_seq_stride, kEB) &&
                   nv::aligned16(p.V, p.v_head_stride, kEB);
  if (vec) {
    D::template body<true>(p, w, smem);
  } else {
    D::template body<false>(p, w, smem);
  }
}

}  // namespace attn_dec

template <class Cfg, class... A>
CKGEN_DEVICE void attention_decode_nv(A... args) {
  grid_dependents_launch();  // the split combine (launched as a dependent) may start launching: it waits for us
  attn_dec::decode_nv<Cfg>(attn::Args<Cfg>{args...});
}

}  // namespace ckgen
