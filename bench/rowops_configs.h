// bench/rowops_configs.h: the configurations of bench/rowops_kernels.cu, one NVR_KERNEL per line:
//   NVR_KERNEL(name, TIn, TOut, op, weight, bias, residual, row_threads, rows_per_block, reg_vecs, looped
//              [, stages [, TRes, TW]])
// Performance configs (bf16, the shapes 65536x1024, 32768x4096, 16384x8192, 4096x32768) are named
// <op>_t<row_threads>x<reg_vecs>r<rows_per_block>[s<stages>][_l]: tile = row_threads * reg_vecs * 8 columns, _l
// looped, s<n>: the cp.async ring of n stages (rowops_forward.h "staged tiles"; persistent grid).
// bench/rowops_bench.py times every config whose tile fits the shape (tile >= cols and at most 4x cols, or looped)
// and keeps the best. Per shape: the first probe's best direct config (the reference), the same tile staged
// (2 and 3-4 stages: does keeping more loads in flight than registers hold close the gap?), other thread /
// register splits, and one vector per thread over a whole workgroup (what torch.compile's persistent reductions
// launch: many light workgroups, a barrier reduction).
using nvr::bf16;
using nvr::f16;
namespace ro = ckgen::rowops;

#define NVR_PERF(OP, NAME, W, B, R)                                                                       \
  /* 1024: a warp per row (the probe's best), staged; a half warp per row with 8 vectors; 4 warps x 1 */  \
  NVR_KERNEL(NAME##_t32x4r4, bf16, bf16, OP, W, B, R, 32, 4, 4, false)                                    \
  NVR_KERNEL(NAME##_t32x4r4s2, bf16, bf16, OP, W, B, R, 32, 4, 4, false, 2)                               \
  NVR_KERNEL(NAME##_t32x4r4s4, bf16, bf16, OP, W, B, R, 32, 4, 4, false, 4)                               \
  NVR_KERNEL(NAME##_t16x8r8s2, bf16, bf16, OP, W, B, R, 16, 8, 8, false, 2)                               \
  NVR_KERNEL(NAME##_t128x1r2, bf16, bf16, OP, W, B, R, 128, 2, 1, false)                                  \
  NVR_KERNEL(NAME##_t128x1r1, bf16, bf16, OP, W, B, R, 128, 1, 1, false)                                  \
  NVR_KERNEL(NAME##_t64x2r2, bf16, bf16, OP, W, B, R, 64, 2, 2, false)                                    \
  NVR_KERNEL(NAME##_t16x8r8, bf16, bf16, OP, W, B, R, 16, 8, 8, false)                                    \
  /* 4096 */                                                                                              \
  NVR_KERNEL(NAME##_t128x4r1, bf16, bf16, OP, W, B, R, 128, 1, 4, false)                                  \
  NVR_KERNEL(NAME##_t512x1r1, bf16, bf16, OP, W, B, R, 512, 1, 1, false)                                  \
  NVR_KERNEL(NAME##_t256x2r1, bf16, bf16, OP, W, B, R, 256, 1, 2, false)                                  \
  NVR_KERNEL(NAME##_t128x4r1s2, bf16, bf16, OP, W, B, R, 128, 1, 4, false, 2)                             \
  NVR_KERNEL(NAME##_t128x4r1s3, bf16, bf16, OP, W, B, R, 128, 1, 4, false, 3)                             \
  NVR_KERNEL(NAME##_t64x8r2s2, bf16, bf16, OP, W, B, R, 64, 2, 8, false, 2)                               \
  /* 8192 */                                                                                              \
  NVR_KERNEL(NAME##_t256x4r1, bf16, bf16, OP, W, B, R, 256, 1, 4, false)                                  \
  NVR_KERNEL(NAME##_t256x4r1s2, bf16, bf16, OP, W, B, R, 256, 1, 4, false, 2)                             \
  NVR_KERNEL(NAME##_t256x4r1s3, bf16, bf16, OP, W, B, R, 256, 1, 4, false, 3)                             \
  NVR_KERNEL(NAME##_t128x8r1s2, bf16, bf16, OP, W, B, R, 128, 1, 8, false, 2)                             \
  NVR_KERNEL(NAME##_t512x2r1, bf16, bf16, OP, W, B, R, 512, 1, 2, false)                                  \
  NVR_KERNEL(NAME##_t1024x1r1, bf16, bf16, OP, W, B, R, 1024, 1, 1, false)                                \
  /* 32768 (and the looped reference for any width) */                                                    \
  NVR_KERNEL(NAME##_t1024x4r1, bf16, bf16, OP, W, B, R, 1024, 1, 4, false)                                \
  NVR_KERNEL(NAME##_t256x4r1_l, bf16, bf16, OP, W, B, R, 256, 1, 4, true)
// 32768 staged: x alone takes 64 KiB per stage (2 or 3 stages fit in 227 KiB); x and the residual 128 KiB (1).
#define NVR_PERF_WIDE(OP, NAME, W, B, R)                                                                  \
  NVR_KERNEL(NAME##_t512x8r1, bf16, bf16, OP, W, B, R, 512, 1, 8, false)                                  \
  NVR_KERNEL(NAME##_t1024x4r1s2, bf16, bf16, OP, W, B, R, 1024, 1, 4, false, 2)                           \
  NVR_KERNEL(NAME##_t1024x4r1s3, bf16, bf16, OP, W, B, R, 1024, 1, 4, false, 3)                           \
  NVR_KERNEL(NAME##_t512x8r1s2, bf16, bf16, OP, W, B, R, 512, 1, 8, false, 2)
#define NVR_PERF_WIDE_RES(OP, NAME, W, B, R)                                                              \
  NVR_KERNEL(NAME##_t1024x4r1s1, bf16, bf16, OP, W, B, R, 1024, 1, 4, false, 1)                           \
  NVR_KERNEL(NAME##_t512x8r1s1, bf16, bf16, OP, W, B, R, 512, 1, 8, false, 1)
NVR_PERF(ro::kSoftmax, softmax, false, false, false)
NVR_PERF(ro::kLayerNorm, layernorm, true, true, false)
NVR_PERF(ro::kRmsNorm, rmsnorm, true, false, false)
NVR_PERF(ro::kRmsNorm, addrmsnorm, true, false, true)
NVR_PERF_WIDE(ro::kSoftmax, softmax, false, false, false)
NVR_PERF_WIDE(ro::kLayerNorm, layernorm, true, true, false)
NVR_PERF_WIDE(ro::kRmsNorm, rmsnorm, true, false, false)
NVR_PERF_WIDE_RES(ro::kRmsNorm, addrmsnorm, true, false, true)

// ---- coverage (correctness on the GPU: other dtypes, sub-warp rows, residual with another dtype, int8, and the
// staged ring with a partial stage, a residual of two chunks per vector, one stage, the int8 amax pass)
NVR_KERNEL(cov_logsoftmax_f16_f32_t16x2r8_l, f16, float, ro::kLogSoftmax, false, false, false, 16, 8, 2, true)
NVR_KERNEL(cov_softmax_f32_t256x4r1_l, float, float, ro::kSoftmax, false, false, false, 256, 1, 4, true)
NVR_KERNEL(cov_layernorm_f16_t8x2r16_l, f16, f16, ro::kLayerNorm, true, true, false, 8, 16, 2, true)
NVR_KERNEL(cov_addlayernorm_f16_f32res_t128x2r1_l, f16, f16, ro::kLayerNorm, true, true, true, 128, 1, 2, true, 0, float, f16)
NVR_KERNEL(cov_rmsnorm_bf16_i8_t128x4r2, bf16, int8_t, ro::kRmsNorm, true, false, false, 128, 2, 4, false)
NVR_KERNEL(cov_addrmsnorm_bf16_i8_t256x2r1_l, bf16, int8_t, ro::kRmsNorm, true, false, true, 256, 1, 2, true)
NVR_KERNEL(cov_softmax_bf16_i8_t128x4r2, bf16, int8_t, ro::kSoftmax, false, false, false, 128, 2, 4, false)
NVR_KERNEL(cov_logsoftmax_bf16_i8_t32x4r4_l, bf16, int8_t, ro::kLogSoftmax, false, false, false, 32, 4, 4, true)
NVR_KERNEL(cov_addlayernorm_f16_f32res_t64x2r2s3, f16, f16, ro::kLayerNorm, true, true, true, 64, 2, 2, false, 3, float, f16)
NVR_KERNEL(cov_rmsnorm_f32_i8_t8x4r16s1, float, int8_t, ro::kRmsNorm, true, false, false, 8, 16, 4, false, 1)
NVR_KERNEL(cov_logsoftmax_bf16_t32x2r4s2, bf16, bf16, ro::kLogSoftmax, false, false, false, 32, 4, 2, false, 2)
