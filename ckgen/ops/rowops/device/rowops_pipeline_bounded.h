// rowops_pipeline_bounded.h (ckgen/ops/rowops/device): the register-bounded one-pass pipeline of the row ops: the
// one-pass pipeline (rowops_pipeline_one_pass.h) compiled for more workgroups per SM than its tile would get
// unbounded (the planner's BOUNDED_SINGLE_PASS, CKGEN_LAUNCH_BOUNDS_MIN), with weight and bias of a fast tile read
// Cfg::kWeightBatch vectors at a time as its outputs are computed (BatchedWeights) rather than all kRegVecs
// before it: fewer registers live. With Cfg::kWeightAhead, the next batch is in flight while a batch is used.
//
//   BatchedWeights<P>            weight and bias of a fast tile in batches of kWB vectors (kWB < kR, a divisor)
//   BoundedPipeline<P, Src>      OnePassPipeline with BatchedWeights
#pragma once

#include "ckgen/platform.h"
#include "rowops_default_policy.h"
#include "rowops_pipeline_one_pass.h"
#include "rowops_problem.h"
#include "rowops_row.h"

namespace ckgen {
namespace rowops {

template <class P>
struct BatchedWeights {
  static_assert(P::kWB >= 1 && P::kWB < P::kR && P::kR % P::kWB == 0, "kWeightBatch: a divisor of kRegVecs below it");
  static constexpr bool kWhole = P::kWhole;  // whole-vector tiles take the fast path (RowGroup::by_kind)
  static constexpr int kNext = P::kWAhead ? P::kWB : 1;
  typename P::FW wt[P::kWB], bt[P::kWB];  // the batch vector j is in (wt[j % kWB])
  typename P::FW wn[kNext], bn[kNext];    // kWAhead: the batch after it, already asked for

  template <class M>
  CKGEN_DEVICE void prefetch(const RowGroup<P>&, int, M) {}
  // vector j of a fast tile, asked for in order j = 0, 1, ... (M: a whole-vector tile, this thread's vectors past
  // the row zero, not read). The batch that starts at j is loaded first; with kWAhead, the batch after it is
  // asked for before j's outputs are computed (and its own loads were asked for one batch earlier).
  template <class M>
  CKGEN_ROWOPS_STEP void get(const RowGroup<P>& g, int tile, int j, typename P::FW& w, typename P::FW& b, M) {
    if (j % P::kWB == 0) {
      if constexpr (P::kWAhead) {
        if (j == 0) {
          load(g, tile, 0, wt, bt, M{});
        } else {
#pragma unroll
          for (int i = 0; i < P::kWB; ++i) wt[i] = wn[i], bt[i] = bn[i];
        }
        if (j + P::kWB < P::kR) load(g, tile, j + P::kWB, wn, bn, M{});
      } else {
        load(g, tile, j, wt, bt, M{});
      }
    }
    if constexpr (P::kHasWeight) w = wt[j % P::kWB];
    if constexpr (P::kHasBias) b = bt[j % P::kWB];
    (void)w; (void)b;
  }

 private:
  // the kWB vectors of weight and bias from vector j0 into w, b
  template <int kN, class M>
  CKGEN_ROWOPS_STEP static void load(const RowGroup<P>& g, int tile, int j0, typename P::FW (&w)[kN],
                                     typename P::FW (&b)[kN], M) {
#pragma unroll
    for (int i = 0; i < P::kWB; ++i) {
      const bool in = !M::value || g.k.nv(j0 + i) > 0;
      if constexpr (P::kHasWeight) w[i] = weight_or_zero<P, false>(g.wr + RowPolicy<P>::col0(tile, j0 + i), in);
      if constexpr (P::kHasBias) b[i] = weight_or_zero<P, true>(g.br + RowPolicy<P>::col0(tile, j0 + i), in);
      (void)in;
    }
    (void)w; (void)b;
  }
};

template <class P, class Src>
using BoundedPipeline = OnePassPipeline<P, Src, BatchedWeights<P>>;

}  // namespace rowops
}  // namespace ckgen
