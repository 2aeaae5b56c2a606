// f16, d128, no mask; 128 queries x 4 waves (32 each), 32-key tiles, 32x32x8 f16, double-buffered LDS.
// arch: gfx942 gfx90a
#include "attention_fwd_amd.h"

struct amd_f16_d128_none_cfg {
  using T = ckgen::f16;
  static constexpr int kHeadDim = 128, kBlockM = 128, kBlockN = 32;
  static constexpr int kWaves = 4, kWaveSize = 64, kThreads = 256;
  static constexpr int kInstrM = 32, kInstrN = 32, kInstrK = 8;
  static constexpr int kAItems = 4, kBItems = 4, kCItems = 16;
  using AOperand = ckgen::half4_t; using BOperand = ckgen::half4_t; using COperand = ckgen::float16_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 2, kVec = 8, kWavesPerEu = 2;
  static constexpr int kLdsKStride = 136, kLdsVStride = 36;
  static constexpr int kLdsBytes = kLdsBuffers * (kBlockN * kLdsKStride + kHeadDim * kLdsVStride) * 2;
  static constexpr int kMask = ckgen::attn::kMaskNone;
  static constexpr bool kVarlen = false, kGqa = true;
};

CKGEN_ATTENTION_FWD_ENTRY(amd_f16_d128_none, amd_f16_d128_none_cfg, attention_fwd_amd)
