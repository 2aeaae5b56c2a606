// gemm_mma_sm90_epilogue.h (ckgen/ops/gemm/device): the store of C of the NVIDIA GEMM bodies, Sm90Epilogue<Cfg>.
// The mma.sync body (gemm_mma_sm90.h: Sm90Gemm<Cfg> derives from it, so Sm90Gemm<Cfg>::store_c and the rest name
// these) and the Hopper body (gemm_sm90_tma.h, through Sm90Gemm<Cfg>) store their accumulators with it.
//
// Accumulators (mma.sync and wgmma layouts alike): acc[i][j].r[2h + e] of a warp holds the output at row
// m0 + wrow + 16 i + g + 8 h, column n0 + wcol + 8 j + 2 t + e (g = lane / 4, t = lane % 4). Gated Cfgs (swiglu,
// geglu; blocks/epilogue.h): fragment j < RN / 2 is a gate and j + RN / 2 its up; the warp writes C from column
// n0 + wcol / 2.
//
//   store_c<RM, RN>            C = Epilogue(alpha * acc + beta * C) from the registers: pairs of outputs per store
//                              on row-major C (interior tiles without bounds tests), single elements otherwise
//   store_c_staged<RM, RN, k>  row-major C through the warp's shared-memory buffer (kStagingBytesOf<k> bytes),
//                              16 rows x 8k columns at a time, written out as 16-byte row-contiguous stores
//   pair, value_of, finish_of, unchecked
//                              one pair of outputs as staged (also the Hopper body's TMA store of C)
// Rotary Cfgs (rope = gptj(...), blocks/epilogue.h): pair() rotates each pair of finished outputs (pack_pair), and
// store_c writes every output through pair().
// Every output is bounds-checked against M and N (or, when the epilogue reads no memory, computed and dropped):
// no access leaves C, the bias or the residual. Cfg members read: TC, COperand, kTileM, kCRowMajor, the
// epilogue's (epi::Operand, gated, out_tile_n, finish, value), and optionally kAddStores.
#pragma once

#include "ckgen/blocks/epilogue.h"
#include "ckgen/blocks/nv_mma.h"
#include "ckgen/blocks/nv_smem.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {
namespace nv {

// kAddStores: C's element type stores by adding (atomic split-K slots, gemm_work.h): every store goes through
// gstore, so the shared-memory staged epilogue (plain 16-byte stores) is off
CKGEN_CFG_OPTIONAL(AddStoresOf, kAddStores, bool, false);

template <class Cfg>
struct Sm90Epilogue {
  using TC = typename Cfg::TC;
  using COp = typename Cfg::COperand;
  using Operand = epi::Operand<Cfg>;  // the bias pointer, or with the scales (epilogue.h)
  static constexpr bool kGated = epi::gated<Cfg>();
  static constexpr bool kRope = epi::rotary<Cfg>();  // rope = gptj(...): pairs rotated (pack_pair)
  static constexpr int kOutN = epi::out_tile_n<Cfg>();  // columns of C a tile writes

  // ---- epilogue through shared memory (row-major C): per warp, 16 rows x (kSub * 8) columns at a time go from
  // the accumulators (after finish()) to a staging buffer, then out as 16-byte row-contiguous stores, so that a
  // warp writes whole 32-byte sectors instead of 4-byte pieces of 8 rows. Only __syncwarp between the two: each
  // warp has its own buffer (`stage`, kStagingBytesOf<kSub> bytes).
  template <int kSub>
  static constexpr int kStagingPitch = kSub * 8 * static_cast<int>(sizeof(TC)) + 16;  // +16: conflict-free rows
  template <int kSub>
  static constexpr int kStagingBytesOf = 16 * kStagingPitch<kSub>;
  // fragments of RN a row of outputs takes (gated: the gates)
  template <int RN>
  static constexpr int kOutRN = kGated ? RN / 2 : RN;

  // The finished values of (row, col), (row, col + 1) as C's pair: rotated first by a rotary Cfg when both are in C
  // (col is even: every caller's column is n0 + ... + 2t).
  static CKGEN_DEVICE vec<TC, 2> pack_pair(float v0, float v1, bool both, int row, int col, Operand bias) {
    if constexpr (kRope) epi::rope_pair<Cfg>(v0, v1, row, col, both, bias);
    return pack(v0, v1);
  }
  static CKGEN_DEVICE vec<TC, 2> pack(float v0, float v1) {
    if constexpr (sizeof(TC) == 2) return bit_cast<vec<TC, 2>>(pack2<TC>(v0, v1));
    else return vec<TC, 2>{from_float<TC>(v0), from_float<TC>(v1)};
  }

