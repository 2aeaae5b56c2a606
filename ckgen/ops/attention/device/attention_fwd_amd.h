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
//   kLdsKStride                   elements between key rows of the LDS K tile (>= kHeadDim, multiple of
//                                 kAItems and kVec; pad for banks, e.g. kHeadDim + 4 or + 8)
//   kLdsVStride                   elements between d rows of the LDS V^T tile (>= kBlockN, multiple of 4)
//   kLdsBytes                     >= kLdsBuffers * (kBlockN * kLdsKStride + kHeadDim * kLdsVStride) * sizeof(T)
//                                 (static LDS; the launcher passes 0)
//   kMask                         attn::kMaskNone / kMaskCausal / kMaskWindow
//   kVarlen, kGqa                 bool: cu_seqlens packed batches; heads_kv < heads allowed
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
#include "ckgen/blocks/lds_layout.h"
#include "ckgen/blocks/mfma.h"
#include "ckgen/blocks/tile_loader.h"

namespace ckgen {
namespace attn_amd {

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
  static constexpr int kKElems = Cfg::kBlockN * Cfg::kLdsKStride;   // one K buffer
  static constexpr int kVElems = Cfg::kHeadDim * Cfg::kLdsVStride;  // one V^T buffer
  // K tile: kBlockN key rows of kHeadDim (d contiguous in memory and in LDS).
  using LoadK = blk::TileLoader<T, Cfg::kBlockN, Cfg::kHeadDim, Cfg::kVec, true, Cfg::kThreads,
                                blk::PaddedTile<Cfg::kLdsKStride, Cfg::kVec>>;
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
  static_assert(Cfg::kLdsKStride >= Cfg::kHeadDim && Cfg::kLdsKStride % Cfg::kAItems == 0 &&
                    Cfg::kLdsKStride % Cfg::kVec == 0,
                "kLdsKStride must be >= kHeadDim and a multiple of kAItems and kVec");
  static_assert(Cfg::kLdsVStride >= Cfg::kBlockN && Cfg::kLdsVStride % 4 == 0,
                "kLdsVStride must be >= kBlockN and a multiple of 4");
  static_assert(Cfg::kLdsBuffers == 1 || Cfg::kLdsBuffers == 2, "kLdsBuffers must be 1 or 2");
  static_assert(Cfg::kLdsBytes >= Cfg::kLdsBuffers * (Shape<Cfg>::kKElems + Shape<Cfg>::kVElems) * (int)sizeof(T),
                "kLdsBytes < kLdsBuffers * (kBlockN * kLdsKStride + kHeadDim * kLdsVStride) * sizeof(T)");
  static_assert(Cfg::kMask == attn::kMaskNone || Cfg::kMask == attn::kMaskCausal || Cfg::kMask == attn::kMaskWindow,
                "kMask must be attn::kMaskNone, kMaskCausal or kMaskWindow");
  return true;
}

template <class Cfg>
CKGEN_DEVICE void fwd(const attn::Args<Cfg>& p) {
  static_assert(check_cfg<Cfg>(), "Cfg");
  using S = Shape<Cfg>;
  using T = typename Cfg::T;
  using L = typename S::L;
  using AOp = typename Cfg::AOperand;
  using BOp = typename Cfg::BOperand;
  using COp = typename Cfg::COperand;
  constexpr int kM = S::kM, kN = S::kN, kK = S::kK;
  constexpr int kAI = Cfg::kAItems, kBI = Cfg::kBItems, kCI = Cfg::kCItems;
  constexpr int kQB = S::kQB, kKB = S::kKB, kDC = S::kDC, kDB = S::kDB, kPC = S::kPC;

  const int tile = grid_dim(0) - 1 - block_id(0);
  const int m0 = tile * Cfg::kBlockM;
  attn::Problem pr;
  if (!attn::make_problem<Cfg::kVarlen, Cfg::kGqa>(p, block_id(2), block_id(1), m0, pr)) return;

  CKGEN_LDS(T, lds_k, Cfg::kLdsBuffers * S::kKElems);
  CKGEN_LDS(T, lds_v, Cfg::kLdsBuffers * S::kVElems);

  const int tid = thread_id();
  const int lane = lane_id();
  const int wave = wave_id();
  const int sq = pr.sq, sk = pr.sk;
  const attn::Mask mask = attn::make_mask<Cfg::kMask>(sq, sk, p.window_left, p.window_right);
  const int r1 = m0 + Cfg::kBlockM < sq ? m0 + Cfg::kBlockM : sq;
  const attn::TileWalk<Cfg::kBlockN> walk(mask, m0, r1);
  const int nt = walk.nt;  // K/V tiles to visit
  const int qw0 = m0 + wave * S::kQW;                                   // this wave's first query
  const int lane_q = lane % kN;                                         // the query column of this lane
  const float sl2 = p.scale * attn::kLog2e;

  // ---- Q^T operands, resident in registers: B(k = d, j = query) at lane j + kN * (k / kBI), item k % kBI.
  BOp qf[kQB][kDC];
  {
    const T* qb_ptr = p.Q + pr.q;
    const bool al = blk::is_aligned(qb_ptr, p.q_seq_stride, kBI);
#pragma unroll
    for (int qb = 0; qb < kQB; ++qb) {
      const int row = qw0 + qb * kN + lane_q;
      const T* src = qb_ptr + static_cast<long long>(row) * p.q_seq_stride + L::b_k0(lane);
      if (row < sq && al) {
#pragma unroll
        for (int dc = 0; dc < kDC; ++dc) qf[qb][dc] = bit_cast<BOp>(gload(reinterpret_cast<const vec<T, kBI>*>(src + dc * kK)));
      } else {
#pragma unroll
        for (int dc = 0; dc < kDC; ++dc) {
          vec<T, kBI> v;
#pragma unroll
          for (int e = 0; e < kBI; ++e) v.v[e] = row < sq ? gload(src + dc * kK + e) : zero<T>();
          qf[qb][dc] = bit_cast<BOp>(v);
        }
      }
    }
  }

  COp o[kDB][kQB];
  float m_run[kQB], l_run[kQB];
#pragma unroll
  for (int qb = 0; qb < kQB; ++qb) {
    m_run[qb] = attn::kNegInf;
    l_run[qb] = 0.0f;
#pragma unroll
    for (int db = 0; db < kDB; ++db) o[db][qb] = COp{};
  }

  // ---- K/V tiles: global -> registers -> LDS
  typename S::LoadK lk;
  typename S::LoadV lv;
  const T* kg = p.K + pr.k;
  const T* vg = p.V + pr.v;
  const bool k_al = blk::is_aligned(kg, p.k_seq_stride, Cfg::kVec);
  const bool v_al = blk::is_aligned(vg, p.v_seq_stride, Cfg::kVec);
  auto gload_tiles = [&](int t) {
    const int n0 = t * Cfg::kBlockN;
    lk.load(kg + static_cast<long long>(n0) * p.k_seq_stride, p.k_seq_stride, sk - n0, Cfg::kHeadDim, k_al, tid);
    lv.load(vg + static_cast<long long>(n0) * p.v_seq_stride, p.v_seq_stride, Cfg::kHeadDim, sk - n0, v_al, tid);
  };
  auto store_tiles = [&](int buf) {
    lk.store(lds_k + buf * S::kKElems, tid);
    lv.store(lds_v + buf * S::kVElems, tid);
  };

  const int k_frag = L::a_row(lane) * Cfg::kLdsKStride + L::a_k0(lane);
  const int v_frag = L::a_row(lane) * Cfg::kLdsVStride;

  auto compute = [&](int buf, int t) {
    // S^T = K . Q^T, one k step (kInstrK of d) at a time, the next step's K operands read ahead;
    // the scheduling fence keeps the compiler from hoisting every LDS read of the tile (registers).
    const T* ks = lds_k + buf * S::kKElems + k_frag;
    auto load_k = [&](AOp (&a)[kKB], int dc) {
#pragma unroll
      for (int kb = 0; kb < kKB; ++kb)
        a[kb] = bit_cast<AOp>(lds_load(reinterpret_cast<const vec<T, kAI>*>(ks + kb * kM * Cfg::kLdsKStride + dc * kK)));
    };
    COp s[kKB][kQB];
#pragma unroll
    for (int kb = 0; kb < kKB; ++kb)
#pragma unroll
      for (int qb = 0; qb < kQB; ++qb) s[kb][qb] = COp{};
    AOp ka[2][kKB];
    load_k(ka[0], 0);
#pragma unroll
    for (int dc = 0; dc < kDC; ++dc) {
      if (dc + 1 < kDC) load_k(ka[(dc + 1) & 1], dc + 1);
#pragma unroll
      for (int kb = 0; kb < kKB; ++kb)
#pragma unroll
        for (int qb = 0; qb < kQB; ++qb) s[kb][qb] = Cfg::mma(ka[dc & 1][kb], qf[qb][dc], s[kb][qb]);
      attn::sched_fence();
    }

    // mask (only tiles with a hidden (query, key) pair): the keys [lo, hi) of the lane's query
    const int n0 = t * Cfg::kBlockN;
    if (walk.needs_mask(n0)) {
#pragma unroll
      for (int qb = 0; qb < kQB; ++qb) {
        const int q = qw0 + qb * kN + lane_q;
        const int lo = mask.row_lo(q) - n0, hi = mask.row_hi(q) - n0;
#pragma unroll
        for (int kb = 0; kb < kKB; ++kb)
#pragma unroll
          for (int r = 0; r < kCI; ++r) {
            const int key = kb * kM + L::c_row(r, lane);
            if (key < lo || key >= hi) s[kb][qb][r] = attn::kNegInf;
          }
      }
    }

    // online softmax; P^T as B operands
    BOp pf[kQB][kPC];
#pragma unroll
    for (int qb = 0; qb < kQB; ++qb) {
      float mx = attn::kNegInf;
#pragma unroll
      for (int kb = 0; kb < kKB; ++kb)
#pragma unroll
        for (int r = 0; r < kCI; ++r) mx = attn::fmax_f32(mx, s[kb][qb][r]);
#pragma unroll
      for (int x = kN; x < 64; x <<= 1) mx = attn::fmax_f32(mx, attn::xor_shuffle(mx, x, lane));
      float mb;
      const float alpha = attn::online_max(m_run[qb], mx, sl2, mb);
      float sum = 0.0f;
#pragma unroll
      for (int kb = 0; kb < kKB; ++kb)
#pragma unroll
        for (int r = 0; r < kCI; ++r) {
          const float pv = exp2_f32(s[kb][qb][r] * sl2 - mb);
          s[kb][qb][r] = pv;
          sum += pv;
        }
      l_run[qb] = l_run[qb] * alpha + sum;  // this lane's share of the row sum
#pragma unroll
      for (int db = 0; db < kDB; ++db) o[db][qb] *= alpha;
#pragma unroll
      for (int c = 0; c < kPC; ++c) {
        vec<T, kBI> v;
#pragma unroll
        for (int e = 0; e < kBI; ++e) {
          const int R = c * kBI + e;
          v.v[e] = from_float<T>(s[R / kCI][qb][R % kCI]);
        }
        pf[qb][c] = bit_cast<BOp>(v);
      }
    }

    // O^T += V^T . P^T, one (k step c, d block db) operand at a time, the next one read ahead (V^T
    // operands are kDB per k step: reading a whole step ahead costs too many registers at large d).
    // The V^T operand's items follow P^T's key order (runs of 4 keys).
    const T* vs = lds_v + buf * S::kVElems + v_frag;
    auto load_v = [&](int i) -> AOp {
      const int c = i / kDB, db = i % kDB;
      vec<T, kAI> w;
#pragma unroll
      for (int u = 0; u < kAI / 4; ++u) {
        const int R = c * kAI + 4 * u;
        const int key = (R / kCI) * kM + L::c_row(R % kCI, lane);
        const vec<T, 4> run = lds_load(reinterpret_cast<const vec<T, 4>*>(vs + db * kM * Cfg::kLdsVStride + key));
#pragma unroll
        for (int e = 0; e < 4; ++e) w.v[4 * u + e] = run.v[e];
      }
      return bit_cast<AOp>(w);
    };
    AOp va[2];
    va[0] = load_v(0);
#pragma unroll
    for (int i = 0; i < kPC * kDB; ++i) {
      if (i + 1 < kPC * kDB) va[(i + 1) & 1] = load_v(i + 1);
#pragma unroll
      for (int qb = 0; qb < kQB; ++qb) o[i % kDB][qb] = Cfg::mma(va[i & 1], pf[qb][i / kDB], o[i % kDB][qb]);
      attn::sched_fence();
    }
  };

  if (nt > 0) {
    const int t_last = walk.t_last;
    if constexpr (Cfg::kLdsBuffers == 2) {
      gload_tiles(t_last);
      store_tiles(0);
      barrier();
      for (int j = 0; j < nt; ++j) {
        const int cur = j & 1;
        const bool more = j + 1 < nt;
        if (more) gload_tiles(t_last - j - 1);
        compute(cur, t_last - j);
        if (more) store_tiles(cur ^ 1);
        barrier();  // buffer cur^1 is complete; every wave is done reading buffer cur
      }
    } else {
      gload_tiles(t_last);
      for (int j = 0; j < nt; ++j) {
        if (j > 0) barrier();  // every wave is done reading the previous tile
        store_tiles(0);
        barrier();
        if (j + 1 < nt) gload_tiles(t_last - j - 1);
        compute(0, t_last - j);
      }
    }
  }

  // ---- epilogue: O = O^T / l, LSE
  T* og = p.O + pr.o;
  const bool o_al = blk::is_aligned(og, p.o_seq_stride, 4);
#pragma unroll
  for (int qb = 0; qb < kQB; ++qb) {
    float l = l_run[qb];
#pragma unroll
    for (int x = kN; x < 64; x <<= 1) l += attn::xor_shuffle(l, x, lane);
    float lse;
    const float inv = attn::finish_row(m_run[qb], l, p.scale, lse);
    const int q = qw0 + qb * kN + lane_q;
    if (q < sq) {
      if (p.LSE != nullptr && lane < kN) gstore(p.LSE + pr.lse + q, lse);
      T* orow = og + static_cast<long long>(q) * p.o_seq_stride;
#pragma unroll
      for (int db = 0; db < kDB; ++db) {
#pragma unroll
        for (int r0 = 0; r0 < kCI; r0 += 4) {  // items r0 .. r0+3: 4 consecutive d of this query
          const int d = db * kM + L::c_row(r0, lane);
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

}  // namespace attn_amd

// The device entry's call: the kernel's arguments in the ABI's order, gathered into Cfg::Args
// (attention_common.h).
template <class Cfg, class... A>
CKGEN_DEVICE void attention_fwd_amd(A... args) {
  attn_amd::fwd<Cfg>(attn::Args<Cfg>{args...});
}

}  // namespace ckgen
