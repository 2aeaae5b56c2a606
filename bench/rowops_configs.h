// bench/rowops_configs.h: the configurations of bench/rowops_kernels.cu, one NVR_KERNEL per line:
//   NVR_KERNEL(name, TIn, TOut, op, weight, bias, residual, row_threads, rows_per_block, reg_vecs, looped
//              [, TRes, TW])
// Performance configs (bf16, the shapes 65536x1024, 32768x4096, 16384x8192, 4096x32768) are named
// <op>_t<row_threads>x<reg_vecs>[r<rows_per_block>][_l]: tile = row_threads * reg_vecs * 8 columns, _l looped.
// bench/rowops_bench.py times every config that can take a shape (tile >= cols, or looped) and keeps the best.
using nvr::bf16;
using nvr::f16;
namespace ro = ckgen::rowops;

#define NVR_PERF(OP, NAME, W, B, R)                                                           \
  NVR_KERNEL(NAME##_t32x4r4, bf16, bf16, OP, W, B, R, 32, 4, 4, false)    /* 1024, warp/row */ \
  NVR_KERNEL(NAME##_t32x4r8, bf16, bf16, OP, W, B, R, 32, 8, 4, false)                         \
  NVR_KERNEL(NAME##_t64x2r2, bf16, bf16, OP, W, B, R, 64, 2, 2, false)    /* 1024, 2 warps */  \
  NVR_KERNEL(NAME##_t128x4r2, bf16, bf16, OP, W, B, R, 128, 2, 4, false)  /* 4096 */           \
  NVR_KERNEL(NAME##_t128x4r1, bf16, bf16, OP, W, B, R, 128, 1, 4, false)                       \
  NVR_KERNEL(NAME##_t256x2r1, bf16, bf16, OP, W, B, R, 256, 1, 2, false)                       \
  NVR_KERNEL(NAME##_t256x4r1, bf16, bf16, OP, W, B, R, 256, 1, 4, false)  /* 8192 */           \
  NVR_KERNEL(NAME##_t512x2r1, bf16, bf16, OP, W, B, R, 512, 1, 2, false)                       \
  NVR_KERNEL(NAME##_t128x8r1, bf16, bf16, OP, W, B, R, 128, 1, 8, false)                       \
  NVR_KERNEL(NAME##_t512x4r1_l, bf16, bf16, OP, W, B, R, 512, 1, 4, true) /* 2 tiles of 16384 */ \
  NVR_KERNEL(NAME##_t256x4r1_l, bf16, bf16, OP, W, B, R, 256, 1, 4, true)
// single-pass 32768: 16 warps with 8 vectors each, or 32 warps capped at 64 registers (these spill with the
// residual's second input, so the residual op does without them)
#define NVR_PERF_WIDE(OP, NAME, W, B, R)                                                      \
  NVR_KERNEL(NAME##_t512x8r1, bf16, bf16, OP, W, B, R, 512, 1, 8, false)                       \
  NVR_KERNEL(NAME##_t1024x4r1, bf16, bf16, OP, W, B, R, 1024, 1, 4, false)
NVR_PERF(ro::kSoftmax, softmax, false, false, false)
NVR_PERF(ro::kLayerNorm, layernorm, true, true, false)
NVR_PERF(ro::kRmsNorm, rmsnorm, true, false, false)
NVR_PERF(ro::kRmsNorm, addrmsnorm, true, false, true)
NVR_PERF_WIDE(ro::kSoftmax, softmax, false, false, false)
NVR_PERF_WIDE(ro::kLayerNorm, layernorm, true, true, false)
NVR_PERF_WIDE(ro::kRmsNorm, rmsnorm, true, false, false)

// ---- coverage (correctness on the GPU: other dtypes, sub-warp rows, residual with another dtype, int8)
NVR_KERNEL(cov_logsoftmax_f16_f32_t16x2r8_l, f16, float, ro::kLogSoftmax, false, false, false, 16, 8, 2, true)
NVR_KERNEL(cov_softmax_f32_t256x4r1_l, float, float, ro::kSoftmax, false, false, false, 256, 1, 4, true)
NVR_KERNEL(cov_layernorm_f16_t8x2r16_l, f16, f16, ro::kLayerNorm, true, true, false, 8, 16, 2, true)
NVR_KERNEL(cov_addlayernorm_f16_f32res_t128x2r1_l, f16, f16, ro::kLayerNorm, true, true, true, 128, 1, 2, true, float, f16)
NVR_KERNEL(cov_rmsnorm_bf16_i8_t128x4r2, bf16, int8_t, ro::kRmsNorm, true, false, false, 128, 2, 4, false)
NVR_KERNEL(cov_addrmsnorm_bf16_i8_t256x2r1_l, bf16, int8_t, ro::kRmsNorm, true, false, true, 256, 1, 2, true)
NVR_KERNEL(cov_softmax_bf16_i8_t128x4r2, bf16, int8_t, ro::kSoftmax, false, false, false, 128, 2, 4, false)
NVR_KERNEL(cov_logsoftmax_bf16_i8_t32x4r4_l, bf16, int8_t, ro::kLogSoftmax, false, false, false, 32, 4, 4, true)
