// gemm_sm90_tma_store.h (ckgen/ops/gemm/device): the Hopper GEMM body's TMA-store epilogue (gemm_sm90_tma.h,
// kTmaStoreC: 16-bit row-major C of a dense kernel), one consumer warp's 16 rows of a tile at a time:
//   prefetch_residual  a residual R's rows -> the warp's staging, by cp.async, while the tile's main loop runs;
//   finish_c           the accumulators -> the finished, converted outputs in registers (COut, half their size),
//                      so that the next tile may be issued into the accumulators before the outputs are staged;
//   store_c_tma        COut -> the warp's swizzled staging boxes -> TMA stores that run on while the warp goes on.
// Body is the TmaGemmBody<Cfg> that uses it: its types (TC, Operand, COp, Epi) and tile constants (kFrags,
// kOutFrags, kOutN, kCBoxes, kGated, kResidual, kResChunk).
#pragma once

#include "gemm_mma_sm90.h"
#include "ckgen/blocks/nv_wgmma.h"

namespace ckgen {
namespace nv {

template <class Body>
struct TmaStoreEpilogue {
  using TC = typename Body::TC;
  using Operand = typename Body::Operand;
  using COp = typename Body::COp;
  using Epi = typename Body::Epi;
  static constexpr int kFrags = Body::kFrags;
  static constexpr int kOutFrags = Body::kOutFrags;
  static constexpr int kOutN = Body::kOutN;
  static constexpr int kCBoxes = Body::kCBoxes;
  static constexpr bool kGated = Body::kGated;
  static constexpr bool kResidual = Body::kResidual;
  static constexpr int kResChunk = Body::kResChunk;

#if defined(CKGEN_NV_WGMMA)
  // The TMA-store epilogue's outputs of the warp's 16 rows (row0 .. row0+15 of the tile) x kTileN columns, in
  // registers: v[j][h] holds columns 8j + 2t, +1 of row g + 8h (g = lane / 4, t = lane % 4), finished and
  // converted (Epi::pair). Kept apart from the accumulators so that the next tile may be issued into those
  // before the outputs are staged (kOverlapEpilogue).
  struct COut {
    vec<TC, 2> v[kOutFrags][2];
  };

  // Byte offset in a warp's staging of the pair of outputs (row r of its 16, columns 8j + 2t, +1): box j / 8,
  // 16-byte chunk j % 8 of the row at chunk (j % 8) ^ (r % 8) (the 128-byte swizzle: conflict-free).
  static constexpr int staged(int j, int r, int t) { return (j >> 3) * 2048 + r * 128 + (((j & 7) ^ (r & 7)) << 4) + 4 * t; }

  // Residual Cfgs with the TMA-store epilogue: the warp's rows m0 + row0 .. +15 x columns n0 .. n0 + kOutN - 1 of
  // R -> its staging at staged() places, by cp.async (chunks past M / N arrive as zeros; N is a multiple of 8
  // with a TMA-stored C), one commit group; the epilogue waits for it (cp_async_wait<0> + __syncwarp) before
  // finish_c. The staging is first released by the warp's previous TMA stores (bulk_wait_read).
  static CKGEN_DEVICE void prefetch_residual(const TC* C, Operand op, int row0, int m0, int n0, int M, int N,
                                             long long ldc, int lane, uint32_t st) {
    constexpr int kRowChunks = kOutN / 8;  // 16-byte chunks of one row
    if (lane == 0) bulk_wait_read<0>();
    __syncwarp();
#pragma unroll
    for (int i = 0; i < kRowChunks / 2; ++i) {  // 16 rows x kRowChunks chunks over 32 lanes
      const int q = lane + 32 * i;
      const int r = q / kRowChunks, c = q % kRowChunks;
      const int row = m0 + row0 + r, col = n0 + 8 * c;
      const bool in = row < M && col < N;
      cp_async16_zfill(st + staged(c, r, 0), op.ptr(C, in ? static_cast<long long>(row) * ldc + col : 0), in ? 16 : 0);
    }
    cp_async_commit();
  }

  // acc (the warp's fragments of the tile) -> out. Outputs past M / N are computed (and dropped by the TMA
  // store) unless the epilogue reads memory there. A residual comes from the warp's staging sp
  // (prefetch_residual).
  static CKGEN_DEVICE void finish_c(const COp (&acc)[1][kFrags], int row0, int m0, int n0, const TC* C,
                                    Operand bias, int M, int N, long long ldc, int lane, const unsigned char* sp,
                                    COut& out) {
    const int g = lane >> 2, t = lane & 3;
    auto pairs = [&](auto checked) {
      constexpr int kUp = kGated ? kFrags / 2 : 0;  // (gated: fragment j's up is j + kUp)
#pragma unroll
      for (int j = 0; j < kOutFrags; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = m0 + row0 + g + 8 * h;
          const int col = n0 + 8 * j + 2 * t;
          const long long off = static_cast<long long>(row) * ldc + col;
          vec<TC, 2> r{};  // (a residual's pair, from the staging)
          if constexpr (kResidual) r = *reinterpret_cast<const vec<TC, 2>*>(sp + staged(j, g + 8 * h, t));
          out.v[j][h] = Epi::template pair<decltype(checked)::value, kResidual>(
              acc[0][j].r[2 * h], acc[0][j].r[2 * h + 1], acc[0][j + kUp].r[2 * h], acc[0][j + kUp].r[2 * h + 1],
              row, col, C, off, bias, M, N, r);
        }
        // A residual's reads stay within kResChunk fragments (a compiler barrier): hoisted for the whole tile, they
        // would not fit beside the accumulators and the outputs in the consumers' registers.
        if constexpr (kResidual) {
          if (j % kResChunk == kResChunk - 1) asm volatile("" ::: "memory");
        }
      }
    };
    if (Epi::unchecked(m0 + row0, n0, 16, kOutN, M, N)) pairs(BoolConst<false>{});
    else pairs(BoolConst<true>{});
  }

  // out (finish_c's) -> the warp's kCBoxes swizzled 16 x 64 boxes (16-byte chunk c of row r at chunk c ^ (r & 7):
  // conflict-free) -> TMA stores of rows m0 + row0 .. +15 of batch item b (rows and columns past M and N are not
  // written). The stores run on while the warp goes on with its next tile; the staging is reused only after
  // they have read it (bulk_wait_read).
  static CKGEN_DEVICE void store_c_tma(const COut& out, int row0, int m0, int n0, int b, int lane, uint32_t st,
                                       unsigned char* sp, const TensorMap& tc) {
    const int g = lane >> 2, t = lane & 3;
    if (lane == 0) bulk_wait_read<0>();
    __syncwarp();
#pragma unroll
    for (int j = 0; j < kOutFrags; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        *reinterpret_cast<vec<TC, 2>*>(sp + staged(j, g + 8 * h, t)) = out.v[j][h];
      }
    }
    fence_proxy_async_shared();
    __syncwarp();
    if (lane == 0) {
#pragma unroll
      for (int box = 0; box < kCBoxes; ++box) tma_store_3d(&tc, st + box * 2048, n0 + 64 * box, m0 + row0, b);
      bulk_commit();
    }
  }
#endif
};

}  // namespace nv
}  // namespace ckgen
