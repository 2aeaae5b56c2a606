// ckgen/platform_emu.h: the platform API on the CPU emulator (host clang++, -DCKGEN_PLATFORM_EMU).
//
// The same kernel bodies that build for gfx9 build here: every GPU thread is a fiber, wave-level
// operations are collectives, LDS and global accesses are checked. See docs/emulation.md and
// ckgen/emu/runtime.h for the execution model, the sanitizers and the C API; ckgen/emu/mfma.h for
// the matrix instructions. Included through ckgen/platform.h only.
//
// Build: clang++ -std=c++17 -O2 -fPIC -shared -pthread -DCKGEN_PLATFORM_EMU -I<ckgen/include>
//        [-DCKGEN_EMU_ARCH_RESTRICT -DCKGEN_EMU_HAS_<builtin>... -DCKGEN_EMU_LDS_BYTES=<n> -DCKGEN_EMU_FP8_OCP]
// (ckgen.backends.emu.emu_defines(target) gives the per-arch flags from the targets table).
#pragma once

#if !defined(CKGEN_PLATFORM_EMU)
#error "ckgen/platform_emu.h needs CKGEN_PLATFORM_EMU; include ckgen/platform.h"
#endif

#include <math.h>
#include <string.h>

// Vectors of 16/32 floats passed by value change the x86 ABI without AVX-512; harmless inside one library.
#pragma clang diagnostic ignored "-Wpsabi"

#include "ckgen/types.h"
#include "ckgen/emu/runtime.h"
#include "ckgen/emu/mfma.h"
#include "ckgen/emu/xlane.h"

#define CKGEN_GLOBAL extern "C"
#define CKGEN_DEVICE inline
#define CKGEN_LAUNCH_BOUNDS(n)
#define CKGEN_LAUNCH_BOUNDS_MIN(n, m)
#define CKGEN_LAUNCH_BOUNDS_ONE(n)

