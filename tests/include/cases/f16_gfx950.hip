// f16 in, f32 acc, f16 out on gfx950 (clang++-22); 128x128x64, 2x2 waves, 16x16x32 f16.
// arch: gfx950
// expect: global_load_dwordx4 ds_read_b128
#include "gemm_mfma.h"

struct f16_gfx950_cfg {
  using TA = ckgen::f16; using TB = ckgen::f16; using TC = ckgen::f16;
  using TAcc = float; using TBias = ckgen::f16;
  static constexpr bool kARowMajor = true, kBRowMajor = true, kCRowMajor = true;
  static constexpr int kTileM = 128, kTileN = 128, kTileK = 64;
  static constexpr int kWavesM = 2, kWavesN = 2, kWaveSize = 64, kThreads = 256;
  static constexpr int kWaveTileM = 64, kWaveTileN = 64;
  static constexpr int kInstrM = 16, kInstrN = 16, kInstrK = 32;
  static constexpr int kRepM = 4, kRepN = 4;
  static constexpr int kAItems = 8, kBItems = 8, kCItems = 4;
  using AOperand = ckgen::half8_t; using BOperand = ckgen::half8_t; using COperand = ckgen::float4_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_f32_16x16x32_f16(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 2;
  static constexpr int kPrefetch = 1;
  static constexpr int kVecA = 8, kVecB = 8, kVecC = 1;
  // LDS layout (ckgen/blocks/lds_layout.h), as ckgen/ops/gemm/lds_layout.py plans it for this tile
  static constexpr int kLdsAGranule = 8, kLdsASwizzleBits = 4, kLdsAMnLanes = 1, kLdsAMnPiece = 1;
  static constexpr int kLdsBGranule = 8, kLdsBSwizzleBits = 4, kLdsBMnLanes = 16, kLdsBMnPiece = 4;
  static constexpr unsigned long long kLdsASwizzle = 0x4081ull, kLdsBSwizzle = 0x81204081ull;
  static constexpr int kLdsABytes = kTileM * kTileK * sizeof(TA), kLdsBBytes = kTileN * kTileK * sizeof(TB);
  static constexpr int kLdsBytes = 2 * (kLdsABytes + kLdsBBytes);
  static constexpr float kAlpha = 1.0f, kBeta = 0.0f;
  static constexpr bool kHasBias = false;
  static constexpr bool kIntegerEpilogue = false;
  using Epilogue = ckgen::epi::Chain<>;
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(f16_gfx950_cfg::kThreads) void f16_gfx950(const f16_gfx950_cfg::TA* A, const f16_gfx950_cfg::TB* B,
    f16_gfx950_cfg::TC* C, const f16_gfx950_cfg::TBias* bias, int M, int N, int K, long long lda, long long ldb, long long ldc) {
  ckgen::gemm_mfma<f16_gfx950_cfg>(A, B, C, bias, M, N, K, lda, ldb, ldc);
}
