// rowops_config.h (ckgen/ops/rowops/device): the Cfg of the row-op body (rowops_forward.h), its compile-time checks
// (check_cfg) and what the launch derives from it: the grid (grid_blocks), the LDS (lds_bytes: the cross-wave
// scratch and the row cache) and the staged ring's dynamic shared memory (stage_bytes).
//
// ---------------------------------------------------------------- Cfg (compile-time constants)
//   using TIn, TRes, TW, TOut;       x; residual and s; weight and bias; y (::int8_t when kQuantI8; an fp8 type
//                                    of ckgen/blocks/fp8.h: y quantized with scales, rowops_quant.h)
//   kOp                              rowops::kSoftmax | kLogSoftmax | kLayerNorm | kRmsNorm, or another kind's
//                                    (a RowKind<kOp> specialization: rowops_kinds.h)
//   kHasWeight, kHasBias             norms only; kResidual (any op), kQuantI8
//   kVec                             elements per vector access (16 bytes of TIn for full speed)
//   kWaveSize                        the platform's (64 AMD, 32 NVIDIA)
//   kRowThreads                      threads per row: a power of two (part of a wave, a wave, or waves)
//   kWavesPerRow                     kRowThreads / kWaveSize, or 1 when a row takes part of one wave
//   kRowsPerBlock, kThreads          kThreads = kRowsPerBlock * kRowThreads, a multiple of kWaveSize
//   kRegVecs, kTileCols              vectors per thread per tile; kTileCols = kRegVecs * kVec * kRowThreads
//   kLooped                          false: cols <= kTileCols (single pass); true: any cols
//   kLdsBytes                        rowops::lds_bytes<Cfg>(): the MultiWave scratch when kWavesPerRow > 1, plus
//                                    the row cache (kCacheTiles); CUDA: the dynamic shared memory the launch
//                                    must give when kCacheTiles > 0
//   kCacheTiles (optional, default 0) the row cache (rowops_rowcache.h): looped tiles kept in shared memory,
//                                    the row read from global memory once; cols <= kCacheTiles * kTileCols
//   kWeightL1, kBiasL1 (optional)    the L1 policy of the weight / bias vector loads (rowops_frag.h, L1Policy;
//                                    CUDA only): default kL1Default, and kL1Bypass for bias in a row-cache kernel
//                                    with weight and bias (the L1 beside the cache then keeps the weight)
//   kWeightBatch (optional, default kRegVecs) weight and bias vectors of a full aligned tile loaded at once: all
//                                    kRegVecs before the tile's outputs, or in batches of kWeightBatch (a divisor of
//                                    kRegVecs) as they are computed: fewer registers (the planner's register-bounded
//                                    single pass, BOUNDED_SINGLE_PASS in plan.py)
//   kWeightAhead (optional, default false) with kWeightBatch < kRegVecs: the next batch's weight and bias loads
//                                    issued before the current batch's outputs are computed and stored (a second
//                                    batch of registers). Planned by WEIGHT_AHEAD (ckgen/ops/rowops/registers.py)
//   kWholeVectors (optional, default false) a partial tile of a row of whole vectors (cols % kVec == 0) with y,
//                                    weight and bias aligned takes the fast path with a predicate per vector
//                                    (RowGroup::by_kind) instead of the masked one: weight and bias of the tile in
//                                    flight together (or kWeightBatch at a time), one access per vector
//   kQuantGroup (optional, default 0) int8 / fp8 y: 0 one scale per row, G > 0 one per G columns (rowops_quant.h)
//   kQuantMx    (optional, default false) MX y (G = 32, TOut fp8_e4m3fn / fp8_e5m2, or fp4x2_e2m1fn: fp4 pairs,
//               y addressed in bytes at col / 2, kVec even): E8M0 scale bytes (rowops_quant.h; y_scale is then
//               uint8_t*)
//   kRstd (optional, default false)  also write rstd[row] = the row's RowScalars::b (f32; a kind with kRstd:
//                                    RMS norm's 1/sqrt(mean(v^2) + eps)), by the row's first thread
//   kWriteY (optional, default true) false: no y at all (y may be null; needs kRstd, no weight, bias or
//                                    quantized TOut): the row is read once (pass 1) and only rstd (and s_out) written
//   kStages (optional, default 0)    staged tiles (rowops_stages.h): ring depth, 0 = direct loads; needs !kLooped and
//                                    kVec * sizeof(TIn) (and * sizeof(TRes)) a multiple of 16 bytes.
//                                    rowops::stage_bytes<Cfg>() = kStages * kThreads * kRegVecs * kVec *
//                                    (sizeof(TIn) [+ sizeof(TRes)]) on platforms with cp.async, else 0.
#pragma once

#include "ckgen/blocks/reduce.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"
#include "rowops_frag.h"
#include "rowops_kinds.h"
#include "rowops_math.h"
#include "rowops_quant.h"
#include "rowops_rowcache.h"

