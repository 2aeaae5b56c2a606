// bench/nv_harness.h: hand-written Cfg structs for the standalone NVIDIA GEMM harness.
// These mirror what the lead's template renders from a KernelPlan (docs/design.md "Cfg contract"),
// so the kernel can be measured before the pipeline lands.
#pragma once
#include "gemm_mma_sm90.h"

namespace nvh {

template <class T> struct Mma;
template <> struct Mma<ckgen::f16> {
  using TAcc = float; using C = ckgen::f32x4_t; static constexpr int kK = 16;
  static __device__ __forceinline__ C mma(ckgen::u32x4_t a, ckgen::u32x2_t b, C c) { return ckgen::nv::mma_m16n8k16_f32_f16(a, b, c); }
};
template <> struct Mma<ckgen::bf16> {
  using TAcc = float; using C = ckgen::f32x4_t; static constexpr int kK = 16;
  static __device__ __forceinline__ C mma(ckgen::u32x4_t a, ckgen::u32x2_t b, C c) { return ckgen::nv::mma_m16n8k16_f32_bf16(a, b, c); }
};
template <> struct Mma<int8_t> {
  using TAcc = int32_t; using C = ckgen::i32x4_t; static constexpr int kK = 32;
  static __device__ __forceinline__ C mma(ckgen::u32x4_t a, ckgen::u32x2_t b, C c) { return ckgen::nv::mma_m16n8k32_s32_s8(a, b, c); }
};
template <> struct Mma<float> {
  using TAcc = float; using C = ckgen::f32x4_t; static constexpr int kK = 8;
  static __device__ __forceinline__ C mma(ckgen::u32x4_t a, ckgen::u32x2_t b, C c) { return ckgen::nv::mma_m16n8k8_f32_tf32(a, b, c); }
};

template <class T, class TCx, bool AR, bool BR, bool CR, int TM, int TN, int TK, int WM, int WN, int ST,
          class Epi, int BETA_X2 = 0, int GM = 8>
struct Cfg {
  using TA = T; using TB = T; using TC = TCx; using TAcc = typename Mma<T>::TAcc; using TBias = TCx;
  static constexpr bool kARowMajor = AR, kBRowMajor = BR, kCRowMajor = CR;
  static constexpr int kTileM = TM, kTileN = TN, kTileK = TK;
  static constexpr int kWavesM = WM, kWavesN = WN, kWaveSize = 32, kThreads = WM * WN * 32;
  static constexpr int kWaveTileM = TM / WM, kWaveTileN = TN / WN;
  static constexpr int kInstrM = 16, kInstrN = 8, kInstrK = Mma<T>::kK;
  static constexpr int kRepM = kWaveTileM / 16, kRepN = kWaveTileN / 8;
  static constexpr int kAItems = 16 * kInstrK / 32, kBItems = 8 * kInstrK / 32, kCItems = 4;
  using AOperand = ckgen::u32x4_t; using BOperand = ckgen::u32x2_t; using COperand = typename Mma<T>::C;
  static __device__ __forceinline__ COperand mma(AOperand a, BOperand b, COperand c) { return Mma<T>::mma(a, b, c); }
  static constexpr int kLdsBuffers = ST, kPrefetch = 0, kStages = ST, kGroupM = GM;
  static constexpr int kVecA = 16 / sizeof(T), kVecB = 16 / sizeof(T), kVecC = 2;
  static constexpr int kLdsAStride = TK, kLdsBStride = TK;
  static constexpr int kLdsABytes = TM * TK * sizeof(T), kLdsBBytes = TN * TK * sizeof(T);
  static constexpr int kLdsBytes = ST * (kLdsABytes + kLdsBBytes);
  static constexpr float kAlpha = 1.0f, kBeta = BETA_X2 * 0.5f;
  static constexpr bool kHasBias = !Epi::kEmpty;
  static constexpr bool kIntegerEpilogue = ckgen::nv::IsInt<TCx>::value;
  using Epilogue = Epi;
};

}  // namespace nvh

// One kernel + one extern "C" launcher per config.
#define NVH_KERNEL(NAME, ...)                                                                            \
  using NAME##_cfg = nvh::Cfg<__VA_ARGS__>;                                                              \
  CKGEN_GLOBAL __launch_bounds__(NAME##_cfg::kThreads) void NAME##_kernel(                               \
      const NAME##_cfg::TA* A, const NAME##_cfg::TB* B, NAME##_cfg::TC* C, const NAME##_cfg::TBias* bias, \
      int M, int N, int K, long long lda, long long ldb, long long ldc) {                                \
    ckgen::nv::gemm_mma<NAME##_cfg>(A, B, C, bias, M, N, K, lda, ldb, ldc);                              \
  }                                                                                                      \
  extern "C" int NAME(const void* A, const void* B, void* C, const void* bias, long long M, long long N,  \
                      long long K, long long lda, long long ldb, long long ldc, void* stream) {          \
    using Q = NAME##_cfg;                                                                                \
    static int configured = 0;                                                                           \
    return ckgen::cuda_host::launch(NAME##_kernel, &configured, (N + Q::kTileN - 1) / Q::kTileN,         \
                        (M + Q::kTileM - 1) / Q::kTileM, 1, Q::kThreads, Q::kLdsBytes, stream,            \
                        (const Q::TA*)A, (const Q::TB*)B, (Q::TC*)C,                                     \
                        (const Q::TBias*)bias, (int)M, (int)N, (int)K, lda, ldb, ldc);                   \
  }                                                                                                      \
  extern "C" int NAME##_smem() { return NAME##_cfg::kLdsBytes; }
