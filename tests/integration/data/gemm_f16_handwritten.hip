// A hand-written instance of ckgen's MFMA GEMM body (ckgen/gemm_mfma.h), following the Cfg contract of
// docs/design.md: f16 A (row) x f16 B (col) -> f16 C (row), f32 accumulation, 64x64x32 workgroup tile,
// 2x2 waves, v_mfma_f32_32x32x8f16, double-buffered LDS, relu epilogue.
// The integration tests compile it with hiprtc and with clang (device pass) to check the JIT's compile path
// independently of the code generator.
#include "ckgen/platform.h"
#include "gemm_mfma.h"

struct handwritten_f16_cfg {
  using TA = ckgen::f16;
  using TB = ckgen::f16;
  using TC = ckgen::f16;
  using TAcc = float;
  using TBias = ckgen::f16;
  static constexpr bool kARowMajor = true, kBRowMajor = false, kCRowMajor = true;
  static constexpr int kTileM = 64, kTileN = 64, kTileK = 32;
  static constexpr int kWavesM = 2, kWavesN = 2, kWaveSize = 64, kThreads = 256;
  static constexpr int kWaveTileM = 32, kWaveTileN = 32;
  static constexpr int kInstrM = 32, kInstrN = 32, kInstrK = 8;
  static constexpr int kRepM = 1, kRepN = 1;
  static constexpr int kAItems = 4, kBItems = 4, kCItems = 16;
  using AOperand = ckgen::half4_t;
  using BOperand = ckgen::half4_t;
  using COperand = ckgen::float16_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 2;
  static constexpr int kPrefetch = 1;
  static constexpr int kVecA = 8, kVecB = 8, kVecC = 4;
  // LDS layout (ckgen/blocks/lds_layout.h), as ckgen/ops/gemm/lds_layout.py plans it for this tile
  static constexpr int kLdsAGranule = 4, kLdsASwizzleBits = 4, kLdsAMnLanes = 1, kLdsAMnPiece = 1;
  static constexpr int kLdsBGranule = 4, kLdsBSwizzleBits = 4, kLdsBMnLanes = 1, kLdsBMnPiece = 1;
  static constexpr unsigned long long kLdsASwizzle = 0x4081ull, kLdsBSwizzle = 0x4081ull;
  static constexpr int kLdsABytes = kTileM * kTileK * sizeof(TA), kLdsBBytes = kTileN * kTileK * sizeof(TB);
  static constexpr int kLdsBytes = 2 * (kLdsABytes + kLdsBBytes);
  static constexpr float kAlpha = 1.0f, kBeta = 0.0f;
  static constexpr bool kHasBias = false;
  static constexpr bool kIntegerEpilogue = false;
  using Epilogue = ckgen::epi::Chain<ckgen::epi::Relu>;
};

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(256) void handwritten_f16(const ckgen::f16* A, const ckgen::f16* B, ckgen::f16* C,
                                                           const ckgen::f16* bias, int M, int N, int K,
                                                           long long lda, long long ldb, long long ldc) {
  ckgen::gemm_mfma<handwritten_f16_cfg>(A, B, C, bias, M, N, K, lda, ldb, ldc);
}