namespace ckgen {
namespace rowops {

constexpr long long kMaxGridBlocks = 1LL << 20;  // blocks x 1024 threads stays below 2^32 work-items (AMD)

template <class Cfg>
CKGEN_HD constexpr long long grid_blocks(long long rows) {
  const long long g = rows > 0 ? (rows + Cfg::kRowsPerBlock - 1) / Cfg::kRowsPerBlock : 0;
  return g < kMaxGridBlocks ? g : kMaxGridBlocks;
}

// Persistent grid: at most `resident` workgroups (those the device runs at once), each looping over row groups.
template <class Cfg>
CKGEN_HD constexpr long long grid_blocks(long long rows, long long resident) {
  const long long g = grid_blocks<Cfg>(rows);
  return resident >= 1 && g > resident ? resident : g;
}

namespace detail {
CKGEN_CFG_OPTIONAL(StagesOf, kStages, int, 0);
// The row cache leaves the L1 too small for both weight and bias of a long row (with 2 workgroups of 64 KiB of
// cache per SM, at most ~124 KiB for 128 KiB of bf16 weight and bias at 32768 columns: each evicts the other, and
// every row reads both from the L2). Bias then bypasses the L1, so that the L1 keeps the weight across rows.
CKGEN_CFG_OPTIONAL(WeightL1Of, kWeightL1, int, kL1Default);
CKGEN_CFG_OPTIONAL(WeightBatchOf, kWeightBatch, int, C::kRegVecs);
CKGEN_CFG_OPTIONAL(WeightAheadOf, kWeightAhead, bool, false);
CKGEN_CFG_OPTIONAL(WholeVectorsOf, kWholeVectors, bool, false);
CKGEN_CFG_OPTIONAL(RstdOf, kRstd, bool, false);
CKGEN_CFG_OPTIONAL(WriteYOf, kWriteY, bool, true);
CKGEN_CFG_OPTIONAL(KindRstdOf, kRstd, bool, false);  // (of a RowKind<kOp>: its RowScalars::b is rstd)
CKGEN_CFG_OPTIONAL(BiasL1Of, kBiasL1, int,
                   (CacheTilesOf<C>::value > 0 && C::kHasWeight && C::kHasBias ? kL1Bypass : kL1Default));
}  // namespace detail

// The ring depth the body uses: Cfg::kStages where the platform has cp.async, else 0.
template <class Cfg>
constexpr int stages() {
  return CKGEN_ROWOPS_ASYNC ? detail::StagesOf<Cfg>::value : 0;
}

// 16-byte chunks one thread copies per stage: its kRegVecs vectors of x, and of the residual.
template <class Cfg>
constexpr int stage_chunks() {
  constexpr int x = Cfg::kVec * static_cast<int>(sizeof(typename Cfg::TIn)) / 16;
  constexpr int r = Cfg::kResidual ? Cfg::kVec * static_cast<int>(sizeof(typename Cfg::TRes)) / 16 : 0;
  return Cfg::kRegVecs * (x + r);
}

// Dynamic shared memory of the staged ring (bytes; 0 when not staged or no cp.async).
template <class Cfg>
constexpr int stage_bytes() {
  return stages<Cfg>() > 0 ? stages<Cfg>() * stage_chunks<Cfg>() * Cfg::kThreads * 16 : 0;
}

// Split rows in a cluster (rowops_pipeline_split.h, run_split_ring): the depth of the ring of a CTA's slices (the
// row whose y is written, the next, whose partial is in the exchange, and the copies of the one after), and its
// dynamic shared memory (bytes; 0 without cp.async or where a vector of x or the residual is not whole 16-byte
// chunks).
constexpr int kSplitStages = 3;
template <class Cfg>
constexpr int split_stage_bytes() {
  constexpr bool whole = Cfg::kVec * sizeof(typename Cfg::TIn) % 16 == 0 &&
                         (!Cfg::kResidual || Cfg::kVec * sizeof(typename Cfg::TRes) % 16 == 0);
  return CKGEN_ROWOPS_ASYNC && whole ? kSplitStages * stage_chunks<Cfg>() * Cfg::kThreads * 16 : 0;
}

template <class Cfg>
using Reducer = red::MultiWave<Cfg::kThreads / Cfg::kWaveSize, Cfg::kWavesPerRow, RowKind<Cfg::kOp>::State::kN>;

// The cross-wave scratch (bytes) when a row spans waves, else 0 (a multiple of 16: an even number of waves).
template <class Cfg>
constexpr int scratch_bytes() {
  return Cfg::kWavesPerRow > 1 ? Reducer<Cfg>::kLdsBytes : 0;
}

// LDS the body uses (bytes): the scratch and the row cache (rowops_rowcache.h).
template <class Cfg>
constexpr int lds_bytes() {
  return scratch_bytes<Cfg>() + cache_bytes<Cfg>();
}

template <class Cfg>
constexpr bool check_cfg() {
  constexpr int W = Cfg::kWaveSize;
  static_assert(W == kPlatformWaveSize, "kWaveSize must be the platform's wave size (64 AMD, 32 NVIDIA)");
  static_assert(RowKind<Cfg::kOp>::State::kN >= 1, "kOp: a kind with a RowKind<kOp> trait (rowops_kinds.h)");
  static_assert(RowKind<Cfg::kOp>::kWeights || (!Cfg::kHasWeight && !Cfg::kHasBias),
                "kHasWeight/kHasBias: this kind (softmax, log-softmax) has no weight or bias");
  static_assert(!Cfg::kQuantI8 || __is_same(typename Cfg::TOut, ::int8_t), "kQuantI8 needs TOut = ::int8_t");
  static_assert(Cfg::kQuantI8 || !__is_same(typename Cfg::TOut, ::int8_t), "TOut = ::int8_t needs kQuantI8 (a scale)");
  static_assert(Cfg::kVec >= 1 && (Cfg::kVec & (Cfg::kVec - 1)) == 0 && Cfg::kVec <= 16, "kVec: a power of two <= 16");
  constexpr int kG = detail::QuantGroupOf<Cfg>::value;
  constexpr int kGd = kG > 0 ? kG : 1;  // (no division by zero where kG is 0)
  constexpr bool kMx = detail::QuantMxOf<Cfg>::value;
  constexpr bool kFp4 = __is_same(typename Cfg::TOut, fp4x2_e2m1fn);
  static_assert(kG == 0 || ((QuantOut<typename Cfg::TOut>::kQuant || kMx) && kG % Cfg::kVec == 0 &&
                            (Cfg::kVec * Cfg::kRowThreads) % kGd == 0 && kG / Cfg::kVec <= W),
                "kQuantGroup: a quantized TOut, kVec | G, G | kVec * kRowThreads, G / kVec <= kWaveSize (rowops_quant.h)");
  static_assert(!kMx || (kG == 32 && (__is_same(typename Cfg::TOut, fp8_e4m3fn) ||
                                      __is_same(typename Cfg::TOut, fp8_e5m2) || kFp4)),
                "kQuantMx: kQuantGroup 32 and TOut fp8_e4m3fn, fp8_e5m2 or fp4x2_e2m1fn (rowops_quant.h)");
  static_assert(!kFp4 || (kMx && Cfg::kVec % 2 == 0),
                "TOut fp4x2_e2m1fn (fp4 pairs): kQuantMx, kVec even (a pair never straddles threads)");
  static_assert(Cfg::kRowThreads >= 1, "kRowThreads >= 1");
  static_assert((Cfg::kRowThreads & (Cfg::kRowThreads - 1)) == 0, "kRowThreads: a power of two");
  static_assert(Cfg::kWavesPerRow == (Cfg::kRowThreads >= W ? Cfg::kRowThreads / W : 1),
                "kWavesPerRow != kRowThreads / kWaveSize (1 when a row takes part of a wave)");
  static_assert(Cfg::kRowsPerBlock >= 1 && Cfg::kThreads == Cfg::kRowsPerBlock * Cfg::kRowThreads,
                "kThreads != kRowsPerBlock * kRowThreads");
  static_assert(Cfg::kThreads % W == 0 && Cfg::kThreads <= 1024, "kThreads: full waves, at most 1024");
  static_assert(Cfg::kRegVecs >= 1, "kRegVecs >= 1");
  static_assert(Cfg::kTileCols == Cfg::kRegVecs * Cfg::kVec * Cfg::kRowThreads, "kTileCols != kRegVecs*kVec*kRowThreads");
  static_assert(Cfg::kLdsBytes == lds_bytes<Cfg>(), "kLdsBytes != rowops::lds_bytes<Cfg>() (cross-wave scratch)");
  constexpr int kSt = detail::StagesOf<Cfg>::value;
  static_assert(kSt >= 0 && kSt <= 16, "kStages: 0 .. 16");
  static_assert(kSt == 0 || !Cfg::kLooped, "kStages > 0 needs a single-pass configuration (kLooped == false)");
  static_assert(kSt == 0 || ((Cfg::kVec * sizeof(typename Cfg::TIn)) % 16 == 0 &&
                             (!Cfg::kResidual || (Cfg::kVec * sizeof(typename Cfg::TRes)) % 16 == 0)),
                "kStages > 0 needs vectors of whole 16-byte chunks (kVec * sizeof(TIn), kVec * sizeof(TRes))");
  constexpr int kCt = cache_tiles<Cfg>();
  static_assert(kCt >= 0, "kCacheTiles >= 0");
  static_assert(kCt == 0 || (Cfg::kLooped && kSt == 0), "kCacheTiles > 0 needs kLooped and no kStages");
  static_assert(scratch_bytes<Cfg>() % 16 == 0, "the scratch keeps the row cache 16-byte aligned");
  static_assert(!detail::RstdOf<Cfg>::value || detail::KindRstdOf<RowKind<Cfg::kOp>>::value,
                "kRstd: a kind whose RowScalars::b is rstd (RowKind<kOp>::kRstd: RMS norm)");
  static_assert(detail::WriteYOf<Cfg>::value || (detail::RstdOf<Cfg>::value && !Cfg::kHasWeight && !Cfg::kHasBias &&
                                                 !QuantOut<typename Cfg::TOut>::kQuant),
                "kWriteY == false needs kRstd and no weight, bias or quantized TOut");
  return true;
}

}  // namespace rowops
}  // namespace ckgen
