// ckgen/emu/memory.h: the emulator's memory sanitizers (docs/emulation.md, "Sanitizers").
//
//   * check_global(p, n, align, write): the access [p, p + n) lies inside one buffer registered for the launch
//     (ckgen_emu_register_buffer) and p is aligned to `align`; otherwise a fault naming the nearest buffer;
//   * lds_alloc<T>(count, name, site): the workgroup's CKGEN_LDS allocation of that declaration (site) or, with
//     no site, of the thread's k-th call; allocations are 16-byte aligned, separated by red zones, and their sum
//     stays within the launch's LDS limit;
//   * check_lds(p, n, align, write, site): the access lies inside one allocation and is aligned, is counted
//     for bank conflicts at `site` (lds_site(file, line, write); ckgen/emu/lds_banks.h), and is checked byte by
//     byte for races (happens-before: threads of different waves are ordered only by barrier(), lanes of one
//     wave also by wave operations).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "ckgen/emu/lds_banks.h"
#include "ckgen/emu/state.h"

namespace ckgen {
namespace emu __attribute__((visibility("hidden"))) {

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

}  // namespace emu
}  // namespace ckgen
