// attention_fwd_nv.h (ckgen/ops/attention/device): fused attention forward on NVIDIA tensor cores
// (mma.sync m16n8k16, f16/bf16 -> f32; sm_80 and sm_90), FlashAttention-2 style. With
// CKGEN_PLATFORM_EMU and CKGEN_EMU_WAVE_SIZE=32 it also runs on the CPU emulator (ckgen/emu/nv.h).
//
//   template <class Cfg, class... A> CKGEN_DEVICE void attention_fwd_nv(A... args);  (the ABI: attention_common.h)
//
// Parameters, pointer rules, masks, numerics and the grid: attention_common.h. The launch passes
// Cfg::kLdsBytes (>= attn_nv::smem_bytes<Cfg>()) bytes of dynamic shared memory (more than 48 KiB:
// cudaFuncAttributeMaxDynamicSharedMemorySize first). One block (kThreads = kWarps * 32 threads,
// 1-D) computes kBlockM query rows of one (batch, head); warp w owns rows [w * kRW, (w + 1) * kRW),
// kRW = kBlockM / kWarps (16 or 32: one or two m16 blocks).
//
// Cfg members (compile-time; static_assert names the member):
//   using T                 ckgen::f16 or ckgen::bf16 (Q, K, V, O)
//   kHeadDim                64, 128 or 256 (a line of the smem tiles is a power of two of 16-byte chunks)
//   kBlockM                 queries per block, multiple of 16 * kWarps
//   kBlockN                 keys per K/V tile, multiple of 16
//   kWarps, kWaveSize (32), kThreads (= kWarps * 32)
//   kStages                 K/V tiles in flight (>= 1): stage ring of kStages K and kStages V tiles
//   kQInRegs                Q fragments held in registers for the whole block (else re-read from shared
//                           memory with ldmatrix for every K tile: fewer registers, more smem reads)
//   kKvBarriers             2 or 1 (with kStages >= 2): barriers per K/V tile (see Pipeline)
//   kLdsBytes               >= smem_bytes<Cfg>() = 2 * kBlockM * kHeadDim + 2 * kStages * 2 * kBlockN * kHeadDim
//   kMask, kVarlen, kGqa    as attention_common.h
//   kRopeStyle, kRopeDim    only with rotary embedding (attention_rope.h): the Q tile rotated in place in shared
//                           memory once it landed (rope_q), before any ldmatrix of it
//
// Data path (per block):
//   Q tile --cp.async--> smem (swizzled, nv::SmemTile) --ldmatrix--> A fragments (registers if kQInRegs)
//   K tile j --cp.async--> smem stage --ldmatrix--> B fragments: S = Q.K^T (mma.sync, f32)
//   mask (tiles with a hidden pair only), online softmax in registers (row max over the 4 lanes of a
//   quad: xor_shuffle 1, 2; exp2 with scale*log2e folded into one FFMA), the S accumulators packed to
//   T pairs ARE the A fragments of P (no shared-memory round trip)
//   V tile j --cp.async--> smem stage --ldmatrix.trans--> B fragments: O += P.V (f32 registers)
//   O / l --> T --> smem (the Q tile's rows of the warp) --> 16-byte coalesced global stores.
// Pipeline (per K/V tile j, walked from the last tile down so that masked tiles come first), kKvBarriers 2:
//   wait for K[j]; barrier; issue V[j+S-1]; S = QK^T; softmax; wait for V[j]; barrier; issue K[j+S]; O += PV
// K and V of a tile are separate cp.async groups, so S = QK^T starts while V[j] is still in flight;
// both barriers also free the stage the next copies overwrite. kKvBarriers 1 (kStages >= 2):
//   wait for K[j] and V[j]; barrier; issue K[j+S-1] and V[j+S-1]; S = QK^T; softmax; O += PV
// one barrier per tile (it also frees the stages of tile j-1 that the copies overwrite). Rows and keys past the sequence are
// zero-filled by cp.async (no global access leaves Q, K, V, O, LSE).
#pragma once

#include "attention_common.h"
#include "attention_rope.h"
#include "ckgen/blocks/nv_mma.h"
#include "ckgen/blocks/nv_smem.h"

