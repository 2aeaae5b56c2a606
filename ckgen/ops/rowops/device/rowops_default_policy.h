// rowops_default_policy.h (ckgen/ops/rowops/device): how the row-op pipelines reduce over a row's threads, cut a
// row into tiles and read weight and bias, for a RowProblem P (rowops_problem.h).
//
//   RowReduce<P>                 all-reduces over the kRowThreads threads of a row: within a wave by butterflies
//                                (reduce.h group_allreduce), across waves through the LDS scratch (MultiWave)
//   RowPolicy<P>::counts         where the row ends in a thread's vectors of a tile (TileCounts, rowops_frag.h)
//   RowPolicy<P>::col0           a vector's column relative to the thread's first column of the row
//   RowPolicy<P>::weight_vector  one aligned vector of weight / bias, with its L1 policy (Cfg::kWeightL1 / kBiasL1)
#pragma once

#include "ckgen/blocks/reduce.h"
#include "ckgen/platform.h"
#include "rowops_frag.h"
#include "rowops_problem.h"

namespace ckgen {
namespace rowops {

template <class P>
struct RowReduce {
  typename P::Reduce multi;  // the cross-wave scratch (used when kWavesPerRow > 1)

  CKGEN_DEVICE explicit RowReduce(float* lds) : multi(lds) {}

  template <class S>
  CKGEN_ROWOPS_STEP S state(S s) {
    if constexpr (P::kWavesPerRow > 1) return multi.template allreduce_state<S>(s);
    else return red::group_allreduce_state<P::kRowThreads>(s);
  }
  CKGEN_ROWOPS_STEP float max(float v) {
    if constexpr (P::kWavesPerRow > 1) return multi.template allreduce<red::Max>(v);
    else return red::group_allreduce<P::kRowThreads, red::Max>(v);
  }
  CKGEN_ROWOPS_STEP float sum(float v) {
    if constexpr (P::kWavesPerRow > 1) return multi.template allreduce<red::Sum>(v);
    else return red::group_allreduce<P::kRowThreads, red::Sum>(v);
  }
};

template <class P>
struct RowPolicy {
  using Counts = typename P::Counts;

  // Where the row (ncols columns) ends in the vectors of thread rt of the row in tile `tile`.
  CKGEN_ROWOPS_STEP static Counts counts(int ncols, int tile, int rt) {
    const int rem = ncols - tile * P::kTile;  // no overflow: tile * kTile < cols
    return Counts{rem - rt * P::kVec, rem, rem >= P::kTile};
  }
  // vector j of tile `tile`, relative to the thread's first column
  CKGEN_ROWOPS_STEP static long long col0(int tile, int j) { return static_cast<long long>(tile) * P::kTile + j * P::kStep; }

  // one aligned vector of weight (kBias: of bias) at p
  template <bool kBias>
  CKGEN_DEVICE static typename P::FW weight_vector(const typename P::TW* p) {
    return detail::load_vector_l1<typename P::TW, P::kVec, kBias ? P::kBL1 : P::kWL1>(p);
  }
};

}  // namespace rowops
}  // namespace ckgen
