// residual + log-softmax, bf16: four waves per row, single pass, cp.async ring of 2 stages.
#include "rowops_forward.h"

struct logsoftmax_res_bf16_staged_cfg {
  using TIn = ckgen::bf16; using TRes = ckgen::bf16; using TW = ckgen::bf16; using TOut = ckgen::bf16;
  static constexpr int kOp = ckgen::rowops::kLogSoftmax;
  static constexpr bool kHasWeight = false, kHasBias = false, kResidual = true, kQuantI8 = false;
  static constexpr int kVec = 8;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = 4 * kWaveSize, kWavesPerRow = 4;
  static constexpr int kRowsPerBlock = 1, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 2, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = false;
  static constexpr int kStages = 2;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 2 * 4 : 0;  // state of 2 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(logsoftmax_res_bf16_staged_cfg::kThreads) void logsoftmax_res_bf16_staged(
    const logsoftmax_res_bf16_staged_cfg::TIn* x, const logsoftmax_res_bf16_staged_cfg::TRes* residual, const logsoftmax_res_bf16_staged_cfg::TW* weight,
    const logsoftmax_res_bf16_staged_cfg::TW* bias, logsoftmax_res_bf16_staged_cfg::TOut* y, logsoftmax_res_bf16_staged_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<logsoftmax_res_bf16_staged_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
