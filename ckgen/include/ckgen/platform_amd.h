// ckgen/platform_amd.h: the platform API on AMD GPUs (device pass of clang -x hip, -nogpuinc -nogpulib).
//
// No HIP headers, no device libraries (ocml/ockl are absent for gfx942/gfx950 here): everything is a
// clang builtin. Included through ckgen/platform.h only.
#pragma once

#if !defined(__AMDGCN__) || !defined(__HIP_DEVICE_COMPILE__)
#error "ckgen/platform_amd.h is for the amdgcn device pass; include ckgen/platform.h"
#endif

#include "ckgen/types.h"

#define CKGEN_PLATFORM_AMD 1
// -nogpuinc: the HIP headers (which define __global__ etc.) are not included; use the attributes.
#define CKGEN_GLOBAL extern "C" __attribute__((global))
#define CKGEN_DEVICE __attribute__((device)) inline __attribute__((always_inline))
#define CKGEN_LAUNCH_BOUNDS(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
// The same, with m workgroups per CU asked for (CUDA: the register cap for m blocks per SM). AMD takes its
// registers from the flat workgroup size alone: m is not passed on (the planners plan no register-bounded kernel
// for wave64 targets).
#define CKGEN_LAUNCH_BOUNDS_MIN(n, m) CKGEN_LAUNCH_BOUNDS(n)
#define CKGEN_LAUNCH_BOUNDS_ONE(n) CKGEN_LAUNCH_BOUNDS(n)
#define CKGEN_SHARED __attribute__((shared))

// T* name: a workgroup-shared array of count T, 16-byte aligned (static LDS; function scope is static).
#define CKGEN_LDS(T, name, count)                                   \
  CKGEN_SHARED __attribute__((aligned(16))) T name##_ckgen_lds[(count)]; \
  T* name = name##_ckgen_lds

// Tell the compiler a value is the same in every lane (kept in an SGPR).
#define CKGEN_UNIFORM(x) __builtin_amdgcn_readfirstlane(x)

namespace ckgen {

constexpr int kPlatformWaveSize = 64;

CKGEN_DEVICE int thread_id() { return static_cast<int>(__builtin_amdgcn_workitem_id_x()); }

CKGEN_DEVICE int block_id(int d) {
  return d == 0 ? static_cast<int>(__builtin_amdgcn_workgroup_id_x())
       : d == 1 ? static_cast<int>(__builtin_amdgcn_workgroup_id_y())
                : static_cast<int>(__builtin_amdgcn_workgroup_id_z());
}

// Number of workgroups along d: ceil(grid size in work-items / workgroup size), from the dispatch packet.
CKGEN_DEVICE int grid_dim(int d) {
  unsigned g = d == 0 ? __builtin_amdgcn_grid_size_x() : d == 1 ? __builtin_amdgcn_grid_size_y()
                                                                : __builtin_amdgcn_grid_size_z();
  unsigned w = d == 0 ? __builtin_amdgcn_workgroup_size_x() : d == 1 ? __builtin_amdgcn_workgroup_size_y()
                                                                     : __builtin_amdgcn_workgroup_size_z();
  return static_cast<int>((g + w - 1) / w);
}

CKGEN_DEVICE int lane_id() {
  return static_cast<int>(__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)));
}

// Wave index within the workgroup; wave-uniform (SGPR).
CKGEN_DEVICE int wave_id() { return __builtin_amdgcn_readfirstlane(thread_id() / kPlatformWaveSize); }

// Workgroup barrier that also orders LDS (and global) accesses: release fence, s_barrier, acquire fence.
// The fences make the compiler emit s_waitcnt lgkmcnt(0)/vmcnt(0) before the barrier as needed.
CKGEN_DEVICE void barrier() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

// Programmatic dependent launch (platform_cuda.h): none on AMD; a kernel starts after the one ahead of it.
CKGEN_DEVICE void grid_dependency_wait() {}
CKGEN_DEVICE void grid_dependents_launch() {}

namespace amd_detail {
// Memory access through one native vector type of the access's size, so that a vec<T, N> access stays
// ONE instruction (global_load_dwordx4, ds_read_b128 ...). Accessing the struct member-wise lets LLVM
// split the access and merge parts with neighbouring scalar accesses (seen: dwordx3 + dword).
// may_alias: these types may view any element type.
typedef int mem16_t __attribute__((ext_vector_type(4), may_alias));
typedef int mem8_t __attribute__((ext_vector_type(2), may_alias));
typedef int mem4_t __attribute__((may_alias));
template <int kBytes>
struct MemType {
  using type = void;
};
template <>
struct MemType<16> {
  using type = mem16_t;
};
template <>
struct MemType<8> {
  using type = mem8_t;
};
template <>
struct MemType<4> {
  using type = mem4_t;
};
template <class T>
constexpr bool kNativeVec = sizeof(T) >= 4 && alignof(T) >= sizeof(T) &&
                            !__is_same(typename MemType<static_cast<int>(sizeof(T))>::type, void);

template <class T>
CKGEN_DEVICE T load(const T* p) {
  if constexpr (kNativeVec<T>) {
    using M = typename MemType<static_cast<int>(sizeof(T))>::type;
    M m = *reinterpret_cast<const M*>(p);
    // An empty asm that takes the whole value keeps InstCombine from splitting the vector load into
    // per-element loads (which the backend may re-merge only partly: dwordx3 + dword).
    if constexpr (sizeof(T) > 4) __asm__("" : "+v"(m));
    return bit_cast<T>(m);
  } else {
    return *p;
  }
}
template <class T>
CKGEN_DEVICE void store(T* p, const T& v) {
  if constexpr (kNativeVec<T>) {
    using M = typename MemType<static_cast<int>(sizeof(T))>::type;
    *reinterpret_cast<M*>(p) = bit_cast<M>(v);
  } else {
    *p = v;
  }
}
}  // namespace amd_detail

