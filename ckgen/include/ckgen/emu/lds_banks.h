// ckgen/emu/lds_banks.h: LDS bank-conflict counting of the CPU emulator (docs/emulation.md).
//
// Model (the same as ckgen/lower/lds_banks.py): LDS has CKGEN_EMU_LDS_BANKS banks of
// CKGEN_EMU_LDS_BANK_BYTES bytes. One wave-level LDS instruction of B bytes per lane is served in phases
// of P = banks * bank_bytes / max(B, bank_bytes) consecutive lanes; within a phase each bank serves one
// dword address per cycle (lanes on the same dword share it). The instruction's extra cycles are the sum
// over its phases of (the most distinct dwords one bank must serve - 1).
//
// Lanes run as independent fibers, so the lanes' accesses of one wave instruction are grouped by their
// call site (file, line, read/write) and occurrence: the n-th access a lane makes at a call site since the
// last barrier() joins group (wave, site, n). A group is evaluated when every live lane of the wave has
// joined; groups still open at a barrier or at the end of the workgroup are evaluated with the lanes
// present. Exact for wave-uniform control flow (every lane makes the same LDS accesses); under divergent
// control a lane that skips an access shifts its later accesses at that site into later groups.
//
// Counts accumulate per call site in two windows, read through the C API in runtime.h (ckgen_emu_lds_site_count,
// ckgen_emu_lds_site, ckgen_emu_lds_launches, ckgen_emu_lds_reset):
//   * the call: every launch since the last ckgen_emu_lds_reset() (the Python driver resets before each call of
//     a host entry, so one call's launches, e.g. a main kernel and a combine kernel, add up);
//   * the last launch: reset when a launch starts.
// For a call of one launch the two are the same.
#pragma once

#include <stdint.h>
#include <string.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#ifndef CKGEN_EMU_LDS_BANKS
#define CKGEN_EMU_LDS_BANKS 32
#endif
#ifndef CKGEN_EMU_LDS_BANK_BYTES
#define CKGEN_EMU_LDS_BANK_BYTES 4
#endif

namespace ckgen {
namespace emu __attribute__((visibility("hidden"))) {

constexpr int kLdsBanks = CKGEN_EMU_LDS_BANKS;
constexpr int kLdsBankBytes = CKGEN_EMU_LDS_BANK_BYTES;
constexpr int kBankWave = 64;  // lanes per group (the wave size of every CDNA target)

struct LdsSite {
  const char* file;
  int line;
  bool write;
};

struct LdsSiteStats {
  long long instructions = 0;  // wave-level instructions evaluated
  long long extra_cycles = 0;  // sum of their extra cycles
  int max_ways = 1;            // the worst phase: distinct dwords on one bank
  long long accesses = 0;      // lane accesses
};

inline void lds_stats_add(LdsSiteStats& d, const LdsSiteStats& s) {
  d.instructions += s.instructions;
  d.extra_cycles += s.extra_cycles;
  d.accesses += s.accesses;
  if (s.max_ways > d.max_ways) d.max_ways = s.max_ways;
}

struct LdsBankRegistry {
  std::mutex mu;
  std::vector<LdsSite> sites;
  std::vector<LdsSiteStats> stats;  // [site] since reset(): the call
  std::vector<LdsSiteStats> last;   // [site] the last launch
  int launches = 0;                 // launches since reset()
  int find_or_add(const char* file, int line, bool write) {
    std::lock_guard<std::mutex> g(mu);
    for (size_t i = 0; i < sites.size(); ++i)
      if (sites[i].line == line && sites[i].write == write &&
          (sites[i].file == file || strcmp(sites[i].file, file) == 0))
        return static_cast<int>(i);
    sites.push_back(LdsSite{file, line, write});
    stats.emplace_back();
    last.emplace_back();
    return static_cast<int>(sites.size() - 1);
  }
  // Start a new call window (sites stay registered, their counts restart).
  void reset() {
    std::lock_guard<std::mutex> g(mu);
    for (auto& s : stats) s = LdsSiteStats{};
    for (auto& s : last) s = LdsSiteStats{};
    launches = 0;
  }
  // A launch starts: the last-launch window restarts, the call window goes on.
  void begin_launch() {
    std::lock_guard<std::mutex> g(mu);
    for (auto& s : last) s = LdsSiteStats{};
    ++launches;
  }
};
inline LdsBankRegistry g_lds_banks;

// The lanes of one wave instruction seen so far.
struct LdsGroup {
  int site = 0;
  int count = 0;
  int bytes = 0;
  uint32_t off[kBankWave];
  bool has[kBankWave];
};

// Extra cycles of one wave instruction (lane -> LDS byte offset, `bytes` per lane); ways: the worst phase.
// `seen` holds kLdsBanks * kSeenCap dwords of scratch, `cnt` kLdsBanks counters.
constexpr int kSeenCap = kBankWave * 4;  // a phase touches at most 64 lanes x 4 dwords
inline int lds_extra_cycles(const LdsGroup& g, int& ways_out, uint32_t* seen, int* cnt) {
  int per = kLdsBanks * kLdsBankBytes / (g.bytes > kLdsBankBytes ? g.bytes : kLdsBankBytes);
  per = per < 1 ? 1 : (per > kBankWave ? kBankWave : per);
  const int dwords = g.bytes > 4 ? g.bytes / 4 : 1;
  int extra = 0;
  ways_out = 1;
  for (int p0 = 0; p0 < kBankWave; p0 += per) {
    for (int b = 0; b < kLdsBanks; ++b) cnt[b] = 0;
    int ways = 0;
    for (int l = p0; l < p0 + per && l < kBankWave; ++l) {
      if (!g.has[l]) continue;
      for (int d = 0; d < dwords; ++d) {
        const uint32_t dw = g.off[l] / 4 + static_cast<uint32_t>(d);
        const int b = static_cast<int>(dw % kLdsBanks);
        uint32_t* v = seen + b * kSeenCap;
        bool dup = false;
        for (int i = 0; i < cnt[b] && !dup; ++i) dup = v[i] == dw;
        if (!dup && cnt[b] < kSeenCap) v[cnt[b]++] = dw;
        if (cnt[b] > ways) ways = cnt[b];
      }
    }
    if (ways > 1) extra += ways - 1;
    if (ways > ways_out) ways_out = ways;
  }
  return extra;
}

// Per-workgroup state: open groups, per-lane occurrence counters, local stats merged at the end.
struct LdsBankState {
  std::unordered_map<uint64_t, LdsGroup> open;
  std::vector<std::vector<uint32_t>> occ;  // [thread][site] accesses since the last barrier
  std::vector<LdsSiteStats> local;         // [site]
  std::vector<uint32_t> seen = std::vector<uint32_t>(static_cast<size_t>(kLdsBanks) * kSeenCap);
  int cnt[kLdsBanks];

