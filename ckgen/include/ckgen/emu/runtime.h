// ckgen/emu/runtime.h: the CPU emulator's scheduler, sanitizers and launch (docs/emulation.md).
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
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "ckgen/emu/fiber.h"
#include "ckgen/emu/lds_banks.h"
#include "ckgen/status.h"

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

// ------------------------------------------------------------------ indices
inline int thread_id() { return worker().cur->tid; }
inline int lane_id() { return worker().cur->tid % kWaveSize; }
inline int wave_id() { return worker().cur->tid / kWaveSize; }
inline int block_id(int d) {
  const Worker& w = worker();
  return static_cast<int>(d == 0 ? w.bid.x : d == 1 ? w.bid.y : w.bid.z);
}
inline int grid_dim(int d) {
  const Worker& w = worker();
  return static_cast<int>(d == 0 ? w.L->grid.x : d == 1 ? w.L->grid.y : w.L->grid.z);
}

// ------------------------------------------------------------------ barrier
inline void barrier(const char* file, int line) {
  Worker& w = worker();
  if (w.bar_arrived == 0) {
    w.bar_file = file;
    w.bar_line = line;
    w.bar_first = w.cur->tid;
  } else if (line != w.bar_line || strcmp(file, w.bar_file) != 0) {
    fault("divergent barriers: this thread waits at the barrier at %s:%d while thread %d waits at the barrier at %s:%d",
          file, line, w.bar_first, w.bar_file, w.bar_line);
  }
  if (++w.bar_arrived == static_cast<int>(w.threads.size())) {
    w.bar_arrived = 0;
    ++w.epoch;
    w.banks.flush();
    for (auto& wv : w.waves) ++wv->coll;
    for (auto& t : w.threads)
      if (t.st == TState::Barrier) t.st = TState::Ready;
    return;  // the last thread to arrive goes on without a switch
  }
  block(TState::Barrier);
}

// ------------------------------------------------------------------ wave-level collectives
// Deposit `n` bytes of operands; the last lane calls compute(wave, lanes) which fills every lane's
// out slot; then each lane copies `outn` bytes of its result. `op` identifies the operation (its
// name; lanes of one wave must reach the same operation).
template <class F>
inline void wave_collective(const char* op, const void* in, size_t n, void* out, size_t outn, F&& compute) {
  Worker& w = worker();
  const int tid = w.cur->tid;
  Wave& wv = *w.waves[tid / kWaveSize];
  const int lane = tid % kWaveSize;
  if (wv.exited > 0)
    fault("wave operation %s: %d lane(s) of this wave have exited, so the wave can never complete it", op, wv.exited);
  if (wv.arrived == 0) {
    wv.op = op;
    wv.first_lane = lane;
  } else if (wv.op != op && strcmp(wv.op, op) != 0) {
    fault("divergent wave operations: this lane reached %s while lane %d of the wave waits at %s", op, wv.first_lane,
          wv.op);
  }
  memcpy(wv.in[lane], in, n);
  if (++wv.arrived == wv.lanes) {
    compute(wv, wv.lanes);
    wv.arrived = 0;
    ++wv.coll;
    const int base = (tid / kWaveSize) * kWaveSize;
    for (int l = 0; l < wv.lanes; ++l)
      if (w.threads[base + l].st == TState::WaveOp) w.threads[base + l].st = TState::Ready;
  } else {
    block(TState::WaveOp);
  }
  memcpy(out, wv.out[lane], outn);
}

inline int readfirstlane(int v) {
  int r;
  wave_collective("readfirstlane", &v, sizeof v, &r, sizeof r, [](Wave& wv, int lanes) {
    int first;
    memcpy(&first, wv.in[0], sizeof first);
    for (int l = 0; l < lanes; ++l) memcpy(wv.out[l], &first, sizeof first);
  });
  return r;
}

