// rowops_pipeline_bounded.h (ckgen/ops/rowops/device): the register-bounded one-pass pipeline of the row ops: the
// one-pass pipeline (rowops_pipeline_one_pass.h) compiled for more workgroups per SM than its tile would get
// unbounded (the planner's BOUNDED_SINGLE_PASS, CKGEN_LAUNCH_BOUNDS_MIN), with weight and bias of a fast tile read
// Cfg::kWeightBatch vectors at a time as its outputs are computed (BatchedWeights) rather than all kRegVecs
// before it: fewer registers live.
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
  typename P::FW wt[P::kR], bt[P::kR];

  CKGEN_DEVICE void prefetch(const RowGroup<P>&, int) {}
  // vector j of a fast tile: the batch that starts at j loaded first
  CKGEN_ROWOPS_STEP void get(const RowGroup<P>& g, int tile, int j, typename P::FW& w, typename P::FW& b) {
    if (j % P::kWB == 0) {
#pragma unroll
      for (int i = j; i < j + P::kWB; ++i) {
        if constexpr (P::kHasWeight) wt[i] = RowPolicy<P>::template weight_vector<false>(g.wr + RowPolicy<P>::col0(tile, i));
        if constexpr (P::kHasBias) bt[i] = RowPolicy<P>::template weight_vector<true>(g.br + RowPolicy<P>::col0(tile, i));
      }
    }
    if constexpr (P::kHasWeight) w = wt[j];
    if constexpr (P::kHasBias) b = bt[j];
    (void)w; (void)b;
  }
};

template <class P, class Src>
using BoundedPipeline = OnePassPipeline<P, Src, BatchedWeights<P>>;

}  // namespace rowops
}  // namespace ckgen
