// Host side of the rowops test cases on the CPU emulator (tests/ops/rowops/harness.py builds one library per
// group of cases: this header, then for each case `#include "<case>.hip"` and `ROWOPS_EMU_CASE(<case>)`).
//
// Per case NAME it exports
//   int run_NAME(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y,
//                stride_s, scale, eps, grid)   launches NAME over `grid` workgroups (grid <= 0: the grid rule,
//                                              rowops::grid_blocks<Cfg>(rows)); returns a ckgen status code
//   void info_NAME(long long out[18])          the Cfg as compiled here: op, has_weight, has_bias, residual,
//                                              quant_i8, looped, tile_cols, threads, rows_per_block,
//                                              row_threads, lds_bytes, vec, then dtype codes of TIn, TRes, TW,
//                                              TOut (0 f32, 1 f16, 2 bf16, 3 int8), then the Cfg's kStages (0
//                                              when absent) and the stages this build runs (rowops::stages<C>():
//                                              0 without cp.async, i.e. on the wave64 emulator)
#pragma once

#include "ckgen/platform.h"
#include "rowops_forward.h"

namespace rowops_test {
template <class T>
struct Code;
template <>
struct Code<float> {
  static constexpr int value = 0;
};
template <>
struct Code<ckgen::f16> {
  static constexpr int value = 1;
};
template <>
struct Code<ckgen::bf16> {
  static constexpr int value = 2;
};
template <>
struct Code< ::int8_t> {
  static constexpr int value = 3;
};

template <class C>
void info(long long* o) {
  const long long v[18] = {C::kOp, C::kHasWeight, C::kHasBias, C::kResidual, C::kQuantI8, C::kLooped, C::kTileCols,
                           C::kThreads, C::kRowsPerBlock, C::kRowThreads, C::kLdsBytes, C::kVec,
                           Code<typename C::TIn>::value, Code<typename C::TRes>::value, Code<typename C::TW>::value,
                           Code<typename C::TOut>::value, ckgen::rowops::detail::StagesOf<C>::value,
                           ckgen::rowops::stages<C>()};
  for (int i = 0; i < 18; ++i) o[i] = v[i];
}
}  // namespace rowops_test

#define ROWOPS_EMU_EXPORT extern "C" __attribute__((visibility("default")))

#define ROWOPS_EMU_CASE(NAME)                                                                                   \
  ROWOPS_EMU_EXPORT int run_##NAME(const void* x, const void* res, const void* w, const void* b, void* y,       \
                                   void* s, float* ys, int rows, int cols, long long sx, long long sr,          \
                                   long long sy, long long ss, float scale, float eps, long long grid) {         \
    using C = NAME##_cfg;                                                                                       \
    const long long g = grid > 0 ? grid : ckgen::rowops::grid_blocks<C>(rows);                                  \
    return CKGEN_LAUNCH(NAME, g, 1, 1, C::kThreads, 0, nullptr, static_cast<const C::TIn*>(x),                  \
                        static_cast<const C::TRes*>(res), static_cast<const C::TW*>(w),                         \
                        static_cast<const C::TW*>(b), static_cast<C::TOut*>(y), static_cast<C::TRes*>(s), ys,   \
                        rows, cols, sx, sr, sy, ss, scale, eps);                                                \
  }                                                                                                             \
  ROWOPS_EMU_EXPORT void info_##NAME(long long* out) { rowops_test::info<NAME##_cfg>(out); }
