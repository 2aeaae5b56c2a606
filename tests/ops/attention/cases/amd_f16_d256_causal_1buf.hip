// f16, d256, causal (MHA: kGqa false); 64 queries x 4 waves (16 each), 32-key tiles, 16x16x16 f16, one LDS buffer (the next tile waits in registers).
// arch: gfx942 gfx90a
#include "attention_fwd_amd.h"

struct amd_f16_d256_causal_1buf_cfg {
  using T = ckgen::f16;
  static constexpr int kHeadDim = 256, kBlockM = 64, kBlockN = 32;
  static constexpr int kWaves = 4, kWaveSize = 64, kThreads = 256;
  static constexpr int kInstrM = 16, kInstrN = 16, kInstrK = 16;
  static constexpr int kAItems = 4, kBItems = 4, kCItems = 4;
  using AOperand = ckgen::half4_t; using BOperand = ckgen::half4_t; using COperand = ckgen::float4_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 1, kVec = 8, kWavesPerEu = 2;
  static constexpr int kLdsKStride = 264, kLdsVStride = 36;
  static constexpr int kLdsBytes = kLdsBuffers * (kBlockN * kLdsKStride + kHeadDim * kLdsVStride) * 2;
  static constexpr int kMask = ckgen::attn::kMaskCausal;
  static constexpr bool kVarlen = false, kGqa = false;
};

CKGEN_ATTENTION_FWD_ENTRY(amd_f16_d256_causal_1buf, amd_f16_d256_causal_1buf_cfg, attention_fwd_amd)
