// rowops_pipeline_looped.h (ckgen/ops/rowops/device): the looped pipeline of the row ops (Cfg::kLooped, any cols):
// pass 1 walks the row's tiles forward and keeps a running state per thread (the kind's fold, rowops_kinds.h:
// softmax's (m, d): online softmax; layer norm's exact (n, mean, M2) of each tile merged into the running
// moments, Chan et al.; RMS norm's sum of v^2), all-reduced once at the end; then RowGroup::output (rowops_row.h). Rows longer than a tile read v again
// in the later passes, minus the tile that ends a pass: from global memory (GlobalSource) or from the row cache
// (rowops_pipeline_row_cached.h).
//
//   LoopedStats<P>::run(g, src, red)     pass 1: the row scalars
//   LoopedPipeline<P, Src, Wts>::run     one row group
#pragma once

#include "ckgen/platform.h"
#include "rowops_default_policy.h"
#include "rowops_math.h"
#include "rowops_problem.h"
#include "rowops_row.h"

namespace ckgen {
namespace rowops {

template <class P>
struct LoopedStats {
  using State = typename P::State;

  // the running state st with the tile in g.buf folded in (kM: a partial tile)
  template <class M>
  CKGEN_ROWOPS_STEP static void tile(const RowGroup<P>& g, M m, State& st) {
    const typename RowGroup<P>::Stats ts{g.buf, g.k};
    P::Kind::fold(ts, m, g.e.c, st);
  }

  template <class Src>
  CKGEN_DEVICE static RowScalars run(RowGroup<P>& g, Src& src, RowReduce<P>& red) {
    State st = State::init();
    for (int t = 0; t < g.ntiles(); ++t) {
      src.first(g, t);
      by_mask(g.k.full, g.e.vec_row, [&](auto m) CKGEN_ROWOPS_LAMBDA_FORCED { tile(g, m, st); });
    }
    st = red.state(st);
    return P::Kind::finish(st, g.a.cols, g.a.eps);
  }
};

template <class P, class Src, class Wts>
struct LoopedPipeline {
  static_assert(!P::kSingle, "LoopedPipeline: a looped configuration (kLooped)");

  // one row group: Src is built from the group and `more` (the source's own arguments). Inlined whole (not a
  // step): as a step, clang 22 spills an SGPR on gfx90a in residual kernels (tests/ops/rowops, rung 1).
  template <class... More>
  CKGEN_DEVICE static void run(const RowArgs<P>& a, const RowEnv<P>& e, RowReduce<P>& red, long long grp,
                               const More&... more) {
    RowGroup<P> g(a, e, grp);
    Src src(g, more...);
    Wts wts;
    const RowScalars rs = LoopedStats<P>::run(g, src, red);
    g.output(rs, src, wts, red);
  }
};

}  // namespace rowops
}  // namespace ckgen
