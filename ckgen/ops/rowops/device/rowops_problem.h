// rowops_problem.h (ckgen/ops/rowops/device): RowProblem<Cfg>, the types and compile-time flags every part of the
// row-op body reads (rowops_forward.h and its pipelines), derived once from the Cfg (rowops_config.h: the
// contract). Types and flags only: no code.
#pragma once

#include "ckgen/blocks/reduce.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"
#include "rowops_config.h"
#include "rowops_frag.h"
#include "rowops_kinds.h"
#include "rowops_math.h"
#include "rowops_quant.h"
#include "rowops_rowcache.h"
#include "rowops_stages.h"

namespace ckgen {
namespace rowops {

template <class Cfg_>
struct RowProblem {
  using Cfg = Cfg_;
  // element types: x; residual and s; weight and bias; y; v as held (s with a residual, else x)
  using TIn = typename Cfg::TIn;
  using TRes = typename Cfg::TRes;
  using TW = typename Cfg::TW;
  using TOut = typename Cfg::TOut;
  using TS = typename Select<Cfg::kResidual, TRes, TIn>::type;

  static constexpr int kOp = Cfg::kOp;
  static constexpr bool kResidual = Cfg::kResidual;
  static constexpr bool kHasWeight = Cfg::kHasWeight;
  static constexpr bool kHasBias = Cfg::kHasBias;
  static constexpr bool kQuantI8 = Cfg::kQuantI8;
  // MX scales (kQuantMx: E8M0 bytes per 32 columns, rowops_quant.h); y_scale's element type
  static constexpr bool kMx = detail::QuantMxOf<Cfg>::value;
  // y quantized with scales (rowops_quant.h): int8 (kQuantI8), an fp8 TOut or an MX one (fp4 pairs too); per row,
  // or per kGroup columns
  static constexpr bool kQuant = QuantOut<TOut>::kQuant || kMx;
  static constexpr int kGroup = detail::QuantGroupOf<Cfg>::value;
  // y's values per TOut element: 2 for fp4 pairs (y addressed in bytes at col / 2), else 1 (rowops_quant.h)
  static constexpr int kYPack = YPack<TOut>::value;
  using TScale = ScaleT<Cfg>;
  using Kind = RowKind<kOp>;  // the kind's math (rowops_kinds.h)
  // per-row scales: a pass for amax of y (softmax: 1/d; a kind with kAmaxInScalars has it in the row scalars)
  static constexpr bool kAmaxPass = kQuant && kGroup == 0 && !Kind::kAmaxInScalars;
  // outputs beside s_out: rstd[row] (RowScalars::b); y (kWriteY false: none, the row read once)
  static constexpr bool kRstd = detail::RstdOf<Cfg>::value;
  static constexpr bool kWriteY = detail::WriteYOf<Cfg>::value;

  // the tile: kR vectors of kVec elements per thread, kStep columns apart; kTile columns of a row
  static constexpr int kVec = Cfg::kVec;
  static constexpr int kR = Cfg::kRegVecs;
  static constexpr int kStep = kVec * Cfg::kRowThreads;
  static constexpr int kTile = Cfg::kTileCols;
  static constexpr int kRowThreads = Cfg::kRowThreads;
  static constexpr int kRowsPerBlock = Cfg::kRowsPerBlock;
  static constexpr int kWavesPerRow = Cfg::kWavesPerRow;

  // which pipeline: one pass (the row in one tile) or looped; the row cache; the staged ring
  static constexpr bool kSingle = !Cfg::kLooped;
  static constexpr int kCacheTiles = RowCache<Cfg>::kTiles;
  static constexpr bool kCached = kCacheTiles > 0;
  static constexpr int kStages = stages<Cfg>();

  // the L1 policies of the weight and bias vector loads; weight and bias vectors in flight at once (fast path)
  static constexpr int kWL1 = detail::WeightL1Of<Cfg>::value;
  static constexpr int kBL1 = detail::BiasL1Of<Cfg>::value;
  static constexpr int kWB = detail::WeightBatchOf<Cfg>::value;
  static constexpr bool kWAhead = detail::WeightAheadOf<Cfg>::value && kWB < kR;  // the next batch in flight
  static constexpr bool kWhole = detail::WholeVectorsOf<Cfg>::value;  // whole-vector tiles take the fast path

  // register fragments (rowops_frag.h), the tile's column counts, the per-row state and the memories
  using FS = detail::Frag<TS, kVec>;
  using FX = detail::Frag<TIn, kVec>;
  using FR = detail::Frag<TRes, kVec>;
  using FW = detail::Frag<TW, kVec>;
  using FO = detail::Frag<TOut, kVec>;
  using Counts = detail::TileCounts<kVec, kStep>;
  using State = typename Kind::State;
  using Cache = RowCache<Cfg>;
  using Ring = StageRing<Cfg>;
  using Reduce = Reducer<Cfg>;
};

}  // namespace rowops
}  // namespace ckgen
