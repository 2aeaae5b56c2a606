// gemm_sm90_tma_store.h (ckgen/ops/gemm/device): the Hopper GEMM body's TMA-store epilogue (gemm_sm90_tma.h,
// kTmaStoreC: 16-bit row-major C), one consumer warp's 16 rows of a tile at a time:
//   prefetch_residual  a residual R's rows -> the warp's staging, by cp.async, while the tile's main loop runs;
//   finish_c           the accumulators -> the finished, converted outputs in registers (COut, half their size),
//                      so that the next tile may be issued into the accumulators before the outputs are staged
//                      (a rotary Cfg: finish_rotated, its cos / sin gathered into the warp's staging first);
//   store_c_tma        COut -> the warp's swizzled staging boxes -> TMA stores that run on while the warp goes on;
//   store_c_rows       COut -> the same staging -> the warp's own stores of the rows below M (a grouped kernel's warp
//                      whose rows run past its group's, where a TMA box would cross into the next group).
// Body is the TmaGemmBody<Cfg> that uses it: its types (TC, Operand, COp, Epi) and tile constants (kFrags,
// kOutFrags, kOutN, kCBoxes, kGated, kResidual, kResChunk).
#pragma once

#include "gemm_mma_sm90.h"
#include "ckgen/blocks/nv_wgmma.h"

