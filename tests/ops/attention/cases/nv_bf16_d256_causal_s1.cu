// bf16, d256, causal (MHA): 128 queries x 8 warps, 32-key tiles, one stage (K and V alternate), Q in shared memory.
// arch: sm_90
#include "attention_fwd_nv.h"

struct nv_bf16_d256_causal_s1_cfg {
  using T = ckgen::bf16;
  static constexpr int kHeadDim = 256, kBlockM = 128, kBlockN = 32;
  static constexpr int kWarps = 8, kWaveSize = 32, kThreads = 256;
  static constexpr int kStages = 1;
  static constexpr bool kQInRegs = false;
  static constexpr int kLdsBytes = 2 * kBlockM * kHeadDim + 2 * kStages * 2 * kBlockN * kHeadDim;
  static constexpr int kMask = ckgen::attn::kMaskCausal;
  static constexpr bool kVarlen = false, kGqa = false;
};

CKGEN_ATTENTION_FWD_ENTRY(nv_bf16_d256_causal_s1, nv_bf16_d256_causal_s1_cfg, attention_fwd_nv)
