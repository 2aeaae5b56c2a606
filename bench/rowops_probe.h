// bench/rowops_probe.h: what the row-op probes (bench/carveout_probe.cu, bench/rowops_persistent_probe.cu,
// bench/rowops_weights_probe.cu) share: RowBase (the fixed part of a bf16 row-op Cfg), CK (return 1 from main with
// the CUDA error), median_ms (the median of 30
// launches after 3 warm-ups, CUDA events around each), capture / replay_ms (CUDA-graph replay: kGraphLaunches
// launches per graph, ms per launch), the inputs (uniform in [-1, 1) from a fixed LCG as bf16 bits: make_inputs, a
// 4096 x 32768 x and 32768-element weight and bias on the device; fill, any host vector), and the checks (a float64
// layer norm's relative norm error; max |a - b|).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "ckgen/types.h"

#define CK(e)                                                                   \
  do {                                                                          \
    cudaError_t err_ = (e);                                                     \
    if (err_ != cudaSuccess) {                                                  \
      std::printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      return 1;                                                                 \
    }                                                                           \
  } while (0)

namespace probe {

// The fixed part of a bf16 row-op Cfg (rowops_config.h): op Op, with weight (kW) and bias (kB), T threads per row x R
// vectors of 8, W rows per workgroup, looped or single pass. A probe's Cfg derives from it, adding kLdsBytes
// (rowops::lds_bytes of this base) and its own optional constants.
template <int Op, bool kW, bool kB, int T, int R, int W, bool kLoop>
struct RowBase {
  static constexpr int kOp = Op;
  using TIn = ckgen::bf16;
  using TRes = ckgen::bf16;
  using TW = ckgen::bf16;
  using TOut = ckgen::bf16;
  static constexpr bool kHasWeight = kW, kHasBias = kB, kResidual = false, kQuantI8 = false;
  static constexpr int kVec = 8, kWaveSize = 32, kRowThreads = T, kWavesPerRow = T >= 32 ? T / 32 : 1;
  static constexpr int kRowsPerBlock = W, kThreads = T * W, kRegVecs = R, kTileCols = T * R * 8;
  static constexpr bool kLooped = kLoop;
};

// the median of v (by value)
inline float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// the median ms of `runs` calls of f after `warm` more, CUDA events around each
template <class F>
float events_ms(F f, int warm, int runs) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> t;
  for (int i = 0; i < warm + runs; ++i) {
    cudaEventRecord(a);
    f();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    if (i >= warm) t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return median(t);
}

template <class F>
float median_ms(F f) {
  return events_ms(f, 3, 30);
}

// f(stream) kGraphLaunches times on a capturing stream, the graph instantiated into *exec
constexpr int kGraphLaunches = 20;
template <class F>
cudaError_t capture(cudaGraphExec_t* exec, F f) {
  cudaStream_t s;
  cudaGraph_t g;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e != cudaSuccess) return e;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < kGraphLaunches; ++i) f(s);
  e = cudaStreamEndCapture(s, &g);
  if (e != cudaSuccess) return e;
  e = cudaGraphInstantiate(exec, g, 0);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  return e;
}

// ms per launch of a graph from capture: the median of 10 replays after 2 warm-ups
inline float replay_ms(cudaGraphExec_t exec) {
  return events_ms([&] { cudaGraphLaunch(exec, 0); }, 2, 10) / kGraphLaunches;
}

inline float bf16_to_float(uint16_t v) {
  const uint32_t u = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

constexpr int kRows = 4096, kCols = 32768;

// v's elements uniform in [-1, 1) as bf16 bits, from an LCG seeded with seed
inline void fill(std::vector<uint16_t>& v, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 12345u;
  for (auto& e : v) {
    s = s * 1664525u + 1013904223u;
    const float f = static_cast<float>(s >> 8) / 16777216.0f * 2.0f - 1.0f;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    e = static_cast<uint16_t>(u >> 16);
  }
}

// |y - ref| / |ref| (2-norms) of y (bf16 bits) against a float64 layer norm of x (rows x cols) with w, b, eps 1e-5
inline double layernorm_error(const std::vector<uint16_t>& x, const std::vector<uint16_t>& w,
                              const std::vector<uint16_t>& b, const std::vector<uint16_t>& y, int rows, int cols) {
  double num = 0.0, den = 0.0;
  for (int r = 0; r < rows; ++r) {
    const uint16_t* xr = x.data() + static_cast<size_t>(r) * cols;
    double mean = 0.0, var = 0.0;
    for (int c = 0; c < cols; ++c) mean += bf16_to_float(xr[c]);
    mean /= cols;
    for (int c = 0; c < cols; ++c) var += (bf16_to_float(xr[c]) - mean) * (bf16_to_float(xr[c]) - mean);
    const double rstd = 1.0 / std::sqrt(var / cols + 1e-5);
    for (int c = 0; c < cols; ++c) {
      const double want = (bf16_to_float(xr[c]) - mean) * rstd * bf16_to_float(w[c]) + bf16_to_float(b[c]);
      const double got = bf16_to_float(y[static_cast<size_t>(r) * cols + c]);
      num += (got - want) * (got - want);
      den += want * want;
    }
  }
  return std::sqrt(num / den);
}

// max |a - b| over bf16 bits (inf where either is NaN)
inline float max_diff(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  float d = 0.0f;
  for (size_t e = 0; e < a.size(); ++e) {
    const float v = std::fabs(bf16_to_float(a[e]) - bf16_to_float(b[e]));
    d = v == v ? std::max(d, v) : INFINITY;
  }
  return d;
}

// x (kRows x kCols), w and b (kCols) as bf16 bits on the host (x also returned in `host`), copied to the device.
template <class T>
int make_inputs(std::vector<uint16_t>& host, T** x, T** w, T** b) {
  const size_t n = static_cast<size_t>(kRows) * kCols;
  std::vector<uint16_t> hw(kCols), hb(kCols);
  host.resize(n);
  uint32_t s = 12345u;
  auto rnd = [&]() {
    s = s * 1664525u + 1013904223u;
    const float f = static_cast<float>(s >> 8) / 16777216.0f * 2.0f - 1.0f;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return static_cast<uint16_t>(u >> 16);
  };
  for (auto& v : host) v = rnd();
  for (auto& v : hw) v = rnd();
  for (auto& v : hb) v = rnd();
  CK(cudaMalloc(x, n * 2));
  CK(cudaMalloc(w, kCols * 2));
  CK(cudaMalloc(b, kCols * 2));
  CK(cudaMemcpy(*x, host.data(), n * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(*w, hw.data(), kCols * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(*b, hb.data(), kCols * 2, cudaMemcpyHostToDevice));
  return 0;
}

}  // namespace probe
