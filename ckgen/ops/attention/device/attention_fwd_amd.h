// attention_fwd_amd.h (ckgen/ops/attention/device): fused attention forward on AMD matrix cores
// (single-block MFMA, wave64: gfx90a, gfx942, gfx950), also the body the CPU emulator runs.
//
//   template <class Cfg, class... A> CKGEN_DEVICE void attention_fwd_amd(A... args);  (the ABI: attention_common.h)
//
// Parameters, pointer rules, masks, numerics and the grid: attention_common.h. One workgroup
// (Cfg::kThreads = kWaves * 64 threads, 1-D) computes kBlockM query rows of one (batch, head);
// wave w owns rows [w * kBlockM / kWaves, (w + 1) * kBlockM / kWaves).
//
// Cfg members (compile-time; checked by static_assert with the member named):
//   using T                       ckgen::f16 or ckgen::bf16 (Q, K, V, O)
//   kHeadDim                      64, 128, 256 (multiple of kInstrM, kInstrK and kVec)
//   kBlockM                       queries per workgroup, multiple of kWaves * kInstrN
//   kBlockN                       keys per K/V tile, multiple of kInstrM and kInstrK
//   kWaves, kWaveSize (64), kThreads (= kWaves * 64)
//   kInstrM == kInstrN (16 or 32), kInstrK, kAItems == kBItems (= kInstrM * kInstrK / 64, a multiple
//   of 4), kCItems (= kInstrM * kInstrN / 64), AOperand, BOperand, COperand, static mma(a, b, c):
//                                 one single-block f32-accumulating MFMA of T (the targets table's builtin):
//                                 32x32x8 / 16x16x16 f16 or bf16_1k; gfx950 32x32x16 / 16x16x32 as well
//   kLdsBuffers                   1 (tile t + 1 waits in registers) or 2 (written to the other buffer
//                                 while tile t is read; one barrier per tile)
//   kVec                          elements per global vector load of K and V (8: 16 bytes); per-element
//                                 loads where a tensor's base or strides are not so aligned
//   kLdsKStride                   0: the LDS K tile is XOR-swizzled (kLdsKGranule ...); else padded rows this
//                                 many elements apart (>= kHeadDim, multiple of kAItems and kVec)
//   kLdsKGranule, kLdsKSwizzleBits, kLdsKSwizzle (unsigned long long)
//                                 with kLdsKStride 0: the K tile as blk::SwizzledTile<kBlockN, kHeadDim, ...>
//                                 (ckgen/blocks/lds_layout.h; unpadded, planned by the shared bank model:
//                                 ops/attention/plan.py k_tile_layout); the granule a multiple of
//                                 kAItems; else 0
//   kLdsVStride                   elements between d rows of the LDS V^T tile (>= kBlockN, multiple of 4)
//   kLdsBytes                     >= kLdsBuffers * (K tile + kHeadDim * kLdsVStride) * sizeof(T), the K tile
//                                 kBlockN * kHeadDim (swizzled) or kBlockN * kLdsKStride elements
//                                 (static LDS; the launcher passes 0)
//   kMask                         attn::kMaskNone / kMaskCausal / kMaskWindow
//   kVarlen, kGqa                 bool: cu_seqlens packed batches; heads_kv < heads allowed
//   kRopeStyle, kRopeDim          only with rotary embedding (attention_rope.h): Q rotated as it is loaded
//
// Data path. Both products run transposed, so that a query is a column of every MFMA result:
//   S^T (keys x queries) = K . Q^T   A = K tile rows from LDS (d contiguous), B = Q^T from registers
//                                    (loaded once from global memory: the Q tile stays resident)
//   O^T (d x queries)   += V^T . P^T A = V^T from LDS (V written transposed, keys contiguous),
//                                    B = P^T straight from the S^T accumulators
// A lane's accumulator items then all belong to the query lane % kInstrN: the row max and sum are
// in-lane reductions plus log2(64 / kInstrN) lane exchanges (xor_shuffle), the O^T rescale needs no
// exchange, and P^T needs no data movement: the S^T items r, r+1, r+2, r+3 (r % 4 == 0) of a lane are
// 4 consecutive keys of its query, and the B operand of O^T's k step c is items c*kBItems .. of the
// concatenated S^T accumulators. Its A operand (V^T) is read with the same key order, in runs of 4.
// K and V tiles are walked from the last one down (masked tiles first; the mask is applied only on
// tiles that need it: attn::Mask::partial), global -> registers -> LDS, the next tile's global loads
// in flight during the current tile's MFMAs.
#pragma once

