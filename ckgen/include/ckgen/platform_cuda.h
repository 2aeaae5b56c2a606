// ckgen/platform_cuda.h: the platform API (docs/design.md) for nvcc, device and host side.
//
// Included through ckgen/platform.h when __CUDACC__ is defined. Device side: the same names the
// AMD and emulation platforms give kernel bodies (thread_id, block_id, barrier, CKGEN_LDS, gload ...),
// mapped to CUDA built-ins. Host side: CKGEN_LAUNCH, which launches with <<<>>> on the caller's
// stream, raises the kernel's dynamic shared-memory limit when it needs more than 48 KiB, and maps
// CUDA errors to ckgen status codes (never aborts).
//
// Warp-level names: a "wave" here is a warp of 32 threads (kPlatformWaveSize).
#pragma once

#if !defined(__CUDACC__)
#error "ckgen/platform_cuda.h is for nvcc; include ckgen/platform.h"
#endif

#include "ckgen/hip_cuda_compat.h"
#include "ckgen/types.h"

#define CKGEN_PLATFORM_CUDA 1
#define CKGEN_GLOBAL extern "C" __global__
#define CKGEN_DEVICE __device__ __forceinline__
#define CKGEN_LAUNCH_BOUNDS(n) __launch_bounds__(n)
// At least m blocks of n threads per SM: ptxas keeps a thread within 64 K / (n * m) registers. m = 1: it may
// use every register a thread can have (without a minimum it may cap registers for occupancy, and spill).
#define CKGEN_LAUNCH_BOUNDS_MIN(n, m) __launch_bounds__(n, m)
#define CKGEN_LAUNCH_BOUNDS_ONE(n) CKGEN_LAUNCH_BOUNDS_MIN(n, 1)

// T* name: a block-shared array of count T, 16-byte aligned (static shared memory).
#define CKGEN_LDS(T, name, count)                       \
  __shared__ __align__(16) T name##_ckgen_lds[(count)]; \
  T* name = name##_ckgen_lds

// A value known to be warp-uniform: nothing to do on NVIDIA (no scalar register file).
#define CKGEN_UNIFORM(x) (x)

namespace ckgen {

constexpr int kPlatformWaveSize = 32;

CKGEN_DEVICE int thread_id() { return static_cast<int>(threadIdx.x); }
CKGEN_DEVICE int block_id(int d) {
  return d == 0 ? static_cast<int>(blockIdx.x) : d == 1 ? static_cast<int>(blockIdx.y) : static_cast<int>(blockIdx.z);
}
CKGEN_DEVICE int grid_dim(int d) {
  return d == 0 ? static_cast<int>(gridDim.x) : d == 1 ? static_cast<int>(gridDim.y) : static_cast<int>(gridDim.z);
}
CKGEN_DEVICE int lane_id() { return static_cast<int>(threadIdx.x) & 31; }
// Warp index in the block; uniform across the warp (__shfl_sync keeps the compiler aware of that).
CKGEN_DEVICE int wave_id() { return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) >> 5, 0); }

// Block barrier; orders shared-memory (and global) accesses of the block.
CKGEN_DEVICE void barrier() { __syncthreads(); }

// Programmatic dependent launch (sm_90+; no-ops before it): a kernel launched by CKGEN_LAUNCH_DEPENDENT may start
// before the kernel ahead of it on the stream has finished, and must call grid_dependency_wait() before it reads
// anything that kernel writes (it returns once that kernel is done and its writes are visible; at once when there
// is no such kernel). grid_dependents_launch(): the kernel ahead lets its dependent start launching once every
// one of its blocks has called this (or exited).
CKGEN_DEVICE void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
CKGEN_DEVICE void grid_dependents_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

template <class T>
CKGEN_DEVICE T gload(const T* p) { return *p; }
template <class T>
CKGEN_DEVICE void gstore(T* p, T v) { *p = v; }
template <class T>
CKGEN_DEVICE T lds_load(const T* p) { return *p; }
template <class T>
CKGEN_DEVICE void lds_store(T* p, T v) { *p = v; }

