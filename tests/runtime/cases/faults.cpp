// Hand-written kernels for tests/runtime/test_emu_faults.py: one correct kernel and one planted fault
// each. Every kernel runs 2 workgroups of 128 threads (2 waves); in has n floats, out has n floats.
#include "ckgen/host_api.h"
#include "ckgen/platform.h"

using ckgen::barrier;
using ckgen::gload;
using ckgen::gstore;
using ckgen::lds_load;
using ckgen::lds_store;

constexpr int kT = 128;

static CKGEN_DEVICE int gidx() { return ckgen::block_id(0) * kT + ckgen::thread_id(); }

// Correct: neighbour exchange across waves after a barrier, and inside a wave after a wave operation.
CKGEN_GLOBAL void good_kernel(const float* in, float* out, int n) {
  CKGEN_LDS(float, tile, kT);
  CKGEN_LDS(float, pair, kT);
  const int t = ckgen::thread_id();
  const int g = gidx();
  lds_store(tile + t, g < n ? gload(in + g) : 0.0f);
  lds_store(pair + t, static_cast<float>(t));
  barrier();
  float v = lds_load(tile + (t + 64) % kT);                  // the other wave's element: ordered by the barrier
  const int first = CKGEN_UNIFORM(ckgen::wave_id());        // wave-uniform: passes the check
  lds_store(pair + t, v + first);                            // same byte written before: same thread
  (void)__builtin_amdgcn_readfirstlane(t);                   // orders the wave's lanes
  v += lds_load(pair + (t ^ 1));                             // same wave: ordered by the wave operation
  barrier();
  lds_store(tile + t, v);                                    // reads of tile were before the barrier
  if (g < n) gstore(out + g, v);
}

// LDS race across waves: read another wave's element with no barrier after its write.
CKGEN_GLOBAL void race_kernel(const float* in, float* out, int n) {
  CKGEN_LDS(float, tile, kT);
  const int t = ckgen::thread_id();
  const int g = gidx();
  lds_store(tile + t, g < n ? gload(in + g) : 0.0f);
  // planted: barrier() missing here
  float v = lds_load(tile + (t + 64) % kT);
  if (g < n) gstore(out + g, v);
}

// LDS race inside one wave: lanes are not in lockstep, so a neighbour's write needs a wave operation.
CKGEN_GLOBAL void lane_race_kernel(const float* in, float* out, int n) {
  CKGEN_LDS(float, tile, kT);
  const int t = ckgen::thread_id();
  lds_store(tile + t, static_cast<float>(t));
  float v = lds_load(tile + (t ^ 1));  // planted: no wave operation or barrier between
  const int g = gidx();
  if (g < n) gstore(out + g, v + gload(in + g));
}

// Write-after-read race: a wave overwrites what the other wave may still be reading.
CKGEN_GLOBAL void war_race_kernel(const float* in, float* out, int n) {
  CKGEN_LDS(float, tile, kT);
  const int t = ckgen::thread_id();
  const int g = gidx();
  lds_store(tile + t, g < n ? gload(in + g) : 0.0f);
  barrier();
  float v = lds_load(tile + (t + 64) % kT);
  lds_store(tile + t, v * 2.0f);  // planted: barrier() missing before the overwrite
  if (g < n) gstore(out + g, v);
}

// Global out of bounds: the last thread reads one element past the end of `in`.
CKGEN_GLOBAL void gload_oob_kernel(const float* in, float* out, int n) {
  const int g = gidx();
  if (g < n) gstore(out + g, gload(in + g + 1));  // planted: g + 1 == n for the last thread
}

// Global out of bounds on a store, 64 elements past the end of `out`.
CKGEN_GLOBAL void gstore_oob_kernel(const float* in, float* out, int n) {
  const int g = gidx();
  if (g < n) gstore(out + g + (g == n - 1 ? 64 : 0), gload(in + g));
}

// LDS out of bounds: the tile holds kT floats; the last thread writes element kT.
CKGEN_GLOBAL void lds_oob_kernel(const float* in, float* out, int n) {
  CKGEN_LDS(float, tile, kT);
  const int t = ckgen::thread_id();
  const int g = gidx();
  lds_store(tile + t + (t == kT - 1 ? 1 : 0), g < n ? gload(in + g) : 0.0f);
  barrier();
  if (g < n) gstore(out + g, lds_load(tile + t));
}

// Barrier deadlock: the second wave leaves early; the first waits at a barrier forever.
CKGEN_GLOBAL void deadlock_kernel(const float* in, float* out, int n) {
  const int t = ckgen::thread_id();
  const int g = gidx();
  if (t >= 64) return;  // planted
  barrier();
  if (g < n) gstore(out + g, gload(in + g));
}

// Divergent barriers: the two waves wait at different barrier() calls.
CKGEN_GLOBAL void divergent_barrier_kernel(const float* in, float* out, int n) {
  const int t = ckgen::thread_id();
  const int g = gidx();
  if (t < 64) {
    barrier();
  } else {
    barrier();  // planted: a different barrier
  }
  if (g < n) gstore(out + g, gload(in + g));
}

// A wave operation with exited lanes.
CKGEN_GLOBAL void wave_exit_kernel(const float* in, float* out, int n) {
  const int g = gidx();
  if (ckgen::lane_id() >= 32) return;  // planted
  const int w = __builtin_amdgcn_readfirstlane(ckgen::wave_id());
  if (g < n) gstore(out + g, gload(in + g) + static_cast<float>(w));
}

// CKGEN_UNIFORM of a value that differs between lanes.
CKGEN_GLOBAL void not_uniform_kernel(const float* in, float* out, int n) {
  const int g = gidx();
  const int t = CKGEN_UNIFORM(ckgen::thread_id());  // planted: not wave-uniform
  if (g < n) gstore(out + g, gload(in + g) + static_cast<float>(t));
}

#define RUNNER(K) \
  CKGEN_API int run_##K(const float* in, float* out, int n) { return CKGEN_LAUNCH(K, 2, 1, 1, kT, 0, nullptr, in, out, n); }

RUNNER(good_kernel)
RUNNER(race_kernel)
RUNNER(lane_race_kernel)
RUNNER(war_race_kernel)
RUNNER(gload_oob_kernel)
RUNNER(gstore_oob_kernel)
RUNNER(lds_oob_kernel)
RUNNER(deadlock_kernel)
RUNNER(divergent_barrier_kernel)
RUNNER(wave_exit_kernel)
RUNNER(not_uniform_kernel)