// The value every lane of the wave holds; a fault if the lanes disagree (CKGEN_UNIFORM's promise).
template <class T>
inline T uniform(T v, const char* expr) {
  static_assert(sizeof(T) <= kSlotIn && sizeof(T) <= kSlotOut, "uniform: value too large");
  T r;
  int bad_lane = -1;
  wave_collective("CKGEN_UNIFORM", &v, sizeof v, &r, sizeof r, [&](Wave& wv, int lanes) {
    for (int l = 0; l < lanes; ++l) {
      if (memcmp(wv.in[l], wv.in[0], sizeof(T)) != 0 && bad_lane < 0) bad_lane = l;
      memcpy(wv.out[l], wv.in[0], sizeof(T));
    }
  });
  // Only the computing lane sees bad_lane; it reports for the wave.
  if (bad_lane >= 0) fault("CKGEN_UNIFORM(%s): lane %d holds a different value than lane 0", expr, bad_lane);
  return r;
}

// ds_bpermute_b32: lane l receives the value of lane (addr / 4) % wave size.
inline int bpermute(int addr, int v) {
  int in[2] = {addr, v};
  int r;
  wave_collective("ds_bpermute", in, sizeof in, &r, sizeof r, [](Wave& wv, int lanes) {
    for (int l = 0; l < lanes; ++l) {
      int a;
      memcpy(&a, wv.in[l], sizeof a);
      int src = ((a >> 2) % kWaveSize + kWaveSize) % kWaveSize;
      int val = 0;
      if (src < lanes) memcpy(&val, wv.in[src] + sizeof(int), sizeof val);
      memcpy(wv.out[l], &val, sizeof val);
    }
  });
  return r;
}

// ------------------------------------------------------------------ global memory
inline const Buffer* find_buffer(const std::vector<Buffer>& bufs, uintptr_t a) {
  auto it = std::upper_bound(bufs.begin(), bufs.end(), a, [](uintptr_t x, const Buffer& b) { return x < b.base; });
  if (it == bufs.begin()) return nullptr;
  return &*(it - 1);
}

inline void check_global(const void* p, size_t n, size_t align, bool write) {
  Worker& w = worker();
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const char* what = write ? "global store" : "global load";
  const auto& bufs = w.L->bufs;
  if (bufs.empty()) fault("%s of %zu bytes at %p: no buffers are registered (ckgen_emu_register_buffer)", what, n, p);
  // Any buffer containing the whole access (buffers may overlap: views of one array).
  for (auto it = std::upper_bound(bufs.begin(), bufs.end(), a, [](uintptr_t x, const Buffer& b) { return x < b.base; });
       it != bufs.begin();) {
    --it;
    if (a >= it->base && a + n <= it->base + it->bytes) {
      if (align > 1 && a % align != 0)
        fault("%s of %zu bytes at %p ('%s' + %zu) is misaligned: needs %zu-byte alignment", what, n, p,
              it->name.c_str(), static_cast<size_t>(a - it->base), align);
      return;
    }
    if (a - it->base > (1ull << 40)) break;
  }
  // Out of bounds: describe the nearest buffer.
  const Buffer* best = nullptr;
  uintptr_t best_d = ~uintptr_t(0);
  for (const auto& b : bufs) {
    uintptr_t d = a < b.base ? b.base - a : (a >= b.base + b.bytes ? a - (b.base + b.bytes) : 0);
    if (d < best_d) {
      best_d = d;
      best = &b;
    }
  }
  char rel[256];
  if (a < best->base)
    snprintf(rel, sizeof rel, "%zu bytes before the start of '%s' [%p, +%zu)", static_cast<size_t>(best->base - a),
             best->name.c_str(), reinterpret_cast<void*>(best->base), best->bytes);
  else if (a >= best->base + best->bytes)
    snprintf(rel, sizeof rel, "%zu bytes past the end of '%s' [%p, +%zu)",
             static_cast<size_t>(a - (best->base + best->bytes)), best->name.c_str(),
             reinterpret_cast<void*>(best->base), best->bytes);
  else
    snprintf(rel, sizeof rel, "running %zu bytes past the end of '%s' [%p, +%zu) from offset %zu",
             static_cast<size_t>(a + n - (best->base + best->bytes)), best->name.c_str(),
             reinterpret_cast<void*>(best->base), best->bytes, static_cast<size_t>(a - best->base));
  fault("out-of-bounds %s of %zu bytes at %p: %s", what, n, p, rel);
}

