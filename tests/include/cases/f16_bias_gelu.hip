// f16, bias per column + GELU(tanh) epilogue, alpha=0.5 beta=0.25, f32 out; 128x128x32, 2x2 waves, 32x32x8 f16.
// arch: gfx942 gfx90a
// expect: global_load_dwordx4 v_exp_f32_e32
#include "gemm_mfma.h"

struct f16_bias_gelu_cfg {
  using TA = ckgen::f16; using TB = ckgen::f16; using TC = float;
  using TAcc = float; using TBias = ckgen::f16;
  static constexpr bool kARowMajor = true, kBRowMajor = true, kCRowMajor = true;
  static constexpr int kTileM = 128, kTileN = 128, kTileK = 32;
  static constexpr int kWavesM = 2, kWavesN = 2, kWaveSize = 64, kThreads = 256;
  static constexpr int kWaveTileM = 64, kWaveTileN = 64;
  static constexpr int kInstrM = 32, kInstrN = 32, kInstrK = 8;
  static constexpr int kRepM = 2, kRepN = 2;
  static constexpr int kAItems = 4, kBItems = 4, kCItems = 16;
  using AOperand = ckgen::half4_t; using BOperand = ckgen::half4_t; using COperand = ckgen::float16_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 2;
  static constexpr int kPrefetch = 1;
  static constexpr int kVecA = 8, kVecB = 8, kVecC = 1;
  // LDS layout (ckgen/blocks/lds_layout.h), as ckgen/ops/gemm/lds_layout.py plans it for this tile
  static constexpr int kLdsAGranule = 4, kLdsASwizzleBits = 4, kLdsAMnLanes = 1, kLdsAMnPiece = 1;
  static constexpr int kLdsBGranule = 4, kLdsBSwizzleBits = 4, kLdsBMnLanes = 16, kLdsBMnPiece = 2;
  static constexpr unsigned long long kLdsASwizzle = 0x4081ull, kLdsBSwizzle = 0x81204081ull;
  static constexpr int kLdsABytes = kTileM * kTileK * sizeof(TA), kLdsBBytes = kTileN * kTileK * sizeof(TB);
  static constexpr int kLdsBytes = 2 * (kLdsABytes + kLdsBBytes);
  static constexpr float kAlpha = 0.5f, kBeta = 0.25f;
  static constexpr bool kHasBias = true;
  static constexpr bool kIntegerEpilogue = false;
  using Epilogue = ckgen::epi::Chain<ckgen::epi::BiasCol, ckgen::epi::Gelu>;
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(f16_bias_gelu_cfg::kThreads) void f16_bias_gelu(const f16_bias_gelu_cfg::TA* A, const f16_bias_gelu_cfg::TB* B,
    f16_bias_gelu_cfg::TC* C, const f16_bias_gelu_cfg::TBias* bias, int M, int N, int K, long long lda, long long ldb, long long ldc) {
  ckgen::gemm_mfma<f16_bias_gelu_cfg>(A, B, C, bias, M, N, K, lda, ldb, ldc);
}
