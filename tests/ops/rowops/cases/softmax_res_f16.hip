// softmax(scale * (x + residual)), f16, s written: one wave per row, looped, one vector per tile.
#include "rowops_forward.h"

struct softmax_res_f16_cfg {
  using TIn = ckgen::f16; using TRes = ckgen::f16; using TW = ckgen::f16; using TOut = ckgen::f16;
  static constexpr int kOp = ckgen::rowops::kSoftmax;
  static constexpr bool kHasWeight = false, kHasBias = false, kResidual = true, kQuantI8 = false;
  static constexpr int kVec = 8;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = kWaveSize, kWavesPerRow = 1;
  static constexpr int kRowsPerBlock = 1, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 1, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = true;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 2 * 4 : 0;  // state of 2 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(softmax_res_f16_cfg::kThreads) void softmax_res_f16(
    const softmax_res_f16_cfg::TIn* x, const softmax_res_f16_cfg::TRes* residual, const softmax_res_f16_cfg::TW* weight,
    const softmax_res_f16_cfg::TW* bias, softmax_res_f16_cfg::TOut* y, softmax_res_f16_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<softmax_res_f16_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
