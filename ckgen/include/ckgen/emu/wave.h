// ckgen/emu/wave.h: how the emulated threads of one workgroup meet (docs/emulation.md, "Execution model").
//
//   * thread_id / lane_id / wave_id / block_id / grid_dim: the running thread's indices;
//   * barrier(file, line): blocks until every thread of the workgroup waits at the same call site (threads at
//     different barriers are a fault); the last to arrive starts a new LDS epoch and goes on;
//   * wave_collective(op, in, n, out, outn, compute): every lane of the wave deposits n bytes and blocks; the
//     last lane to arrive runs compute(wave, lanes) to fill every lane's result slot and releases the wave.
//     Lanes at different operations, or an operation that a lane of the wave has exited before, are a fault.
//     readfirstlane, uniform (CKGEN_UNIFORM's check) and bpermute (ds_bpermute_b32) are built on it, as are
//     ckgen/emu/mfma.h, xlane.h and nv.h.
#pragma once

#include <stddef.h>
#include <string.h>

#include "ckgen/emu/state.h"

namespace ckgen {
namespace emu __attribute__((visibility("hidden"))) {

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

}  // namespace emu
}  // namespace ckgen