// ------------------------------------------------------------------ LDS
// site: the declaration's identity (CKGEN_LDS passes one per expansion and template instantiation, as AMD's
// static __shared__ arrays are): every call from one site in one workgroup returns the same allocation, so
// a body called several times (a persistent loop) reuses its LDS. Without a site, the k-th call of each
// thread gets the k-th allocation.
template <class T>
inline T* lds_alloc(size_t count, const char* name, const void* site = nullptr) {
  Worker& w = worker();
  const size_t bytes = count * sizeof(T);
  if (site != nullptr) {
    for (const LdsAlloc& a : w.allocs)
      if (a.site == site) {
        if (a.bytes != bytes) fault("CKGEN_LDS '%s': %zu bytes here, %zu bytes before", name, bytes, a.bytes);
        return reinterpret_cast<T*>(w.arena + a.off);
      }
  }
  const int k = site != nullptr ? static_cast<int>(w.allocs.size()) : w.cur->lds_calls++;
  if (k < static_cast<int>(w.allocs.size())) {
    const LdsAlloc& a = w.allocs[k];
    if (a.bytes != bytes)
      fault("CKGEN_LDS call #%d declares '%s' of %zu bytes, but thread 0..n made that call with '%s' of %zu bytes", k,
            name, bytes, a.name, a.bytes);
    return reinterpret_cast<T*>(w.arena + a.off);
  }
  if (k >= kMaxLdsAllocs) fault("more than %d CKGEN_LDS allocations in one workgroup", kMaxLdsAllocs);
  size_t start = w.allocs.empty() ? kRedZone : w.allocs.back().off + w.allocs.back().bytes + kRedZone;
  size_t al = alignof(T) > 16 ? alignof(T) : 16;
  start = (start + al - 1) / al * al;
  w.lds_used += bytes;
  if (w.lds_used > w.L->lds_limit || start + bytes + kRedZone > w.arena_cap)
    fault("CKGEN_LDS '%s' of %zu bytes: the workgroup's LDS would be %zu bytes, over the limit of %zu bytes", name,
          bytes, w.lds_used, w.L->lds_limit);
  w.allocs.push_back(LdsAlloc{start, bytes, name, site});
  return reinterpret_cast<T*>(w.arena + start);
}

inline std::string lds_where(const Worker& w, size_t off) {
  char buf[160];
  for (const auto& a : w.allocs)
    if (off >= a.off && off < a.off + a.bytes) {
      snprintf(buf, sizeof buf, "'%s' + %zu", a.name, off - a.off);
      return buf;
    }
  return "no allocation";
}

[[noreturn]] inline void lds_race(Worker& w, size_t off, const void* p, const char* kind, uint32_t other,
                                  const char* other_kind) {
  std::string at = lds_where(w, off);
  if (other == kNone)
    fault("LDS race: %s of LDS offset %zu (%s, address %p) races with a %s by a thread of another wave, with no "
          "barrier() between them",
          kind, off, at.c_str(), p, other_kind);
  fault("LDS race: %s of LDS offset %zu (%s, address %p) races with the %s by thread %u (wave %u, lane %u), with no "
        "barrier()%s between them",
        kind, off, at.c_str(), p, other_kind, other, other / kWaveSize, other % kWaveSize,
        other / kWaveSize == static_cast<uint32_t>(w.cur->tid / kWaveSize) ? " or wave operation" : "");
  __builtin_unreachable();
}

// The bank-statistics id of an lds_load/lds_store call site (a per-OS-thread cache in front of the registry).
inline int lds_site(const char* file, int line, bool write) {
  thread_local std::unordered_map<uint64_t, int> cache;
  const uint64_t key = (reinterpret_cast<uintptr_t>(file) << 21) ^ (static_cast<uint64_t>(line) << 1) ^ (write ? 1u : 0u);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const int id = g_lds_banks.find_or_add(file, line, write);
  cache.emplace(key, id);
  return id;
}