  // The outputs at (row, col) and (row, col + 1) of accumulators a0, a1, as staged: finish() on each; with
  // kChecked, an output past M / N is zero and reads nothing. Unchecked calls past M / N are allowed only when
  // the epilogue reads no memory (epi::reads_memory), and the caller must drop those outputs. 16-bit TC: value()
  // and one pack2 for the pair (no per-element bounds branches, one cvt instead of a software rounding each).
  // (gated: u0, u1 the up accumulators of gates a0, a1; ignored otherwise)
  // kResidualIn (a residual Cfg, 16-bit C): the residuals of the two outputs are r, read by the caller, instead of
  // from R in global memory.
  template <bool kChecked, bool kResidualIn = false, class AccT>
  static CKGEN_DEVICE vec<TC, 2> pair(AccT a0, AccT a1, AccT u0, AccT u1, int row, int col, const TC* C,
                                      long long off, Operand bias, int M, int N, vec<TC, 2> r = vec<TC, 2>{}) {
    static_assert(!kResidualIn || (sizeof(TC) == 2 && epi::IsResidual<Operand>::value),
                  "kResidualIn: 16-bit C, a residual operand");
    const bool in0 = !kChecked || (row < M && col < N);
    const bool in1 = !kChecked || (row < M && col + 1 < N);
    if constexpr (sizeof(TC) == 2 || kRope) {
      auto value = [&](AccT a, AccT u, int c, long long o, int e) {
        if constexpr (kResidualIn) return value_of<false>(a, u, row, c, C, o, bias, N) + to_float(r.v[e]);
        else return value_of(a, u, row, c, C, o, bias, N);
      };
      const float v0 = in0 ? value(a0, u0, col, off, 0) : 0.0f;
      const float v1 = in1 ? value(a1, u1, col + 1, off + 1, 1) : 0.0f;
      return pack_pair(v0, v1, in0 && in1, row, col, bias);
    } else {
      vec<TC, 2> out;
      out.v[0] = in0 ? finish_of(a0, u0, row, col, C, off, bias, N) : zero<TC>();
      out.v[1] = in1 ? finish_of(a1, u1, row, col + 1, C, off + 1, bias, N) : zero<TC>();
      return out;
    }
  }
  template <bool kChecked, class AccT>
  static CKGEN_DEVICE vec<TC, 2> pair(AccT a0, AccT a1, int row, int col, const TC* C, long long off,
                                      Operand bias, int M, int N) {
    static_assert(!kGated, "pair: a gated Cfg passes the up accumulators too");
    const bool in0 = !kChecked || (row < M && col < N);
    const bool in1 = !kChecked || (row < M && col + 1 < N);
    if constexpr (sizeof(TC) == 2 || kRope) {
      const float v0 = in0 ? epi::value<Cfg>(a0, row, col, C, off, bias) : 0.0f;
      const float v1 = in1 ? epi::value<Cfg>(a1, row, col + 1, C, off + 1, bias) : 0.0f;
      return pack_pair(v0, v1, in0 && in1, row, col, bias);
    } else {
      vec<TC, 2> out;
      out.v[0] = in0 ? epi::finish<Cfg>(a0, row, col, C, off, bias) : zero<TC>();
      out.v[1] = in1 ? epi::finish<Cfg>(a1, row, col + 1, C, off + 1, bias) : zero<TC>();
      return out;
    }
  }

  // What output (row, col) of accumulator a (gated: gate a, up u) gives C before the cast, and its cast (n: N);
  // kAddRes false: without the residual (epi::value's kAddResidual).
  template <bool kAddRes = true, class AccT>
  static CKGEN_DEVICE float value_of(AccT a, AccT u, int row, int col, const TC* C, long long off, Operand bias,
                                     int n) {
    if constexpr (kGated) return epi::gated_value<Cfg, kAddRes>(a, u, row, col, n, C, off, bias);
    else return epi::value<Cfg, kAddRes>(a, row, col, C, off, bias);
  }
  template <class AccT>
  static CKGEN_DEVICE TC finish_of(AccT a, AccT u, int row, int col, const TC* C, long long off, Operand bias,
                                   int n) {
    if constexpr (kGated) return epi::finish_gated<Cfg>(a, u, row, col, n, C, off, bias);
    else return epi::finish<Cfg>(a, row, col, C, off, bias);
  }