namespace ckgen {
namespace attn_nv {

// ---------------------------------------------------------------- one m16 row block in the accumulator layout
// The pieces of the online softmax shared with the Hopper body (attention_fwd_sm90.h), whose wgmma accumulators
// have the same per-warp layout: fragment nb (an f32x4_t) of a lane holds, at r[2h + e], row g + 8h (g = lane / 4)
// of the warp's 16 rows and column 8 nb + 2 t4 + e (t4 = lane % 4) of the tile.

// Hidden (query, key) pairs -> -inf: `row` is the sequence row of the lane's rows g (h = 0; g + 8 is h = 1),
// n0 the first key of the tile.
template <int kNB>
CKGEN_DEVICE void mask_rows(f32x4_t (&s)[kNB], const attn::Mask& mask, int row, int n0, int t4) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int lo = mask.row_lo(row + 8 * h) - n0 - 2 * t4, hi = mask.row_hi(row + 8 * h) - n0 - 2 * t4;
#pragma unroll
    for (int nb = 0; nb < kNB; ++nb)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = nb * 8 + e;
        if (col < lo || col >= hi) s[nb].r[2 * h + e] = attn::kNegInf;
      }
  }
}

// One online-softmax step over the tile's logits s (unscaled; -inf where hidden): the row maxima (over the
// quad: xor_shuffle 1, 2) update m_run, s becomes p = exp2((s - m) * scale * log2 e), this lane's share of the
// row sums is added to l_run, and alpha[h] is the factor O's rows must be multiplied with (rescale_rows).
template <int kNB>
CKGEN_DEVICE void softmax_rows(f32x4_t (&s)[kNB], float (&m_run)[2], float (&l_run)[2], float sl2, float (&alpha)[2],
                               int lane) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx = attn::kNegInf;
#pragma unroll
    for (int nb = 0; nb < kNB; ++nb) mx = attn::fmax_f32(mx, attn::fmax_f32(s[nb].r[2 * h], s[nb].r[2 * h + 1]));
    mx = attn::lanes_max<1, 4>(mx, lane);
    float mbias;
    alpha[h] = attn::online_max(m_run[h], mx, sl2, mbias);
    float sum = 0.0f;
#pragma unroll
    for (int nb = 0; nb < kNB; ++nb)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float pv = exp2_f32(s[nb].r[2 * h + e] * sl2 - mbias);
        s[nb].r[2 * h + e] = pv;
        sum += pv;
      }
    l_run[h] = l_run[h] * alpha[h] + sum;  // this lane's share of the row sum
  }
}

template <int kDB>
CKGEN_DEVICE void rescale_rows(f32x4_t (&o)[kDB], const float (&alpha)[2]) {
#pragma unroll
  for (int db = 0; db < kDB; ++db)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[db].r[e] *= alpha[e >> 1];
}

// P (fragments 2kk, 2kk + 1 of s) rounded to T: the A operand of k16 step kk of O += P.V (mma.sync m16n8k16 and
// wgmma's register A have this layout).
template <class T, int kKK>
CKGEN_DEVICE void pack_p(const f32x4_t (&s)[2 * kKK], u32x4_t (&pa)[kKK]) {
#pragma unroll
  for (int kk = 0; kk < kKK; ++kk) {
    pa[kk].r[0] = pack2<T>(s[2 * kk].r[0], s[2 * kk].r[1]);
    pa[kk].r[1] = pack2<T>(s[2 * kk].r[2], s[2 * kk].r[3]);
    pa[kk].r[2] = pack2<T>(s[2 * kk + 1].r[0], s[2 * kk + 1].r[1]);
    pa[kk].r[3] = pack2<T>(s[2 * kk + 1].r[2], s[2 * kk + 1].r[3]);
  }
}

// The epilogue's row result from the running statistics of the lane's row (the sum over the quad): returns
// 1 / l (0 for a row that saw no key) and sets lse (attn::finish_row).
CKGEN_DEVICE float finish_quad_row(float m, float l, float scale, float& lse, int lane) {
  return attn::finish_row(m, attn::lanes_sum<1, 4>(l, lane), scale, lse);
}

// Whether Cfg splits the keys of each K/V tile over its warps (the decode body's warp_split = keys: member
// kWarpSplitKeys, attention_decode_nv_keys.h): then every warp has all kBlockM = 16 or 32 rows (kMB = 1 or 2 m16
// blocks against its keys). Cfgs without the member split the rows.
CKGEN_CFG_OPTIONAL(SplitKeysOf, kWarpSplitKeys, bool, false);
template <class Cfg>
constexpr bool kSplitKeys = SplitKeysOf<Cfg>::value;