inline void check_lds(const void* p, size_t n, size_t align, bool write, int site = -1) {
  Worker& w = worker();
  const char* what = write ? "LDS store" : "LDS load";
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(w.arena);
  if (a < lo || a + n > lo + w.arena_cap)
    fault("%s of %zu bytes at %p: not an LDS address (the workgroup's LDS arena is [%p, +%zu))", what, n, p,
          static_cast<void*>(w.arena), w.arena_cap);
  const size_t off = a - lo;
  const LdsAlloc* in = nullptr;
  for (const auto& al : w.allocs)
    if (off >= al.off && off + n <= al.off + al.bytes) in = &al;
  if (in == nullptr) {
    // name the nearest allocation
    const LdsAlloc* best = nullptr;
    size_t best_d = ~size_t(0);
    for (const auto& al : w.allocs) {
      size_t d = off < al.off ? al.off - off : (off >= al.off + al.bytes ? off - (al.off + al.bytes) : 0);
      if (d < best_d) {
        best_d = d;
        best = &al;
      }
    }
    if (best == nullptr) fault("%s of %zu bytes at LDS offset %zu (%p): no LDS is allocated", what, n, off, p);
    if (off < best->off)
      fault("out-of-bounds %s of %zu bytes at LDS offset %zu (%p): %zu bytes before the start of '%s' [%zu, +%zu)",
            what, n, off, p, best->off - off, best->name, best->off, best->bytes);
    fault("out-of-bounds %s of %zu bytes at LDS offset %zu (%p): %zu bytes past the start of '%s' [%zu, +%zu)", what,
          n, off, p, off - best->off, best->name, best->off, best->bytes);
  }
  if (align > 1 && a % align != 0)
    fault("%s of %zu bytes at LDS offset %zu ('%s' + %zu) is misaligned: needs %zu-byte alignment", what, n, off,
          in->name, off - in->off, align);

  if (site >= 0) {
    const Wave& wv = *w.waves[w.cur->tid / kWaveSize];
    w.banks.record(w.cur->tid, site, static_cast<uint32_t>(off), static_cast<int>(n), wv.lanes - wv.exited);
  }

  // Happens-before check, byte by byte.
  const uint32_t t = static_cast<uint32_t>(w.cur->tid);
  const uint32_t wave = t / kWaveSize;
  const uint32_t coll = w.waves[wave]->coll;
  const uint32_t ep = w.epoch;
  for (size_t i = 0; i < n; ++i) {
    Shadow& s = w.shadow[off + i];
    if (s.gen != w.gen) {
      s = Shadow{};
      s.gen = w.gen;
      s.w_tid = kNone;
      s.r_epoch = kNone;
      s.r_top_tid = kNone;
      s.r_other = kNone;
    }
    // against the last write
    if (s.w_tid != kNone && s.w_tid != t) {
      const bool ordered = s.w_epoch < ep || (s.w_tid / kWaveSize == wave && s.w_coll < coll);
      if (!ordered) lds_race(w, off + i, static_cast<const char*>(p) + i, write ? "write" : "read", s.w_tid, "write");
    }
    if (!write) {
      if (s.r_epoch != ep) {
        s.r_epoch = ep;
        s.r_top_tid = kNone;
        s.r_top_coll = 0;
        s.r_second = 0;
        s.r_other = kNone;
        s.r_waves_lo = s.r_waves_hi = 0;
      }
      if (wave < 32) s.r_waves_lo |= 1u << wave;
      else s.r_waves_hi |= 1u << (wave - 32);
      const uint32_t c1 = coll + 1;
      if (s.r_top_tid == t) {
        if (c1 > s.r_top_coll) s.r_top_coll = c1;
      } else if (s.r_top_tid == kNone || c1 >= s.r_top_coll) {
        if (s.r_top_tid != kNone) {
          s.r_second = s.r_top_coll;
          s.r_other = s.r_top_tid;
        }
        s.r_top_tid = t;
        s.r_top_coll = c1;
      } else {
        if (c1 > s.r_second) s.r_second = c1;
        s.r_other = t;
      }
    } else {
      if (s.r_epoch == ep) {
        const uint32_t mine_lo = wave < 32 ? 1u << wave : 0u, mine_hi = wave >= 32 ? 1u << (wave - 32) : 0u;
        if ((s.r_waves_lo & ~mine_lo) || (s.r_waves_hi & ~mine_hi)) {
          uint32_t other = kNone;
          if (s.r_top_tid != kNone && s.r_top_tid / kWaveSize != wave) other = s.r_top_tid;
          else if (s.r_other != kNone && s.r_other / kWaveSize != wave) other = s.r_other;
          lds_race(w, off + i, static_cast<const char*>(p) + i, "write", other, "read");
        }
        const uint32_t m = s.r_top_tid == t ? s.r_second : s.r_top_coll;  // readers other than t
        if (m != 0 && m - 1 >= coll)
          lds_race(w, off + i, static_cast<const char*>(p) + i, "write", s.r_top_tid == t ? s.r_other : s.r_top_tid,
                   "read");
      }
      s.w_tid = t;
      s.w_epoch = ep;
      s.w_coll = coll;
      s.r_epoch = kNone;
    }
  }
}

