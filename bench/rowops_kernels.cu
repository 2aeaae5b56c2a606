// bench/rowops_kernels.cu: the standalone NVIDIA harness library of the row ops (ckgen/ops/rowops/device).
// Each NVR_KERNEL line is one hand-written Cfg (what the op's template will render from a plan) with an
// extern "C" launcher
//   int NAME(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y,
//            stride_s, scale, eps, stream)     -> a ckgen status code (0 = launched)
// and `long long NAME_info(int i)`: 0 tile_cols, 1 looped, 2 threads, 3 rows_per_block, 4 stages (the cp.async
// ring, rowops_forward.h), 5 its dynamic shared memory (bytes), 6 the persistent grid's resident blocks (0 until
// the first launch of a staged configuration). Staged configurations (kStages > 0) launch a persistent grid,
// rowops::grid_blocks<Cfg>(rows, SMs x resident blocks per SM), with rowops::stage_bytes<Cfg>() of dynamic shared
// memory; the others one workgroup per row group (rowops::grid_blocks<Cfg>(rows)). Loaded by
// bench/rowops_bench.py (ctypes). Build: `bash bench/rowops_device_check.sh build` (nvcc, sm_90a), then carry
// bench/_build/librowops.so.
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
          int kRegVecs_, bool kLooped_, int kStages_ = 0, class TRes_ = TIn_, class TW_ = TIn_>
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
  static constexpr int kStages = kStages_;
  static constexpr int kLdsBytes = kWavesPerRow > 1 ? 2 * (kThreads / 32) * state_floats<kOp_>() * 4 : 0;
};

// Workgroups of `kernel` the device holds at once (SM count x blocks per SM with `smem` bytes of dynamic shared
// memory), computed once per kernel (*cache); 0 when it does not fit.
template <class K>
long long resident_blocks(K kernel, int threads, int smem, long long* cache) {
  if (*cache > 0) return *cache;
  int dev = 0, sms = 0, per_sm = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    return 0;
  // the dynamic shared memory above 48 KiB, and the largest shared-memory carveout (so that the occupancy asked
  // here is the one the launch gets)
  if ((smem > 48 * 1024 &&
       cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, smem) !=
           cudaSuccess) ||
      cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributePreferredSharedMemoryCarveout,
                           cudaSharedmemCarveoutMaxShared) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, static_cast<size_t>(smem)) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  *cache = static_cast<long long>(per_sm) * sms;
  return *cache;
}
}  // namespace nvr

#define NVR_KERNEL(NAME, ...)                                                                                   \
  using NAME##_cfg = nvr::Cfg<__VA_ARGS__>;                                                                     \
  static long long NAME##_resident = 0;                                                                         \
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
    constexpr int smem = ckgen::rowops::stage_bytes<C>();                                                       \
    long long grid = ckgen::rowops::grid_blocks<C>(rows);                                                       \
    if (smem > 0) {                                                                                             \
      const long long res = nvr::resident_blocks(NAME##_kernel, C::kThreads, smem, &NAME##_resident);          \
      if (res <= 0) return 5; /* CKGEN_ERROR_LAUNCH_FAILED: does not fit */                                     \
      grid = ckgen::rowops::grid_blocks<C>(rows, res);                                                          \
    }                                                                                                           \
    return ckgen::cuda_host::launch(NAME##_kernel, &configured, static_cast<unsigned>(grid), 1u, 1u,           \
                                    static_cast<unsigned>(C::kThreads), smem, stream, static_cast<const C::TIn*>(x), \
                                    static_cast<const C::TRes*>(r), static_cast<const C::TW*>(w),               \
                                    static_cast<const C::TW*>(b), static_cast<C::TOut*>(y),                     \
                                    static_cast<C::TRes*>(s), ys, rows, cols, sx, sr, sy, ss, scale, eps);       \
  }                                                                                                             \
  extern "C" __attribute__((visibility("default"))) long long NAME##_info(int i) {                              \
    using C = NAME##_cfg;                                                                                       \
    const long long v[7] = {C::kTileCols, C::kLooped, C::kThreads, C::kRowsPerBlock, ckgen::rowops::stages<C>(), \
                            ckgen::rowops::stage_bytes<C>(), NAME##_resident};                                  \
    return i >= 0 && i < 7 ? v[i] : -1;                                                                         \
  }

#include "rowops_configs.h"