#include "attention_common.h"
#include "attention_rope.h"
#include "ckgen/blocks/lds_layout.h"
#include "ckgen/blocks/mfma.h"
#include "ckgen/blocks/tile_loader.h"

namespace ckgen {
namespace attn_amd {

// The LDS K tile's layout: blk::SwizzledTile from the Cfg's kLdsK* members (kLdsKStride 0), else rows padded to
// kLdsKStride (granule kVec: the loader's 16-byte writes).
template <class Cfg, bool kSwizzled>
struct KTile {
  using type = blk::SwizzledTile<Cfg::kBlockN, Cfg::kHeadDim, Cfg::kLdsKGranule, Cfg::kLdsKSwizzleBits,
                                 Cfg::kLdsKSwizzle>;
  // K operands at (kb * kInstrM, dc * kInstrK) from the lane's: the lane's offset XOR type::xor_step
  static constexpr bool kXor = type::xor_steps(Cfg::kInstrM, Cfg::kInstrK);
};
template <class Cfg>
struct KTile<Cfg, false> {
  using type = blk::PaddedTile<Cfg::kLdsKStride, Cfg::kVec>;
  static constexpr bool kXor = false;
};

template <class Cfg>
struct Shape {
  using T = typename Cfg::T;
  static constexpr int kM = Cfg::kInstrM;  // keys (S^T) and d (O^T) per instruction
  static constexpr int kN = Cfg::kInstrN;  // queries per instruction
  static constexpr int kK = Cfg::kInstrK;
  using L = MfmaLayout<kM, kN, kK, 4>;
  static constexpr int kQW = Cfg::kBlockM / Cfg::kWaves;  // queries per wave
  static constexpr int kQB = kQW / kN;                    // query blocks per wave
  static constexpr int kKB = Cfg::kBlockN / kM;           // key blocks of S^T
  static constexpr int kDC = Cfg::kHeadDim / kK;          // k steps of S^T (over d)
  static constexpr int kDB = Cfg::kHeadDim / kM;          // d blocks of O^T
  static constexpr int kPC = Cfg::kBlockN / kK;           // k steps of O^T (over keys)
  // K tile: kBlockN key rows of kHeadDim (d contiguous in memory and in LDS), XOR-swizzled or padded (KTile).
  static constexpr bool kKSwizzled = Cfg::kLdsKStride == 0;
  using LdsK = typename KTile<Cfg, kKSwizzled>::type;
  static constexpr int kKElems = Cfg::kBlockN * (kKSwizzled ? Cfg::kHeadDim : Cfg::kLdsKStride);  // one K buffer
  static constexpr int kVElems = Cfg::kHeadDim * Cfg::kLdsVStride;  // one V^T buffer
  using LoadK = blk::TileLoader<T, Cfg::kBlockN, Cfg::kHeadDim, Cfg::kVec, true, Cfg::kThreads, LdsK>;
  // Swizzled: a K operand (kb, dc) sits at the lane's offset XOR LdsK::xor_step(kb * kM, dc * kK) where
  // SwizzledTile::xor_steps allows it; else at LdsK::offset of its (row, d).
  static constexpr bool kKXor = KTile<Cfg, kKSwizzled>::kXor;
  // V tile as the kHeadDim x kBlockN operand V^T: d contiguous in memory, keys contiguous in LDS.
  using LoadV = blk::TileLoader<T, Cfg::kHeadDim, Cfg::kBlockN, Cfg::kVec, false, Cfg::kThreads,
                                blk::PaddedTile<Cfg::kLdsVStride, 1>>;
};

template <class Cfg>
constexpr bool check_cfg() {
  using T = typename Cfg::T;
  static_assert(__is_same(T, f16) || __is_same(T, bf16), "T must be ckgen::f16 or ckgen::bf16");
  static_assert(Cfg::kWaveSize == 64, "kWaveSize: the MFMA body is written for wave64");
  static_assert(Cfg::kThreads == Cfg::kWaves * 64, "kThreads != kWaves * 64");
  static_assert(Cfg::kInstrM == Cfg::kInstrN && (Cfg::kInstrM == 16 || Cfg::kInstrM == 32),
                "kInstrM == kInstrN must be 16 or 32");
  static_assert(Cfg::kAItems * 64 == Cfg::kInstrM * Cfg::kInstrK && Cfg::kBItems == Cfg::kAItems,
                "kAItems == kBItems must be kInstrM * kInstrK / 64 (single-block instruction)");
  static_assert(Cfg::kCItems * 64 == Cfg::kInstrM * Cfg::kInstrN, "kCItems != kInstrM * kInstrN / 64");
  static_assert(Cfg::kAItems % 4 == 0, "kAItems must be a multiple of 4 (P^T operands are runs of 4 keys)");
  static_assert(sizeof(typename Cfg::AOperand) == Cfg::kAItems * sizeof(T), "AOperand size != kAItems elements of T");
  static_assert(sizeof(typename Cfg::BOperand) == Cfg::kBItems * sizeof(T), "BOperand size != kBItems elements of T");
  static_assert(sizeof(typename Cfg::COperand) == Cfg::kCItems * sizeof(float), "COperand size != kCItems floats");
  static_assert(Cfg::kBlockM % (Cfg::kWaves * Cfg::kInstrN) == 0, "kBlockM must be a multiple of kWaves * kInstrN");
  static_assert(Cfg::kBlockN % Cfg::kInstrM == 0 && Cfg::kBlockN % Cfg::kInstrK == 0,
                "kBlockN must be a multiple of kInstrM and kInstrK");
  static_assert(Cfg::kHeadDim % Cfg::kInstrM == 0 && Cfg::kHeadDim % Cfg::kInstrK == 0 && Cfg::kHeadDim % Cfg::kVec == 0,
                "kHeadDim must be a multiple of kInstrM, kInstrK and kVec");
  static_assert(Cfg::kLdsKStride == 0 || (Cfg::kLdsKStride >= Cfg::kHeadDim && Cfg::kLdsKStride % Cfg::kAItems == 0 &&
                                           Cfg::kLdsKStride % Cfg::kVec == 0),
                "kLdsKStride must be 0 (swizzled K tile) or >= kHeadDim and a multiple of kAItems and kVec");
  static_assert(Cfg::kLdsKStride != 0 || (Cfg::kLdsKGranule > 0 && Cfg::kLdsKGranule % Cfg::kAItems == 0),
                "kLdsKGranule must be a multiple of kAItems (a K operand is one read inside one granule)");
  static_assert(Cfg::kLdsKStride == 0 || (Cfg::kLdsKGranule == 0 && Cfg::kLdsKSwizzleBits == 0 && Cfg::kLdsKSwizzle == 0),
                "kLdsKGranule, kLdsKSwizzleBits and kLdsKSwizzle must be 0 with padded K rows (kLdsKStride > 0)");
  static_assert(Cfg::kLdsVStride >= Cfg::kBlockN && Cfg::kLdsVStride % 4 == 0,
                "kLdsVStride must be >= kBlockN and a multiple of 4");
  static_assert(Cfg::kLdsBuffers == 1 || Cfg::kLdsBuffers == 2, "kLdsBuffers must be 1 or 2");
  static_assert(Cfg::kLdsBytes >= Cfg::kLdsBuffers * (Shape<Cfg>::kKElems + Shape<Cfg>::kVElems) * (int)sizeof(T),
                "kLdsBytes < kLdsBuffers * (K tile + kHeadDim * kLdsVStride) * sizeof(T)");
  static_assert(Cfg::kMask == attn::kMaskNone || Cfg::kMask == attn::kMaskCausal || Cfg::kMask == attn::kMaskWindow,
                "kMask must be attn::kMaskNone, kMaskCausal or kMaskWindow");
  return true;
}

// The body's stages, after CK Tile's block pipelines; fwd (below) runs them top to bottom:
//   load_q     the wave's Q^T operands, resident in registers (load_q_rope: rotated, with rotary embedding)
//   init       O^T = 0 and the row statistics (m: running max of the unscaled logits, -inf; l: this lane's share of
//              the row sum, 0) of the lane's query in each of the wave's kQB query blocks
//   mainloop   the K/V tiles (KvTiles: global -> registers -> LDS), one tile_step each:
//                scores (S^T = K . Q^T), mask_tile, softmax (online; P^T as B operands), pv (O^T += V^T . P^T)
//   epilogue   O = O^T / l and LSE
template <class Cfg>
struct Fwd {
  using S = Shape<Cfg>;
  using T = typename Cfg::T;
  using L = typename S::L;
  using Args = attn::Args<Cfg>;
  using Walk = attn::TileWalk<Cfg::kBlockN>;
  using AOp = typename Cfg::AOperand;
  using BOp = typename Cfg::BOperand;
  using COp = typename Cfg::COperand;
  static constexpr int kM = S::kM, kN = S::kN, kK = S::kK;
  static constexpr int kAI = Cfg::kAItems, kBI = Cfg::kBItems, kCI = Cfg::kCItems;
  static constexpr int kQB = S::kQB, kKB = S::kKB, kDC = S::kDC, kDB = S::kDB, kPC = S::kPC;

