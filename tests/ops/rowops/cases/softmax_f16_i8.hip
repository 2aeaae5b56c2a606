// softmax, f16 -> int8 + per-row scale (amax = 1/d, no extra pass): four waves per row, single pass.
#include "rowops_forward.h"

struct softmax_f16_i8_cfg {
  using TIn = ckgen::f16; using TRes = ckgen::f16; using TW = ckgen::f16; using TOut = ::int8_t;
  static constexpr int kOp = ckgen::rowops::kSoftmax;
  static constexpr bool kHasWeight = false, kHasBias = false, kResidual = false, kQuantI8 = true;
  static constexpr int kVec = 8;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = 4 * kWaveSize, kWavesPerRow = 4;
  static constexpr int kRowsPerBlock = 1, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 4, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = false;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 2 * 4 : 0;  // state of 2 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(softmax_f16_i8_cfg::kThreads) void softmax_f16_i8(
    const softmax_f16_i8_cfg::TIn* x, const softmax_f16_i8_cfg::TRes* residual, const softmax_f16_i8_cfg::TW* weight,
    const softmax_f16_i8_cfg::TW* bias, softmax_f16_i8_cfg::TOut* y, softmax_f16_i8_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<softmax_f16_i8_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