  // Whether a region of C from (row0, col0), rows x cols, needs no bounds checks in pair(): it lies inside C, or
  // the epilogue reads no memory (outputs past M / N are then computed and dropped by the store).
  static CKGEN_DEVICE bool unchecked(int row0, int col0, int rows, int cols, int M, int N) {
    return !epi::reads_memory<Cfg>() || (row0 + rows <= M && col0 + cols <= N);
  }

  template <int RM, int RN, int kSub>
  static CKGEN_DEVICE void store_c_staged(const COp (&acc)[RM][RN], int wrow, int wcol, int m0, int n0, TC* C,
                                          Operand bias, int M, int N, long long ldc, int lane,
                                          unsigned char* stage) {
    constexpr int ORN = kOutRN<RN>;
    constexpr int kUp = kGated ? RN / 2 : 0;  // (gated: fragment j's up is j + kUp)
    static_assert(ORN % kSub == 0 && (kSub * 8 * sizeof(TC)) % 16 == 0, "staging: whole 16-byte chunks per row");
    static_assert(!AddStoresOf<Cfg>::value, "staging stores plainly: adding slots store through gstore");
    constexpr int kPitch = kStagingPitch<kSub>;
    constexpr int kVec = 16 / static_cast<int>(sizeof(TC));
    constexpr int kChunks = kSub * 8 / kVec;  // 16-byte chunks per staged row
    const int g = lane >> 2, t = lane & 3;
    const int ocol = kGated ? wcol / 2 : wcol;  // the warp's first column of C
    const bool vec_ok = aligned16(C, ldc, static_cast<int>(sizeof(TC)));
    using Bound = epi::RowBound<Cfg>;
    using RowEpi = Sm90Epilogue<typename Bound::type>;  // (this struct itself unless the rows are scaled)
    const bool fast = RowEpi::unchecked(m0 + wrow, n0 + ocol, 16 * RM, 8 * ORN, M, N);  // (the drain checks anyway)
#pragma unroll
    for (int i = 0; i < RM; ++i) {
      // the operands of the thread's two rows of fragment row i (a row scale read once per row: epi::RowBound)
      const int r0 = m0 + wrow + i * 16 + g;
      const epi::Operand<typename Bound::type> ops[2] = {Bound::bind(bias, r0, M), Bound::bind(bias, r0 + 8, M)};
#pragma unroll
      for (int j0 = 0; j0 < ORN; j0 += kSub) {
        auto stage_pairs = [&](auto checked) {
#pragma unroll
          for (int jj = 0; jj < kSub; ++jj) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int row = m0 + wrow + i * 16 + g + h * 8;
              const int col = n0 + ocol + (j0 + jj) * 8 + 2 * t;
              const long long off = static_cast<long long>(row) * ldc + col;
              vec<TC, 2>* dst = reinterpret_cast<vec<TC, 2>*>(stage + (g + h * 8) * kPitch + (jj * 8 + 2 * t) * sizeof(TC));
              if constexpr (kGated)
                *dst = RowEpi::template pair<decltype(checked)::value>(
                    acc[i][j0 + jj].r[2 * h], acc[i][j0 + jj].r[2 * h + 1], acc[i][j0 + jj + kUp].r[2 * h],
                    acc[i][j0 + jj + kUp].r[2 * h + 1], row, col, C, off, ops[h], M, N);
              else
                *dst = RowEpi::template pair<decltype(checked)::value>(acc[i][j0 + jj].r[2 * h],
                                                                       acc[i][j0 + jj].r[2 * h + 1], row, col, C, off,
                                                                       ops[h], M, N);
            }
          }
        };
        if (fast) stage_pairs(BoolConst<false>{});
        else stage_pairs(BoolConst<true>{});
        __syncwarp();
#pragma unroll
        for (int c = lane; c < 16 * kChunks; c += 32) {
          const int r = c / kChunks;
          const int row = m0 + wrow + i * 16 + r;
          const int col = n0 + ocol + j0 * 8 + (c % kChunks) * kVec;
          if (row >= M) continue;
          const unsigned char* src = stage + r * kPitch + (c % kChunks) * 16;
          TC* dst = C + static_cast<long long>(row) * ldc + col;
          if (vec_ok && col + kVec <= N) {
            *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
          } else {
#pragma unroll
            for (int e = 0; e < kVec; ++e)
              if (col + e < N) dst[e] = reinterpret_cast<const TC*>(src)[e];
          }
        }
        __syncwarp();
      }
    }
  }

  // ---- epilogue: C = Epilogue(alpha * acc + beta * C); acc[i][j].r[2h + e] holds row
  // m0 + wrow + 16 i + g + 8 h, column n0 + wcol + 8 j + 2 t + e (mma.sync and wgmma layouts alike).
  template <int RM, int RN>
  static CKGEN_DEVICE void store_c(const COp (&acc)[RM][RN], int wrow, int wcol, int m0, int n0, TC* C,
                                   Operand bias, int M, int N, long long ldc, int g, int t) {
    constexpr int ORN = kOutRN<RN>;
    constexpr int kUp = kGated ? RN / 2 : 0;    // (gated: fragment j's up is j + kUp)
    const int ocol = kGated ? wcol / 2 : wcol;  // the warp's first column of C
    // item e of fragment (i, j) at (row, col): one accumulator, or a gated pair
    auto finish = [&](int i, int j, int e, int row, int col, long long off) -> TC {
      return finish_of(acc[i][j].r[e], acc[i][j + kUp].r[e], row, col, C, off, bias, N);
    };
    if constexpr (kRope) {  // (row-major C: the planner's rule) every output through pair(), bounds-checked
#pragma unroll
      for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < ORN; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = m0 + wrow + i * 16 + g + h * 8, col = n0 + ocol + j * 8 + 2 * t;
            if (row >= M) continue;
            const long long off = static_cast<long long>(row) * ldc + col;
            const vec<TC, 2> v = pair<true>(acc[i][j].r[2 * h], acc[i][j].r[2 * h + 1], row, col, C, off, bias, M, N);
            if (col < N) gstore(C + off, v.v[0]);
            if (col + 1 < N) gstore(C + off + 1, v.v[1]);
          }
      return;
    }
    const bool pair_ok = Cfg::kCRowMajor && (reinterpret_cast<unsigned long long>(C) % (2 * sizeof(TC))) == 0 &&
                         (ldc % 2) == 0;
    if constexpr (Cfg::kCRowMajor) {
      // Interior tile: no bounds tests, so the epilogue's loads (bias, C) and math batch up instead of
      // running as a chain of short branches.
      if (pair_ok && m0 + Cfg::kTileM <= M && n0 + kOutN <= N) {
#pragma unroll
        for (int i = 0; i < RM; ++i) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = m0 + wrow + i * 16 + g + h * 8;
            vec<TC, 2> out[ORN];
#pragma unroll
            for (int j = 0; j < ORN; ++j) {
              const int col = n0 + ocol + j * 8 + 2 * t;
              const long long off = static_cast<long long>(row) * ldc + col;
              out[j].v[0] = finish(i, j, 2 * h, row, col, off);
              out[j].v[1] = finish(i, j, 2 * h + 1, row, col + 1, off + 1);
            }
#pragma unroll
            for (int j = 0; j < ORN; ++j) {
              const int col = n0 + ocol + j * 8 + 2 * t;
              gstore(reinterpret_cast<vec<TC, 2>*>(C + static_cast<long long>(row) * ldc + col), out[j]);
            }
          }
        }
        return;
      }
    }
#pragma unroll
    for (int i = 0; i < RM; ++i) {
#pragma unroll
      for (int j = 0; j < ORN; ++j) {
        const int col = n0 + ocol + j * 8 + 2 * t;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = m0 + wrow + i * 16 + g + h * 8;
          if (row >= M) continue;
          if constexpr (Cfg::kCRowMajor) {
            const long long off = static_cast<long long>(row) * ldc + col;
            if (pair_ok && col + 1 < N) {
              vec<TC, 2> out;
              out.v[0] = finish(i, j, 2 * h, row, col, off);
              out.v[1] = finish(i, j, 2 * h + 1, row, col + 1, off + 1);
              gstore(reinterpret_cast<vec<TC, 2>*>(C + off), out);
            } else {
              if (col < N) gstore(C + off, finish(i, j, 2 * h, row, col, off));
              if (col + 1 < N) gstore(C + off + 1, finish(i, j, 2 * h + 1, row, col + 1, off + 1));
            }
          } else {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const long long off = static_cast<long long>(col + e) * ldc + row;
              if (col + e < N) gstore(C + off, finish(i, j, 2 * h + e, row, col + e, off));
            }
          }
        }
      }
    }
  }
};

}  // namespace nv
}  // namespace ckgen
