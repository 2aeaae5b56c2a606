// The stream-K partition of ckgen/ops/gemm/device/gemm_work.h on the host (tests/ops/gemm/test_stream_k.py):
// every segment of worker w of P, as plain integers.
#include "gemm_work.h"

// Writes worker w's segments (tile, kt0, kt1, count, slot, slot0, slot_base, slot_step, reads) into out (at most
// cap of them); returns how many it has.
extern "C" int stream_k_segments(int tiles, int kt, int P, int w, int* out, int cap) {
  ckgen::gemm_sched::Seg g;
  int n = 0;
  for (int j = 0; ckgen::gemm_sched::StreamK::seg_raw(j, tiles, kt, P, w, g); ++j, ++n) {
    if (n >= cap) continue;
    const int v[9] = {g.tile, g.kt0, g.kt1, g.count, g.slot, g.slot0, g.slot_base, g.slot_step, g.reads};
    for (int i = 0; i < 9; ++i) out[9 * n + i] = v[i];
  }
  return n;
}
