// bench/rowops_weights_probe.cu: layer norm (bf16, weight and bias) at intermediate widths, each as the planner
// plans it for sm_90 (`ckgen explain bench/rowops_widths_nv.ck --kernel layernorm_wN`: a single pass, weight and bias
// read a vector at a time, 64 registers), beside variants of the same tile (Cfg knobs, rowops_config.h):
//   ahead       the next vector's weight and bias asked for before this vector's y is stored (kWeightAhead)
//   staged S    the next S row groups' x copied into shared memory by cp.async while a group is reduced and
//               written (kStages = S, rowops_stages.h), on a persistent grid (SMs x resident workgroups)
//   no bias     the kernel without bias (a diagnostic: what the bias stream costs)
// (Also tried on 2026-12-06 and removed: weight and bias of the first vectors asked for before the all-reduces,
// the moments (n, mean, M2) merged by one all-reduce, x's loads kept out of the L1, a ring of two stages,
// bench/runs/2026-12-06f_h100_weights_probe.txt; a thread's sums in several chains added pairwise, the two moments
// about the row's first value by one all-reduce, and both: -0.8 .. +0.7 points against the planned kernel at every
// width; with ahead or the staged ring they moved those by -2.2 .. +2.0, in no steady direction;
// bench/runs/2026-12-06g_h100_weights_probe_tree_shift.txt; each thread asking the L2 for its vectors of the row
// one wave of resident workgroups ahead (prefetch.global.L2, 132 SMs x 1024 / threads row groups, and twice that),
// alone and with ahead: -0.7 .. -8.1 points against the planned kernel (with ahead at 4864: +0.5, but -1.4 against
// ahead alone), bench/runs/2026-12-06h_h100_weights_probe_l2_next.txt; a thread whose vectors all lie inside the
// row taking the full tile's code though the row's last vector is partial (kThreadFast, branch thread-fast):
// -12.7 .. +0.8 points alone; with ahead -0.1 .. +1.9 against ahead alone, but -8.7 at 29568; planned for
// 7 held-out widths, 0 of 17 kernels faster than without it, bench/runs/2026-12-06i_h100_rowops_thread_fast_heldout.txt;
// bench/runs/2026-12-06i_h100_weights_probe_thread.txt.)
// Device only; an experiment, not a benchmark of record (bench/rowops.py is). Widths from bench/shapes/
// hidden_sizes.txt's intermediate list, rows for about 64 MiB of traffic.
//
//   nvcc -std=c++17 -O3 --expt-relaxed-constexpr --prec-div=false -gencode=arch=compute_90a,code=sm_90a \
//        -I ckgen/include -I ckgen/ops/rowops/device bench/rowops_weights_probe.cu -o probe && ./probe
//
// The planned kernel is checked against a float64 layer norm on the host (relative norm error), every variant of
// the same arithmetic against the planned kernel's y (max |dy|).
// Timing: CUDA-graph replay (20 launches per graph) of a device-to-device copy of x and of every kernel, in 5
// interleaved rounds; each gets its median round.

#include <cmath>

#include "ckgen/platform.h"
#include "rowops_entry.h"
#include "rowops_probe.h"

namespace probe {
using ckgen::bf16;
enum Flags { kAhead = 1, kNoBias = 2, kStage1 = 4 };
// T threads per row x R vectors of 8, RB rows per workgroup; F: Flags
template <int T, int R, int RB, int F>
using LnBase = RowBase<ckgen::rowops::kLayerNorm, true, !(F & kNoBias), T, R, RB, false>;
template <int T, int R, int RB, int F>
struct Ln : LnBase<T, R, RB, F> {
  static constexpr int kLdsBytes = ckgen::rowops::lds_bytes<LnBase<T, R, RB, F>>();
  static constexpr int kWeightBatch = 1;
  static constexpr bool kWholeVectors = true, kWeightAhead = F & kAhead;
  static constexpr int kStages = F & kStage1 ? 1 : 0;
};

template <class C>
__global__ __launch_bounds__(C::kThreads, 1024 / C::kThreads) void ln(const bf16* x, const bf16* w, const bf16* b,
                                                                         bf16* y, int rows, int cols) {
  ckgen::rowops::layernorm_entry<C>(x, nullptr, w, b, y, nullptr, nullptr, rows, cols, cols, 0, cols, 0, 1e-5f);
}

using Fn = void (*)(const bf16*, const bf16*, const bf16*, bf16*, int, int);
struct Variant {
  const char* name;
  Fn f;
  int threads, rows_per_block, smem;  // smem > 0: the staged ring's bytes, on a persistent grid
  bool same_math;                     // y comparable to the planned kernel's
};
template <class C>
Variant variant(const char* name, bool same_math = true) {
  return {name, ln<C>, C::kThreads, C::kRowsPerBlock, ckgen::rowops::stage_bytes<C>(), same_math};
}
template <int T, int R, int RB>
std::vector<Variant> variants() {
  return {variant<Ln<T, R, RB, 0>>("planned"), variant<Ln<T, R, RB, kAhead>>("ahead"),
          variant<Ln<T, R, RB, kStage1>>("staged 1"), variant<Ln<T, R, RB, kNoBias>>("no bias", false)};
}
struct Case {
  int rows, cols;
  std::vector<Variant> vs;
};
}  // namespace probe

