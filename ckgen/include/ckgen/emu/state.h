// ckgen/emu/state.h: the CPU emulator's state, and how a running emulated thread leaves its fiber.
//
//   * configuration: CKGEN_EMU_WAVE_SIZE (64; 32 for warp-sized NVIDIA bodies) and CKGEN_EMU_LDS_BYTES (the
//     target's LDS per workgroup), the emulator's fixed limits (kMaxThreads, wave-operation slot sizes, LDS red
//     zones and allocations);
//   * process-wide (one per emulator library): the registered global buffers (g_registry), the first fault of
//     the launch (g_fault), the OS-thread count and the launch lock;
//   * per OS thread: a Worker runs one workgroup at a time: its Threads (one fiber each), Waves (the operand
//     slots of wave collectives), LDS arena with its allocations and happens-before shadow, barrier state and
//     bank counters. tl_worker is the running one; worker() is it, for device code (outside a launch: abort);
//   * fault(fmt, ...) records a message prefixed with kernel, workgroup, thread, wave and lane, and stops the
//     workgroup (the fiber is never resumed); block(s) parks the running thread in state s; spin(p) is one
//     pause of a bounded spin-wait on another workgroup.
// Included by ckgen/emu/runtime.h (the execution model and sanitizers: docs/emulation.md).
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ckgen/emu/fiber.h"
#include "ckgen/emu/lds_banks.h"

#ifndef CKGEN_EMU_WAVE_SIZE
#define CKGEN_EMU_WAVE_SIZE 64
#endif
#ifndef CKGEN_EMU_LDS_BYTES
// LDS one workgroup may allocate. The emu build passes the target's figure; without it, the largest of
// the AMD table (gfx950: 160 KiB).
#define CKGEN_EMU_LDS_BYTES 163840
#endif

