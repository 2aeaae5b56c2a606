// f16, A and B col-major, C col-major; 64x64x32, 2x2 waves, 16x16x16 f16 (2x2 reps), double-buffered.
// arch: gfx942 gfx90a gfx908
// expect: global_load_dwordx4 global_store_dwordx2
#include "gemm_mfma.h"

struct f16_colAB_cfg {
  using TA = ckgen::f16; using TB = ckgen::f16; using TC = ckgen::f16;
  using TAcc = float; using TBias = ckgen::f16;
  static constexpr bool kARowMajor = false, kBRowMajor = false, kCRowMajor = false;
  static constexpr int kTileM = 64, kTileN = 64, kTileK = 32;
  static constexpr int kWavesM = 2, kWavesN = 2, kWaveSize = 64, kThreads = 256;
  static constexpr int kWaveTileM = 32, kWaveTileN = 32;
  static constexpr int kInstrM = 16, kInstrN = 16, kInstrK = 16;
  static constexpr int kRepM = 2, kRepN = 2;
  static constexpr int kAItems = 4, kBItems = 4, kCItems = 4;
  using AOperand = ckgen::half4_t; using BOperand = ckgen::half4_t; using COperand = ckgen::float4_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 2;
  static constexpr int kPrefetch = 1;
  static constexpr int kVecA = 8, kVecB = 8, kVecC = 4;
  // LDS layout (ckgen/blocks/lds_layout.h), as ckgen/ops/gemm/lds_layout.py plans it for this tile
  static constexpr int kLdsAGranule = 4, kLdsASwizzleBits = 4, kLdsAMnLanes = 8, kLdsAMnPiece = 1;
  static constexpr int kLdsBGranule = 4, kLdsBSwizzleBits = 4, kLdsBMnLanes = 1, kLdsBMnPiece = 1;
  static constexpr unsigned long long kLdsASwizzle = 0x1204081ull, kLdsBSwizzle = 0x4081ull;
  static constexpr int kLdsABytes = kTileM * kTileK * sizeof(TA), kLdsBBytes = kTileN * kTileK * sizeof(TB);
  static constexpr int kLdsBytes = 2 * (kLdsABytes + kLdsBBytes);
  static constexpr float kAlpha = 1.0f, kBeta = 0.0f;
  static constexpr bool kHasBias = false;
  static constexpr bool kIntegerEpilogue = false;
  using Epilogue = ckgen::epi::Chain<>;
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(f16_colAB_cfg::kThreads) void f16_colAB(const f16_colAB_cfg::TA* A, const f16_colAB_cfg::TB* B,
    f16_colAB_cfg::TC* C, const f16_colAB_cfg::TBias* bias, int M, int N, int K, long long lda, long long ldb, long long ldc) {
  ckgen::gemm_mfma<f16_colAB_cfg>(A, B, C, bias, M, N, K, lda, ldb, ldc);
}
