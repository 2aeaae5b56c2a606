// bench/carveout_probe.cu: how the L1 / shared-memory split changes the row-cache row ops at 4096 x 32768 bf16
// (device only; an experiment, not a benchmark of record: bench/rowops.py is).
//
//   nvcc -std=c++17 -O3 --expt-relaxed-constexpr --prec-div=false -gencode=arch=compute_90a,code=sm_90a \
//        -I ckgen/include -I ckgen/ops/rowops/device \
//        bench/carveout_probe.cu -o carveout_probe && ./carveout_probe
//
// The kernels are the row cache's 512 x 2 layer norm (also without bias, and without weight and bias) / RMS norm /
// softmax of bench/rowops_nv.ck (the same Cfg as
// `ckgen emit bench/rowops_nv.ck --stage hip --arch sm_90` prints). Each runs with cudaFuncAttributePreferred-
// SharedMemoryCarveout unset and then set to several percentages; the table gives the resident workgroups per SM
// and the time (median of 30) against a device-to-device copy of x, as bench/rowops.py counts it.


#include "ckgen/platform.h"
#include "rowops_probe.h"
#include "rowops_entry.h"

namespace probe {
// The Cfg `ckgen emit bench/rowops_nv.ck --stage hip --arch sm_90` prints for <op>_s32768_t<T>x<R>r<W>: T threads per
// row, R vectors of 8 per thread, W rows per workgroup, the row cache holding 32768 columns.
template <int Op, bool kW, bool kB, int T, int R, int W>
struct Base : RowBase<Op, kW, kB, T, R, W, true> {
  static constexpr int kCacheTiles = 32768 / (T * R * 8);
};
template <int Op, bool kW, bool kB, int T, int R, int W>
struct Cfg : Base<Op, kW, kB, T, R, W> {
  static constexpr int kLdsBytes = ckgen::rowops::lds_bytes<Base<Op, kW, kB, T, R, W>>();
};
using LN = Cfg<ckgen::rowops::kLayerNorm, true, true, 512, 2, 1>;
using LNW = Cfg<ckgen::rowops::kLayerNorm, true, false, 512, 2, 1>;
using LN0 = Cfg<ckgen::rowops::kLayerNorm, false, false, 512, 2, 1>;
using LN2 = Cfg<ckgen::rowops::kLayerNorm, true, true, 512, 2, 2>;
using RMS = Cfg<ckgen::rowops::kRmsNorm, true, false, 512, 2, 1>;
using RMS2 = Cfg<ckgen::rowops::kRmsNorm, true, false, 512, 2, 2>;
using SM = Cfg<ckgen::rowops::kSoftmax, false, false, 512, 2, 1>;
}  // namespace probe

using bf = ckgen::bf16;
CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS_ONE(512) void ln(const bf* x, const bf* w, const bf* b, bf* y, int rows, int cols) {
  ckgen::rowops::layernorm_entry<probe::LN>(x, nullptr, w, b, y, nullptr, nullptr, rows, cols, cols, 0, cols, 0,
                                            1e-5f);
}
CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS_ONE(512) void lnw(const bf* x, const bf* w, const bf* b, bf* y, int rows, int cols) {
  (void)b;
  ckgen::rowops::layernorm_entry<probe::LNW>(x, nullptr, w, nullptr, y, nullptr, nullptr, rows, cols, cols, 0, cols,
                                             0, 1e-5f);
}
CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS_ONE(512) void ln0(const bf* x, const bf* w, const bf* b, bf* y, int rows, int cols) {
  (void)w; (void)b;
  ckgen::rowops::layernorm_entry<probe::LN0>(x, nullptr, nullptr, nullptr, y, nullptr, nullptr, rows, cols, cols, 0,
                                             cols, 0, 1e-5f);
}
CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS_ONE(1024) void ln2(const bf* x, const bf* w, const bf* b, bf* y, int rows, int cols) {
  ckgen::rowops::layernorm_entry<probe::LN2>(x, nullptr, w, b, y, nullptr, nullptr, rows, cols, cols, 0, cols, 0,
                                             1e-5f);
}
CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS_ONE(1024) void rms2(const bf* x, const bf* w, const bf* b, bf* y, int rows, int cols) {
  (void)b;
  ckgen::rowops::rmsnorm_entry<probe::RMS2>(x, nullptr, w, y, nullptr, nullptr, rows, cols, cols, 0, cols, 0, 1e-5f);
}
CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS_ONE(512) void rms(const bf* x, const bf* w, const bf* b, bf* y, int rows, int cols) {
  (void)b;
  ckgen::rowops::rmsnorm_entry<probe::RMS>(x, nullptr, w, y, nullptr, nullptr, rows, cols, cols, 0, cols, 0, 1e-5f);
}
CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS_ONE(512) void sm(const bf* x, const bf* w, const bf* b, bf* y, int rows, int cols) {
  (void)w; (void)b;
  ckgen::rowops::softmax_entry<probe::SM>(x, nullptr, y, nullptr, nullptr, rows, cols, cols, 0, cols, 0, 0.7f);
}

int main() {
  const int rows = probe::kRows, cols = probe::kCols;
  const size_t n = static_cast<size_t>(rows) * cols;
  std::vector<uint16_t> h;
  bf *x, *y, *w, *b;
  if (probe::make_inputs(h, &x, &w, &b) != 0) return 1;
  CK(cudaMalloc(&y, n * 2));
  const float copy = probe::median_ms([&] { cudaMemcpyAsync(y, x, n * 2, cudaMemcpyDeviceToDevice); });
  std::printf("4096x32768 bf16: copy %.4f ms\n", copy);
  struct K {
    const char* name;
    void (*f)(const bf*, const bf*, const bf*, bf*, int, int);
    int smem, threads, rows_per_block;
  } ks[] = {{"layernorm", ln, probe::LN::kLdsBytes, 512, 1}, {"ln-w-only", lnw, probe::LNW::kLdsBytes, 512, 1},
            {"ln-no-w-b", ln0, probe::LN0::kLdsBytes, 512, 1}, {"ln-2rows", ln2, probe::LN2::kLdsBytes, 1024, 2},
            {"rmsnorm", rms, probe::RMS::kLdsBytes, 512, 1}, {"rms-2rows", rms2, probe::RMS2::kLdsBytes, 1024, 2},
            {"softmax", sm, probe::SM::kLdsBytes, 512, 1}};
  const int carve[] = {-1};
  for (const K& k : ks) {
    CK(cudaFuncSetAttribute(reinterpret_cast<const void*>(k.f), cudaFuncAttributeMaxDynamicSharedMemorySize, k.smem));
    for (int c : carve) {
      CK(cudaFuncSetAttribute(reinterpret_cast<const void*>(k.f), cudaFuncAttributePreferredSharedMemoryCarveout, c));
      int per_sm = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.f, k.threads, k.smem));
      const float ms = probe::median_ms([&] { k.f<<<(rows + k.rows_per_block - 1) / k.rows_per_block, k.threads, k.smem>>>(x, w, b, y, rows, cols); });
      CK(cudaGetLastError());
      std::printf("  %-10s carveout %4d%%: %d workgroups/SM (occupancy API), %.4f ms = %5.1f%% of copy\n", k.name, c,
                  per_sm, ms, 100.0f * copy / ms);
    }
  }
  return 0;
}