  // What the stages of one block read: its problem and mask, the lane's place and the exp2 scale.
  struct Ctx {
    attn::Problem pr;
    attn::Mask mask;
    int tid, lane;
    int qw0;     // the wave's first query row
    int lane_q;  // the query column of this lane in every query block
    float sl2;   // scale * log2(e)
  };

  // Q^T operands: B(k = d, j = query) at lane j + kN * (k / kBI), item k % kBI; rows past the sequence are zeros.
  static CKGEN_DEVICE void load_q(const Args& p, const Ctx& c, BOp (&qf)[kQB][kDC]) {
    const T* qb_ptr = p.Q + c.pr.q;
    const bool al = blk::is_aligned(qb_ptr, p.q_seq_stride, kBI);
#pragma unroll
    for (int qb = 0; qb < kQB; ++qb) {
      const int row = c.qw0 + qb * kN + c.lane_q;
      const T* src = qb_ptr + static_cast<long long>(row) * p.q_seq_stride + L::b_k0(c.lane);
      if (row < c.pr.sq && al) {
#pragma unroll
        for (int dc = 0; dc < kDC; ++dc)
          qf[qb][dc] = bit_cast<BOp>(gload(reinterpret_cast<const vec<T, kBI>*>(src + dc * kK)));
      } else {
#pragma unroll
        for (int dc = 0; dc < kDC; ++dc) {
          vec<T, kBI> v;
#pragma unroll
          for (int e = 0; e < kBI; ++e) v.v[e] = row < c.pr.sq ? gload(src + dc * kK + e) : zero<T>();
          qf[qb][dc] = bit_cast<BOp>(v);
        }
      }
    }
  }