// ------------------------------------------------------------------ scheduling one workgroup
inline void fiber_entry() {
  Worker* w = tl_worker;
  w->L->body(w->L->body_arg);
  Thread* t = w->cur;
  t->st = TState::Done;
  ++w->waves[t->tid / kWaveSize]->exited;
  context_switch(t->ctx, w->sched);
  __builtin_unreachable();
}

inline std::string lane_ranges(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(v[i]);
    if (j > i) s += "-" + std::to_string(v[j]);
    i = j + 1;
  }
  return s;
}

inline std::string deadlock_report(Worker& w) {
  char head[256];
  int first = -1;
  for (auto& t : w.threads)
    if (t.st != TState::Done) {
      first = t.tid;
      break;
    }
  snprintf(head, sizeof head, "ckgen emu: kernel '%s', workgroup (%u,%u,%u), thread %d (wave %d, lane %d): deadlock: ",
           w.L->kernel, w.bid.x, w.bid.y, w.bid.z, first, first / kWaveSize, first % kWaveSize);
  std::string msg = head;
  std::vector<int> at_bar, done;
  for (auto& t : w.threads) {
    if (t.st == TState::Barrier) at_bar.push_back(t.tid);
    if (t.st == TState::Done) done.push_back(t.tid);
  }
  if (!at_bar.empty())
    msg += std::to_string(at_bar.size()) + " of " + std::to_string(w.threads.size()) + " threads (" +
           lane_ranges(at_bar) + ") wait at the barrier at " + w.bar_file + ":" + std::to_string(w.bar_line) + "; ";
  for (size_t wi = 0; wi < w.waves.size(); ++wi) {
    Wave& wv = *w.waves[wi];
    if (wv.arrived == 0) continue;
    std::vector<int> waiting, gone, elsewhere;
    for (int l = 0; l < wv.lanes; ++l) {
      const Thread& t = w.threads[wi * kWaveSize + l];
      (t.st == TState::WaveOp ? waiting : t.st == TState::Done ? gone : elsewhere).push_back(l);
    }
    msg += "wave " + std::to_string(wi) + ": lanes " + lane_ranges(waiting) + " wait at wave operation " + wv.op;
    if (!gone.empty()) msg += ", lanes " + lane_ranges(gone) + " exited";
    if (!elsewhere.empty()) msg += ", lanes " + lane_ranges(elsewhere) + " wait at a barrier";
    msg += "; ";
  }
  if (!done.empty()) msg += std::to_string(done.size()) + " threads (" + lane_ranges(done) + ") exited";
  return msg;
}

