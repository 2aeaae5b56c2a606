// bf16, d128, no mask, GQA: 128 queries x 8 warps (16 rows each), 64-key tiles, 2 stages, Q fragments in registers.
// arch: sm_90 sm_80
#include "attention_fwd_nv.h"

struct nv_bf16_d128_w8_cfg {
  using T = ckgen::bf16;
  static constexpr int kHeadDim = 128, kBlockM = 128, kBlockN = 64;
  static constexpr int kWarps = 8, kWaveSize = 32, kThreads = 256;
  static constexpr int kStages = 2;
  static constexpr bool kQInRegs = true;
  static constexpr int kLdsBytes = 2 * kBlockM * kHeadDim + 2 * kStages * 2 * kBlockN * kHeadDim;
  static constexpr int kMask = ckgen::attn::kMaskNone;
  static constexpr bool kVarlen = false, kGqa = true;
};

CKGEN_ATTENTION_FWD_ENTRY(nv_bf16_d128_w8, nv_bf16_d128_w8_cfg, attention_fwd_nv)
