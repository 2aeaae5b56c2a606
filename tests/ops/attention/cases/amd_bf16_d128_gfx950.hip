// gfx950: bf16, d128, varlen + sliding window, GQA; 128 queries x 4 waves, 32-key tiles, 32x32x16 bf16 (P^T operands: two runs of 4 keys), double-buffered LDS.
// arch: gfx950
#include "attention_fwd_amd.h"

struct amd_bf16_d128_gfx950_cfg {
  using T = ckgen::bf16;
  static constexpr int kHeadDim = 128, kBlockM = 128, kBlockN = 32;
  static constexpr int kWaves = 4, kWaveSize = 64, kThreads = 256;
  static constexpr int kInstrM = 32, kInstrN = 32, kInstrK = 16;
  static constexpr int kAItems = 8, kBItems = 8, kCItems = 16;
  using AOperand = ckgen::bf16x8_t; using BOperand = ckgen::bf16x8_t; using COperand = ckgen::float16_t;
  static CKGEN_DEVICE COperand mma(AOperand a, BOperand b, COperand c) {
    return __builtin_amdgcn_mfma_f32_32x32x16_bf16(a, b, c, 0, 0, 0);
  }
  static constexpr int kLdsBuffers = 2, kVec = 8;
  static constexpr int kLdsKStride = 136, kLdsVStride = 40;
  static constexpr int kLdsBytes = kLdsBuffers * (kBlockN * kLdsKStride + kHeadDim * kLdsVStride) * 2;
  static constexpr int kMask = ckgen::attn::kMaskWindow;
  static constexpr bool kVarlen = true, kGqa = true;
};

CKGEN_ATTENTION_FWD_ENTRY(amd_bf16_d128_gfx950, amd_bf16_d128_gfx950_cfg, attention_fwd_amd)
