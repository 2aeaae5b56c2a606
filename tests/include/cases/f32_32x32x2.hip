// f32 in/out; 64x64x16, 2x2 waves, 32x32x2 f32, double-buffered, no prefetch, beta=1.
// arch: gfx942 gfx90a gfx908
// expect: global_load_dwordx4 ds_read_b32
#include "gemm_mfma.h"

struct f32_32x32x2_cfg {
  using TA = float; using TB = float; using TC = float;
  using TAcc = float; using TBias = float;
  static constexpr bool kARowMajor = true, kBRowMajor = true, kCRowMajor = true;
  static constexpr int kTileM = 64, kTileN = 64, kTileK = 16;
  static constexpr int kWavesM = 2, kWavesN = 2, kWaveSize = 64, kThreads = 256;
  static constexpr int kWaveTileM = 32, kWaveTileN = 32;
  static constexpr int kInstrM = 32, kInstrN = 32, kInstrK = 2;
  static constexpr int kRepM = 1, kRepN = 1;
  static constexpr int kAItems = 1, kBItems = 1, kCItems = 16;
  using AOperand = float; using BOperand = float; using COperand = ckgen::float16_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_f32_32x32x2f32(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 2;
  static constexpr int kPrefetch = 0;
  static constexpr int kVecA = 4, kVecB = 4, kVecC = 1;
  // LDS layout (ckgen/blocks/lds_layout.h), as ckgen/ops/gemm/lds_layout.py plans it for this tile
  static constexpr int kLdsAGranule = 1, kLdsASwizzleBits = 5, kLdsAMnLanes = 1, kLdsAMnPiece = 1;
  static constexpr int kLdsBGranule = 1, kLdsBSwizzleBits = 5, kLdsBMnLanes = 16, kLdsBMnPiece = 1;
  static constexpr unsigned long long kLdsASwizzle = 0x204081ull, kLdsBSwizzle = 0x10204081ull;
  static constexpr int kLdsABytes = kTileM * kTileK * sizeof(TA), kLdsBBytes = kTileN * kTileK * sizeof(TB);
  static constexpr int kLdsBytes = 2 * (kLdsABytes + kLdsBBytes);
  static constexpr float kAlpha = 1.0f, kBeta = 1.0f;
  static constexpr bool kHasBias = false;
  static constexpr bool kIntegerEpilogue = false;
  using Epilogue = ckgen::epi::Chain<>;
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(f32_32x32x2_cfg::kThreads) void f32_32x32x2(const f32_32x32x2_cfg::TA* A, const f32_32x32x2_cfg::TB* B,
    f32_32x32x2_cfg::TC* C, const f32_32x32x2_cfg::TBias* bias, int M, int N, int K, long long lda, long long ldb, long long ldc) {
  ckgen::gemm_mfma<f32_32x32x2_cfg>(A, B, C, bias, M, N, K, lda, ldb, ldc);
}