  // Rotary Cfg (attn::kRope<Cfg>): the same operands, each rotated at its row's position once per block
  // (attention_rope.h: rope_vec, the operand's run, its partners' run and their table entries read as vectors where
  // aligned; else rope_run, element by element with its pair's partner).
  static CKGEN_DEVICE void load_q_rope(const Args& p, const Ctx& c, BOp (&qf)[kQB][kDC]) {
    const bool al = blk::is_aligned(p.Q + c.pr.q, p.q_seq_stride, kBI);
    const bool wide = attn::RopeChunks<Cfg::kRopeStyle, Cfg::kRopeDim>::vec_ok(p.cos_sin, p.cs_pos_stride);
#pragma unroll
    for (int qb = 0; qb < kQB; ++qb) {
      const int row = c.qw0 + qb * kN + c.lane_q;
      const bool in = row < c.pr.sq;
      const T* src = p.Q + c.pr.q + static_cast<long long>(in ? row : 0) * p.q_seq_stride;
      const float* cs = in ? attn::query_rope_row<Cfg>(p, block_id(2), row) : nullptr;
#pragma unroll
      for (int dc = 0; dc < kDC; ++dc)
        qf[qb][dc] = bit_cast<BOp>(
            attn::rope_vec<Cfg::kRopeStyle, Cfg::kRopeDim, kBI>(src, L::b_k0(c.lane) + dc * kK, cs, al, wide));
    }
  }

