// layer norm with weight and bias, f32 -> int8 + scale: 32 lanes per row, looped.
#include "rowops_forward.h"

struct layernorm_f32_i8_cfg {
  using TIn = float; using TRes = float; using TW = float; using TOut = ::int8_t;
  static constexpr int kOp = ckgen::rowops::kLayerNorm;
  static constexpr bool kHasWeight = true, kHasBias = true, kResidual = false, kQuantI8 = true;
  static constexpr int kVec = 4;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = 32, kWavesPerRow = 1;
  static constexpr int kRowsPerBlock = 4, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 2, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = true;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 3 * 4 : 0;  // state of 3 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(layernorm_f32_i8_cfg::kThreads) void layernorm_f32_i8(
    const layernorm_f32_i8_cfg::TIn* x, const layernorm_f32_i8_cfg::TRes* residual, const layernorm_f32_i8_cfg::TW* weight,
    const layernorm_f32_i8_cfg::TW* bias, layernorm_f32_i8_cfg::TOut* y, layernorm_f32_i8_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<layernorm_f32_i8_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
