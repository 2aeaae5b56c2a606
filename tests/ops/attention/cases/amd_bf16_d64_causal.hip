// bf16, d64, causal, GQA; 128 queries x 4 waves (32 each), 64-key tiles, 32x32x8 bf16_1k, double-buffered LDS.
// arch: gfx942 gfx90a
#include "attention_fwd_amd.h"

struct amd_bf16_d64_causal_cfg {
  using T = ckgen::bf16;
  static constexpr int kHeadDim = 64, kBlockM = 128, kBlockN = 64;
  static constexpr int kWaves = 4, kWaveSize = 64, kThreads = 256;
  static constexpr int kInstrM = 32, kInstrN = 32, kInstrK = 8;
  static constexpr int kAItems = 4, kBItems = 4, kCItems = 16;
  using AOperand = ckgen::short4_t; using BOperand = ckgen::short4_t; using COperand = ckgen::float16_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 2, kVec = 8, kWavesPerEu = 2;
  static constexpr int kLdsKStride = 72, kLdsVStride = 68;
  static constexpr int kLdsBytes = kLdsBuffers * (kBlockN * kLdsKStride + kHeadDim * kLdsVStride) * 2;
  static constexpr int kMask = ckgen::attn::kMaskCausal;
  static constexpr bool kVarlen = false, kGqa = true;
};

CKGEN_ATTENTION_FWD_ENTRY(amd_bf16_d64_causal, amd_bf16_d64_causal_cfg, attention_fwd_amd)
