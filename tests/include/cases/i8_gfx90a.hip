// i8 in, i32 acc, i8 out with saturation; 64x64x32, 2x2 waves, 32x32x8 i8 (gfx90a).
// arch: gfx90a gfx908
// expect: global_load_dwordx4 ds_read_b32
#include "gemm_mfma.h"

struct i8_gfx90a_cfg {
  using TA = ::int8_t; using TB = ::int8_t; using TC = ::int8_t;
  using TAcc = ::int32_t; using TBias = ::int8_t;
  static constexpr bool kARowMajor = true, kBRowMajor = true, kCRowMajor = true;
  static constexpr int kTileM = 64, kTileN = 64, kTileK = 32;
  static constexpr int kWavesM = 2, kWavesN = 2, kWaveSize = 64, kThreads = 256;
  static constexpr int kWaveTileM = 32, kWaveTileN = 32;
  static constexpr int kInstrM = 32, kInstrN = 32, kInstrK = 8;
  static constexpr int kRepM = 1, kRepN = 1;
  static constexpr int kAItems = 4, kBItems = 4, kCItems = 16;
  using AOperand = int; using BOperand = int; using COperand = ckgen::int16_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_i32_32x32x8i8(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 2;
  static constexpr int kPrefetch = 1;
  static constexpr int kVecA = 16, kVecB = 16, kVecC = 1;
  // LDS layout (ckgen/blocks/lds_layout.h), as ckgen/ops/gemm/lds_layout.py plans it for this tile
  static constexpr int kLdsAGranule = 4, kLdsASwizzleBits = 5, kLdsAMnLanes = 1, kLdsAMnPiece = 1;
  static constexpr int kLdsBGranule = 4, kLdsBSwizzleBits = 5, kLdsBMnLanes = 4, kLdsBMnPiece = 4;
  static constexpr unsigned long long kLdsASwizzle = 0x4081ull, kLdsBSwizzle = 0x49a741ull;
  static constexpr int kLdsABytes = kTileM * kTileK * sizeof(TA), kLdsBBytes = kTileN * kTileK * sizeof(TB);
  static constexpr int kLdsBytes = 2 * (kLdsABytes + kLdsBBytes);
  static constexpr float kAlpha = 1.0f, kBeta = 0.0f;
  static constexpr bool kHasBias = false;
  static constexpr bool kIntegerEpilogue = true;
  using Epilogue = ckgen::epi::Chain<>;
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(i8_gfx90a_cfg::kThreads) void i8_gfx90a(const i8_gfx90a_cfg::TA* A, const i8_gfx90a_cfg::TB* B,
    i8_gfx90a_cfg::TC* C, const i8_gfx90a_cfg::TBias* bias, int M, int N, int K, long long lda, long long ldb, long long ldc) {
  ckgen::gemm_mfma<i8_gfx90a_cfg>(A, B, C, bias, M, N, K, lda, ldb, ldc);
}