namespace ckgen {
namespace nv {

// A rotary Cfg's kRopeDim and kRopeHead (0 and 1 for any other Cfg, which has neither member)
CKGEN_CFG_OPTIONAL(RopeDimOf, kRopeDim, int, 0);
CKGEN_CFG_OPTIONAL(RopeHeadOf, kRopeHead, int, 1);

template <class Body>
struct TmaStoreEpilogue {
  using Config = typename Body::Config;
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
  static constexpr bool kRope = epi::IsRotary<Operand>::value;
  static constexpr int kResChunk = Body::kResChunk;
  // Rotary Cfgs whose tiles hold whole heads (every tile starts at a head: kOutN a multiple of kRopeHead) of at most
  // 16 x kCBoxes rotated pairs (rot / 2, a multiple of 32): the tile's cos / sin fit the warp's staging (16 rows x
  // rot / 2 pairs x 8 bytes) and are prefetched during the main loop (prefetch_rope); others gather 64 columns'
  // worth at a time in the epilogue.
  static constexpr int kRopePairs = RopeDimOf<Config>::value / 2;  // (0 without rope)
  static constexpr bool kRopePrefetch = kRope && kRopePairs <= 16 * kCBoxes && kRopePairs % 32 == 0 &&
                                        kOutN % RopeHeadOf<Config>::value == 0;

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
    if constexpr (kRope) {
      finish_rotated(acc, row0, m0, n0, C, bias, M, N, ldc, lane, sp, out);
      return;
    }
    const int g = lane >> 2, t = lane & 3;
    // the operands of the thread's two rows (a row scale read once per row: epi::RowBound)
    using Bound = epi::RowBound<Config>;
    using RowEpi = Sm90Epilogue<typename Bound::type>;  // (Epi itself unless the rows are scaled)
    const epi::Operand<typename Bound::type> ops[2] = {Bound::bind(bias, m0 + row0 + g, M),
                                                       Bound::bind(bias, m0 + row0 + g + 8, M)};
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
          out.v[j][h] = RowEpi::template pair<decltype(checked)::value, kResidual>(
              acc[0][j].r[2 * h], acc[0][j].r[2 * h + 1], acc[0][j + kUp].r[2 * h], acc[0][j + kUp].r[2 * h + 1],
              row, col, C, off, ops[h], M, N, r);
        }
        // A residual's reads stay within kResChunk fragments (a compiler barrier): hoisted for the whole tile, they
        // would not fit beside the accumulators and the outputs in the consumers' registers.
        if constexpr (kResidual) {
          if (j % kResChunk == kResChunk - 1) asm volatile("" ::: "memory");
        }
      }
    };
    if (RowEpi::unchecked(m0 + row0, n0, 16, kOutN, M, N)) pairs(BoolConst<false>{});
    else pairs(BoolConst<true>{});
  }

  // The table entries of the warp's 16 rows -> the warp's staging, by 4-byte cp.async (one commit group): entry
  // i < kEntries of row r (lane i % 32 copies it) is the cosine at column col(i) of the table row of r's position, at
  // word r * kEntries + (i ^ 4 (r & 7)), and its sine (column col(i) + rot / 2) 16 * kEntries words on:
  // conflict-free for these writes and for finish_rotated's reads. No registers wait on the copies, so all are in
  // flight at once. pos_lane: lane r's row position (lanes 0..15). Rows past M and positions outside the table copy
  // table row 0 (never a read outside it; finish_rotated drops them); a table of no rows is not read. kUnroll: rows
  // per unrolled step.
  template <int kEntries, int kUnroll, class Col>
  static CKGEN_DEVICE void copy_rope_rows(const Operand& r, int pos_lane, int lane, uint32_t st, Col col) {
    static_assert(kEntries % 32 == 0, "copy_rope_rows: whole warps of entries");
    if (r.npos > 0) {
#pragma unroll kUnroll
      for (int row = 0; row < 16; ++row) {
        const int pos = __shfl_sync(0xffffffffu, pos_lane, row);
        const float* src = r.cos_sin + (pos >= 0 && pos < r.npos ? static_cast<long long>(pos) * r.cs_stride : 0);
#pragma unroll
        for (int k = 0; k < kEntries / 32; ++k) {
          const int i = lane + 32 * k;
          const uint32_t w = st + 4 * (row * kEntries + (i ^ (4 * (row & 7))));
          cp_async4(w, src + col(i));
          cp_async4(w + 4 * 16 * kEntries, src + col(i) + Config::kRopeDim / 2);
        }
      }
    }
    cp_async_commit();
  }

  // kRopePrefetch: every pair i < kRopePairs of the warp's 16 rows (copy_rope_rows), issued at the start of the
  // tile's main loop so that the copies land while it runs (finish_rotated waits for them). The staging is first
  // released by the warp's previous TMA stores (bulk_wait_read), as for a residual.
  static CKGEN_DEVICE void prefetch_rope(const Operand& r, int row0, int m0, int n0, int M, int N, int lane,
                                         uint32_t st) {
    const int prow = m0 + row0 + (lane & 15);
    const int pos_lane = prow < M ? gload(r.positions + prow) : 0;
    if (lane == 0) bulk_wait_read<0>();
    __syncwarp();
    copy_rope_rows<kRopePairs, 1>(r, pos_lane, lane, st, [](int i) { return i; });
  }

  // Rotary Cfgs without kRopePrefetch: the 32 pairs of one 64-column segment of the tile (fragments 8 sg .. 8 sg + 7,
  // pair p at column n0 + 64 sg + 2p) of the warp's 16 rows (copy_rope_rows: 4 KiB), gathered in the epilogue (read
  // one by one from global memory instead, the pairs' table reads cost 25 us per 128 x 256 tile on an H100: the
  // table does not stay in an L1 beside the pipeline). A pair not rotated copies a column of its own (32 lanes on
  // one word measured slower).
  static CKGEN_DEVICE void gather_rope(const Operand& r, int pos_lane, int sg, int n0, int N, int lane, uint32_t st) {
    constexpr int kRot = Config::kRopeDim;
    const int col = n0 + 64 * sg + 2 * lane, d = col % Config::kRopeHead;
    const int off = epi::rope_rotates<Config>(r, col, d, col + 1 < N) ? d / 2 : lane % (kRot / 2);
    copy_rope_rows<32, 4>(r, pos_lane, lane, st, [off](int) { return off; });
  }

  // finish_c of a rotary Cfg: the tile's table entries prefetched into the staging (kRopePrefetch), or per 64-column
  // segment gathered there (gather_rope), then each pair of outputs finished (Epi::value_of), rotated at its row's
  // position and converted. A pair is rotated when both outputs lie in C, its column is below rope_cols and its head
  // dim below kRopeDim; a row whose position lies outside the table gets NaN there. The staging is the warp's C staging: free once the previous tile's TMA
  // stores have read it, and store_c_tma overwrites it after.
  static CKGEN_DEVICE void finish_rotated(const COp (&acc)[1][kFrags], int row0, int m0, int n0, const TC* C,
                                          Operand bias, int M, int N, long long ldc, int lane,
                                          const unsigned char* sp, COut& out) {
    static_assert(kOutFrags % 8 == 0 && !kGated && !kResidual, "rotary: whole 64-column segments, plain outputs");
    static_assert(kCBoxes * 2048 >= 4096, "rotary: a segment's table takes 4 KiB of the warp's staging");
    constexpr int kHead = Config::kRopeHead;
    const int g = lane >> 2, t = lane & 3;
    const int prow = m0 + row0 + (lane & 15);
    const int pos_lane = prow < M ? gload(bias.positions + prow) : 0;
    bool inside[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int pos = __shfl_sync(0xffffffffu, pos_lane, g + 8 * h);
      inside[h] = pos >= 0 && pos < bias.npos;
    }
    const float* tab = reinterpret_cast<const float*>(sp);
    const float nan = epi::rope_outside();
    if constexpr (kRopePrefetch) {
      cp_async_wait<0>();  // prefetch_rope's copies have landed
    } else if (lane == 0) {
      bulk_wait_read<0>();  // the previous tile's TMA stores have read the staging
    }
    __syncwarp();
#pragma unroll
    for (int sg = 0; sg < kOutFrags / 8; ++sg) {
      if constexpr (!kRopePrefetch) {
        gather_rope(bias, pos_lane, sg, n0, N, lane, smem_addr(sp));
        cp_async_wait<0>();
        __syncwarp();
      }
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const int j = 8 * sg + jj;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = m0 + row0 + g + 8 * h, col = n0 + 8 * j + 2 * t, r = g + 8 * h;
          const long long off = static_cast<long long>(row) * ldc + col;
          const bool in0 = row < M && col < N, in1 = row < M && col + 1 < N;
          float v0 = in0 ? Epi::value_of(acc[0][j].r[2 * h], acc[0][j].r[2 * h], row, col, C, off, bias, N) : 0.0f;
          float v1 =
              in1 ? Epi::value_of(acc[0][j].r[2 * h + 1], acc[0][j].r[2 * h + 1], row, col + 1, C, off + 1, bias, N)
                  : 0.0f;
          // (n0 is a multiple of kOutN; prefetched: also of kRopeHead, so d = 8j % kHead + 2t, its pair 4j' + t)
          const int d = kRopePrefetch ? (8 * j) % kHead + 2 * t : col % kHead;
          const bool rot = epi::rope_rotates<Config>(bias, col, d, in0 && in1);
          int w, sines;  // the pair's words in the staging: prefetch_rope's layout, or gather_rope's
          if constexpr (kRopePrefetch) {
            w = r * kRopePairs + (((((8 * j) % kHead) / 2 % kRopePairs) ^ (4 * g)) + t);
            sines = 16 * kRopePairs;
          } else {
            w = r * 32 + ((4 * jj + t) ^ (4 * (r & 7)));
            sines = 512;
          }
          const float c = !rot ? 1.0f : inside[h] ? tab[w] : nan;
          const float s = !rot ? 0.0f : inside[h] ? tab[w + sines] : nan;
          rope_rotate(v0, v1, c, s);
          out.v[j][h] = Epi::pack(v0, v1);
        }
      }
      // this segment's reads done before the next gather overwrites the staging (prefetched: the barrier keeps the
      // table reads of the whole tile from being hoisted beside the accumulators)
      __syncwarp();
    }
  }

  // out (finish_c's) -> the warp's kCBoxes swizzled 16 x 64 boxes (16-byte chunk c of row r at chunk c ^ (r & 7):
  // conflict-free), once the warp's previous TMA stores have read them (bulk_wait_read).
  static CKGEN_DEVICE void stage(const COut& out, int lane, unsigned char* sp) {
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
  }

  // out -> the staging (stage) -> TMA stores of rows m0 + row0 .. +15 of item b of the tensor map (rows and columns
  // past its extents are not written). The stores run on while the warp goes on with its next tile; the staging is
  // reused only after they have read it.
  static CKGEN_DEVICE void store_c_tma(const COut& out, int row0, int m0, int n0, int b, int lane, uint32_t st,
                                       unsigned char* sp, const TensorMap& tc) {
    stage(out, lane, sp);
    fence_proxy_async_shared();
    __syncwarp();
    if (lane == 0) {
#pragma unroll
      for (int box = 0; box < kCBoxes; ++box) tma_store_3d(&tc, st + box * 2048, n0 + 64 * box, m0 + row0, b);
      bulk_commit();
    }
  }

  // out -> the staging (stage) -> rows m0 + row0 .. +15 of C below M, columns below N, by the warp's own stores:
  // 16 bytes at a time where C's rows are 16-byte aligned and N a multiple of 8 (`aligned`: what a TMA-stored C
  // needs too), else element by element. For the warps whose rows a TMA box may not cover (a grouped kernel's
  // rows past its group's, or a C no tensor map takes).
  static CKGEN_DEVICE void store_c_rows(const COut& out, int row0, int m0, int n0, TC* C, int M, int N, long long ldc,
                                        int lane, unsigned char* sp, bool aligned) {
    constexpr int kRowChunks = kOutN / 8;  // 16-byte chunks of one row of the tile
    stage(out, lane, sp);
    __syncwarp();
    const int rows = M - m0 - row0;  // the warp's rows inside C (at most 16; none when <= 0)
#pragma unroll 4
    for (int q = lane; q < 16 * kRowChunks; q += 32) {
      const int r = q / kRowChunks, c = q % kRowChunks, col = n0 + 8 * c;
      if (r >= rows || col >= N) continue;
      TC* const dst = C + static_cast<long long>(m0 + row0 + r) * ldc + col;
      const unsigned char* const src = sp + staged(c, r, 0);
      if (aligned) {
        *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
      } else {
        for (int e = 0; e < 8 && col + e < N; ++e) dst[e] = reinterpret_cast<const TC*>(src)[e];
      }
    }
  }
#endif
};

}  // namespace nv
}  // namespace ckgen