  void reset(int threads) {
    open.clear();
    occ.assign(static_cast<size_t>(threads), {});
    local.clear();
  }
  void close(const LdsGroup& g) {
    if (static_cast<int>(local.size()) <= g.site) local.resize(static_cast<size_t>(g.site) + 1);
    int ways = 1;
    const int extra = lds_extra_cycles(g, ways, seen.data(), cnt);
    LdsSiteStats& s = local[static_cast<size_t>(g.site)];
    s.instructions += 1;
    s.extra_cycles += extra;
    s.accesses += g.count;
    if (ways > s.max_ways) s.max_ways = ways;
  }
  // One lane's access; `live` lanes of its wave can still join (lanes minus exited ones).
  void record(int tid, int site, uint32_t off, int bytes, int live) {
    auto& mine = occ[static_cast<size_t>(tid)];
    if (static_cast<int>(mine.size()) <= site) mine.resize(static_cast<size_t>(site) + 1, 0);
    const uint32_t n = mine[static_cast<size_t>(site)]++;
    const uint64_t key = (static_cast<uint64_t>(tid / kBankWave) << 48) | (static_cast<uint64_t>(site) << 28) | n;
    auto it = open.find(key);
    if (it == open.end()) {
      it = open.emplace(key, LdsGroup{}).first;
      it->second.site = site;
      it->second.bytes = bytes;
      memset(it->second.has, 0, sizeof it->second.has);
    }
    LdsGroup& g = it->second;
    const int lane = tid % kBankWave;
    if (!g.has[lane]) ++g.count;
    g.has[lane] = true;
    g.off[lane] = off;
    if (g.count >= live) {
      close(g);
      open.erase(it);
    }
  }
  // barrier() or the end of the workgroup: evaluate what is open, restart the occurrence counters.
  void flush() {
    for (auto& kv : open) close(kv.second);
    open.clear();
    for (auto& v : occ) std::fill(v.begin(), v.end(), 0u);
  }
  void merge() {
    flush();
    std::lock_guard<std::mutex> g(g_lds_banks.mu);
    for (size_t i = 0; i < local.size() && i < g_lds_banks.stats.size(); ++i) {
      lds_stats_add(g_lds_banks.stats[i], local[i]);
      lds_stats_add(g_lds_banks.last[i], local[i]);
    }
    local.clear();
  }
};

}  // namespace emu
}  // namespace ckgen
