// f16, d128, varlen + causal, GQA: 64 queries x 4 warps, 64-key tiles, 3 stages, Q in registers.
// arch: sm_90
#include "attention_fwd_nv.h"

struct nv_f16_d128_s3_varlen_causal_cfg {
  using T = ckgen::f16;
  static constexpr int kHeadDim = 128, kBlockM = 64, kBlockN = 64;
  static constexpr int kWarps = 4, kWaveSize = 32, kThreads = 128;
  static constexpr int kStages = 3;
  static constexpr bool kQInRegs = true;
  static constexpr int kLdsBytes = 2 * kBlockM * kHeadDim + 2 * kStages * 2 * kBlockN * kHeadDim;
  static constexpr int kMask = ckgen::attn::kMaskCausal;
  static constexpr bool kVarlen = true, kGqa = true;
};

CKGEN_ATTENTION_FWD_ENTRY(nv_f16_d128_s3_varlen_causal, nv_f16_d128_s3_varlen_causal_cfg, attention_fwd_nv)
