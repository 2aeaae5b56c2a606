// gemm_forms.h (ckgen/ops/gemm/device): the argument forms of a GEMM kernel's entry, shared by every body.
//
// The planner gives each kernel one C ABI (ckgen/ops/gemm/abi.py): plain; strided-batched; scaled (tensor / row /
// column scale pointers after the bias), plain or batched; block-scaled (the block counts and the scales' leading
// dimensions too); MX-scaled (E8M0 bytes). GemmForms<Body>::entry<Cfg>(...) takes each of them, folds the extras into
// the epilogue operand (epi::Operand<Cfg>::make, ckgen/blocks/epilogue.h) or the batch item's offsets, and calls
//
//   Body::template run<Cfg>(A, B, C, op, M, N, K, lda, ldb, ldc)     one matrix, the operand made
//
// A batched form's workgroup z computes matrix block_id(2), each operand offset by its batch stride (0 broadcasts);
// batch items share the scales. The host entry checked the block counts (kb = ceil(K / block), nb = ceil(N / 128)).
#pragma once

#include "ckgen/blocks/epilogue.h"
#include "ckgen/platform.h"

namespace ckgen {

template <class Body>
struct GemmForms {
  template <class Cfg>
  using TA = typename Cfg::TA;
  template <class Cfg>
  using TB = typename Cfg::TB;
  template <class Cfg>
  using TC = typename Cfg::TC;
  template <class Cfg>
  using TBias = typename Cfg::TBias;

  // plain (the operand made by the entry: a bias pointer, or a residual / rotary operand)
  template <class Cfg>
  static CKGEN_DEVICE void entry(const TA<Cfg>* A, const TB<Cfg>* B, TC<Cfg>* C, epi::Operand<Cfg> op, int M, int N,
                                 int K, long long lda, long long ldb, long long ldc) {
    Body::template run<Cfg>(A, B, C, op, M, N, K, lda, ldb, ldc);
  }
  // strided-batched
  template <class Cfg>
  static CKGEN_DEVICE void entry(const TA<Cfg>* A, const TB<Cfg>* B, TC<Cfg>* C, epi::Operand<Cfg> op, int M, int N,
                                 int K, int /*batch*/, long long lda, long long ldb, long long ldc, long long stride_a,
                                 long long stride_b, long long stride_c, long long stride_bias) {
    const long long z = block_id(2);
    Body::template run<Cfg>(A + z * stride_a, B + z * stride_b, C + z * stride_c, op ? op + z * stride_bias : op, M,
                            N, K, lda, ldb, ldc);
  }
  // scaled (tensor / row / column), plain and strided-batched
  template <class Cfg>
  static CKGEN_DEVICE void entry(const TA<Cfg>* A, const TB<Cfg>* B, TC<Cfg>* C, const TBias<Cfg>* bias,
                                 const float* scale_a, const float* scale_b, int M, int N, int K, long long lda,
                                 long long ldb, long long ldc) {
    Body::template run<Cfg>(A, B, C, epi::Operand<Cfg>::make(bias, scale_a, scale_b), M, N, K, lda, ldb, ldc);
  }
  template <class Cfg>
  static CKGEN_DEVICE void entry(const TA<Cfg>* A, const TB<Cfg>* B, TC<Cfg>* C, const TBias<Cfg>* bias,
                                 const float* scale_a, const float* scale_b, int M, int N, int K, int batch,
                                 long long lda, long long ldb, long long ldc, long long stride_a, long long stride_b,
                                 long long stride_c, long long stride_bias) {
    entry<Cfg>(A, B, C, epi::Operand<Cfg>::make(bias, scale_a, scale_b), M, N, K, batch, lda, ldb, ldc, stride_a,
               stride_b, stride_c, stride_bias);
  }
  // block-scaled (block(128) pairs): K and N block counts, the scales' leading dimensions
  template <class Cfg>
  static CKGEN_DEVICE void entry(const TA<Cfg>* A, const TB<Cfg>* B, TC<Cfg>* C, const TBias<Cfg>* bias,
                                 const float* scale_a, const float* scale_b, int M, int N, int K, int /*kb*/,
                                 int /*nb*/, long long lda, long long ldb, long long ldc, long long ld_scale_a,
                                 long long ld_scale_b) {
    Body::template run<Cfg>(A, B, C, epi::Operand<Cfg>::make(bias, scale_a, scale_b, ld_scale_a, ld_scale_b), M, N, K,
                            lda, ldb, ldc);
  }
  // MX-scaled (mx(32) pairs): E8M0 bytes, A's M x kb and B's N x kb, with their leading dimensions
  template <class Cfg>
  static CKGEN_DEVICE void entry(const TA<Cfg>* A, const TB<Cfg>* B, TC<Cfg>* C, const TBias<Cfg>* bias,
                                 const uint8_t* scale_a, const uint8_t* scale_b, int M, int N, int K, int /*kb*/,
                                 long long lda, long long ldb, long long ldc, long long ld_scale_a,
                                 long long ld_scale_b) {
    Body::template run<Cfg>(A, B, C, epi::Operand<Cfg>::make(bias, scale_a, scale_b, ld_scale_a, ld_scale_b), M, N, K,
                            lda, ldb, ldc);
  }
};

}  // namespace ckgen