// The body's stages, after CK Tile's block pipelines; body (below) runs them top to bottom:
//   init        O = 0 and the row statistics (m: running max of the unscaled logits, -inf; l: this lane's share of
//               the row sum, 0) of the lane's rows g and g + 8 (h) of each of the warp's kMB m16 blocks
//   mainloop    the Q copy and the K/V copies in flight (KvCopy, prologue), the Q fragments (load_q, kQInRegs),
//               then one tile_step per K/V tile: the copy ring (waits, barriers, next copies), scores
//               (S = Q.K^T), mask_rows, softmax (online; P as A fragments), pv (O += P.V)
//   write_rows  O / l rounded to T into the warp's rows of the Q tile, LSE
//   store_o     those rows -> 16-byte coalesced global stores
template <class Cfg>
struct Fwd {
  using T = typename Cfg::T;
  using Args = attn::Args<Cfg>;
  static constexpr int kD = Cfg::kHeadDim;
  static constexpr int kBM = Cfg::kBlockM;
  static constexpr int kBN = Cfg::kBlockN;
  static constexpr int kWarps = Cfg::kWarps;
  static constexpr int kThreads = Cfg::kThreads;
  static constexpr bool kSplitKeys = attn_nv::kSplitKeys<Cfg>;  // the decode body's key split: all rows per warp
  static constexpr int kRW = kSplitKeys ? kBM : kBM / kWarps;  // rows per warp
  static constexpr int kMB = kRW / 16;      // m16 blocks per warp
  static constexpr int kNB = kBN / 8;       // n8 blocks of S
  static constexpr int kDB = kD / 8;        // n8 blocks of O
  static constexpr int kKS = kD / 16;       // k16 steps of S = Q.K^T
  static constexpr int kKK = kBN / 16;      // k16 steps of O += P.V
  static constexpr int kStages = Cfg::kStages;
  // kKvBarriers 2: K and V of a tile are separate cp.async groups with a barrier each (S = Q.K^T starts while V is
  // in flight); 1 (kStages >= 2): one group and one barrier per tile, the next copies issued right after it.
  static constexpr bool kJoint = Cfg::kKvBarriers == 1;
  using TileQ = nv::SmemTile<T, kBM, kD, kThreads>;
  using TileKV = nv::SmemTile<T, kBN, kD, kThreads>;
  static constexpr int kRowBytes = TileQ::kRowBytes;  // kD * 2, the same for every tile
  static constexpr int kKOff = TileQ::kBytes;
  static constexpr int kVOff = kKOff + kStages * TileKV::kBytes;
  static constexpr int kSmemBytes = kVOff + kStages * TileKV::kBytes;
  // Q fragments held in registers (kQInRegs: [kMB][kKS]; else a placeholder, re-read per K tile)
  static constexpr int kQM = Cfg::kQInRegs ? kMB : 1, kQK = Cfg::kQInRegs ? kKS : 1;
  using Mma = nv::MmaOf<T>;
  using Walk = attn::TileWalk<kBN>;

  static_assert(IsSame<T, f16>::value || IsSame<T, bf16>::value, "T must be ckgen::f16 or ckgen::bf16");
  static_assert(Cfg::kWaveSize == 32, "kWaveSize: NVIDIA warps have 32 threads");
  static_assert(kThreads == kWarps * 32, "kThreads must be kWarps * 32");
  static_assert(kSplitKeys ? (kBM == 16 || kBM == 32) && kBN % (16 * kWarps) == 0 : kBM % (16 * kWarps) == 0,
                "kBlockM must be a multiple of 16 * kWarps (key split: kBlockM 16 or 32, kBlockN a multiple of "
                "16 * kWarps)");
  static_assert(kBN % 16 == 0, "kBlockN must be a multiple of 16");
  static_assert(kD % 16 == 0 && TileQ::kCPR >= 8, "kHeadDim must be 64, 128 or 256");
  static_assert(kStages >= 1, "kStages must be >= 1");
  static_assert(Cfg::kKvBarriers == 2 || (Cfg::kKvBarriers == 1 && kStages >= 2),
                "kKvBarriers must be 2, or 1 with kStages >= 2");
  static_assert(Cfg::kLdsBytes >= kSmemBytes,
                "kLdsBytes < 2 * kBlockM * kHeadDim + 2 * kStages * 2 * kBlockN * kHeadDim (smem_bytes<Cfg>())");
  static_assert(Cfg::kMask == attn::kMaskNone || Cfg::kMask == attn::kMaskCausal || Cfg::kMask == attn::kMaskWindow,
                "kMask must be attn::kMaskNone, kMaskCausal or kMaskWindow");