  static CKGEN_DEVICE void init(COp (&o)[kDB][kQB], float (&m)[kQB], float (&l)[kQB]) {
#pragma unroll
    for (int qb = 0; qb < kQB; ++qb) {
      m[qb] = attn::kNegInf;
      l[qb] = 0.0f;
#pragma unroll
      for (int db = 0; db < kDB; ++db) o[db][qb] = COp{};
    }
  }

  // The K and V tiles of the problem: tile t global -> registers (gload; keys past the sequence are zeros), the
  // registers -> LDS buffer buf (store).
  struct KvTiles {
    typename S::LoadK lk;
    typename S::LoadV lv;
    const T* kg;
    const T* vg;
    long long k_ld, v_ld;
    int sk;
    bool k_al, v_al;

    CKGEN_DEVICE KvTiles(const Args& p, const attn::Problem& pr)
        : kg(p.K + pr.k), vg(p.V + pr.v), k_ld(p.k_seq_stride), v_ld(p.v_seq_stride), sk(pr.sk) {
      k_al = blk::is_aligned(kg, k_ld, Cfg::kVec);
      v_al = blk::is_aligned(vg, v_ld, Cfg::kVec);
    }
    CKGEN_DEVICE void gload(int t, int tid) {
      const int n0 = t * Cfg::kBlockN;
      lk.load(kg + static_cast<long long>(n0) * k_ld, k_ld, sk - n0, Cfg::kHeadDim, k_al, tid);
      lv.load(vg + static_cast<long long>(n0) * v_ld, v_ld, Cfg::kHeadDim, sk - n0, v_al, tid);
    }
    CKGEN_DEVICE void store(T* lds_k, T* lds_v, int buf, int tid) {
      lk.store(lds_k + buf * S::kKElems, tid);
      lv.store(lds_v + buf * S::kVElems, tid);
    }
  };

  // This lane's K operand position: its first element's offset in a K buffer (k_frag) and its (row, d) there.
  struct KFrag {
    int off, row, k0;
  };
  static CKGEN_DEVICE KFrag k_frag(int lane) {
    const int row = L::a_row(lane), k0 = L::a_k0(lane);
    return {S::LdsK::offset(row, k0), row, k0};
  }

  // S^T = K . Q^T over the K buffer at ks (lane: this lane's operand position), one k step (kInstrK of d) at a
  // time, the next step's K operands read ahead; the scheduling fence keeps the compiler from hoisting every LDS
  // read of the tile (registers). The lane's offset passes an empty asm once per tile so the compiler recomputes
  // the swizzled offsets (one XOR per read) rather than holding one register per (key block, k step) across the
  // walk.
  static CKGEN_DEVICE void scores(const T* ks, const KFrag& lane, const BOp (&qf)[kQB][kDC], COp (&s)[kKB][kQB]) {
#pragma unroll
    for (int kb = 0; kb < kKB; ++kb)
#pragma unroll
      for (int qb = 0; qb < kQB; ++qb) s[kb][qb] = COp{};
    const KFrag kf = {S::kKSwizzled ? opaque(lane.off) : lane.off, lane.row, lane.k0};
    AOp ka[2][kKB];
    load_k(ks, kf, ka[0], 0);
#pragma unroll
    for (int dc = 0; dc < kDC; ++dc) {
      if (dc + 1 < kDC) load_k(ks, kf, ka[(dc + 1) & 1], dc + 1);
#pragma unroll
      for (int kb = 0; kb < kKB; ++kb)
#pragma unroll
        for (int qb = 0; qb < kQB; ++qb) s[kb][qb] = Cfg::mma(ka[dc & 1][kb], qf[qb][dc], s[kb][qb]);
      attn::sched_fence();
    }
  }
  // The K operands of k step dc (one per key block) from the K buffer at ks: key row kb * kM + kf.row, d from
  // dc * kK + kf.k0 (S::kKXor: kf.off XOR a constant; padded rows: kf.off plus a constant).
  static CKGEN_DEVICE void load_k(const T* ks, const KFrag& kf, AOp (&a)[kKB], int dc) {
#pragma unroll
    for (int kb = 0; kb < kKB; ++kb) {
      int off;
      if constexpr (S::kKXor)
        off = kf.off ^ S::LdsK::xor_step(kb * kM, dc * kK);
      else if constexpr (!S::kKSwizzled)
        off = kf.off + S::LdsK::offset(kb * kM, dc * kK);
      else
        off = S::LdsK::offset(kf.row + kb * kM, kf.k0 + dc * kK);
      a[kb] = bit_cast<AOp>(lds_load(reinterpret_cast<const vec<T, kAI>*>(ks + off)));
    }
  }

