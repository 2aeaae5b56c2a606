// Cross-lane primitives (platform API: shfl_xor, reduce_swap via ckgen/blocks/reduce.h, readlane) in small
// kernels that build for every platform: gfx9 (rung 1: tests/runtime/test_xlane.py disassembles them), the
// emulator (run against a Python model) and nvcc (sm_90a). W = the platform's wave size.
#include "ckgen/blocks/reduce.h"
#include "ckgen/platform.h"

namespace xk {
constexpr int W = ckgen::kPlatformWaveSize;

template <int kMask>
CKGEN_DEVICE void xor_all(float v, int iv, float* out, int* out_i, int lane) {
  if constexpr (kMask < W) {
    ckgen::gstore(out + (kMask - 1) * W + lane, ckgen::shfl_xor<kMask>(v));
    ckgen::gstore(out_i + (kMask - 1) * W + lane, ckgen::shfl_xor<kMask>(iv));
    xor_all<kMask + 1>(v, iv, out, out_i, lane);
  }
}

// Sum and max at once: a two-float state with a commutative combine.
struct SumMax {
  static constexpr int kN = 2;
  float v[2];
  static CKGEN_DEVICE SumMax combine(const SumMax& a, const SumMax& b) {
    return SumMax{{a.v[0] + b.v[0], ckgen::max_f32(a.v[1], b.v[1])}};
  }
};

template <int kWidth>
CKGEN_DEVICE void groups(float v, float* out, int& k, int tid, int n) {
  if constexpr (kWidth <= W) {
    namespace red = ckgen::red;
    ckgen::gstore(out + (k++) * n + tid, red::group_allreduce<kWidth, red::Sum>(v));
    ckgen::gstore(out + (k++) * n + tid, red::group_allreduce<kWidth, red::Max>(v));
    groups<kWidth * 2>(v, out, k, tid, n);
  }
}
}  // namespace xk

// One wave. out/out_i rows 0..W-2: shfl_xor<m>(in) for m = 1..W-1 (compile-time masks, float and int); rows
// W-1..2W-3 of out: shfl_xor(in, m) with a run-time mask; row 2W-2: readlane(in, 5); row 2W-1: readlane(in, W-1).
CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(64) void xlane_shfl(const float* in, float* out, int* out_i) {
  const int lane = ckgen::lane_id();
  const float v = ckgen::gload(in + lane);
  const int iv = static_cast<int>(v);
  xk::xor_all<1>(v, iv, out, out_i, lane);
  for (int m = 1; m < xk::W; ++m) ckgen::gstore(out + (xk::W - 1 + m - 1) * xk::W + lane, ckgen::shfl_xor(v, m));
  ckgen::gstore(out + (2 * xk::W - 2) * xk::W + lane, ckgen::readlane(v, 5));
  ckgen::gstore(out + (2 * xk::W - 1) * xk::W + lane, ckgen::readlane(v, xk::W - 1));
}

// 4 waves (n = 4W threads). Rows of n outputs, in order: for kWidth = 1, 2, 4 .. W: group Sum, group Max;
// then per group size G = 1, 2, 4 waves (MultiWave<4, G>): Sum(v), Max(v), Sum(2v) (three calls: the scratch
// halves alternate and are reused); then the SumMax state over a wave (2 rows) and over the block (2 rows).
CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(256) void xlane_reduce(const float* in, float* out) {
  namespace red = ckgen::red;
  constexpr int n = 4 * xk::W;
  const int tid = ckgen::thread_id();
  const float v = ckgen::gload(in + tid);
  int k = 0;
  xk::groups<1>(v, out, k, tid, n);
  CKGEN_LDS(float, s1, (red::MultiWave<4, 1, 2>::kLdsFloats));
  CKGEN_LDS(float, s2, (red::MultiWave<4, 2, 2>::kLdsFloats));
  CKGEN_LDS(float, s4, (red::MultiWave<4, 4, 2>::kLdsFloats));
  red::MultiWave<4, 1, 2> m1(s1);
  red::MultiWave<4, 2, 2> m2(s2);
  red::MultiWave<4, 4, 2> m4(s4);
  ckgen::gstore(out + (k++) * n + tid, m1.allreduce<red::Sum>(v));
  ckgen::gstore(out + (k++) * n + tid, m1.allreduce<red::Max>(v));
  ckgen::gstore(out + (k++) * n + tid, m1.allreduce<red::Sum>(2.0f * v));
  ckgen::gstore(out + (k++) * n + tid, m2.allreduce<red::Sum>(v));
  ckgen::gstore(out + (k++) * n + tid, m2.allreduce<red::Max>(v));
  ckgen::gstore(out + (k++) * n + tid, m2.allreduce<red::Sum>(2.0f * v));
  ckgen::gstore(out + (k++) * n + tid, m4.allreduce<red::Sum>(v));
  ckgen::gstore(out + (k++) * n + tid, m4.allreduce<red::Max>(v));
  ckgen::gstore(out + (k++) * n + tid, m4.allreduce<red::Sum>(2.0f * v));
  const xk::SumMax w = red::wave_allreduce_state(xk::SumMax{{v, v}});
  ckgen::gstore(out + (k++) * n + tid, w.v[0]);
  ckgen::gstore(out + (k++) * n + tid, w.v[1]);
  const xk::SumMax b = m4.allreduce_state(xk::SumMax{{v, v}});
  ckgen::gstore(out + (k++) * n + tid, b.v[0]);
  ckgen::gstore(out + (k++) * n + tid, b.v[1]);
}
