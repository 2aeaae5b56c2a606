// f16, d64, sliding window, GQA; 128 queries x 4 waves (32 each: two 16-query blocks), 32-key tiles, 16x16x16 f16, double-buffered LDS.
// arch: gfx90a gfx942
#include "attention_fwd_amd.h"

struct amd_f16_d64_window_16x16_cfg {
  using T = ckgen::f16;
  static constexpr int kHeadDim = 64, kBlockM = 128, kBlockN = 32;
  static constexpr int kWaves = 4, kWaveSize = 64, kThreads = 256;
  static constexpr int kInstrM = 16, kInstrN = 16, kInstrK = 16;
  static constexpr int kAItems = 4, kBItems = 4, kCItems = 4;
  using AOperand = ckgen::half4_t; using BOperand = ckgen::half4_t; using COperand = ckgen::float4_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 2, kVec = 8, kWavesPerEu = 2;
  static constexpr int kLdsKStride = 72, kLdsVStride = 36;
  static constexpr int kLdsBytes = kLdsBuffers * (kBlockN * kLdsKStride + kHeadDim * kLdsVStride) * 2;
  static constexpr int kMask = ckgen::attn::kMaskWindow;
  static constexpr bool kVarlen = false, kGqa = true;
};

CKGEN_ATTENTION_FWD_ENTRY(amd_f16_d64_window_16x16, amd_f16_d64_window_16x16_cfg, attention_fwd_amd)
