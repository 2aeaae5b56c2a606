// bench/rowops_persistent_probe.cu: layer norm at 4096 x 32768 bf16 (weight and bias): the row-cache kernel (512 x 2)
// with L1 policies for the weight and bias loads (kWeightL1 / kBiasL1, rowops_frag.h), a single-pass 1024 x 4
// kernel on a persistent grid (SMs x resident workgroups) with the staged ring (kStages = 1), and single passes
// with the row in registers and no shared memory beside them (512 x 8 at two workgroups per SM, weight and bias
// read kWeightBatch vectors at a time; 1024 x 4 at one): which keeps weight and bias in the L1 across rows?
// Device only; an experiment, not a benchmark of record (bench/rowops.py is).
//
//   nvcc -std=c++17 -O3 --expt-relaxed-constexpr --prec-div=false -gencode=arch=compute_90a,code=sm_90a \
//        -I ckgen/include -I ckgen/ops/rowops/device bench/rowops_persistent_probe.cu -o probe && ./probe [once]
//
// Each kernel's y is checked against the first's (max |dy|; an ulp of bf16 near 4 is 0.03). Then 5 rounds, each
// timing a device-to-device copy of x and every kernel (medians of 30 launches); each gets its median round.
// `once`: one launch of each kernel and no timing (for ncu).

#include <cmath>

#include "ckgen/platform.h"
#include "rowops_probe.h"
#include "rowops_entry.h"

namespace probe {
using ckgen::bf16;
template <int T, int R, bool kLoop>
using Base = RowBase<ckgen::rowops::kLayerNorm, true, true, T, R, 1, kLoop>;
struct CacheBase : Base<512, 2, true> {
  static constexpr int kCacheTiles = 4;
};
// kWeightL1 / kBiasL1: the L1 policy of the weight / bias loads (rowops_frag.h: 0 default, 1 bypass (L2 only),
// 2 evict_last)
template <int W, int B>
struct Cache : CacheBase {
  static constexpr int kLdsBytes = ckgen::rowops::lds_bytes<CacheBase>();
  static constexpr int kWeightL1 = W, kBiasL1 = B;
};
template <int S, int W, int B, int T = 1024, int R = 4, int WB = R>
struct Single : Base<T, R, false> {
  static constexpr int kLdsBytes = ckgen::rowops::lds_bytes<Base<T, R, false>>();
  static constexpr int kStages = S, kWeightBatch = WB;
  static constexpr int kWeightL1 = W, kBiasL1 = B;
};
using C00 = Cache<0, 0>;
using C01 = Cache<0, 1>;
using S100 = Single<1, 0, 0>;
// the row in registers, no shared memory but the scratch: the whole L1 beside the workgroups
using R512 = Single<0, 0, 0, 512, 8, 2>;
using R512w1 = Single<0, 0, 0, 512, 8, 1>;
using R512w4 = Single<0, 0, 0, 512, 8, 4>;
using R1024 = Single<0, 0, 0, 1024, 4>;
}  // namespace probe

using bf = ckgen::bf16;
#define LN_KERNEL_N(name, threads, per_sm, C)                                                                     \
  CKGEN_GLOBAL __launch_bounds__(threads, per_sm) void name(const bf* x, const bf* w, const bf* b, bf* y, int rows,  \
                                                          int cols) {                                             \
    ckgen::rowops::layernorm_entry<C>(x, nullptr, w, b, y, nullptr, nullptr, rows, cols, cols, 0, cols, 0, 1e-5f); \
  }
#define LN_KERNEL(name, threads, C) LN_KERNEL_N(name, threads, 1, C)
LN_KERNEL(k_c00, 512, probe::C00)
LN_KERNEL(k_c01, 512, probe::C01)
LN_KERNEL(k_s100, 1024, probe::S100)
LN_KERNEL_N(k_r512, 512, 2, probe::R512)
LN_KERNEL_N(k_r512w1, 512, 2, probe::R512w1)
LN_KERNEL_N(k_r512w4, 512, 2, probe::R512w4)
LN_KERNEL(k_r1024, 1024, probe::R1024)