int main() {
  using probe::bf16;
  std::vector<probe::Case> cases = {
      {3456, 4864, probe::variants<128, 5, 2>()},   {2432, 6912, probe::variants<128, 7, 2>()},
      {1536, 11008, probe::variants<256, 6, 1>()},  {1280, 13824, probe::variants<256, 7, 1>()},
      {896, 18944, probe::variants<512, 5, 1>()},   {768, 22528, probe::variants<512, 6, 1>()},
      {640, 29568, probe::variants<512, 8, 1>()},
  };
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("layer norm bf16 (weight, bias) at intermediate widths; %s, %d SMs; %% of a D2D copy of x, graph replay\n",
              prop.name, sms);
  for (const auto& c : cases) {
    const size_t n = static_cast<size_t>(c.rows) * c.cols;
    std::vector<uint16_t> hx(n), hw(c.cols), hb(c.cols), ref(n), out(n);
    probe::fill(hx, 1u);
    probe::fill(hw, 2u);
    probe::fill(hb, 3u);
    bf16 *x, *y, *w, *b;
    CK(cudaMalloc(&x, n * 2));
    CK(cudaMalloc(&y, n * 2));
    CK(cudaMalloc(&w, c.cols * 2));
    CK(cudaMalloc(&b, c.cols * 2));
    CK(cudaMemcpy(x, hx.data(), n * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(w, hw.data(), c.cols * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, hb.data(), c.cols * 2, cudaMemcpyHostToDevice));
    std::vector<int> grids;
    for (const auto& v : c.vs) {  // a row group per workgroup, or (staged) at most the resident workgroups
      int grid = (c.rows + v.rows_per_block - 1) / v.rows_per_block, per_sm = 0;
      if (v.smem > 0) {
        CK(cudaFuncSetAttribute(reinterpret_cast<const void*>(v.f), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                v.smem));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, v.f, v.threads, v.smem));
        grid = std::min(grid, sms * std::max(per_sm, 1));
      }
      grids.push_back(grid);
    }
    auto launch = [&](size_t i, cudaStream_t s) {
      const probe::Variant& v = c.vs[i];
      v.f<<<grids[i], v.threads, v.smem, s>>>(x, w, b, y, c.rows, c.cols);
    };
    std::printf("%d x %d (%.1f MiB):\n", c.rows, c.cols, 4.0 * n / 1048576.0);
    for (size_t i = 0; i < c.vs.size(); ++i) {  // each checked once, output poisoned before
      const auto& v = c.vs[i];
      CK(cudaMemset(y, 0xff, n * 2));
      launch(i, 0);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(i == 0 ? ref.data() : out.data(), y, n * 2, cudaMemcpyDeviceToHost));
      int per_sm = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, v.f, v.threads, v.smem));
      if (v.same_math) {
        std::printf("  %-12s %d/SM  rel. error vs float64 %.2e, max |dy| vs planned %.3g\n", v.name, per_sm,
                    probe::layernorm_error(hx, hw, hb, i == 0 ? ref : out, c.rows, c.cols),
                    i == 0 ? 0.0f : probe::max_diff(ref, out));
      } else {
        std::printf("  %-12s %d/SM  (other math: not compared)\n", v.name, per_sm);
      }
    }
    const int kRounds = 5;
    std::vector<std::vector<float>> t(c.vs.size() + 1);
    std::vector<cudaGraphExec_t> g(c.vs.size() + 1);
    CK(probe::capture(&g[0], [&](cudaStream_t s) { cudaMemcpyAsync(y, x, n * 2, cudaMemcpyDeviceToDevice, s); }));
    for (size_t i = 0; i < c.vs.size(); ++i) CK(probe::capture(&g[i + 1], [&](cudaStream_t s) { launch(i, s); }));
    for (int r = 0; r < kRounds; ++r)
      for (size_t i = 0; i < g.size(); ++i) t[i].push_back(probe::replay_ms(g[i]));
    const float copy_ms = probe::median(t[0]);
    std::printf("  %-12s %.4f ms\n", "copy", copy_ms);
    for (size_t i = 0; i < c.vs.size(); ++i) {
      const float m = probe::median(t[i + 1]);
      std::printf("  %-12s %.4f ms = %5.1f%% of copy (rounds %.4f .. %.4f)\n", c.vs[i].name, m, 100.0f * copy_ms / m,
                  *std::min_element(t[i + 1].begin(), t[i + 1].end()),
                  *std::max_element(t[i + 1].begin(), t[i + 1].end()));
    }
    for (auto e : g) cudaGraphExecDestroy(e);
    cudaFree(x), cudaFree(y), cudaFree(w), cudaFree(b);
  }
  return 0;
}