CKGEN_DEVICE float exp_f32(float x) { return __expf(x); }
CKGEN_DEVICE float log_f32(float x) { return __logf(x); }       // lg2.approx scaled by ln 2
CKGEN_DEVICE float exp2_f32(float x) {                          // one MUFU.EX2 (ex2.approx.ftz.f32)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
CKGEN_DEVICE float log2_f32(float x) {                          // one MUFU.LG2 (lg2.approx.ftz.f32)
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
CKGEN_DEVICE float rsqrt_f32(float x) { return rsqrtf(x); }     // rsqrt.approx (MUFU.RSQ)
CKGEN_DEVICE float rcp_f32(float x) {                           // one MUFU.RCP (rcp.approx.ftz.f32, ~1 ulp)
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
CKGEN_DEVICE float max_f32(float a, float b) { return fmaxf(a, b); }

// per_lane(p): an optimizer hint on AMD (keep a global pointer in VGPRs); p itself here.
template <class T>
CKGEN_DEVICE T* per_lane(T* p) { return p; }

// A violated device-side precondition: abort the kernel (the launch reports cudaErrorLaunchFailure).
CKGEN_DEVICE void trap(const char* why) {
  (void)why;
  __trap();
}

// ---------------------------------------------------------------- cross-lane exchanges (warp of 32)
// The names of ckgen/xlane_amd.h (contract there), on warp shuffles. Every lane of the warp must call them
// together (full mask).
template <int kMask>
CKGEN_DEVICE int shfl_xor(int v) {
  static_assert(kMask >= 1 && kMask < 32, "shfl_xor<kMask>: 1 <= kMask < 32 (warp of 32)");
  return __shfl_xor_sync(0xffffffffu, v, kMask);
}
template <int kMask>
CKGEN_DEVICE float shfl_xor(float v) {
  static_assert(kMask >= 1 && kMask < 32, "shfl_xor<kMask>: 1 <= kMask < 32 (warp of 32)");
  return __shfl_xor_sync(0xffffffffu, v, kMask);
}
CKGEN_DEVICE int shfl_xor(int v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask & 31); }
CKGEN_DEVICE float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask & 31); }
template <int kHalf>
CKGEN_DEVICE int reduce_swap(int v) {
  static_assert(kHalf == 1 || kHalf == 2 || kHalf == 4 || kHalf == 8 || kHalf == 16,
                "reduce_swap<kHalf>: kHalf is a power of two below the warp size (32)");
  return __shfl_xor_sync(0xffffffffu, v, kHalf);
}
template <int kHalf>
CKGEN_DEVICE float reduce_swap(float v) {
  static_assert(kHalf == 1 || kHalf == 2 || kHalf == 4 || kHalf == 8 || kHalf == 16,
                "reduce_swap<kHalf>: kHalf is a power of two below the warp size (32)");
  return __shfl_xor_sync(0xffffffffu, v, kHalf);
}
CKGEN_DEVICE int readlane(int v, int lane) { return __shfl_sync(0xffffffffu, v, lane); }
CKGEN_DEVICE float readlane(float v, int lane) { return __shfl_sync(0xffffffffu, v, lane); }

// Device-scope atomics on global memory and a device-scope fence (cross-block hand-offs).
CKGEN_DEVICE int atomic_add(int* p, int v) { return atomicAdd(p, v); }
CKGEN_DEVICE void atomic_add(float* p, float v) { (void)atomicAdd(p, v); }
CKGEN_DEVICE void fence_device() { __threadfence(); }
// 64-bit counters (a ticket queue), device-coherent loads of what other blocks wrote (a spin-wait's counter, a
// partial result: L1 bypassed), and a short pause inside a spin-wait (on: the address waited on, for the emulator).
CKGEN_DEVICE unsigned long long atomic_add(unsigned long long* p, unsigned long long v) { return atomicAdd(p, v); }
CKGEN_DEVICE int atomic_load(const int* p) { return __ldcg(p); }
CKGEN_DEVICE float atomic_load(const float* p) { return __ldcg(p); }
CKGEN_DEVICE void spin_pause(const void*) { __nanosleep(64); }
// One MUFU.TANH (tanh.approx.f32, sm_75+; max relative error about 2^-11): the GELU epilogue's cost was
// dominated by the exp + reciprocal of the portable formula (ckgen/blocks/epilogue.h), which this replaces here.
#define CKGEN_HAS_TANH_F32 1
CKGEN_DEVICE float tanh_f32(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// ---------------------------------------------------------------- matrix-operand register types
// mma.sync operands per thread, as 32-bit registers (names are those of the targets table).
struct u32x1_t { uint32_t r[1]; };
struct u32x2_t { uint32_t r[2]; };
struct u32x4_t { uint32_t r[4]; };
struct f32x4_t { float r[4]; };
struct i32x4_t { int r[4]; };

}  // namespace ckgen

