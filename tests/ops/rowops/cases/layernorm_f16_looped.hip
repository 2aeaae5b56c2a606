// layer norm without weight or bias, f16: one wave per row, 4 rows per workgroup, looped.
#include "rowops_forward.h"

struct layernorm_f16_looped_cfg {
  using TIn = ckgen::f16; using TRes = ckgen::f16; using TW = ckgen::f16; using TOut = ckgen::f16;
  static constexpr int kOp = ckgen::rowops::kLayerNorm;
  static constexpr bool kHasWeight = false, kHasBias = false, kResidual = false, kQuantI8 = false;
  static constexpr int kVec = 8;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = kWaveSize, kWavesPerRow = 1;
  static constexpr int kRowsPerBlock = 4, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 2, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = true;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 3 * 4 : 0;  // state of 3 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(layernorm_f16_looped_cfg::kThreads) void layernorm_f16_looped(
    const layernorm_f16_looped_cfg::TIn* x, const layernorm_f16_looped_cfg::TRes* residual, const layernorm_f16_looped_cfg::TW* weight,
    const layernorm_f16_looped_cfg::TW* bias, layernorm_f16_looped_cfg::TOut* y, layernorm_f16_looped_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<layernorm_f16_looped_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
