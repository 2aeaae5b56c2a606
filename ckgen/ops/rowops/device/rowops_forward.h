// rowops_forward.h (ckgen/ops/rowops/device): row-wise ops over the last dimension of a rows x cols matrix:
// softmax, log-softmax, layer norm, RMS norm and quantize (y = v), each with an optional fused residual add and an
// optional int8 or fp8 output with f32 scales per row or per group of columns (rowops_quant.h). One body for AMD
// (wave64), the emulator and NVIDIA (warp of 32).
//
// The Cfg this body takes, its checks and the sizes derived from it (grid, LDS, staged ring): rowops_config.h.
//
// ---------------------------------------------------------------- entry
//   template <class Cfg>
//   CKGEN_DEVICE void rowops_forward(const TIn* x, const TRes* residual, const TW* weight, const TW* bias,
//                                    TOut* y, TRes* s_out, ScaleT<Cfg>* y_scale, int rows, int cols,
//                                    long long stride_x, long long stride_res, long long stride_y,
//                                    long long stride_s, float scale, float eps, long long stride_scale = 0,
//                                    float* rstd = nullptr);
//   called from a kernel with a 1-D workgroup of Cfg::kThreads threads:
//     CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(Cfg::kThreads) void k(<the same parameters>) { rowops_forward<Cfg>(...); }
//   Grid: 1-D, rowops::grid_blocks<Cfg>(rows) workgroups = min(ceil(rows / kRowsPerBlock), kMaxGridBlocks);
//   any grid >= 1 is correct (workgroups loop over row groups with a grid stride). rows <= 0 or cols <= 0:
//   launch nothing (the body returns at once for cols <= 0).
//   Staged configurations (kStages > 0, below) want a persistent grid: rowops::grid_blocks<Cfg>(rows, resident)
//   = min(row groups, resident), resident = the workgroups the device holds at once (CUDA: SM count x
//   cudaOccupancyMaxActiveBlocksPerMultiprocessor with rowops::stage_bytes<Cfg>() of dynamic shared memory),
//   and on CUDA the launch must give rowops::stage_bytes<Cfg>() bytes of DYNAMIC shared memory (raising
//   cudaFuncAttributeMaxDynamicSharedMemorySize above 48 KiB). A launch with less dynamic shared memory
//   (e.g. 0) is still correct: the body then loads from global memory directly (it reads %dynamic_smem_size).
//
//   Matrices are row-major with a row stride (elements, >= cols) per tensor: x, residual, y, s_out. weight and
//   bias are vectors of cols elements. Pointers that may be null: residual and s_out (both non-null exactly
//   when kResidual), weight (when !kHasWeight), bias (when !kHasBias), y_scale (when y is not quantized), rstd
//   (when !kRstd: else rows floats), y (when !kWriteY); the body never touches a pointer its Cfg does not use. y may alias x and s_out may alias x or residual (same
//   element type and stride: in-place); no other overlap.
//
// ---------------------------------------------------------------- numerics (f32 throughout)
//   v = x, or with kResidual: s = x + residual rounded to TRes (written to s_out) and v = s (as stored,
//   like torch's `h = x + r; norm(h)`). The op (its kind's math: rowops_kinds.h, RowKind<kOp>) is applied to v:
//     softmax y = exp(scale*v - m) / d, log-softmax y = scale*v - m - log d (m = max scale*v, d = sum exp;
//     evaluated in base 2: one exp2_f32 per element and pass, v_exp_f32 / ex2.approx),
//     layer norm y = (v - mean) * rstd [* weight] [+ bias], rms norm y = v * rstd [* weight] [+ bias],
//     rstd = 1/sqrt(var + eps), var = mean((v - mean)^2) (population) or mean(v^2).
//   Single pass (kLooped == false; the row is in registers): softmax takes m by one all-reduce (max) and d by
//   a second (sum of 2^(t - m)); layer norm the mean by one all-reduce and sum (v - mean)^2 by a second (the
//   exact two-pass variance: any offset). Looped: per tile, softmax's running (m, d) (online softmax) and
//   layer norm's exact (n, mean, M2) of the tile merged into the running moments (Chan et al.); one all-reduce
//   of the state at the end.
//   kRstd: rstd[row] = the row's rstd (RMS norm: 1/sqrt(mean(v^2) + eps), the value y is scaled by), f32.
//   kWriteY == false (y = none): no y; the row is read once (every pipeline's pass 1) and rstd (and s_out) written.
//   y is cast to TOut (round to nearest even). kQuantI8 (TOut = int8_t): amax = max |y| over the row
//   (softmax: 1/d, exactly the largest y), y_scale[row] = amax / 127 and q = rne(y * (127 / amax)) saturated
//   to [-127, 127] (the product by the row's reciprocal may differ from y / scale by one ulp before rounding).
//   An all-zero row (amax == 0) gets y_scale = 1 and q = 0 (dequantizes exactly; no division by zero).
//   An fp8 TOut (rowops_quant.h) is quantized the same way with its largest finite value M in place of 127:
//   y_scale = amax / M, q = from_float<TOut>(y * (M / amax)) (ckgen/blocks/fp8.h: nearest even, saturating).
//   Cfg::kQuantGroup = G > 0: amax, the scale and the multiplier per G consecutive columns of a row instead,
//   y_scale[row * stride_scale + col / G] (no amax pass: each group is reduced across its G / kVec threads
//   as its y is computed); the last group of a row may be shorter.
//   Cfg::kQuantMx (G = 32, TOut fp8_e4m3fn / fp8_e5m2; y_scale is then uint8_t*, ScaleT<Cfg>): OCP MX, per group
//   the E8M0 code e = mx_scale_code<TOut>(amax) (ckgen/blocks/mx_quant.h; 127 for an all-zero group) in
//   y_scale[row * stride_scale + col / 32] and q = from_float<TOut>(y * mx_mul(e)) (an exact power of two).
//   TOut fp4x2_e2m1fn (kQuantMx only): q = fp4_code(y * mx_mul(e)), two per byte, column c of a row in byte
//   y[row * stride_y + c / 2] (the even column in the low nibble): stride_y in bytes; cols even (the host's check).
//
// ---------------------------------------------------------------- data path
//   A row is owned by kRowThreads threads (kRowsPerBlock rows per workgroup). It is cut into tiles of
//   kTileCols = kRegVecs * kVec * kRowThreads columns; in a tile, thread t of the row holds kRegVecs vectors of
//   kVec elements, vector j at column j * kVec * kRowThreads + t * kVec (consecutive threads read
//   consecutive 16 bytes: coalesced), packed in 32-bit registers (rowops_frag.h). Vector accesses are used
//   when the tensor's base and row stride keep every vector aligned (checked per tensor at run time),
//   per-element accesses otherwise and for the vectors that straddle the end of the row (rowops_frag.h: load /
//   store, clamped indices on AMD, predicated under CUDA); nothing outside [0, cols) of a row is touched.
//   Full tiles of aligned tensors take one straight run of vector loads (all in flight at once); only partial
//   tiles pay for masks, and their vectors that lie wholly past the end of the row (for every thread of the
//   row: a row-uniform branch) are skipped (a tile much wider than the row costs little more than a fitting one).
//     pass 1 (forward over tiles): load the tile (x, residual; write s), the thread's statistics;
//     all-reduce them over the row's threads (ckgen/blocks/reduce.h: group_allreduce within a wave,
//       MultiWave through LDS when kWavesPerRow > 1);
//     [int8 / fp8 y with per-row scales, unless the kind has amax in its row scalars (softmax, quantize): pass 2,
//      backward over tiles: amax of y, all-reduce Max; per-group scales: none, each group reduced in pass 3]
//     pass 3 (opposite direction to the previous pass): y = op(v), store.
//   The tile that ends a pass is still in registers and starts the next one; other tiles are re-read from
//   global memory (s_out when kResidual, else x), or with kCacheTiles > 0 from the row cache in shared memory
//   (rowops_rowcache.h: pass 1 writes every tile there; on CUDA x arrives there by cp.async before pass 1).
//   kLooped == false: the body is compiled for one tile (cols <= kTileCols, checked: a trap), so the row is read
//   once and y written once. kLooped == true: any
//   cols; rows longer than one tile read v twice (three times with the int8 amax pass), minus one tile.
//   Global bytes per element (single pass): sizeof(TIn) + sizeof(TOut), plus 2 * sizeof(TRes) with
//   kResidual; weight and bias are one row for all rows (L2 / L1). bf16: 4 (8 with the residual).
//
//   Staged tiles (kStages > 0; single pass only; CUDA sm_80+ and the emulator's warp-32 model, ignored on AMD):
//   a private cp.async ring of each thread's next row groups in shared memory (rowops_stages.h, StageRing).
//
// ---------------------------------------------------------------- files (one problem, one pipeline per variant)
//   rowops_problem.h             RowProblem<Cfg>: the types and flags every part reads
//   rowops_kinds.h               RowKind<kOp>: each kind's math (state, fold, finish, one-pass statistics, y)
//   rowops_default_policy.h      RowReduce (all-reduces over a row's threads), RowPolicy (tile counts, columns,
//                                weight / bias vector loads)
//   rowops_row.h                 RowArgs, RowEnv, RowGroup (one thread's part of a row group: its pointers, the
//                                tile in registers, the loads, the amax and y passes), GlobalSource, TileWeights
//   rowops_pipeline_one_pass.h   the row in one tile (kLooped == false); StagedSource (kStages > 0)
//   rowops_pipeline_looped.h     any cols: running statistics over the tiles
//   rowops_pipeline_row_cached.h the looped pipeline with the row in shared memory (kCacheTiles > 0)
//   rowops_pipeline_bounded.h    the one-pass pipeline reading weight and bias in batches (kWeightBatch < kRegVecs)
//   rowops_pipeline_split.h      split rows (kSplit > 0): a slice of one tile per workgroup, partial states
//                                exchanged (workspace, or a thread-block cluster on sm_90): rowops_forward_split
//   this file                    rowops_forward: shared memory, the arguments, the pipeline per configuration and
//                                the loop over the workgroup's row groups (with the staged ring's prologue)
//
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"
#include "rowops_config.h"
#include "rowops_default_policy.h"
#include "rowops_pipeline_bounded.h"
#include "rowops_pipeline_looped.h"
#include "rowops_pipeline_one_pass.h"
#include "rowops_pipeline_row_cached.h"
#include "rowops_pipeline_split.h"
#include "rowops_problem.h"
#include "rowops_row.h"
#include "rowops_rowcache.h"
#include "rowops_stages.h"