// Global memory and LDS: plain accesses (the compiler infers the address space from the kernel
// argument / __shared__ array). Naturally aligned 4/8/16-byte values go as one vector access.
template <class T>
CKGEN_DEVICE T gload(const T* p) { return amd_detail::load(p); }
template <class T>
CKGEN_DEVICE void gstore(T* p, T v) { amd_detail::store(p, v); }
template <class T>
CKGEN_DEVICE T lds_load(const T* p) { return amd_detail::load(p); }
template <class T>
CKGEN_DEVICE void lds_store(T* p, T v) { amd_detail::store(p, v); }

CKGEN_DEVICE float exp_f32(float x) { return __builtin_expf(x); }
CKGEN_DEVICE float log_f32(float x) { return __builtin_logf(x); }       // v_log_f32 (scaled by ln 2)
// Older compilers (hiprtc of ROCm 5.2) lack the two amdgcn builtins; their generic exp2 / log2 lower to the same ops.
#if __has_builtin(__builtin_amdgcn_exp2f)
CKGEN_DEVICE float exp2_f32(float x) { return __builtin_amdgcn_exp2f(x); }  // one v_exp_f32 (2^x, 1 ulp)
#else
CKGEN_DEVICE float exp2_f32(float x) { return __builtin_exp2f(x); }
#endif
#if __has_builtin(__builtin_amdgcn_logf)
CKGEN_DEVICE float log2_f32(float x) { return __builtin_amdgcn_logf(x); }   // one v_log_f32 (log2 x)
#else
CKGEN_DEVICE float log2_f32(float x) { return __builtin_log2f(x); }
#endif
CKGEN_DEVICE float rsqrt_f32(float x) { return __builtin_amdgcn_rsqf(x); }  // v_rsq_f32 (1 ulp)
CKGEN_DEVICE float rcp_f32(float x) { return __builtin_amdgcn_rcpf(x); }    // v_rcp_f32 (1 ulp)
CKGEN_DEVICE float max_f32(float a, float b) { return __builtin_fmaxf(a, b); }

// A pointer to global memory, kept per lane (a VGPR pair) and opaque to the optimizer: offsets added to it
// later are not re-associated into one uniform (SGPR) base per offset, which on kernels with many tensors and
// unrolled vectors ran out of SGPRs. The address space stays global (the asm sees an address_space(1)
// pointer), so accesses stay global_load/store. The emu and CUDA platforms return p.
template <class T>
CKGEN_DEVICE T* per_lane(T* p) {
  __attribute__((address_space(1))) T* g = (__attribute__((address_space(1))) T*)p;
  __asm__("" : "+v"(g));
  return (T*)g;
}

// A violated device-side precondition: abort the dispatch (s_trap 2). `why` is for the emulator's report.
CKGEN_DEVICE void trap(const char* why) {
  (void)why;
  __builtin_trap();
}

// Device-scope (agent) atomics on global memory and a device-scope fence (cross-workgroup hand-offs).
CKGEN_DEVICE int atomic_add(int* p, int v) {
  return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
CKGEN_DEVICE void atomic_add(float* p, float v) {
  (void)__hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
CKGEN_DEVICE void fence_device() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
// 64-bit counters (a ticket queue), device-coherent loads of what other workgroups wrote (a spin-wait's counter, a
// partial result), and a short pause inside a spin-wait (on: the address waited on, for the emulator).
CKGEN_DEVICE unsigned long long atomic_add(unsigned long long* p, unsigned long long v) {
  return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
CKGEN_DEVICE int atomic_load(const int* p) { return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT); }
CKGEN_DEVICE float atomic_load(const float* p) {
  return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
CKGEN_DEVICE void spin_pause(const void*) { __builtin_amdgcn_s_sleep(1); }

}  // namespace ckgen

// Cross-lane exchanges: shfl_xor, reduce_swap, readlane (DPP, ds_swizzle, ds_bpermute, v_readlane).
#include "ckgen/xlane_amd.h"
