// ckgen/platform_emu.h: the platform API on the CPU emulator (host clang++, -DCKGEN_PLATFORM_EMU).
//
// The same kernel bodies that build for gfx9 build here: every GPU thread is a fiber, wave-level
// operations are collectives, LDS and global accesses are checked. See docs/emulation.md and
// ckgen/emu/runtime.h for the execution model, the sanitizers and the C API; ckgen/emu/mfma.h for
// the matrix instructions. Included through ckgen/platform.h only.
//
// Build: clang++ -std=c++17 -O2 -fPIC -shared -pthread -DCKGEN_PLATFORM_EMU -I<ckgen/include>
//        [-DCKGEN_EMU_ARCH_RESTRICT -DCKGEN_EMU_HAS_<builtin>... -DCKGEN_EMU_LDS_BYTES=<n> -DCKGEN_EMU_FP8_OCP]
// (ckgen.runtime.emu.emu_defines(target) gives the per-arch flags from the targets table).
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

#define CKGEN_GLOBAL extern "C"
#define CKGEN_DEVICE inline
#define CKGEN_LAUNCH_BOUNDS(n)

// T* name: the workgroup's n-th CKGEN_LDS allocation (every thread gets the same one, in call order).
#define CKGEN_LDS(T, name, count) T* name = ::ckgen::emu::lds_alloc<T>(static_cast<size_t>(count), #name)

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

namespace ckgen {

constexpr int kPlatformWaveSize = CKGEN_EMU_WAVE_SIZE;

inline int thread_id() { return emu::thread_id(); }
inline int block_id(int d) { return emu::block_id(d); }
inline int grid_dim(int d) { return emu::grid_dim(d); }
inline int lane_id() { return emu::lane_id(); }
inline int wave_id() { return emu::wave_id(); }

// Workgroup barrier. The call site identifies it: threads waiting at different sites are a fault.
inline void barrier(const char* file = __builtin_FILE(), int line = __builtin_LINE()) { emu::barrier(file, line); }

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

}  // namespace ckgen

// Wave-level builtins the AMD platform layer or kernels may use.
inline int __builtin_amdgcn_readfirstlane(int v) { return ::ckgen::emu::readfirstlane(v); }
inline int __builtin_amdgcn_ds_bpermute(int addr, int v) { return ::ckgen::emu::bpermute(addr, v); }