// ---------------------------------------------------------------- host side: CKGEN_LAUNCH
namespace ckgen {
namespace cuda_host {

// Map a CUDA runtime error to a ckgen status code (the numbers of ckgen/status.h, docs/design.md).
inline int status_of(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return 0;                           // CKGEN_SUCCESS
    case cudaErrorNoDevice: return 2;                     // CKGEN_ERROR_NO_DEVICE
    case cudaErrorInsufficientDriver: return 3;           // CKGEN_ERROR_NO_RUNTIME
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction: return 4;        // CKGEN_ERROR_UNSUPPORTED_ARCH
    case cudaErrorInvalidValue: return 1;                 // CKGEN_ERROR_INVALID_VALUE
    default: return 5;                                    // CKGEN_ERROR_LAUNCH_FAILED
  }
}

// Launch `kernel` on `stream` (a cudaStream_t passed as void*; NULL is the legacy default stream).
// When its static shared memory plus `smem_bytes` of dynamic shared memory exceed the default 48 KiB, the
// kernel's dynamic shared-memory limit is raised first (once per kernel and size; `*configured` remembers
// it, one flag per call site): a 48 KiB pipeline beside a 4-byte static ticket needs it too.
// (configure_smem: that raise alone, a ckgen status; launch_cluster_grid in blocks/nv_cluster.h uses it too.)
inline int configure_smem(const void* f, int* configured, int smem_bytes) {
  if (smem_bytes > 0 && *configured != smem_bytes) {
    cudaFuncAttributes fa;
    cudaError_t e = cudaFuncGetAttributes(&fa, f);
    if (e == cudaSuccess && fa.sharedSizeBytes + static_cast<size_t>(smem_bytes) > 48 * 1024)
      e = cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return status_of(e);
    }
    *configured = smem_bytes;
  }
  return 0;
}

// Whether the current device launches programmatic dependents (compute capability 9.0 and up), asked once per
// device (at most 64 devices; past them: no).
inline bool dependent_launch_supported() {
  static int known[64] = {};  // 0 not asked yet, 1 no, 2 yes
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
    (void)cudaGetLastError();
    return false;
  }
  if (known[dev] == 0) {
    int major = 0;
    const cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e != cudaSuccess) (void)cudaGetLastError();
    known[dev] = e == cudaSuccess && major >= 9 ? 2 : 1;
  }
  return known[dev] == 2;
}

// kDependent: with programmatic stream serialization where the device has it (dependent_launch_supported), so
// that the kernel may start while the one ahead of it on the stream finishes; it calls grid_dependency_wait()
// before reading that kernel's outputs. A CUDA graph captured from the stream keeps the programmatic edge.
template <bool kDependent = false, class... KArgs, class... Args>
inline int launch(void (*kernel)(KArgs...), int* configured, unsigned gx, unsigned gy, unsigned gz,
                  unsigned threads, int smem_bytes, void* stream, Args... args) {
  if (gx == 0 || gy == 0 || gz == 0) return 0;  // nothing to compute (empty C)
  if (const int st = configure_smem(reinterpret_cast<const void*>(kernel), configured, smem_bytes)) return st;
  // Clear an error left by someone else so that it is not reported as ours.
  (void)cudaGetLastError();
  if (kDependent && dependent_launch_supported()) {
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(gx, gy, gz);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = static_cast<size_t>(smem_bytes);
    cfg.stream = static_cast<cudaStream_t>(stream);
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return status_of(cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...));
  }
  kernel<<<dim3(gx, gy, gz), dim3(threads), static_cast<size_t>(smem_bytes),
           static_cast<cudaStream_t>(stream)>>>(static_cast<KArgs>(args)...);
  cudaError_t e = cudaGetLastError();
  return status_of(e);
}

}  // namespace cuda_host
}  // namespace ckgen

// Returns an int status (docs/design.md status codes); never aborts.
// The generated launchers pass lds_bytes = 0 (AMD kernels declare static LDS); NVIDIA kernel bodies
// take their pipeline's shared memory dynamically, so the launch uses the larger of lds_bytes and the
// kernel's Cfg::kLdsBytes (the generated `ckgen_gen::<kernel>_cfg`, in the same translation unit).
#define CKGEN_LAUNCH(kernel_name, ...) CKGEN_LAUNCH_AS_(false, kernel_name, __VA_ARGS__)
// CKGEN_LAUNCH as a programmatic dependent of the kernel ahead of it on the stream (cuda_host::launch<true>).
#define CKGEN_LAUNCH_DEPENDENT(kernel_name, ...) CKGEN_LAUNCH_AS_(true, kernel_name, __VA_ARGS__)
#define CKGEN_LAUNCH_AS_(dependent, kernel_name, gx, gy, gz, block_threads, lds_bytes, stream, ...)      \
  ([&]() -> int {                                                                                       \
    static int ckgen_configured_ = 0;                                                                   \
    const int ckgen_lds_ = (int)(lds_bytes) > (int)ckgen_gen::kernel_name##_cfg::kLdsBytes              \
                               ? (int)(lds_bytes) : (int)ckgen_gen::kernel_name##_cfg::kLdsBytes;      \
    return ::ckgen::cuda_host::launch<dependent>(kernel_name, &ckgen_configured_, (unsigned)(gx),       \
                                                 (unsigned)(gy), (unsigned)(gz), (unsigned)(block_threads), \
                                                 ckgen_lds_, (void*)(stream), __VA_ARGS__);             \
  }())