int main(int argc, char** argv) {
  const int rows = probe::kRows, cols = probe::kCols;
  const size_t n = static_cast<size_t>(rows) * cols;
  std::vector<uint16_t> h, ref(n), out(n);
  bf *x, *y, *w, *b;
  if (probe::make_inputs(h, &x, &w, &b) != 0) return 1;
  CK(cudaMalloc(&y, n * 2));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::printf("4096x32768 bf16 layer norm (weight, bias), %d SMs\n", sms);
  struct K {
    const char* name;
    void (*f)(const bf*, const bf*, const bf*, bf*, int, int);
    int smem, threads;
    bool persistent;
    bool bias_is_weight = false;  // bias = the weight's buffer: one 64 KiB stream instead of two (its y differs)
  } ks[] = {
      {"row cache 512x2, both via L1 (before)", k_c00, probe::C00::kLdsBytes, 512, false},
      {"row cache, bias L2 only (the default)", k_c01, probe::C01::kLdsBytes, 512, false},
      {"row cache, both via L1, bias = weight", k_c00, probe::C00::kLdsBytes, 512, false, true},
      {"single 1024x4 stages 1", k_s100, ckgen::rowops::stage_bytes<probe::S100>(), 1024, true},
      {"registers 512x8, 2/SM, w b 2 at once", k_r512, 0, 512, false},
      {"registers 512x8, 2/SM, w b 1 at once", k_r512w1, 0, 512, false},
      {"registers 512x8, 2/SM, w b 4 at once", k_r512w4, 0, 512, false},
      {"registers 1024x4, 1/SM", k_r1024, 0, 1024, false},
      {"registers 512x8, persistent", k_r512, 0, 512, true},
  };
  const int nk = static_cast<int>(sizeof(ks) / sizeof(ks[0]));
  std::vector<int> grid(nk);
  for (int i = 0; i < nk; ++i) {  // set up and check each kernel against the first
    const K& k = ks[i];
    CK(cudaFuncSetAttribute(reinterpret_cast<const void*>(k.f), cudaFuncAttributeMaxDynamicSharedMemorySize, k.smem));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.f, k.threads, k.smem));
    grid[i] = k.persistent ? std::min(rows, sms * std::max(per_sm, 1)) : rows;
    CK(cudaMemset(y, 0xff, n * 2));  // poison (NaN)
    k.f<<<grid[i], k.threads, k.smem>>>(x, w, k.bias_is_weight ? w : b, y, rows, cols);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(i == 0 ? ref.data() : out.data(), y, n * 2, cudaMemcpyDeviceToHost));
    float dmax = 0.0f;
    for (size_t e = 0; i > 0 && e < n; ++e) {
      const float d = std::fabs(probe::bf16_to_float(out[e]) - probe::bf16_to_float(ref[e]));
      dmax = d == d ? std::max(dmax, d) : INFINITY;
    }
    std::printf("  %-36s smem %6d: %d/SM grid %5d  max |dy| %.3g\n", k.name, k.smem, per_sm, grid[i], dmax);
  }
  if (argc > 1 && std::strcmp(argv[1], "once") == 0) return 0;  // (under ncu: one launch of each)
  // rounds: the copy and every kernel in turn, ROUNDS times; per kernel the median and the best round
  const int kRounds = 5;
  std::vector<std::vector<float>> t(nk + 1);
  for (int r = 0; r < kRounds; ++r) {
    t[nk].push_back(probe::median_ms([&] { cudaMemcpyAsync(y, x, n * 2, cudaMemcpyDeviceToDevice); }));
    for (int i = 0; i < nk; ++i)
      t[i].push_back(probe::median_ms([&] { ks[i].f<<<grid[i], ks[i].threads, ks[i].smem>>>(x, w, ks[i].bias_is_weight ? w : b, y, rows, cols); }));
  }
  auto med = [](std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  const float copy_ms = med(t[nk]);
  std::printf("copy: median of %d rounds %.4f ms (%.4f .. %.4f)\n", kRounds, copy_ms,
              *std::min_element(t[nk].begin(), t[nk].end()), *std::max_element(t[nk].begin(), t[nk].end()));
  for (int i = 0; i < nk; ++i) {
    const float m = med(t[i]);
    std::printf("  %-36s %.4f ms = %5.1f%% of copy (rounds %.4f .. %.4f)\n", ks[i].name, m, 100.0f * copy_ms / m,
                *std::min_element(t[i].begin(), t[i].end()), *std::max_element(t[i].begin(), t[i].end()));
  }
  return 0;
}