namespace ckgen {
namespace rowops {

// The pipeline of a row group of P without the staged ring: one pass (register-bounded with kWeightBatch <
// kRegVecs), row-cached, or looped.
template <class P>
struct PipelineOf {
  using Weights = typename Select<(P::kWB < P::kR), BatchedWeights<P>, TileWeights<P>>::type;
  using Looped = typename Select<P::kCached, RowCachedPipeline<P, Weights>,
                                 LoopedPipeline<P, GlobalSource<P>, Weights>>::type;
  using OnePass = typename Select<(P::kWB < P::kR), BoundedPipeline<P, GlobalSource<P>>,
                                  OnePassPipeline<P, GlobalSource<P>, TileWeights<P>>>::type;
  using type = typename Select<P::kSingle, OnePass, Looped>::type;
};

// The row groups of this workgroup through the staged ring (kStages > 0): the first kStages groups in flight,
// then each group's tile 0 read from its stage, which is refilled with the group kStages ahead.
template <class P>
CKGEN_DEVICE void run_staged(const RowArgs<P>& a, const RowEnv<P>& e, RowReduce<P>& red, const typename P::Ring& ring) {
  using Staged = OnePassPipeline<P, StagedSource<P>, typename PipelineOf<P>::Weights>;
  long long g = block_id(0);
#pragma unroll 1
  for (int s = 0; s < P::kStages; ++s) {  // prologue: the first kStages groups in flight
    const long long gs = g + static_cast<long long>(s) * e.gstride;
    if (gs < e.ngroups) StagedSource<P>::issue(ring, a, e, s, gs);
    detail::cp_commit();
  }
  int stage = 0;
  for (; g < e.ngroups; g += e.gstride) {
    detail::cp_wait<P::kStages - 1>();  // this group's copies (the oldest pending group) have landed
    Staged::run(a, e, red, g, ring, stage, g);
    stage = stage + 1 == P::kStages ? 0 : stage + 1;
  }
  detail::cp_wait<0>();  // nothing left in flight (only empty groups remain)
}

template <class Cfg>
CKGEN_DEVICE void rowops_forward_impl(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                      const typename Cfg::TW* weight, const typename Cfg::TW* bias,
                                      typename Cfg::TOut* y, typename Cfg::TRes* s_out, ScaleT<Cfg>* y_scale, int rows,
                                      int cols, long long stride_x, long long stride_res, long long stride_y,
                                      long long stride_s, float scale, float eps, long long stride_scale,
                                      float* rstd, float* lds, unsigned char* stage_mem, bool stage_ok,
                                      uint32_t* cache) {
  static_assert(check_cfg<Cfg>(), "Cfg");
  using P = RowProblem<Cfg>;
  const RowArgs<P> a{x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x, stride_res,
                     stride_y, stride_s, scale, eps, stride_scale, rstd};
  (void)stage_mem; (void)stage_ok; (void)cache;
  if (a.cols <= 0) return;
  if constexpr (P::kSingle) {
    if (a.cols > P::kTile) trap("rowops: cols > Cfg::kTileCols for a single-pass (kLooped == false) configuration");
  }
  if constexpr (P::kCached) {
    if (a.cols > P::kCacheTiles * P::kTile) trap("rowops: cols > Cfg::kCacheTiles * Cfg::kTileCols (the row cache)");
  }
  const RowEnv<P> e(a, thread_id());
  RowReduce<P> red(lds);
  const typename P::Ring ring(stage_mem, e.tid);
  if constexpr (P::kStages > 0) {
    if (stage_ok && e.x_ok && (!P::kResidual || e.r_ok)) {
      run_staged(a, e, red, ring);
      return;
    }
  }
  using Pipeline = typename PipelineOf<P>::type;
  for (long long g = block_id(0); g < e.ngroups; g += e.gstride) {
    if constexpr (P::kCached) Pipeline::run(a, e, red, g, cache);
    else Pipeline::run(a, e, red, g);
  }
}

template <class Cfg>
CKGEN_DEVICE void rowops_forward(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                 const typename Cfg::TW* weight, const typename Cfg::TW* bias, typename Cfg::TOut* y,
                                 typename Cfg::TRes* s_out, ScaleT<Cfg>* y_scale, int rows, int cols,
                                 long long stride_x, long long stride_res, long long stride_y, long long stride_s,
                                 float scale, float eps, long long stride_scale = 0, float* rstd = nullptr) {
  float* lds = nullptr;
#if defined(CKGEN_PLATFORM_CUDA)
  constexpr bool kStaticScratch = scratch_bytes<Cfg>() > 0 && cache_bytes<Cfg>() == 0;
#else
  constexpr bool kStaticScratch = scratch_bytes<Cfg>() > 0;
#endif
  if constexpr (kStaticScratch) {
    CKGEN_LDS(float, rowops_scratch, scratch_bytes<Cfg>() / static_cast<int>(sizeof(float)));
    lds = rowops_scratch;
  }
  unsigned char* stage_mem = nullptr;
  bool stage_ok = false;
  if constexpr (stage_bytes<Cfg>() > 0) {
#if defined(CKGEN_PLATFORM_CUDA)
    stage_mem = detail::dynamic_smem(stage_bytes<Cfg>());
    stage_ok = stage_mem != nullptr;
#else
    using Chunk = vec<uint32_t, 4>;
    CKGEN_LDS(Chunk, rowops_stages, stage_bytes<Cfg>() / 16);
    stage_mem = reinterpret_cast<unsigned char*>(rowops_stages);
    stage_ok = true;
#endif
  }
  uint32_t* cache = nullptr;
  if constexpr (cache_bytes<Cfg>() > 0) cache = cache_memory<scratch_bytes<Cfg>(), cache_bytes<Cfg>()>(lds);
  rowops_forward_impl<Cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y,
                           stride_s, scale, eps, stride_scale, rstd, lds, stage_mem, stage_ok, cache);
}

// Split rows (Cfg::kSplit > 0, rowops_pipeline_split.h): the same arguments and a workspace (zero-filled, left
// zero-filled: its layout there), one slice of a row per workgroup and ticket.
template <class Cfg>
CKGEN_DEVICE void rowops_forward_split(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                       const typename Cfg::TW* weight, const typename Cfg::TW* bias,
                                       typename Cfg::TOut* y, typename Cfg::TRes* s_out, ScaleT<Cfg>* y_scale, int rows,
                                       int cols, long long stride_x, long long stride_res, long long stride_y,
                                       long long stride_s, float scale, float eps, void* workspace,
                                       float* rstd = nullptr) {
  static_assert(check_cfg<Cfg>(), "Cfg");
  static_assert(split_max<Cfg>() >= 1, "rowops_forward_split: a Cfg with kSplit");
  using P = RowProblem<Cfg>;
  float* lds = nullptr;
  if constexpr (scratch_bytes<Cfg>() > 0) {
    CKGEN_LDS(float, rowops_scratch, scratch_bytes<Cfg>() / static_cast<int>(sizeof(float)));
    lds = rowops_scratch;
  }
  CKGEN_LDS(unsigned long long, rowops_ticket, 1);
  CKGEN_LDS(float, rowops_row_state, P::State::kN);
#if defined(CKGEN_PLATFORM_CUDA)
  using Exchange = ClusterRowExchange<P>;
  CKGEN_LDS(float, rowops_cluster_slots, Exchange::kSets * Exchange::kMaxSplit * P::State::kN);
  CKGEN_LDS(uint64_t, rowops_cluster_bars, Exchange::kSets);
#endif
  const RowArgs<P> a{x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x, stride_res,
                     stride_y, stride_s, scale, eps, 0, rstd};
  if (a.cols <= 0 || a.rows <= 0) return;
  if (a.cols > split_max<Cfg>() * P::kTile) trap("rowops: cols > Cfg::kSplit * Cfg::kTileCols (split rows)");
  const RowEnv<P> e(a, thread_id());
  RowReduce<P> red(lds);
#if defined(CKGEN_PLATFORM_CUDA)
  if (nv::cluster_size() > 1) {  // launched in clusters (sm_90): the exchange through distributed shared memory
    unsigned char* ring = nullptr;  // the ring of the next rows' slices, where the launch gave its bytes
    if constexpr (split_stage_bytes<Cfg>() > 0) ring = detail::dynamic_smem(split_stage_bytes<Cfg>());
    run_split_cluster(a, e, red, rowops_cluster_slots, rowops_cluster_bars, ring);
    return;
  }
#endif
  run_split(a, e, red, workspace, rowops_ticket, rowops_row_state);
}

}  // namespace rowops

using rowops::rowops_forward;
using rowops::rowops_forward_split;

}  // namespace ckgen
