// bf16 in, f32 acc, bf16 col-major out (vector stores of 4); 128x64x32, 2x2 waves, 32x32x8 bf16_1k, single LDS buffer.
// arch: gfx942 gfx90a
// expect: global_load_dwordx4 global_store_dwordx2
#include "gemm_mfma.h"

struct bf16_1k_cfg {
  using TA = ckgen::bf16; using TB = ckgen::bf16; using TC = ckgen::bf16;
  using TAcc = float; using TBias = ckgen::bf16;
  static constexpr bool kARowMajor = true, kBRowMajor = true, kCRowMajor = false;
  static constexpr int kTileM = 128, kTileN = 64, kTileK = 32;
  static constexpr int kWavesM = 2, kWavesN = 2, kWaveSize = 64, kThreads = 256;
  static constexpr int kWaveTileM = 64, kWaveTileN = 32;
  static constexpr int kInstrM = 32, kInstrN = 32, kInstrK = 8;
  static constexpr int kRepM = 2, kRepN = 1;
  static constexpr int kAItems = 4, kBItems = 4, kCItems = 16;
  using AOperand = ckgen::short4_t; using BOperand = ckgen::short4_t; using COperand = ckgen::float16_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 1;
  static constexpr int kPrefetch = 0;
  static constexpr int kVecA = 8, kVecB = 8, kVecC = 4;
  // LDS layout (ckgen/blocks/lds_layout.h), as ckgen/ops/gemm/lds_layout.py plans it for this tile
  static constexpr int kLdsAGranule = 4, kLdsASwizzleBits = 4, kLdsAMnLanes = 1, kLdsAMnPiece = 1;
  static constexpr int kLdsBGranule = 4, kLdsBSwizzleBits = 4, kLdsBMnLanes = 8, kLdsBMnPiece = 1;
  static constexpr unsigned long long kLdsASwizzle = 0x4081ull, kLdsBSwizzle = 0x1204081ull;
  static constexpr int kLdsABytes = kTileM * kTileK * sizeof(TA), kLdsBBytes = kTileN * kTileK * sizeof(TB);
  static constexpr int kLdsBytes = 1 * (kLdsABytes + kLdsBBytes);
  static constexpr float kAlpha = 1.0f, kBeta = 0.0f;
  static constexpr bool kHasBias = false;
  static constexpr bool kIntegerEpilogue = false;
  using Epilogue = ckgen::epi::Chain<>;
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(bf16_1k_cfg::kThreads) void bf16_1k(const bf16_1k_cfg::TA* A, const bf16_1k_cfg::TB* B,
    bf16_1k_cfg::TC* C, const bf16_1k_cfg::TBias* bias, int M, int N, int K, long long lda, long long ldb, long long ldc) {
  ckgen::gemm_mfma<bf16_1k_cfg>(A, B, C, bias, M, N, K, lda, ldb, ldc);
}
