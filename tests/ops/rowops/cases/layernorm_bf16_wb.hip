// layer norm with weight and bias, bf16: four waves per row, single pass.
#include "rowops_forward.h"

struct layernorm_bf16_wb_cfg {
  using TIn = ckgen::bf16; using TRes = ckgen::bf16; using TW = ckgen::bf16; using TOut = ckgen::bf16;
  static constexpr int kOp = ckgen::rowops::kLayerNorm;
  static constexpr bool kHasWeight = true, kHasBias = true, kResidual = false, kQuantI8 = false;
  static constexpr int kVec = 8;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = 4 * kWaveSize, kWavesPerRow = 4;
  static constexpr int kRowsPerBlock = 1, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 4, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = false;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 3 * 4 : 0;  // state of 3 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(layernorm_bf16_wb_cfg::kThreads) void layernorm_bf16_wb(
    const layernorm_bf16_wb_cfg::TIn* x, const layernorm_bf16_wb_cfg::TRes* residual, const layernorm_bf16_wb_cfg::TW* weight,
    const layernorm_bf16_wb_cfg::TW* bias, layernorm_bf16_wb_cfg::TOut* y, layernorm_bf16_wb_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<layernorm_bf16_wb_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
