// softmax(scale * x), bf16 -> bf16: one wave per row, 2 rows per workgroup, single pass, cp.async ring of 2 stages (NVIDIA / warp-32 emulator; direct loads on AMD).
#include "rowops_forward.h"

struct softmax_bf16_staged_cfg {
  using TIn = ckgen::bf16; using TRes = ckgen::bf16; using TW = ckgen::bf16; using TOut = ckgen::bf16;
  static constexpr int kOp = ckgen::rowops::kSoftmax;
  static constexpr bool kHasWeight = false, kHasBias = false, kResidual = false, kQuantI8 = false;
  static constexpr int kVec = 8;
  static constexpr int kWaveSize = ckgen::kPlatformWaveSize;
  static constexpr int kRowThreads = kWaveSize, kWavesPerRow = 1;
  static constexpr int kRowsPerBlock = 2, kThreads = kRowsPerBlock * kRowThreads;
  static constexpr int kRegVecs = 4, kTileCols = kRegVecs * kVec * kRowThreads;
  static constexpr bool kLooped = false;
  static constexpr int kStages = 2;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / kWaveSize) * 2 * 4 : 0;  // state of 2 float(s)
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(softmax_bf16_staged_cfg::kThreads) void softmax_bf16_staged(
    const softmax_bf16_staged_cfg::TIn* x, const softmax_bf16_staged_cfg::TRes* residual, const softmax_bf16_staged_cfg::TW* weight,
    const softmax_bf16_staged_cfg::TW* bias, softmax_bf16_staged_cfg::TOut* y, softmax_bf16_staged_cfg::TRes* s_out, float* y_scale, int rows,
    int cols, long long stride_x, long long stride_res, long long stride_y, long long stride_s, float scale, float eps) {
  ckgen::rowops_forward<softmax_bf16_staged_cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x,
                               stride_res, stride_y, stride_s, scale, eps);
}