  // Hidden (query, key) pairs of the tile of keys [n0, n0 + kBlockN) -> -inf: per query the keys [lo, hi) it sees.
  static CKGEN_DEVICE void mask_tile(COp (&s)[kKB][kQB], const Ctx& c, int n0) {
#pragma unroll
    for (int qb = 0; qb < kQB; ++qb) {
      const int q = c.qw0 + qb * kN + c.lane_q;
      const int lo = c.mask.row_lo(q) - n0, hi = c.mask.row_hi(q) - n0;
#pragma unroll
      for (int kb = 0; kb < kKB; ++kb)
#pragma unroll
        for (int r = 0; r < kCI; ++r) {
          const int key = kb * kM + L::c_row(r, c.lane);
          if (key < lo || key >= hi) s[kb][qb][r] = attn::kNegInf;
        }
    }
  }

  // The online softmax of the tile's logits s (unscaled; -inf where hidden): the lane's query's max over its
  // lanes updates m, s becomes p, l and O^T (o) are rescaled and l takes p's sum; P^T (p rounded to T) as the B
  // operands pf.
  static CKGEN_DEVICE void softmax(COp (&s)[kKB][kQB], COp (&o)[kDB][kQB], float (&m)[kQB], float (&l)[kQB],
                                   const Ctx& c, BOp (&pf)[kQB][kPC]) {
#pragma unroll
    for (int qb = 0; qb < kQB; ++qb) {
      float mx = attn::kNegInf;
#pragma unroll
      for (int kb = 0; kb < kKB; ++kb)
#pragma unroll
        for (int r = 0; r < kCI; ++r) mx = attn::fmax_f32(mx, s[kb][qb][r]);
      mx = attn::lanes_max<kN, 64>(mx, c.lane);
      float mb;
      const float alpha = attn::online_max(m[qb], mx, c.sl2, mb);
      float sum = 0.0f;
#pragma unroll
      for (int kb = 0; kb < kKB; ++kb)
#pragma unroll
        for (int r = 0; r < kCI; ++r) {
          const float pv = exp2_f32(s[kb][qb][r] * c.sl2 - mb);
          s[kb][qb][r] = pv;
          sum += pv;
        }
      l[qb] = l[qb] * alpha + sum;  // this lane's share of the row sum
#pragma unroll
      for (int db = 0; db < kDB; ++db) o[db][qb] *= alpha;
#pragma unroll
      for (int pc = 0; pc < kPC; ++pc) {
        vec<T, kBI> v;
#pragma unroll
        for (int e = 0; e < kBI; ++e) {
          const int R = pc * kBI + e;
          v.v[e] = from_float<T>(s[R / kCI][qb][R % kCI]);
        }
        pf[qb][pc] = bit_cast<BOp>(v);
      }
    }
  }

