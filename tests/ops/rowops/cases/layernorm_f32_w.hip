// layer norm with weight only, f32 -> bf16: 8 lanes per row, 16 rows per workgroup, looped.
#include "rowops_forward.h"

struct layernorm_f32_w_cfg {
  using TIn = float; using TRes = float; using TW = float; using TOut = ckgen::bf16;
  static constexpr int kOp = ckgen::rowops::kLayerNorm;
  static constexpr bool kHasWeight = true, kHasBias = false, kResidual = false, kQuantI8 = false;
  static constexpr int kVec = 4;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = 8, kWavesPerRow = 1;
  static constexpr int kRowsPerBlock = 16, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 4, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = true;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 3 * 4 : 0;  // state of 3 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(layernorm_f32_w_cfg::kThreads) void layernorm_f32_w(
    const layernorm_f32_w_cfg::TIn* x, const layernorm_f32_w_cfg::TRes* residual, const layernorm_f32_w_cfg::TW* weight,
    const layernorm_f32_w_cfg::TW* bias, layernorm_f32_w_cfg::TOut* y, layernorm_f32_w_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<layernorm_f32_w_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
