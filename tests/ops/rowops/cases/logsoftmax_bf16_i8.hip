// log-softmax, bf16 -> int8 + scale (amax pass): one wave per row, looped.
#include "rowops_forward.h"

struct logsoftmax_bf16_i8_cfg {
  using TIn = ckgen::bf16; using TRes = ckgen::bf16; using TW = ckgen::bf16; using TOut = ::int8_t;
  static constexpr int kOp = ckgen::rowops::kLogSoftmax;
  static constexpr bool kHasWeight = false, kHasBias = false, kResidual = false, kQuantI8 = true;
  static constexpr int kVec = 8;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = kWaveSize, kWavesPerRow = 1;
  static constexpr int kRowsPerBlock = 1, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 4, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = true;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 2 * 4 : 0;  // state of 2 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(logsoftmax_bf16_i8_cfg::kThreads) void logsoftmax_bf16_i8(
    const logsoftmax_bf16_i8_cfg::TIn* x, const logsoftmax_bf16_i8_cfg::TRes* residual, const logsoftmax_bf16_i8_cfg::TW* weight,
    const logsoftmax_bf16_i8_cfg::TW* bias, logsoftmax_bf16_i8_cfg::TOut* y, logsoftmax_bf16_i8_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<logsoftmax_bf16_i8_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
