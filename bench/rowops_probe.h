// bench/rowops_probe.h: what the row-op probes (bench/carveout_probe.cu, bench/rowops_persistent_probe.cu) share:
// CK (return 1 from main with the CUDA error), median_ms (the median of 30 launches after 3 warm-ups, CUDA events
// around each), and the inputs: a 4096 x 32768 bf16 x and 32768-element weight and bias, uniform in [-1, 1) from a
// fixed LCG, on the device.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#define CK(e)                                                                   \
  do {                                                                          \
    cudaError_t err_ = (e);                                                     \
    if (err_ != cudaSuccess) {                                                  \
      std::printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      return 1;                                                                 \
    }                                                                           \
  } while (0)

namespace probe {

template <class F>
float median_ms(F f) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> t;
  for (int i = 0; i < 33; ++i) {
    cudaEventRecord(a);
    f();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    if (i >= 3) t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

inline float bf16_to_float(uint16_t v) {
  const uint32_t u = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

constexpr int kRows = 4096, kCols = 32768;

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
