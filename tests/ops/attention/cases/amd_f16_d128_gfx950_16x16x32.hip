// gfx950: f16, d128, no mask, GQA; 128 queries x 4 waves (two 16-query blocks each), 64-key tiles, 16x16x32 f16, double-buffered LDS.
// arch: gfx950
#include "attention_fwd_amd.h"

struct amd_f16_d128_gfx950_16x16x32_cfg {
  using T = ckgen::f16;
  static constexpr int kHeadDim = 128, kBlockM = 128, kBlockN = 64;
  static constexpr int kWaves = 4, kWaveSize = 64, kThreads = 256;
  static constexpr int kInstrM = 16, kInstrN = 16, kInstrK = 32;
  static constexpr int kAItems = 8, kBItems = 8, kCItems = 4;
  using AOperand = ckgen::half8_t; using BOperand = ckgen::half8_t; using COperand = ckgen::float4_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_f32_16x16x32_f16(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 2, kVec = 8, kWavesPerEu = 2;
  static constexpr int kLdsKStride = 136, kLdsVStride = 72;
  static constexpr int kLdsBytes = kLdsBuffers * (kBlockN * kLdsKStride + kHeadDim * kLdsVStride) * 2;
  static constexpr int kMask = ckgen::attn::kMaskNone;
  static constexpr bool kVarlen = false, kGqa = true;
};

CKGEN_ATTENTION_FWD_ENTRY(amd_f16_d128_gfx950_16x16x32, amd_f16_d128_gfx950_16x16x32_cfg, attention_fwd_amd)
