// rms norm without weight, f32: four waves per row, looped, one vector per tile.
#include "rowops_forward.h"

struct rmsnorm_f32_looped_cfg {
  using TIn = float; using TRes = float; using TW = float; using TOut = float;
  static constexpr int kOp = ckgen::rowops::kRmsNorm;
  static constexpr bool kHasWeight = false, kHasBias = false, kResidual = false, kQuantI8 = false;
  static constexpr int kVec = 4;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = 4 * kWaveSize, kWavesPerRow = 4;
  static constexpr int kRowsPerBlock = 1, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 1, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = true;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 1 * 4 : 0;  // state of 1 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(rmsnorm_f32_looped_cfg::kThreads) void rmsnorm_f32_looped(
    const rmsnorm_f32_looped_cfg::TIn* x, const rmsnorm_f32_looped_cfg::TRes* residual, const rmsnorm_f32_looped_cfg::TW* weight,
    const rmsnorm_f32_looped_cfg::TW* bias, rmsnorm_f32_looped_cfg::TOut* y, rmsnorm_f32_looped_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<rmsnorm_f32_looped_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
