// residual + rms norm with weight (the LLM pre-norm), bf16, s written: two waves per row, looped.
#include "rowops_forward.h"

struct rmsnorm_res_bf16_cfg {
  using TIn = ckgen::bf16; using TRes = ckgen::bf16; using TW = ckgen::bf16; using TOut = ckgen::bf16;
  static constexpr int kOp = ckgen::rowops::kRmsNorm;
  static constexpr bool kHasWeight = true, kHasBias = false, kResidual = true, kQuantI8 = false;
  static constexpr int kVec = 8;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = 2 * kWaveSize, kWavesPerRow = 2;
  static constexpr int kRowsPerBlock = 1, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 4, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = true;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 1 * 4 : 0;  // state of 1 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(rmsnorm_res_bf16_cfg::kThreads) void rmsnorm_res_bf16(
    const rmsnorm_res_bf16_cfg::TIn* x, const rmsnorm_res_bf16_cfg::TRes* residual, const rmsnorm_res_bf16_cfg::TW* weight,
    const rmsnorm_res_bf16_cfg::TW* bias, rmsnorm_res_bf16_cfg::TOut* y, rmsnorm_res_bf16_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<rmsnorm_res_bf16_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