  // What the stages of one block read: the mask of its problem, its first query row, the lane's place, the exp2
  // scale and the shared memory.
  struct Ctx {
    attn::Mask mask;
    int m0;          // the tile's first query row
    int tid, lane;
    int g, t4;       // the lane's mma row group (lane / 4) and column pair (lane % 4)
    int wrow;        // the warp's first row in the tile
    float sl2;       // scale * log2(e)
    uint32_t s0;     // the shared memory's address: the Q tile, then kStages K and kStages V tiles
  };
  static CKGEN_DEVICE uint32_t k_stage(uint32_t s0, int st) { return s0 + kKOff + st * TileKV::kBytes; }
  static CKGEN_DEVICE uint32_t v_stage(uint32_t s0, int st) { return s0 + kVOff + st * TileKV::kBytes; }

  static CKGEN_DEVICE void init(f32x4_t (&o)[kMB][kDB], float (&m)[kMB][2], float (&l)[kMB][2]) {
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        m[mb][h] = attn::kNegInf;
        l[mb][h] = 0.0f;
      }
#pragma unroll
      for (int db = 0; db < kDB; ++db)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[mb][db].r[e] = 0.0f;
    }
  }

  // The cp.async copies of the K and V tiles: iteration j of the walk (tile t_last - j) into stage j % kStages;
  // past the walk (j >= nt) only the group is committed (an empty one). kKvBarriers 2: K and V are separate
  // groups (load_k, load_v); kJoint: load_v commits both.
  template <bool kVec>
  struct KvCopy {
    // The 16-byte path with little state (two pointers, one shared-memory offset, one line): every line is whole
    // (the head dim), only keys past sk are zero-filled; a thread copies lines kv_r0 + it * kKvStep of chunk
    // tid % kCPR, all with one swizzle. Other shapes: the generic Loader.
    static constexpr bool kLean = kVec && TileKV::kRegular && TileKV::kSameSwz && TileKV::kExact;
    static constexpr int kKvStep = TileKV::kRowStep;
    using Loader = typename TileKV::template Loader<kVec, true>;
    const T* kg;
    const T* vg;
    long long k_ld, v_ld;
    Loader lk, lv;
    int kv_r0;
    uint32_t kv_soff;
    const T* k_src;
    const T* v_src;
    uint32_t s0;
    int nt, t_last, sk, tid;

    CKGEN_DEVICE KvCopy(const Args& p, const attn::Problem& pr, const Walk& walk, uint32_t s0_, int tid_)
        : kg(p.K + pr.k), vg(p.V + pr.v), k_ld(p.k_seq_stride), v_ld(p.v_seq_stride),
          lk(kg, k_ld, 0, 0, tid_), lv(vg, v_ld, 0, 0, tid_), kv_r0(tid_ / TileKV::kCPR),
          kv_soff(static_cast<uint32_t>(TileKV::offset(kv_r0, tid_ % TileKV::kCPR))),
          k_src(kg + static_cast<long long>(kv_r0) * k_ld + (tid_ % TileKV::kCPR) * TileKV::kVE),
          v_src(vg + static_cast<long long>(kv_r0) * v_ld + (tid_ % TileKV::kCPR) * TileKV::kVE),
          s0(s0_), nt(walk.nt), t_last(walk.t_last), sk(pr.sk), tid(tid_) {}

    CKGEN_DEVICE void copy_lean(uint32_t stage, const T* src0, long long ld, int n0) const {
      const T* src = src0 + static_cast<long long>(n0) * ld;
#pragma unroll
      for (int it = 0; it < TileKV::kIters; ++it) {
        const int nb = n0 + kv_r0 + it * kKvStep < sk ? 16 : 0;
        nv::cp_async16_zfill(stage + kv_soff + it * kKvStep * kRowBytes,
                             nb > 0 ? static_cast<const void*>(src + static_cast<long long>(it * kKvStep) * ld)
                                    : static_cast<const void*>(kg), nb);
      }
    }
    CKGEN_DEVICE void load_k(int j) const {
      if (j < nt) {
        if constexpr (kLean) {
          copy_lean(k_stage(s0, j % kStages), k_src, k_ld, (t_last - j) * kBN);
        } else {
          lk.load(k_stage(s0, j % kStages), kg, (t_last - j) * kBN, sk, kD, tid);
        }
      }
      if constexpr (!kJoint) nv::cp_async_commit();
    }
    CKGEN_DEVICE void load_v(int j) const {
      if (j < nt) {
        if constexpr (kLean) {
          copy_lean(v_stage(s0, j % kStages), v_src, v_ld, (t_last - j) * kBN);
        } else {
          lv.load(v_stage(s0, j % kStages), vg, (t_last - j) * kBN, sk, kD, tid);
        }
      }
      nv::cp_async_commit();
    }
  };

  // The K / V copies in flight before the first tile (after Q's group). kJoint: groups (K0, V0), ...,
  // (K[S-2], V[S-2]); else K0, (V0, K1), ..., (V[S-2], K[S-1]). Kv: a KvCopy (this body's or the decode's).
  template <class Kv>
  static CKGEN_DEVICE void prime_kv_ring(const Kv& kv) {
    if constexpr (kJoint) {
#pragma unroll
      for (int st = 0; st + 1 < kStages; ++st) {
        kv.load_k(st);
        kv.load_v(st);
      }
    } else {
      kv.load_k(0);
#pragma unroll
      for (int st = 1; st < kStages; ++st) {
        kv.load_v(st - 1);
        kv.load_k(st);
      }
    }
  }

  // The copies in flight before the first tile: Q's group, then prime_kv_ring.
  template <bool kVec>
  static CKGEN_DEVICE void prologue(const Args& p, const attn::Problem& pr, const Ctx& c, const KvCopy<kVec>& kv) {
    const T* qg = p.Q + pr.q;
    const typename TileQ::template Loader<kVec, true> lq(qg, p.q_seq_stride, 0, 0, c.tid);
    lq.load(c.s0, qg, c.m0, c.mask.sq, kD, c.tid);
    nv::cp_async_commit();
    prime_kv_ring(kv);
  }

  // ldmatrix row addresses (bytes inside a tile) of the first k16 step: this lane's line and chunk c in {0, 1}.
  // Step s reads chunk 2s + c, stored at chunk (2s + c) ^ (line & 7) = (c ^ (line & 7)) ^ 2s (the swizzle touches
  // the low 3 bits only, 2s has bit 0 clear): offset(line, 2s + c) = offset(line, c) ^ (s << 5) (step), as
  // line * kRowBytes has no bit below kRowBytes > (2s + c) * 16. One register per operand instead of one per step.
  // The 16-line steps (warp rows, m16 blocks, key steps) leave line & 7 alone.
  struct Lanes {
    uint32_t q, k, v;
    CKGEN_DEVICE Lanes(int lane, int wrow) {
      const int r8 = lane & 7, q8 = lane >> 3;  // the lane's row of an 8x8 matrix, and which matrix
      q = TileQ::offset(wrow + (lane & 15), lane >> 4);
      k = TileKV::offset(r8 + ((lane >> 4) << 3), (lane >> 3) & 1);
      v = TileKV::offset((q8 & 1) * 8 + r8, q8 >> 1);
    }
  };
  static CKGEN_DEVICE uint32_t step(uint32_t off, int s) { return off ^ static_cast<uint32_t>(s << 5); }

  // The Q fragments of the warp's rows (kQInRegs), once the Q copy landed.
  static CKGEN_DEVICE void load_q(uint32_t sq_addr, uint32_t q_lane, u32x4_t (&qf)[kQM][kQK]) {
    nv::cp_async_wait<(kJoint ? kStages - 1 : 2 * kStages - 1)>();  // the Q group
    barrier();
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
      for (int ks = 0; ks < kKS; ++ks) nv::ldmatrix_x4(qf[mb][ks].r, sq_addr + step(q_lane, ks) + mb * 16 * kRowBytes);
  }

  // Rotary Cfg: once the Q copy landed (the first cp.async group), the tile's pairs rotated in place in shared memory
  // (attention_rope.h), then a barrier before any ldmatrix of Q. row_of(r, cs) -> bool: whether tile row r is in the
  // sequence (false: left as copied, zeros), and if so cs = its table row (attn::RopeBatch::read). Used by this body
  // and the decode body.
  template <class RowOf>
  static CKGEN_DEVICE void rope_q(unsigned char* smem, int tid, RowOf row_of) {
    constexpr int kHalf = Cfg::kRopeDim / 2;
    nv::cp_async_wait<(kJoint ? kStages - 1 : 2 * kStages - 1)>();  // the Q group
    barrier();
    // 8 pairs of a thread at a time: a batch's table reads all go out before any rotation (attn::RopeBatch)
    using Batch = attn::RopeBatch<Cfg::kRopeStyle, Cfg::kRopeDim, kBM * kHalf, kThreads, 8>;
    const auto elem = [smem](int r, int col) { return reinterpret_cast<T*>(smem + TileQ::elem_offset(r, col)); };
#pragma unroll 1
    for (int i0 = tid; i0 < Batch::kPairs; i0 += Batch::kStep) {
      Batch b;
      b.read(i0, row_of);
      b.apply(i0, [&](int r, int col) { return to_float(lds_load(elem(r, col))); },
              [&](int r, int col, float v) { lds_store(elem(r, col), from_float<T>(v)); });
    }
    barrier();
  }

  // S = Q . K^T of the K tile at ks_base; the Q fragments from qf (kQInRegs) or the Q tile at sq_addr.
  static CKGEN_DEVICE void scores(f32x4_t (&s)[kMB][kNB], const u32x4_t (&qf)[kQM][kQK], uint32_t sq_addr,
                                  const Lanes& ln, uint32_t ks_base) {
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
      for (int nb = 0; nb < kNB; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mb][nb].r[e] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < kKS; ++ks) {
      u32x4_t qa[kMB];
#pragma unroll
      for (int mb = 0; mb < kMB; ++mb) {
        if constexpr (Cfg::kQInRegs) {
          qa[mb] = qf[mb][ks];
        } else {
          nv::ldmatrix_x4(qa[mb].r, sq_addr + step(ln.q, ks) + mb * 16 * kRowBytes);
        }
      }
#pragma unroll
      for (int jj = 0; jj < kNB / 2; ++jj) {
        uint32_t r[4];
        nv::ldmatrix_x4(r, ks_base + step(ln.k, ks) + jj * 16 * kRowBytes);
        const u32x2_t b0{{r[0], r[1]}};
        const u32x2_t b1{{r[2], r[3]}};
#pragma unroll
        for (int mb = 0; mb < kMB; ++mb) {
          s[mb][2 * jj] = Mma::mma(qa[mb], b0, s[mb][2 * jj]);
          s[mb][2 * jj + 1] = Mma::mma(qa[mb], b1, s[mb][2 * jj + 1]);
        }
      }
    }
  }

  // The online softmax of the tile's logits s of each m16 block: m, l and O rescaled, P as A fragments pa.
  static CKGEN_DEVICE void softmax(f32x4_t (&s)[kMB][kNB], f32x4_t (&o)[kMB][kDB], float (&m)[kMB][2],
                                   float (&l)[kMB][2], float sl2, int lane, u32x4_t (&pa)[kMB][kKK]) {
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb) {
      float alpha[2];
      softmax_rows<kNB>(s[mb], m[mb], l[mb], sl2, alpha, lane);
      rescale_rows<kDB>(o[mb], alpha);
      pack_p<T, kKK>(s[mb], pa[mb]);
    }
  }

  // O += P . V of the V tile at vs_base.
  static CKGEN_DEVICE void pv(f32x4_t (&o)[kMB][kDB], const u32x4_t (&pa)[kMB][kKK], uint32_t vs_base,
                              uint32_t v_lane) {
#pragma unroll
    for (int kk = 0; kk < kKK; ++kk) {
#pragma unroll
      for (int dd = 0; dd < kDB / 2; ++dd) {
        uint32_t r[4];
        nv::ldmatrix_x4_trans(r, vs_base + step(v_lane, dd) + kk * 16 * kRowBytes);
        const u32x2_t b0{{r[0], r[1]}};
        const u32x2_t b1{{r[2], r[3]}};
#pragma unroll
        for (int mb = 0; mb < kMB; ++mb) {
          o[mb][2 * dd] = Mma::mma(pa[mb][kk], b0, o[mb][2 * dd]);
          o[mb][2 * dd + 1] = Mma::mma(pa[mb][kk], b1, o[mb][2 * dd + 1]);
        }
      }
    }
  }

  // Iteration j of the walk (tile t_last - j, stage j % kStages), with the copy ring of the file comment.
  template <bool kVec>
  static CKGEN_DEVICE void tile_step(const Ctx& c, const Walk& walk, const KvCopy<kVec>& kv, const Lanes& ln,
                                     const u32x4_t (&qf)[kQM][kQK], int j, f32x4_t (&o)[kMB][kDB],
                                     float (&m)[kMB][2], float (&l)[kMB][2]) {
    const int st = j % kStages;
    if constexpr (kJoint) {
      nv::cp_async_wait<kStages - 2>();  // K[j] and V[j] (and everything before them) landed
      barrier();                          // ... for every thread; every warp is done with tile j-1
      kv.load_k(j + kStages - 1);         // into the stages of tile j-1
      kv.load_v(j + kStages - 1);
    } else {
      nv::cp_async_wait<2 * kStages - 2>();  // K[j] (and everything before it) landed
      barrier();                              // ... for every thread; every warp is done with PV[j-1]
      kv.load_v(j + kStages - 1);             // into the V stage of tile j-1
    }
    f32x4_t s[kMB][kNB];
    scores(s, qf, c.s0, ln, k_stage(c.s0, st));
    // the mask: only tiles with a hidden (query, key) pair; per row the keys [lo, hi) it sees
    const int n0 = walk.n0(j);
    if (walk.needs_mask(n0)) {
#pragma unroll
      for (int mb = 0; mb < kMB; ++mb) mask_rows<kNB>(s[mb], c.mask, c.m0 + c.wrow + mb * 16 + c.g, n0, c.t4);
    }
    u32x4_t pa[kMB][kKK];
    softmax(s, o, m, l, c.sl2, c.lane, pa);
    if constexpr (!kJoint) {
      nv::cp_async_wait<2 * kStages - 2>();  // V[j] landed
      barrier();                              // ... for every thread; every warp is done with K[j]
      kv.load_k(j + kStages);                 // into K[j]'s stage
    }
    pv(o, pa, v_stage(c.s0, st), ln.v);
  }

  // The walk's K/V tiles (nt > 0), the last one first.
  template <bool kVec>
  static CKGEN_DEVICE void mainloop(const Args& p, const attn::Problem& pr, const Ctx& c, const Walk& walk,
                                    unsigned char* smem, f32x4_t (&o)[kMB][kDB], float (&m)[kMB][2],
                                    float (&l)[kMB][2]) {
    const KvCopy<kVec> kv(p, pr, walk, c.s0, c.tid);
    prologue<kVec>(p, pr, c, kv);
    if constexpr (attn::kRope<Cfg>) {
      rope_q(smem, c.tid, [&](int r, const float*& cs) {
        if (c.m0 + r >= pr.sq) return false;
        cs = attn::query_rope_row<Cfg>(p, block_id(2), c.m0 + r);
        return true;
      });
    }
    const Lanes ln(c.lane, c.wrow);
    u32x4_t qf[kQM][kQK];
    if constexpr (Cfg::kQInRegs) load_q(c.s0, ln.q, qf);
#pragma unroll 1
    for (int j = 0; j < walk.nt; ++j) tile_step<kVec>(c, walk, kv, ln, qf, j, o, m, l);
    nv::cp_async_wait<0>();  // only empty groups are left
  }

  // O / l -> T -> this warp's rows of the Q tile (smem); LSE straight from the lanes.
  static CKGEN_DEVICE void write_rows(const Args& p, const attn::Problem& pr, const Ctx& c, unsigned char* smem,
                                      const f32x4_t (&o)[kMB][kDB], const float (&m)[kMB][2],
                                      const float (&l)[kMB][2]) {
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float lse;
        const float inv = finish_quad_row(m[mb][h], l[mb][h], p.scale, lse, c.lane);
        const int rl = c.wrow + mb * 16 + c.g + 8 * h;  // row in the tile
        if (p.LSE != nullptr && c.t4 == 0 && c.m0 + rl < c.mask.sq) gstore(p.LSE + pr.lse + c.m0 + rl, lse);
#pragma unroll
        for (int db = 0; db < kDB; ++db)
          lds_store(reinterpret_cast<uint32_t*>(smem + TileQ::elem_offset(rl, db * 8 + 2 * c.t4)),
                    pack2<T>(o[mb][db].r[2 * h] * inv, o[mb][db].r[2 * h + 1] * inv));
      }
    }
  }

  // This warp's rows of the Q tile (written by write_rows) -> 16-byte global stores of O (per element: !kVec).
  template <bool kVec>
  static CKGEN_DEVICE void store_o(const Args& p, const attn::Problem& pr, const Ctx& c, const unsigned char* smem) {
    T* og = p.O + pr.o;
    constexpr int kChunks = kRW * TileQ::kCPR;
#pragma unroll
    for (int c0 = 0; c0 < kChunks; c0 += 32) {
      const int ci = c0 + c.lane;
      const int rl = c.wrow + ci / TileQ::kCPR;
      const int ch = ci % TileQ::kCPR;
      if (c.m0 + rl < c.mask.sq) {
        const vec<T, 8> v = lds_load(reinterpret_cast<const vec<T, 8>*>(smem + TileQ::offset(rl, ch)));
        T* dst = og + static_cast<long long>(c.m0 + rl) * p.o_seq_stride + ch * 8;
        if constexpr (kVec) {
          gstore(reinterpret_cast<vec<T, 8>*>(dst), v);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) gstore(dst + e, v.v[e]);
        }
      }
    }
  }

  // kVec: every base and line start of Q, K, V, O is 16-byte aligned (cp.async and 16-byte stores);
  // otherwise the same pipeline with per-element loads and stores.
  template <bool kVec>
  static CKGEN_DEVICE void body(const Args& p, const attn::Problem& pr, int m0, unsigned char* smem) {
    Ctx c;
    c.m0 = m0;
    c.tid = thread_id();
    c.lane = c.tid & 31;
    const int warp = c.tid >> 5;
    c.g = c.lane >> 2;
    c.t4 = c.lane & 3;
    c.mask = attn::make_mask<Cfg::kMask>(pr.sq, pr.sk, p.window_left, p.window_right);
    const Walk walk = attn::tile_walk<kBM, kBN>(c.mask, m0);
    c.sl2 = p.scale * attn::kLog2e;
    c.wrow = warp * kRW;
    c.s0 = nv::smem_addr(smem);

    f32x4_t o[kMB][kDB];
    float m_run[kMB][2], l_run[kMB][2];
    init(o, m_run, l_run);
    if (walk.nt > 0) mainloop<kVec>(p, pr, c, walk, smem, o, m_run, l_run);
    attn::wave_sync();  // the warp's last ldmatrix reads of its Q rows come before the writes below
    write_rows(p, pr, c, smem, o, m_run, l_run);
    attn::wave_sync();
    store_o<kVec>(p, pr, c, smem);
  }
};

