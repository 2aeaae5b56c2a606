// ckgen/emu/launch.h: the emulator's grid driver (docs/emulation.md, "Execution model").
//
//   * run_workgroup(w, bid): runs the workgroup's fibers round-robin (each until it blocks or exits) until all
//     have exited; a fault stops it; threads left blocked with none ready are a deadlock, reported with who
//     waits where;
//   * launch_impl(L): one launch at a time; clears the fault record and the last-launch bank counters (the call's
//     go on until ckgen_emu_lds_reset: ckgen/emu/lds_banks.h), snapshots the registered
//     buffers, and hands workgroups in linear order (x fastest) to ckgen_emu_set_threads OS threads (at least
//     L.coresident); the first fault stops every thread from taking new workgroups;
//   * launch / launch_coresident(n, ...): run kernel(args...) over a grid (what CKGEN_LAUNCH expands to);
//     CoResidentOf<Cfg>: a config's kCoResident (1 without one).
// Returns ckgen status codes (ckgen/status.h): CKGEN_ERROR_INVALID_VALUE for a block outside 1..kMaxThreads,
// CKGEN_ERROR_EMULATION_FAULT after a fault (ckgen_emu_last_fault has the message).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "ckgen/emu/fiber.h"
#include "ckgen/emu/lds_banks.h"
#include "ckgen/emu/state.h"
#include "ckgen/status.h"

namespace ckgen {
namespace emu __attribute__((visibility("hidden"))) {

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
  g_lds_banks.begin_launch();
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