inline int run_workgroup(Worker& w, Dim3 bid) {
  w.bid = bid;
  ++w.gen;
  w.allocs.clear();
  w.lds_used = 0;
  w.bar_arrived = 0;
  w.epoch = 0;
  w.faulted = false;
  for (auto& wv : w.waves) {
    wv->arrived = 0;
    wv->exited = 0;
    wv->coll = 0;
  }
  w.banks.reset(static_cast<int>(w.threads.size()));
  for (auto& t : w.threads) {
    context_init(t.ctx, t.stack, &fiber_entry);
    t.st = TState::Ready;
    t.lds_calls = 0;
  }
  for (;;) {
    bool ran = false;
    for (auto& t : w.threads) {
      if (t.st != TState::Ready) continue;
      ran = true;
      w.cur = &t;
      context_switch(w.sched, t.ctx);
      w.cur = nullptr;
      if (w.faulted) return CKGEN_ERROR_EMULATION_FAULT;
    }
    if (!ran) break;
  }
  w.banks.merge();
  for (auto& t : w.threads)
    if (t.st != TState::Done) {
      record_fault(deadlock_report(w));
      return CKGEN_ERROR_EMULATION_FAULT;
    }
  return CKGEN_SUCCESS;
}

inline void worker_main(const LaunchInfo* L, std::atomic<long long>* next, long long total) {
  Worker w;
  w.L = L;
  w.threads.resize(L->threads);
  for (int i = 0; i < L->threads; ++i) {
    w.threads[i].tid = i;
    w.threads[i].stack = stack_alloc();
    if (w.threads[i].stack == nullptr) {
      record_fault("ckgen emu: could not allocate fiber stacks");
      for (int j = 0; j < i; ++j) stack_free(w.threads[j].stack);
      return;
    }
  }
  const int nwaves = (L->threads + kWaveSize - 1) / kWaveSize;
  for (int i = 0; i < nwaves; ++i) {
    w.waves.emplace_back(new Wave());
    w.waves.back()->lanes = std::min(kWaveSize, L->threads - i * kWaveSize);
  }
  w.arena_cap = L->lds_limit + (kMaxLdsAllocs + 1) * (kRedZone + 64);
  w.arena_mem.reset(new unsigned char[w.arena_cap + 64]);
  w.arena = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(w.arena_mem.get()) + 63) & ~uintptr_t(63));
  memset(w.arena, 0, w.arena_cap);
  w.shadow.assign(w.arena_cap, Shadow{});
  tl_worker = &w;
  for (;;) {
    if (g_fault.any.load()) break;
    long long i = next->fetch_add(1);
    if (i >= total) break;
    Dim3 b;
    b.x = static_cast<unsigned>(i % L->grid.x);
    b.y = static_cast<unsigned>((i / L->grid.x) % L->grid.y);
    b.z = static_cast<unsigned>(i / (static_cast<long long>(L->grid.x) * L->grid.y));
    if (run_workgroup(w, b) != CKGEN_SUCCESS) break;
  }
  tl_worker = nullptr;
  for (auto& t : w.threads) stack_free(t.stack);
}

inline int launch_impl(LaunchInfo& L) {
  std::lock_guard<std::mutex> lk(g_launch_mu);
  {
    std::lock_guard<std::mutex> g(g_fault.mu);
    g_fault.first.clear();
    g_fault.count = 0;
    g_fault.any.store(false);
  }
  g_lds_banks.reset();
  if (L.threads < 1 || L.threads > kMaxThreads) {
    record_fault("ckgen emu: kernel '" + std::string(L.kernel) + "': block of " + std::to_string(L.threads) +
                 " threads (legal: 1.." + std::to_string(kMaxThreads) + ")");
    return CKGEN_ERROR_INVALID_VALUE;
  }
  const long long total = static_cast<long long>(L.grid.x) * L.grid.y * L.grid.z;
  if (total == 0) return CKGEN_SUCCESS;
  {
    std::lock_guard<std::mutex> g(g_registry.mu);
    L.bufs = g_registry.bufs;
  }
  int nt = g_os_threads.load();
  if (nt <= 0) nt = static_cast<int>(std::thread::hardware_concurrency());
  if (nt <= 0) nt = 1;
  if (nt < L.coresident) nt = L.coresident;
  if (nt > total) nt = static_cast<int>(total);
  std::atomic<long long> next{0};
  std::vector<std::thread> pool;
  for (int i = 1; i < nt; ++i) pool.emplace_back(worker_main, &L, &next, total);
  worker_main(&L, &next, total);
  for (auto& t : pool) t.join();
  return g_fault.any.load() ? CKGEN_ERROR_EMULATION_FAULT : CKGEN_SUCCESS;
}

