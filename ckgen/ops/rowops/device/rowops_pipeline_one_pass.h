// rowops_pipeline_one_pass.h (ckgen/ops/rowops/device): the one-pass pipeline of the row ops (Cfg::kLooped ==
// false): the row is one tile in registers, read once (cols <= kTileCols) and y written once. Its statistics are
// the kind's one_pass (rowops_kinds.h): softmax m (max) then d (sum of 2^(t - m)); layer norm the mean then
// sum (v - mean)^2 (the exact two-pass variance); RMS norm one all-reduce (sum v^2). Then RowGroup::output (rowops_row.h).
//
//   OnePassPipeline<P, Src, Wts>::run   one row group: Src GlobalSource (rowops_row.h) or StagedSource (below);
//                                       Wts TileWeights, or BatchedWeights (rowops_pipeline_bounded.h)
//   StagedSource<P>                     pass 1 from the staged ring (Cfg::kStages > 0, rowops_stages.h): tile 0 of
//                                       row group g comes from stage `stage`, refilled with group g + kStages *
//                                       gstride once read (issue: the copies of one row group into a stage)
#pragma once

#include "ckgen/platform.h"
#include "rowops_default_policy.h"
#include "rowops_math.h"
#include "rowops_problem.h"
#include "rowops_row.h"

namespace ckgen {
namespace rowops {

template <class P>
struct OnePassStats {

  // The row scalars of the tile in g.buf (the whole row); src.refill() and g.fast are done once the tile's own
  // statistics are taken, before the all-reduces.
  template <class Src>
  CKGEN_DEVICE static RowScalars run(RowGroup<P>& g, Src& src, RowReduce<P>& red) {
    const typename RowGroup<P>::Stats ts{g.buf, g.k};
    return P::Kind::one_pass(ts, g.k.full, g.e, g.a.eps, red, [&] {
      src.refill();
      g.fast = g.fast_tile();
    });
  }
};

template <class P, class Src, class Wts>
struct OnePassPipeline {
  static_assert(P::kSingle, "OnePassPipeline: a single-pass configuration (kLooped == false)");

  // one row group: Src is built from the group and `more` (the source's own arguments)
  template <class... More>
  CKGEN_ROWOPS_STEP static void run(const RowArgs<P>& a, const RowEnv<P>& e, RowReduce<P>& red, long long grp,
                               const More&... more) {
    RowGroup<P> g(a, e, grp);
    Src src(g, more...);
    Wts wts;
    src.first(g, 0);
    const RowScalars rs = OnePassStats<P>::run(g, src, red);
    g.output(rs, src, wts, red);
  }
};

template <class P>
struct StagedSource {
  const typename P::Ring& ring;
  const RowArgs<P>& a;
  const RowEnv<P>& e;
  int stage;    // the stage row group g is in
  long long g;  // the row group

  CKGEN_DEVICE StagedSource(const RowGroup<P>& grp, const typename P::Ring& r, int s, long long gi)
      : ring(r), a(grp.a), e(grp.e), stage(s), g(gi) {}

  // Issue the copies of tile `tile` of row group grp into stage s (this thread's vectors; nothing for rows past
  // the end).
  CKGEN_ROWOPS_STEP static void issue(const typename P::Ring& ring, const RowArgs<P>& a, const RowEnv<P>& e, int s,
                                 long long grp, int tile = 0) {
    const long long row = grp * P::kRowsPerBlock + e.tid / P::kRowThreads;
    const typename P::Counts k = RowPolicy<P>::counts(row < a.rows ? a.cols : 0, tile, e.rt);
    const long long tcol = static_cast<long long>(e.rt) * P::kVec + RowPolicy<P>::col0(tile, 0);
    const typename P::TRes* rr = nullptr;
    if constexpr (P::kResidual) rr = a.residual + (row * a.stride_res + tcol);
    ring.issue(s, a.x + (row * a.stride_x + tcol), rr, k);
  }

  CKGEN_ROWOPS_STEP void first(RowGroup<P>& grp, int tile) {
    grp.set_tile(tile);
    if constexpr (P::kResidual) {
      typename P::FX xv[P::kR];
      typename P::FR rv[P::kR];
#pragma unroll
      for (int j = 0; j < P::kR; ++j) {
        xv[j] = ring.read_x(stage, j, grp.k.nv(j));
        rv[j] = ring.read_r(stage, j, grp.k.nv(j));
      }
      grp.add_residual(xv, rv, tile);
    } else {
#pragma unroll
      for (int j = 0; j < P::kR; ++j) grp.buf[j] = ring.read_x(stage, j, grp.k.nv(j));
    }
  }
  CKGEN_DEVICE void again(RowGroup<P>& grp, int tile) { grp.reload_global(tile); }
  // The stage just read is free once its values are used: refill it with the group kStages ahead.
  CKGEN_ROWOPS_STEP void refill() {
    const long long gn = g + static_cast<long long>(P::kStages) * e.gstride;
    if (gn < e.ngroups) issue(ring, a, e, stage, gn);
    detail::cp_commit();
  }
};

}  // namespace rowops
}  // namespace ckgen