  // O^T += V^T . P^T over the V^T tile at vs (this lane's fragment), one (k step, d block) operand at a time, the
  // next one read ahead (V^T operands are kDB per k step: reading a whole step ahead costs too many registers at
  // large d).
  static CKGEN_DEVICE void pv(const T* vs, const BOp (&pf)[kQB][kPC], COp (&o)[kDB][kQB], int lane) {
    AOp va[2];
    va[0] = load_v(vs, 0, lane);
#pragma unroll
    for (int i = 0; i < kPC * kDB; ++i) {
      if (i + 1 < kPC * kDB) va[(i + 1) & 1] = load_v(vs, i + 1, lane);
#pragma unroll
      for (int qb = 0; qb < kQB; ++qb) o[i % kDB][qb] = Cfg::mma(va[i & 1], pf[qb][i / kDB], o[i % kDB][qb]);
      attn::sched_fence();
    }
  }
  // The V^T operand i (k step i / kDB, d block i % kDB): its items follow P^T's key order (runs of 4 keys).
  static CKGEN_DEVICE AOp load_v(const T* vs, int i, int lane) {
    const int pc = i / kDB, db = i % kDB;
    vec<T, kAI> w;
#pragma unroll
    for (int u = 0; u < kAI / 4; ++u) {
      const int R = pc * kAI + 4 * u;
      const int key = (R / kCI) * kM + L::c_row(R % kCI, lane);
      const vec<T, 4> run = lds_load(reinterpret_cast<const vec<T, 4>*>(vs + db * kM * Cfg::kLdsVStride + key));
#pragma unroll
      for (int e = 0; e < 4; ++e) w.v[4 * u + e] = run.v[e];
    }
    return bit_cast<AOp>(w);
  }

  // One K/V tile t (keys [t * kBlockN, ..)), read from LDS buffer buf: S^T, its mask (only tiles with a hidden
  // (query, key) pair), the online softmax, O^T += V^T . P^T. kf: the lane's K operand position (k_frag), v_frag:
  // its first element of the V^T operands in a buffer.
  static CKGEN_DEVICE void tile_step(const Ctx& c, const Walk& walk, const BOp (&qf)[kQB][kDC], const T* lds_k,
                                     const T* lds_v, const KFrag& kf, int v_frag, int buf, int t,
                                     COp (&o)[kDB][kQB], float (&m)[kQB], float (&l)[kQB]) {
    COp s[kKB][kQB];
    scores(lds_k + buf * S::kKElems, kf, qf, s);
    const int n0 = t * Cfg::kBlockN;
    if (walk.needs_mask(n0)) mask_tile(s, c, n0);
    BOp pf[kQB][kPC];
    softmax(s, o, m, l, c, pf);
    pv(lds_v + buf * S::kVElems + v_frag, pf, o, c.lane);
  }

  // The walk's K/V tiles (nt > 0), the last one first, the next tile's global loads in flight during the
  // current tile's MFMAs. kLdsBuffers 2: tile j + 1 is written to the other buffer while tile j is read (one
  // barrier per tile); 1: it waits in registers until every wave is done reading tile j.
  // gload, store and step are lambdas on purpose: a lambda is not always_inline (CKGEN_DEVICE is), so clang
  // simplifies its body on its own before inlining it, and the MFMA schedule and register allocation this body
  // was tuned with depend on that (as always_inline functions, measured on gfx942: 3 to 4 more VGPRs).
  static CKGEN_DEVICE void mainloop(const Ctx& c, const Walk& walk, const BOp (&qf)[kQB][kDC], KvTiles& kv,
                                    T* lds_k, T* lds_v, COp (&o)[kDB][kQB], float (&m)[kQB], float (&l)[kQB]) {
    const KFrag kf = k_frag(c.lane);
    const int v_frag = L::a_row(c.lane) * Cfg::kLdsVStride;
    const int nt = walk.nt, t_last = walk.t_last;
    auto gload = [&](int t) { kv.gload(t, c.tid); };
    auto store = [&](int buf) { kv.store(lds_k, lds_v, buf, c.tid); };
    auto step = [&](int buf, int t) { tile_step(c, walk, qf, lds_k, lds_v, kf, v_frag, buf, t, o, m, l); };
    if constexpr (Cfg::kLdsBuffers == 2) {
      gload(t_last);
      store(0);
      barrier();
      for (int j = 0; j < nt; ++j) {
        const int cur = j & 1;
        const bool more = j + 1 < nt;
        if (more) gload(t_last - j - 1);
        step(cur, t_last - j);
        if (more) store(cur ^ 1);
        barrier();  // buffer cur^1 is complete; every wave is done reading buffer cur
      }
    } else {
      gload(t_last);
      for (int j = 0; j < nt; ++j) {
        if (j > 0) barrier();  // every wave is done reading the previous tile
        store(0);
        barrier();
        if (j + 1 < nt) gload(t_last - j - 1);
        step(0, t_last - j);
      }
    }
  }

