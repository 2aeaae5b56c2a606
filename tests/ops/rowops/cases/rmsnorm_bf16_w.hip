// rms norm with weight, bf16: one wave per row, 2 rows per workgroup, single pass.
#include "rowops_forward.h"

struct rmsnorm_bf16_w_cfg {
  using TIn = ckgen::bf16; using TRes = ckgen::bf16; using TW = ckgen::bf16; using TOut = ckgen::bf16;
  static constexpr int kOp = ckgen::rowops::kRmsNorm;
  static constexpr bool kHasWeight = true, kHasBias = false, kResidual = false, kQuantI8 = false;
  static constexpr int kVec = 8;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = kWaveSize, kWavesPerRow = 1;
  static constexpr int kRowsPerBlock = 2, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 4, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = false;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 1 * 4 : 0;  // state of 1 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(rmsnorm_bf16_w_cfg::kThreads) void rmsnorm_bf16_w(
    const rmsnorm_bf16_w_cfg::TIn* x, const rmsnorm_bf16_w_cfg::TRes* residual, const rmsnorm_bf16_w_cfg::TW* weight,
    const rmsnorm_bf16_w_cfg::TW* bias, rmsnorm_bf16_w_cfg::TOut* y, rmsnorm_bf16_w_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<rmsnorm_bf16_w_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
