// rms norm with weight, f32 -> int8 + scale (amax pass): 8 threads per row, 8 rows per workgroup, single pass, one stage.
#include "rowops_forward.h"

struct rmsnorm_f32_i8_staged_cfg {
  using TIn = float; using TRes = float; using TW = float; using TOut = ::int8_t;
  static constexpr int kOp = ckgen::rowops::kRmsNorm;
  static constexpr bool kHasWeight = true, kHasBias = false, kResidual = false, kQuantI8 = true;
  static constexpr int kVec = 4;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = 8, kWavesPerRow = 1;
  static constexpr int kRowsPerBlock = 8, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 4, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = false;
  static constexpr int kStages = 1;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 1 * 4 : 0;  // state of 1 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(rmsnorm_f32_i8_staged_cfg::kThreads) void rmsnorm_f32_i8_staged(
    const rmsnorm_f32_i8_staged_cfg::TIn* x, const rmsnorm_f32_i8_staged_cfg::TRes* residual, const rmsnorm_f32_i8_staged_cfg::TW* weight,
    const rmsnorm_f32_i8_staged_cfg::TW* bias, rmsnorm_f32_i8_staged_cfg::TOut* y, rmsnorm_f32_i8_staged_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<rmsnorm_f32_i8_staged_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