template <class Cfg>
CKGEN_DEVICE void fwd(const attn::Args<Cfg>& p) {
  using F = Fwd<Cfg>;
  using T = typename Cfg::T;
  static_assert(!F::kSplitKeys, "the prefill body splits the rows over its warps (kWarpSplitKeys: decode only)");
  const int tile = grid_dim(0) - 1 - block_id(0);
  const int m0 = tile * Cfg::kBlockM;
  attn::Problem pr;
  if (!attn::make_problem<Cfg::kVarlen, Cfg::kGqa>(p, block_id(2), block_id(1), m0, pr)) return;
#if defined(__CUDACC__)
  extern __shared__ __align__(1024) unsigned char ckgen_attn_smem[];
  unsigned char* smem = ckgen_attn_smem;
#else
  CKGEN_LDS(unsigned char, smem, F::kSmemBytes);
#endif
  constexpr int kEB = static_cast<int>(sizeof(T));
  if (nv::aligned16(p.Q + pr.q, p.q_seq_stride, kEB) && nv::aligned16(p.K + pr.k, p.k_seq_stride, kEB) &&
      nv::aligned16(p.V + pr.v, p.v_seq_stride, kEB) && nv::aligned16(p.O + pr.o, p.o_seq_stride, kEB)) {
    F::template body<true>(p, pr, m0, smem);
  } else {
    F::template body<false>(p, pr, m0, smem);
  }
}

// Dynamic shared memory (bytes) the body needs; Cfg::kLdsBytes must be at least this.
template <class Cfg>
constexpr int smem_bytes() {
  return Fwd<Cfg>::kSmemBytes;
}

}  // namespace attn_nv

// The device entry's call: the kernel's arguments in the ABI's order, gathered into Cfg::Args
// (attention_common.h).
template <class Cfg, class... A>
CKGEN_DEVICE void attention_fwd_nv(A... args) {
  attn_nv::fwd<Cfg>(attn::Args<Cfg>{args...});
}

}  // namespace ckgen
