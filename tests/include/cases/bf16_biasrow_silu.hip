// bf16, B col-major, bias per row + SiLU + ReLU, bf16 out; 64x128x32, 1x2 waves, 32x32x8 bf16_1k.
// arch: gfx942 gfx90a
// expect: global_load_dwordx4 ds_read_b64 v_exp_f32_e32
#include "gemm_mfma.h"

struct bf16_biasrow_silu_cfg {
  using TA = ckgen::bf16; using TB = ckgen::bf16; using TC = ckgen::bf16;
  using TAcc = float; using TBias = ckgen::bf16;
  static constexpr bool kARowMajor = true, kBRowMajor = false, kCRowMajor = true;
  static constexpr int kTileM = 64, kTileN = 128, kTileK = 32;
  static constexpr int kWavesM = 1, kWavesN = 2, kWaveSize = 64, kThreads = 128;
  static constexpr int kWaveTileM = 64, kWaveTileN = 64;
  static constexpr int kInstrM = 32, kInstrN = 32, kInstrK = 8;
  static constexpr int kRepM = 2, kRepN = 2;
  static constexpr int kAItems = 4, kBItems = 4, kCItems = 16;
  using AOperand = ckgen::short4_t; using BOperand = ckgen::short4_t; using COperand = ckgen::float16_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 2;
  static constexpr int kPrefetch = 1;
  static constexpr int kVecA = 8, kVecB = 8, kVecC = 1;
  // LDS layout (ckgen/blocks/lds_layout.h), as ckgen/ops/gemm/lds_layout.py plans it for this tile
  static constexpr int kLdsAGranule = 4, kLdsASwizzleBits = 4, kLdsAMnLanes = 1, kLdsAMnPiece = 1;
  static constexpr int kLdsBGranule = 4, kLdsBSwizzleBits = 4, kLdsBMnLanes = 1, kLdsBMnPiece = 1;
  static constexpr unsigned long long kLdsASwizzle = 0x4081ull, kLdsBSwizzle = 0x4081ull;
  static constexpr int kLdsABytes = kTileM * kTileK * sizeof(TA), kLdsBBytes = kTileN * kTileK * sizeof(TB);
  static constexpr int kLdsBytes = 2 * (kLdsABytes + kLdsBBytes);
  static constexpr float kAlpha = 1.0f, kBeta = 0.0f;
  static constexpr bool kHasBias = true;
  static constexpr bool kIntegerEpilogue = false;
  using Epilogue = ckgen::epi::Chain<ckgen::epi::BiasRow, ckgen::epi::Silu, ckgen::epi::Relu>;
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(bf16_biasrow_silu_cfg::kThreads) void bf16_biasrow_silu(const bf16_biasrow_silu_cfg::TA* A, const bf16_biasrow_silu_cfg::TB* B,
    bf16_biasrow_silu_cfg::TC* C, const bf16_biasrow_silu_cfg::TBias* bias, int M, int N, int K, long long lda, long long ldb, long long ldc) {
  ckgen::gemm_mfma<bf16_biasrow_silu_cfg>(A, B, C, bias, M, N, K, lda, ldb, ldc);
}
