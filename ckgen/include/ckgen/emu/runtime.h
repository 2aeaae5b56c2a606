// ckgen/emu/runtime.h: the CPU emulator (scheduler, sanitizers, launch) and its C API (docs/emulation.md).
//
// Execution model
//   * Every emulated GPU thread is a fiber with its own stack. The threads of one workgroup run
//     cooperatively on one OS thread: a fiber runs until it blocks (barrier, wave-level operation) or
//     exits. Workgroups are spread over several OS threads (ckgen_emu_set_threads).
//   * No lockstep: lanes of a wave run independently. Wave-level operations (MFMA, readfirstlane,
//     bpermute, CKGEN_UNIFORM) are collectives: each lane deposits its operands and blocks; the last
//     lane to arrive computes every lane's result and releases the wave.
//   * barrier() releases when every thread of the workgroup waits at the same barrier (call site).
//
// Sanitizers (each report is an error naming kernel, workgroup, thread, wave/lane and address):
//   * global memory: every gload/gstore must lie inside one registered buffer, aligned to its type;
//   * LDS: every lds_load/lds_store must lie inside one CKGEN_LDS allocation (allocations are separated
//     by red zones) and be aligned; happens-before race detection per byte: a write racing with another
//     thread's read or write, or a read racing with another thread's write. Threads of different waves
//     are ordered only by barrier(); lanes of one wave also by wave-level operations;
//   * deadlock: threads waiting at different barriers, a barrier some threads never reach (one exited),
//     lanes of a wave at different wave operations, a wave operation missing an exited lane.
// LDS bank conflicts are counted per call site of lds_load/lds_store (ckgen/emu/lds_banks.h).
// The first fault stops the launch; ckgen_emu_last_fault() returns its message.
//
// The pieces, each with its contract: ckgen/emu/state.h (configuration, the process-wide and per-workgroup
// state, fault reporting), wave.h (indices, barrier, wave collectives), memory.h (global and LDS sanitizers,
// the LDS allocator), launch.h (scheduling workgroups, deadlock reports, launch). This header adds the C API
// below; device code and the other emulator headers include this one.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <mutex>

#include "ckgen/emu/state.h"
#include "ckgen/emu/wave.h"
#include "ckgen/emu/memory.h"
#include "ckgen/emu/launch.h"
#include "ckgen/emu/lds_banks.h"
#include "ckgen/status.h"

// ------------------------------------------------------------------ C API (docs/emulation.md)
// Weak definitions: every translation unit including this header emits them, the linker keeps one.
#define CKGEN_EMU_API extern "C" __attribute__((weak, visibility("default")))

CKGEN_EMU_API int ckgen_emu_register_buffer(const void* base, size_t bytes, const char* name) {
  if (base == nullptr && bytes != 0) return CKGEN_ERROR_INVALID_VALUE;
  auto& r = ckgen::emu::g_registry;
  std::lock_guard<std::mutex> g(r.mu);
  ckgen::emu::Buffer b{reinterpret_cast<uintptr_t>(base), bytes, name ? name : "?"};
  auto it = std::upper_bound(r.bufs.begin(), r.bufs.end(), b.base,
                             [](uintptr_t x, const ckgen::emu::Buffer& y) { return x < y.base; });
  r.bufs.insert(it, b);
  return CKGEN_SUCCESS;
}

CKGEN_EMU_API void ckgen_emu_clear_buffers(void) {
  auto& r = ckgen::emu::g_registry;
  std::lock_guard<std::mutex> g(r.mu);
  r.bufs.clear();
}

CKGEN_EMU_API const char* ckgen_emu_last_fault(void) {
  std::lock_guard<std::mutex> g(ckgen::emu::g_fault.mu);
  return ckgen::emu::g_fault.first.c_str();
}

CKGEN_EMU_API int ckgen_emu_fault_count(void) {
  std::lock_guard<std::mutex> g(ckgen::emu::g_fault.mu);
  return ckgen::emu::g_fault.count;
}

CKGEN_EMU_API void ckgen_emu_set_threads(int n) { ckgen::emu::g_os_threads.store(n < 0 ? 0 : n); }

CKGEN_EMU_API int ckgen_emu_wave_size(void) { return CKGEN_EMU_WAVE_SIZE; }

// LDS bank statistics per lds_load/lds_store call site (ckgen/emu/lds_banks.h): the number of sites registered.
CKGEN_EMU_API int ckgen_emu_lds_site_count(void) {
  std::lock_guard<std::mutex> g(ckgen::emu::g_lds_banks.mu);
  return static_cast<int>(ckgen::emu::g_lds_banks.sites.size());
}

// Restart the call window: the counts of every site and the launch count go to 0 (sites stay registered).
CKGEN_EMU_API void ckgen_emu_lds_reset(void) { ckgen::emu::g_lds_banks.reset(); }

// Launches since the last ckgen_emu_lds_reset (since the library was loaded without one).
CKGEN_EMU_API int ckgen_emu_lds_launches(void) {
  std::lock_guard<std::mutex> g(ckgen::emu::g_lds_banks.mu);
  return ckgen::emu::g_lds_banks.launches;
}

// Site i: its file and line, 1 for writes, and the wave instructions evaluated, their extra cycles, the worst
// phase's ways (distinct dwords on one bank) and the lane accesses, summed over the launches since the last
// ckgen_emu_lds_reset (last_launch 0) or over the last launch only (last_launch 1). 0, or -1 when there is no
// such site.
CKGEN_EMU_API int ckgen_emu_lds_site(int i, int last_launch, const char** file, int* line, int* is_write,
                                     long long* instructions, long long* extra_cycles, int* max_ways,
                                     long long* accesses) {
  auto& r = ckgen::emu::g_lds_banks;
  std::lock_guard<std::mutex> g(r.mu);
  if (i < 0 || i >= static_cast<int>(r.sites.size())) return -1;
  const ckgen::emu::LdsSiteStats& s = last_launch ? r.last[i] : r.stats[i];
  *file = r.sites[i].file;
  *line = r.sites[i].line;
  *is_write = r.sites[i].write ? 1 : 0;
  *instructions = s.instructions;
  *extra_cycles = s.extra_cycles;
  *max_ways = s.max_ways;
  *accesses = s.accesses;
  return 0;
}

// clang lowers __bf16 vector copies through float on x86 without AVX512-BF16 and calls compiler-rt's
// __truncsfbf2, which libgcc lacks. Round to nearest even (NaN stays a quiet NaN), as compiler-rt does.
extern "C" __attribute__((weak, visibility("hidden"))) __bf16 __truncsfbf2(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint16_t h = (u & 0x7fffffffu) > 0x7f800000u ? static_cast<uint16_t>((u >> 16) | 0x40u)
                                                : static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  __bf16 r;
  memcpy(&r, &h, 2);
  return r;
}
