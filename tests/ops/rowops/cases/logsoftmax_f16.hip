// log-softmax, f16 -> f32: 16 lanes per row (sub-wave rows), 8 rows per workgroup, looped.
#include "rowops_forward.h"

struct logsoftmax_f16_cfg {
  using TIn = ckgen::f16; using TRes = ckgen::f16; using TW = ckgen::f16; using TOut = float;
  static constexpr int kOp = ckgen::rowops::kLogSoftmax;
  static constexpr bool kHasWeight = false, kHasBias = false, kResidual = false, kQuantI8 = false;
  static constexpr int kVec = 8;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = 16, kWavesPerRow = 1;
  static constexpr int kRowsPerBlock = 8, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 2, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = true;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 2 * 4 : 0;  // state of 2 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(logsoftmax_f16_cfg::kThreads) void logsoftmax_f16(
    const logsoftmax_f16_cfg::TIn* x, const logsoftmax_f16_cfg::TRes* residual, const logsoftmax_f16_cfg::TW* weight,
    const logsoftmax_f16_cfg::TW* bias, logsoftmax_f16_cfg::TOut* y, logsoftmax_f16_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<logsoftmax_f16_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