  // O = O^T / l (rounded to T; 4 consecutive d per store) and LSE, for the rows inside the sequence.
  static CKGEN_DEVICE void epilogue(const Args& p, const Ctx& c, const COp (&o)[kDB][kQB], const float (&m)[kQB],
                                    const float (&l)[kQB]) {
    T* og = p.O + c.pr.o;
    const bool o_al = blk::is_aligned(og, p.o_seq_stride, 4);
#pragma unroll
    for (int qb = 0; qb < kQB; ++qb) {
      float lse;
      const float inv = attn::finish_row(m[qb], attn::lanes_sum<kN, 64>(l[qb], c.lane), p.scale, lse);
      const int q = c.qw0 + qb * kN + c.lane_q;
      if (q < c.pr.sq) {
        if (p.LSE != nullptr && c.lane < kN) gstore(p.LSE + c.pr.lse + q, lse);
        T* orow = og + static_cast<long long>(q) * p.o_seq_stride;
#pragma unroll
        for (int db = 0; db < kDB; ++db) {
#pragma unroll
          for (int r0 = 0; r0 < kCI; r0 += 4) {  // items r0 .. r0+3: 4 consecutive d of this query
            const int d = db * kM + L::c_row(r0, c.lane);
            vec<T, 4> w;
#pragma unroll
            for (int e = 0; e < 4; ++e) w.v[e] = from_float<T>(o[db][qb][r0 + e] * inv);
            if (o_al) {
              gstore(reinterpret_cast<vec<T, 4>*>(orow + d), w);
            } else {
#pragma unroll
              for (int e = 0; e < 4; ++e) gstore(orow + d + e, w.v[e]);
            }
          }
        }
      }
    }
  }
};

template <class Cfg>
CKGEN_DEVICE void fwd(const attn::Args<Cfg>& p) {
  static_assert(check_cfg<Cfg>(), "Cfg");
  using F = Fwd<Cfg>;
  using T = typename Cfg::T;
  const int m0 = attn::tile_row0<Cfg::kBlockM>();
  typename F::Ctx c;
  if (!attn::make_problem<Cfg::kVarlen, Cfg::kGqa>(p, block_id(2), block_id(1), m0, c.pr)) return;

  CKGEN_LDS(T, lds_k, Cfg::kLdsBuffers * F::S::kKElems);
  CKGEN_LDS(T, lds_v, Cfg::kLdsBuffers * F::S::kVElems);

  c.tid = thread_id();
  c.lane = lane_id();
  const int wave = wave_id();
  c.mask = attn::make_mask<Cfg::kMask>(c.pr.sq, c.pr.sk, p.window_left, p.window_right);
  const typename F::Walk walk = attn::tile_walk<Cfg::kBlockM, Cfg::kBlockN>(c.mask, m0);
  c.qw0 = m0 + wave * F::S::kQW;
  c.lane_q = c.lane % F::kN;
  c.sl2 = p.scale * attn::kLog2e;

  typename F::BOp qf[F::kQB][F::kDC];
  if constexpr (attn::kRope<Cfg>) {
    F::load_q_rope(p, c, qf);
  } else {
    F::load_q(p, c, qf);
  }
  typename F::COp o[F::kDB][F::kQB];  // O^T
  float m_run[F::kQB], l_run[F::kQB];
  F::init(o, m_run, l_run);
  typename F::KvTiles kv(p, c.pr);
  if (walk.nt > 0) F::mainloop(c, walk, qf, kv, lds_k, lds_v, o, m_run, l_run);
  F::epilogue(p, c, o, m_run, l_run);
}

}  // namespace attn_amd

// The device entry's call: the kernel's arguments in the ABI's order, gathered into Cfg::Args
// (attention_common.h).
template <class Cfg, class... A>
CKGEN_DEVICE void attention_fwd_amd(A... args) {
  attn_amd::fwd<Cfg>(attn::Args<Cfg>{args...});
}

}  // namespace ckgen
