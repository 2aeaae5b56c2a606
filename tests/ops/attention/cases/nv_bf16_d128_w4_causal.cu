// bf16, d128, causal, GQA: 128 queries x 4 warps (32 rows each), 64-key tiles, 2 stages, Q re-read from shared memory (FlashAttention-2's shape).
// arch: sm_90
#include "attention_fwd_nv.h"

struct nv_bf16_d128_w4_causal_cfg {
  using T = ckgen::bf16;
  static constexpr int kHeadDim = 128, kBlockM = 128, kBlockN = 64;
  static constexpr int kWarps = 4, kWaveSize = 32, kThreads = 128;
  static constexpr int kStages = 2;
  static constexpr bool kQInRegs = false;
  static constexpr int kLdsBytes = 2 * kBlockM * kHeadDim + 2 * kStages * 2 * kBlockN * kHeadDim;
  static constexpr int kMask = ckgen::attn::kMaskCausal;
  static constexpr bool kVarlen = false, kGqa = true;
};

CKGEN_ATTENTION_FWD_ENTRY(nv_bf16_d128_w4_causal, nv_bf16_d128_w4_causal_cfg, attention_fwd_nv)
