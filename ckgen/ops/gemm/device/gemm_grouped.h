// gemm_grouped.h (ckgen/ops/gemm/device): grouped GEMM (mixture of experts) on the portable bodies
// (gemm_mfma.h on AMD and the emulator, gemm_mma_sm90.h on NVIDIA). The planner gives kernels with
// `mode = grouped` or `mode = masked` this header and `ckgen::gemm_grouped::grouped` / `masked` as their entry.
//
//   C_g = Epilogue(alpha * A_g.B[g] + beta * C_g) for every group g of `groups`, sharing N and K.
//   grouped: A_g / C_g are rows [end[g-1], end[g]) of A (M x K) / C (M x N), end = the offsets tensor
//            (cumulative end rows, torch._grouped_mm's offs; end[-1] = 0);
//   masked:  A_g / C_g are the first counts[g] rows of item g of A (groups x M x K) / C (groups x M x N).
// B[g] is item g of B (groups x K x N, stride_b apart). The epilogue operand (the bias, with the residual of
// `-> residual`: R laid out as C) moves with the group's bias; R follows C's moves by itself (epi::Residual). bias(col) is per group (stride_bias apart); bias(row)
// per row: of A (grouped) or of item g (masked, stride_bias apart). Scales (grouped only) move per group too
// (epi::for_group: A's per row from the group's first row, B's per group).
//
// Schedule: one persistent launch. Workgroup w of the grid's P takes tiles w, w + P, w + 2P, ... of the
// sequence of all groups' C tiles (group by group; in a group, row tile by row tile; in a row tile, N tiles in
// order). A workgroup walks the groups once, in order, keeping the number of tiles before its current group:
// O(groups + its tiles) work and no host loop, no workspace, no per-group launch. Empty groups have no tiles.
// Each tile runs the body's tile function with the operands offset to the group's first row (its M the
// group's rows: edge tiles are masked by the body), so the body's LDS layouts, fragments and epilogues are
// the plain GEMM's. Offsets and counts are clamped to 0..M as they are read (group g's end at least group
// g-1's): a malformed index tensor never moves an access outside the matrices. Any grid P >= 1 is correct.
#pragma once

#include "ckgen/platform.h"
#include "gemm_group_walk.h"
#if defined(CKGEN_PLATFORM_CUDA)
#include "gemm_mma_sm90.h"
#else
#include "gemm_mfma.h"
#endif

namespace ckgen {
namespace gemm_grouped {

// The platform body's tile of C at (m0, n0).
template <class C>
CKGEN_DEVICE void tile(const typename C::TA* A, const typename C::TB* B, typename C::TC* Cp,
                       epi::Operand<C> bias, int M, int N, int K, long long lda, long long ldb, long long ldc,
                       int m0, int n0) {
#if defined(CKGEN_PLATFORM_CUDA)
  nv::Sm90Gemm<C>::run_tile(A, B, Cp, bias, M, N, K, lda, ldb, ldc, m0, n0, n0, N);
#else
  gemm_mfma_tile<C>(A, B, Cp, bias, M, N, K, lda, ldb, ldc, m0, n0, n0, N);
#endif
}

// Walk this workgroup's tiles (gemm_group_walk.h): visit(tile) for each, in order; a barrier between two (the
// last tile's LDS reads are done before the next one starts).
template <class Cfg, class Groups, class Visit>
CKGEN_DEVICE void walk(const Groups& groups_of, int groups, int N, Visit&& visit) {
  if (groups <= 0 || N <= 0) return;
  GroupCursor<Cfg, Groups> cursor(groups_of, groups, N);
  for (int t = block_id(0); cursor.seek(t); t += grid_dim(0)) {
    if (t >= grid_dim(0)) barrier();
    visit(cursor.at(t));
  }
}

// The sizes a tile's body gets, recomputed per tile from opaque values (ckgen/types.h): what the body derives
// from them is then not hoisted out of the walk as scalar state live across every tile, which would push the
// kernel past the SGPR budget.
CKGEN_DEVICE int per_tile(int x) { return CKGEN_UNIFORM(opaque(x)); }

// The offset of a group's first row in a matrix of leading dimension ld.
template <bool kRowMajor>
CKGEN_DEVICE long long row_offset(int row, long long ld) {
  return kRowMajor ? static_cast<long long>(row) * ld : static_cast<long long>(row);
}

// Whether the Cfg's epilogue has a per-row bias (else a bias is per column, or none).
template <class Cfg>
constexpr bool kBiasRow = Cfg::kHasBias && Cfg::kBiasRow;

// mode = grouped: A M x K, C M x N, rows sorted by group; offsets[g] the end row of group g.
template <class Cfg, class TI>
CKGEN_DEVICE void grouped(const typename Cfg::TA* A, const typename Cfg::TB* B, typename Cfg::TC* C,
                          epi::Operand<Cfg> bias, const TI* offsets, int M, int N, int K, int groups,
                          long long lda, long long ldb, long long ldc, long long stride_b, long long stride_bias) {
  walk<Cfg>(ByOffsets<TI>{offsets, M}, groups, N, [&](const GroupTile& tl) {
    const int g = tl.g, r0 = tl.row0;
    const epi::Operand<Cfg> bg =
        epi::for_group(!bias ? bias : kBiasRow<Cfg> ? bias + r0 : bias + g * stride_bias, r0, g);
    tile<Cfg>(A + row_offset<Cfg::kARowMajor>(r0, lda), B + g * stride_b, C + row_offset<Cfg::kCRowMajor>(r0, ldc),
              bg, tl.rows, per_tile(N), per_tile(K), lda, ldb, ldc, tl.m0, tl.n0);
  });
}

// mode = masked: A groups x M x K, C groups x M x N; counts[g] rows of item g are computed.
template <class Cfg, class TI>
CKGEN_DEVICE void masked(const typename Cfg::TA* A, const typename Cfg::TB* B, typename Cfg::TC* C,
                         epi::Operand<Cfg> bias, const TI* counts, int M, int N, int K, int groups,
                         long long lda, long long ldb, long long ldc, long long stride_a, long long stride_b,
                         long long stride_c, long long stride_bias) {
  walk<Cfg>(ByCounts<TI>{counts, M}, groups, N, [&](const GroupTile& tl) {
    const long long gl = tl.g;
    tile<Cfg>(A + gl * stride_a, B + gl * stride_b, C + gl * stride_c, !bias ? bias : bias + gl * stride_bias,
              tl.rows, per_tile(N), per_tile(K), lda, ldb, ldc, tl.m0, tl.n0);
  });
}

}  // namespace gemm_grouped
}  // namespace ckgen
