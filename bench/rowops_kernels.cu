// bench/rowops_kernels.cu: the standalone NVIDIA harness library of the row ops (ckgen/ops/rowops/device).
// Each NVR_KERNEL line is one hand-written Cfg (what the op's template will render from a plan) with an
// extern "C" launcher
//   int NAME(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y,
//            stride_s, scale, eps, stream)     -> a ckgen status code (0 = launched)
// and `long long NAME_info(int i)`: 0 tile_cols, 1 looped, 2 threads, 3 rows_per_block, 4 grid blocks for
// rows = 1 (sanity). Loaded by bench/rowops_bench.py (ctypes). Build (from the repository root), then carry
// bench/_build:
//   mkdir -p bench/_build && nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC --expt-relaxed-constexpr \
//     -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -Ickgen/include -Ickgen/ops/rowops/device \
//     bench/rowops_kernels.cu -o bench/_build/librowops.so
#include "ckgen/platform.h"
#include "rowops_forward.h"

namespace nvr {
using ckgen::bf16;
using ckgen::f16;
namespace ro = ckgen::rowops;

template <int kOp>
constexpr int state_floats() { return kOp == ro::kLayerNorm ? 3 : kOp == ro::kRmsNorm ? 1 : 2; }

// One configuration: rows of kRowThreads threads (a power of two below 32, or whole warps), kRowsPerBlock rows
// per block, kRegVecs 16-byte vectors of x per thread and tile.
template <class TIn_, class TOut_, int kOp_, bool kW, bool kB, bool kRes, int kRowThreads_, int kRowsPerBlock_,
          int kRegVecs_, bool kLooped_, class TRes_ = TIn_, class TW_ = TIn_>
struct Cfg {
  using TIn = TIn_; using TRes = TRes_; using TW = TW_; using TOut = TOut_;
  static constexpr int kOp = kOp_;
  static constexpr bool kHasWeight = kW, kHasBias = kB, kResidual = kRes;
  static constexpr bool kQuantI8 = __is_same(TOut_, int8_t);
  static constexpr int kVec = 16 / static_cast<int>(sizeof(TIn_));
  static constexpr int kWaveSize = 32;
  static constexpr int kRowThreads = kRowThreads_, kWavesPerRow = kRowThreads_ >= 32 ? kRowThreads_ / 32 : 1;
  static constexpr int kRowsPerBlock = kRowsPerBlock_, kThreads = kRowsPerBlock_ * kRowThreads_;
  static constexpr int kRegVecs = kRegVecs_, kTileCols = kRegVecs_ * kVec * kRowThreads_;
  static constexpr bool kLooped = kLooped_;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / 32) * state_floats<kOp_>() * 4 : 0;
};
}  // namespace nvr

#define NVR_KERNEL(NAME, ...)                                                                                   \
  using NAME##_cfg = nvr::Cfg<__VA_ARGS__>;                                                                     \
  CKGEN_GLOBAL __launch_bounds__(NAME##_cfg::kThreads) void NAME##_kernel(                                      \
      const NAME##_cfg::TIn* x, const NAME##_cfg::TRes* r, const NAME##_cfg::TW* w, const NAME##_cfg::TW* b,    \
      NAME##_cfg::TOut* y, NAME##_cfg::TRes* s, float* ys, int rows, int cols, long long sx, long long sr,       \
      long long sy, long long ss, float scale, float eps) {                                                     \
    ckgen::rowops_forward<NAME##_cfg>(x, r, w, b, y, s, ys, rows, cols, sx, sr, sy, ss, scale, eps);           \
  }                                                                                                             \
  extern "C" __attribute__((visibility("default"))) int NAME(                                                   \
      const void* x, const void* r, const void* w, const void* b, void* y, void* s, float* ys, int rows,        \
      int cols, long long sx, long long sr, long long sy, long long ss, float scale, float eps, void* stream) {  \
    using C = NAME##_cfg;                                                                                       \
    static int configured = 0;                                                                                  \
    if (rows <= 0 || cols <= 0) return 0;                                                                       \
    if (!C::kLooped && cols > C::kTileCols) return 1; /* CKGEN_ERROR_INVALID_VALUE: the host-side check */      \
    return ckgen::cuda_host::launch(NAME##_kernel, &configured,                                                 \
                                    static_cast<unsigned>(ckgen::rowops::grid_blocks<C>(rows)), 1u, 1u,        \
                                    static_cast<unsigned>(C::kThreads), 0, stream, static_cast<const C::TIn*>(x), \
                                    static_cast<const C::TRes*>(r), static_cast<const C::TW*>(w),               \
                                    static_cast<const C::TW*>(b), static_cast<C::TOut*>(y),                     \
                                    static_cast<C::TRes*>(s), ys, rows, cols, sx, sr, sy, ss, scale, eps);       \
  }                                                                                                             \
  extern "C" __attribute__((visibility("default"))) long long NAME##_info(int i) {                              \
    using C = NAME##_cfg;                                                                                       \
    const long long v[4] = {C::kTileCols, C::kLooped, C::kThreads, C::kRowsPerBlock};                          \
    return i >= 0 && i < 4 ? v[i] : -1;                                                                         \
  }

#include "rowops_configs.h"