namespace ckgen {
namespace emu __attribute__((visibility("hidden"))) {

constexpr int kWaveSize = CKGEN_EMU_WAVE_SIZE;
constexpr int kMaxThreads = 1024;
constexpr size_t kSlotIn = 192;   // bytes of operands one lane deposits at a wave operation
constexpr size_t kSlotOut = 256;  // bytes of result one lane picks up
constexpr size_t kRedZone = 64;   // unallocated LDS bytes around every CKGEN_LDS allocation
constexpr int kMaxLdsAllocs = 32;
constexpr uint32_t kNone = 0xffffffffu;

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// ------------------------------------------------------------------ buffers and faults (process-wide)
struct Buffer {
  uintptr_t base;
  size_t bytes;
  std::string name;
};

struct Registry {
  std::mutex mu;
  std::vector<Buffer> bufs;  // sorted by base
};
inline Registry g_registry;

struct FaultState {
  std::mutex mu;
  std::string first;
  int count = 0;
  std::atomic<bool> any{false};
};
inline FaultState g_fault;
inline std::atomic<int> g_os_threads{0};  // 0: std::thread::hardware_concurrency()
inline std::mutex g_launch_mu;            // one launch at a time per library

inline void record_fault(const std::string& msg) {
  std::lock_guard<std::mutex> g(g_fault.mu);
  if (g_fault.count++ == 0) g_fault.first = msg;
  g_fault.any.store(true);
}

// ------------------------------------------------------------------ per-workgroup state
enum class TState : uint8_t { Ready, Barrier, WaveOp, Done };

struct Thread {
  Context ctx;
  void* stack = nullptr;
  int tid = 0;
  TState st = TState::Ready;
  int lds_calls = 0;
};

struct Wave {
  int lanes = 0;      // lanes in this wave (the last wave of an odd-sized workgroup may be partial)
  int arrived = 0;    // lanes waiting at the current wave operation
  int exited = 0;
  int first_lane = 0; // first lane that arrived at the current operation
  const char* op = nullptr;
  uint32_t coll = 0;  // completed wave operations + barriers: orders the wave's lanes
  alignas(64) unsigned char in[kWaveSize][kSlotIn];
  alignas(64) unsigned char out[kWaveSize][kSlotOut];
  double ws_a[kWaveSize * 16];  // decoded operands (scratch of the computing lane)
  double ws_b[kWaveSize * 16];
};

struct LdsAlloc {
  size_t off;
  size_t bytes;
  const char* name;
  const void* site;  // the CKGEN_LDS expansion that made it (nullptr: matched by call order)
};

// Happens-before state of one LDS byte (FastTrack-style: last write; reads since the last barrier).
struct Shadow {
  uint32_t gen;        // workgroup generation; another value means "never touched"
  uint32_t w_tid;      // last writer or kNone
  uint32_t w_epoch;    // workgroup barrier count at the write
  uint32_t w_coll;     // the writer's wave collective count at the write
  uint32_t r_epoch;    // barrier count of the read set below, or kNone
  uint32_t r_top_tid;  // the reader with the largest collective count
  uint32_t r_top_coll; // its collective count + 1
  uint32_t r_second;   // largest collective count + 1 among readers other than r_top_tid (0: none)
  uint32_t r_other;    // some reader other than r_top_tid (for messages) or kNone
  uint32_t r_waves_lo, r_waves_hi;  // waves that read in r_epoch (bit mask, 64 waves)
};

struct LaunchInfo {
  const char* kernel;
  Dim3 grid;
  int threads;
  size_t lds_limit;
  int coresident = 1;  // workgroups that must run at once (spin-waits on each other): at least this many OS threads
  void (*body)(void*);
  void* body_arg;
  std::vector<Buffer> bufs;  // snapshot of the registry, sorted by base
};

struct Worker {
  const LaunchInfo* L = nullptr;
  Context sched;
  std::vector<Thread> threads;
  std::vector<std::unique_ptr<Wave>> waves;
  Thread* cur = nullptr;
  Dim3 bid;
  // LDS
  std::unique_ptr<unsigned char[]> arena_mem;
  unsigned char* arena = nullptr;
  size_t arena_cap = 0;
  std::vector<LdsAlloc> allocs;
  size_t lds_used = 0;
  std::vector<Shadow> shadow;
  uint32_t gen = 0;
  // barrier
  int bar_arrived = 0;
  int bar_first = -1;
  const char* bar_file = nullptr;
  int bar_line = 0;
  uint32_t epoch = 0;
  bool faulted = false;
  LdsBankState banks;
};

inline thread_local Worker* tl_worker = nullptr;

inline int wave_size() { return kWaveSize; }

// ------------------------------------------------------------------ faults raised by a running thread
inline std::string where_prefix(const Worker* w) {
  char buf[320];
  const Thread* t = w->cur;
  snprintf(buf, sizeof buf, "ckgen emu: kernel '%s', workgroup (%u,%u,%u), thread %d (wave %d, lane %d): ",
           w->L->kernel, w->bid.x, w->bid.y, w->bid.z, t ? t->tid : -1, t ? t->tid / kWaveSize : -1,
           t ? t->tid % kWaveSize : -1);
  return buf;
}

inline std::string vformat(const char* fmt, va_list ap) {
  char buf[1024];
  vsnprintf(buf, sizeof buf, fmt, ap);
  return buf;
}

// Report a fault from inside a fiber and stop this workgroup (the fiber is never resumed). Outside a
// launch it only records the message.
__attribute__((format(printf, 1, 2))) inline void fault(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  Worker* w = tl_worker;
  if (w == nullptr || w->cur == nullptr) {
    record_fault("ckgen emu: (outside a kernel launch): " + msg);
    return;
  }
  record_fault(where_prefix(w) + msg);
  w->faulted = true;
  context_switch(w->cur->ctx, w->sched);
  __builtin_unreachable();
}

// One pause of a spin-wait on what another workgroup writes at `on` (platform spin_pause): yields this OS thread,
// and after the first 64 pauses of a wait sleeps 50 us each (the waiting OS threads leave the cores to the others).
// A wait is a run of pauses on one address less than 10 ms apart; one longer than kSpinLimitSeconds, or any wait
// once another workgroup has faulted, is a fault (a peer that never comes: workgroups not run at once,
// launch_coresident).
constexpr double kSpinLimitSeconds = 300.0;
inline void spin(const void* on) {
  using Clock = std::chrono::steady_clock;
  thread_local const void* waiting_on = nullptr;
  thread_local Clock::time_point start, last;
  thread_local long long pauses = 0;
  const Clock::time_point now = Clock::now();
  if (on != waiting_on || now - last > std::chrono::milliseconds(10)) {
    waiting_on = on;
    start = now;
    pauses = 0;
  }
  last = now;
  if (g_fault.any.load()) fault("spin-wait abandoned: another workgroup faulted");
  if (std::chrono::duration<double>(now - start).count() > kSpinLimitSeconds)
    fault("spin-wait of more than %.0f s: the workgroup waited for never came (not co-resident?)", kSpinLimitSeconds);
  if (++pauses <= 64) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(50));
}

inline void block(TState s) {
  Worker* w = tl_worker;
  w->cur->st = s;
  context_switch(w->cur->ctx, w->sched);
}

inline Worker& worker() {
  Worker* w = tl_worker;
  if (w == nullptr || w->cur == nullptr) {
    fprintf(stderr, "ckgen emu: a device function was called outside a kernel launch\n");
    abort();
  }
  return *w;
}

}  // namespace emu
}  // namespace ckgen
