// residual (f32) + layer norm with weight and bias, f16 x and y, f32 s: two waves per row, single pass, cp.async ring of 3 stages (residual vectors of two 16-byte chunks).
#include "rowops_forward.h"

struct layernorm_res_f16_staged_cfg {
  using TIn = ckgen::f16; using TRes = float; using TW = ckgen::f16; using TOut = ckgen::f16;
  static constexpr int kOp = ckgen::rowops::kLayerNorm;
  static constexpr bool kHasWeight = true, kHasBias = true, kResidual = true, kQuantI8 = false;
  static constexpr int kVec = 8;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = 2 * kWaveSize, kWavesPerRow = 2;
  static constexpr int kRowsPerBlock = 1, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 2, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = false;
  static constexpr int kStages = 3;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 3 * 4 : 0;  // state of 3 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(layernorm_res_f16_staged_cfg::kThreads) void layernorm_res_f16_staged(
    const layernorm_res_f16_staged_cfg::TIn* x, const layernorm_res_f16_staged_cfg::TRes* residual, const layernorm_res_f16_staged_cfg::TW* weight,
    const layernorm_res_f16_staged_cfg::TW* bias, layernorm_res_f16_staged_cfg::TOut* y, layernorm_res_f16_staged_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<layernorm_res_f16_staged_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