template <class Fn, class Tuple>
struct Body {
  Fn fn;
  Tuple* args;
  static void run(void* self) {
    Body* b = static_cast<Body*>(self);
    std::apply(b->fn, *b->args);
  }
};

// Run kernel(args...) for every workgroup of grid, `block` threads each. lds_bytes: the LDS limit for
// CKGEN_LDS allocations (0: the target's, CKGEN_EMU_LDS_BYTES); coresident: workgroups that must run at once
// (at least that many OS threads). Returns a ckgen status code.
template <class... P, class... A>
inline int launch_coresident(int coresident, const char* kernel_name, void (*kernel)(P...), Dim3 grid, int block,
                             size_t lds_bytes, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "ckgen::emu::launch: wrong number of kernel arguments");
  std::tuple<P...> tup(static_cast<P>(std::forward<A>(args))...);
  Body<void (*)(P...), std::tuple<P...>> body{kernel, &tup};
  LaunchInfo L;
  L.kernel = kernel_name;
  L.grid = grid;
  L.threads = block;
  L.lds_limit = lds_bytes ? lds_bytes : static_cast<size_t>(CKGEN_EMU_LDS_BYTES);
  L.coresident = coresident > 1 ? coresident : 1;
  L.body = &decltype(body)::run;
  L.body_arg = &body;
  return launch_impl(L);
}

template <class... P, class... A>
inline int launch(const char* kernel_name, void (*kernel)(P...), Dim3 grid, int block, size_t lds_bytes, A&&... args) {
  return launch_coresident(1, kernel_name, kernel, grid, block, lds_bytes, std::forward<A>(args)...);
}

// A kernel Cfg's kCoResident (1 when it has none): the workgroups the launch must run at once.
template <class C, class = void>
struct CoResidentOf {
  static constexpr int value = 1;
};
template <class C>
struct CoResidentOf<C, decltype(void(C::kCoResident))> {
  static constexpr int value = C::kCoResident;
};

}  // namespace emu
}  // namespace ckgen

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

// LDS bank statistics of the last launch, per lds_load/lds_store call site (ckgen/emu/lds_banks.h).
CKGEN_EMU_API int ckgen_emu_lds_site_count(void) {
  std::lock_guard<std::mutex> g(ckgen::emu::g_lds_banks.mu);
  return static_cast<int>(ckgen::emu::g_lds_banks.sites.size());
}

// Site i: its file and line, 1 for writes, and over the last launch the wave instructions evaluated, their
// extra cycles, the worst phase's ways (distinct dwords on one bank) and the lane accesses. 0, or -1 when
// there is no such site.
CKGEN_EMU_API int ckgen_emu_lds_site(int i, const char** file, int* line, int* is_write, long long* instructions,
                                     long long* extra_cycles, int* max_ways, long long* accesses) {
  auto& r = ckgen::emu::g_lds_banks;
  std::lock_guard<std::mutex> g(r.mu);
  if (i < 0 || i >= static_cast<int>(r.sites.size())) return -1;
  *file = r.sites[i].file;
  *line = r.sites[i].line;
  *is_write = r.sites[i].write ? 1 : 0;
  *instructions = r.stats[i].instructions;
  *extra_cycles = r.stats[i].extra_cycles;
  *max_ways = r.stats[i].max_ways;
  *accesses = r.stats[i].accesses;
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