// T* name: the workgroup's allocation of this declaration (one per expansion and template instantiation, as
// AMD's static LDS; every thread and every call of the enclosing function gets the same one).
#define CKGEN_LDS(T, name, count)                 \
  static const char name##_ckgen_site = 0;        \
  T* name = ::ckgen::emu::lds_alloc<T>(static_cast<size_t>(count), #name, &name##_ckgen_site)

// A value promised to be the same in every lane of the wave: a collective that checks the promise.
#define CKGEN_UNIFORM(x) ::ckgen::emu::uniform((x), #x)

// Host side of a launcher: run kernel_name(args...) on every workgroup; returns a ckgen status code.
// lds_bytes 0 means the target's limit (CKGEN_EMU_LDS_BYTES); stream is ignored.
#define CKGEN_LAUNCH(kernel_name, gx, gy, gz, threads, lds_bytes, stream, ...)                        \
  ((void)(stream), ::ckgen::emu::launch(#kernel_name, &kernel_name,                                   \
                                        ::ckgen::emu::Dim3{static_cast<unsigned>(gx),                 \
                                                           static_cast<unsigned>(gy),                 \
                                                           static_cast<unsigned>(gz)},                \
                                        static_cast<int>(threads), static_cast<size_t>(lds_bytes), __VA_ARGS__))
// (launches run one after another here)
#define CKGEN_LAUNCH_DEPENDENT(kernel_name, ...) CKGEN_LAUNCH(kernel_name, __VA_ARGS__)

namespace ckgen {

constexpr int kPlatformWaveSize = CKGEN_EMU_WAVE_SIZE;

inline int thread_id() { return emu::thread_id(); }
inline int block_id(int d) { return emu::block_id(d); }
inline int grid_dim(int d) { return emu::grid_dim(d); }
inline int lane_id() { return emu::lane_id(); }
inline int wave_id() { return emu::wave_id(); }

// Workgroup barrier. The call site identifies it: threads waiting at different sites are a fault.
inline void barrier(const char* file = __builtin_FILE(), int line = __builtin_LINE()) { emu::barrier(file, line); }
// Programmatic dependent launch (platform_cuda.h): workgroups of one launch run after the previous launch's.
inline void grid_dependency_wait() {}
inline void grid_dependents_launch() {}

namespace emu {
template <class T>
constexpr size_t access_align() {
  return alignof(T) < 16 ? alignof(T) : 16;
}
}  // namespace emu

template <class T>
inline T gload(const T* p) {
  emu::check_global(p, sizeof(T), emu::access_align<T>(), false);
  T v;
  memcpy(static_cast<void*>(&v), p, sizeof(T));
  return v;
}
template <class T>
inline void gstore(T* p, T v) {
  emu::check_global(p, sizeof(T), emu::access_align<T>(), true);
  memcpy(static_cast<void*>(p), &v, sizeof(T));
}
// LDS accesses carry their call site (bank-conflict statistics group lanes by it: ckgen/emu/lds_banks.h).
template <class T>
inline T lds_load(const T* p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  emu::check_lds(p, sizeof(T), emu::access_align<T>(), false, emu::lds_site(file, line, false));
  T v;
  memcpy(static_cast<void*>(&v), p, sizeof(T));
  return v;
}
template <class T>
inline void lds_store(T* p, T v, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  emu::check_lds(p, sizeof(T), emu::access_align<T>(), true, emu::lds_site(file, line, true));
  memcpy(static_cast<void*>(p), &v, sizeof(T));
}

inline float exp_f32(float x) { return expf(x); }
inline float log_f32(float x) { return logf(x); }
inline float exp2_f32(float x) { return exp2f(x); }
inline float log2_f32(float x) { return log2f(x); }
inline float rsqrt_f32(float x) { return 1.0f / sqrtf(x); }
inline float rcp_f32(float x) { return 1.0f / x; }
inline float max_f32(float a, float b) { return fmaxf(a, b); }

// per_lane(p): an optimizer hint on AMD (keep a global pointer in VGPRs); p itself here.
template <class T>
inline T* per_lane(T* p) { return p; }

// A violated device-side precondition: an emulation fault with `why` (AMD: s_trap, CUDA: __trap()).
inline void trap(const char* why) { emu::fault("device trap: %s", why); }

// Device-scope atomics on global memory (workgroups run on several OS threads: real atomics) and a fence.
inline int atomic_add(int* p, int v) {
  emu::check_global(p, sizeof(int), alignof(int), true);
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
inline void atomic_add(float* p, float v) {
  emu::check_global(p, sizeof(float), alignof(float), true);
  uint32_t* u = reinterpret_cast<uint32_t*>(p);
  uint32_t old = __atomic_load_n(u, __ATOMIC_SEQ_CST);
  for (;;) {
    float f;
    memcpy(&f, &old, 4);
    f += v;
    uint32_t nv;
    memcpy(&nv, &f, 4);
    if (__atomic_compare_exchange_n(u, &old, nv, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return;
  }
}
inline void fence_device() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline unsigned long long atomic_add(unsigned long long* p, unsigned long long v) {
  emu::check_global(p, sizeof(*p), alignof(unsigned long long), true);
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
template <class T>
inline T atomic_load(const T* p) {
  static_assert(sizeof(T) == 4, "atomic_load: int or float");
  emu::check_global(p, sizeof(T), alignof(T), false);
  uint32_t u = __atomic_load_n(reinterpret_cast<const uint32_t*>(p), __ATOMIC_SEQ_CST);
  T v;
  memcpy(static_cast<void*>(&v), &u, sizeof(T));
  return v;
}
// A spin-wait's pause (`on`: what it waits on): the OS thread yields to the workgroups the others run (emu::spin; a launch whose
// workgroups wait on each other runs them at once: emu::launch_coresident).
inline void spin_pause(const void* on) { emu::spin(on); }

}  // namespace ckgen

// Wave-level builtins the AMD platform layer or kernels may use.
inline int __builtin_amdgcn_readfirstlane(int v) { return ::ckgen::emu::readfirstlane(v); }
inline int __builtin_amdgcn_ds_bpermute(int addr, int v) { return ::ckgen::emu::bpermute(addr, v); }
// Cross-lane moves (semantics and the emulated controls: ckgen/emu/xlane.h).
inline int __builtin_amdgcn_update_dpp(int old, int src, int dpp_ctrl, int row_mask, int bank_mask, bool bound_ctrl) {
  return static_cast<int>(::ckgen::emu::dpp_move("__builtin_amdgcn_update_dpp", true, static_cast<uint32_t>(old),
                                                 static_cast<uint32_t>(src), dpp_ctrl, row_mask, bank_mask,
                                                 bound_ctrl));
}
inline int __builtin_amdgcn_mov_dpp(int src, int dpp_ctrl, int row_mask, int bank_mask, bool bound_ctrl) {
  return static_cast<int>(::ckgen::emu::dpp_move("__builtin_amdgcn_mov_dpp", false, 0u, static_cast<uint32_t>(src),
                                                 dpp_ctrl, row_mask, bank_mask, bound_ctrl));
}
inline int __builtin_amdgcn_ds_swizzle(int src, int offset) {
  return static_cast<int>(::ckgen::emu::swizzle(static_cast<uint32_t>(src), offset));
}
inline int __builtin_amdgcn_readlane(int v, int lane) {
  return static_cast<int>(::ckgen::emu::readlane(static_cast<uint32_t>(v), lane));
}

// The cross-lane API (shfl_xor, reduce_swap, readlane): the AMD source, on the builtins above.
#include "ckgen/xlane_amd.h"
