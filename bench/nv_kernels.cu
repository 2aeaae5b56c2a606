// bench/nv_kernels.cu: the standalone harness library. Each NVH_KERNEL line is one hand-written Cfg
// (what the lead's template renders from a plan) with an extern "C" launcher
//   int NAME(A, B, C, bias, M, N, K, lda, ldb, ldc, stream)
// Loaded by bench/nv_check.py (ctypes). Build (from the repository root), then carry bench/_build:
//   mkdir -p bench/_build && nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC --expt-relaxed-constexpr \
//     -gencode=arch=compute_90a,code=sm_90a -Ickgen/include -Ickgen/ops/gemm/device bench/nv_kernels.cu -o bench/_build/libnvh.so
#include "nv_harness.h"

using ckgen::bf16;
using ckgen::f16;
namespace E = ckgen::epi;
using E0 = E::Chain<>;
using EBG = E::Chain<E::BiasCol, E::Gelu>;
using EBR = E::Chain<E::BiasRow, E::Relu>;
using ES = E::Chain<E::Silu>;

#if !defined(NVH_PART) || NVH_PART == 0
// ---- performance configs (A, B, C row-major: torch's default layout)
NVH_KERNEL(bf16_rr_128x256x32_s3, bf16, bf16, true, true, true, 128, 256, 32, 2, 4, 3, E0)
NVH_KERNEL(bf16_rr_128x256x32_s4, bf16, bf16, true, true, true, 128, 256, 32, 2, 4, 4, E0)
NVH_KERNEL(bf16_rr_256x128x32_s3, bf16, bf16, true, true, true, 256, 128, 32, 4, 2, 3, E0)
NVH_KERNEL(bf16_rr_256x128x32_s4, bf16, bf16, true, true, true, 256, 128, 32, 4, 2, 4, E0)
NVH_KERNEL(bf16_rr_128x128x32_s4, bf16, bf16, true, true, true, 128, 128, 32, 2, 2, 4, E0)
NVH_KERNEL(bf16_rr_128x128x64_s3, bf16, bf16, true, true, true, 128, 128, 64, 2, 2, 3, E0)
NVH_KERNEL(bf16_rr_128x256x64_s3, bf16, bf16, true, true, true, 128, 256, 64, 2, 4, 3, E0)
NVH_KERNEL(bf16_rc_128x256x32_s4, bf16, bf16, true, false, true, 128, 256, 32, 2, 4, 4, E0)
#endif
#if !defined(NVH_PART) || NVH_PART == 1
NVH_KERNEL(f16_rr_128x256x32_s3, f16, f16, true, true, true, 128, 256, 32, 2, 4, 3, E0)
NVH_KERNEL(f16_rr_128x256x32_s4, f16, f16, true, true, true, 128, 256, 32, 2, 4, 4, E0)
NVH_KERNEL(f16_rr_256x128x32_s3, f16, f16, true, true, true, 256, 128, 32, 4, 2, 3, E0)
NVH_KERNEL(f16_rr_256x128x32_s4, f16, f16, true, true, true, 256, 128, 32, 4, 2, 4, E0)
NVH_KERNEL(f16_rr_128x128x32_s4, f16, f16, true, true, true, 128, 128, 32, 2, 2, 4, E0)
NVH_KERNEL(f16_rr_128x256x64_s3, f16, f16, true, true, true, 128, 256, 64, 2, 4, 3, E0)
// fused GEMM + bias(col) + GELU
NVH_KERNEL(bf16_rr_128x256x32_s4_biasgelu, bf16, bf16, true, true, true, 128, 256, 32, 2, 4, 4, EBG)
NVH_KERNEL(f16_rr_128x256x32_s4_biasgelu, f16, f16, true, true, true, 128, 256, 32, 2, 4, 4, EBG)
#endif
#if !defined(NVH_PART) || NVH_PART == 2
// ---- coverage configs: layouts, dtypes, epilogues, odd K steps, beta
NVH_KERNEL(bf16_rc_128x128x32_s3, bf16, bf16, true, false, true, 128, 128, 32, 2, 2, 3, E0)
NVH_KERNEL(bf16_cr_128x128x32_s3, bf16, bf16, false, true, true, 128, 128, 32, 2, 2, 3, E0)
NVH_KERNEL(bf16_cc_128x128x32_s3, bf16, bf16, false, false, true, 128, 128, 32, 2, 2, 3, E0)
NVH_KERNEL(bf16_rr_128x128x32_s3_ccol, bf16, bf16, true, true, false, 128, 128, 32, 2, 2, 3, E0)
NVH_KERNEL(f16_rr_64x64x16_s4, f16, f16, true, true, true, 64, 64, 16, 2, 2, 4, E0)
NVH_KERNEL(f16_cc_64x64x32_s2_beta1, f16, f16, false, false, true, 64, 64, 32, 2, 2, 2, E0, 2)
NVH_KERNEL(f16_rr_64x128x32_s3_biasrow_relu, f16, f16, true, true, true, 64, 128, 32, 2, 2, 3, EBR)
NVH_KERNEL(bf16_rc_64x64x64_s3_silu_f32out, bf16, float, true, false, true, 64, 64, 64, 2, 2, 3, ES)
#endif
#if !defined(NVH_PART) || NVH_PART == 3
NVH_KERNEL(i8_rc_128x128x64_s3, int8_t, int32_t, true, false, true, 128, 128, 64, 2, 2, 3, E0)
NVH_KERNEL(i8_rr_128x128x64_s3, int8_t, int32_t, true, true, true, 128, 128, 64, 2, 2, 3, E0)
NVH_KERNEL(i8_cc_64x64x64_s3_i8out, int8_t, int8_t, false, false, true, 64, 64, 64, 2, 2, 3, E0)
NVH_KERNEL(f32_rc_128x128x32_s3, float, float, true, false, true, 128, 128, 32, 2, 2, 3, E0)
NVH_KERNEL(f32_rr_128x128x32_s3, float, float, true, true, true, 128, 128, 32, 2, 2, 3, E0)
NVH_KERNEL(f32_cr_64x64x16_s3, float, float, false, true, false, 64, 64, 16, 2, 2, 3, E0)

// ---- register-only mma.sync peak: each warp runs `iters` rounds of 8 independent m16n8k16 bf16 mma.
__global__ void nvh_mma_peak_kernel(float* out, int iters) {
  ckgen::u32x4_t a;
  ckgen::u32x2_t b;
  for (int i = 0; i < 4; ++i) a.r[i] = 0x3f803f80u ^ (threadIdx.x * (i + 1));
  for (int i = 0; i < 2; ++i) b.r[i] = 0x3f803f80u ^ (threadIdx.x * (i + 7));
  ckgen::f32x4_t c[8];
  for (int j = 0; j < 8; ++j)
    for (int e = 0; e < 4; ++e) c[j].r[e] = 0.0f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < 8; ++j) c[j] = ckgen::nv::mma_m16n8k16_f32_bf16(a, b, c[j]);
  }
  float s = 0.0f;
  for (int j = 0; j < 8; ++j)
    for (int e = 0; e < 4; ++e) s += c[j].r[e];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
extern "C" int nvh_mma_peak(float* out, int blocks, int threads, int iters, void* stream) {
  nvh_mma_peak_kernel<<<blocks, threads, 0, (cudaStream_t)stream>>>(out, iters);
  return (int)cudaGetLastError();
}
#endif
