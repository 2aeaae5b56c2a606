// f16, d64, varlen + sliding window, GQA: 64 queries x 4 warps (16 rows each), 128-key tiles, 2 stages, Q in registers.
// arch: sm_90 sm_80
#include "attention_fwd_nv.h"

struct nv_f16_d64_window_varlen_cfg {
  using T = ckgen::f16;
  static constexpr int kHeadDim = 64, kBlockM = 64, kBlockN = 128;
  static constexpr int kWarps = 4, kWaveSize = 32, kThreads = 128;
  static constexpr int kStages = 2;
  static constexpr bool kQInRegs = true;
  static constexpr int kLdsBytes = 2 * kBlockM * kHeadDim + 2 * kStages * 2 * kBlockN * kHeadDim;
  static constexpr int kMask = ckgen::attn::kMaskWindow;
  static constexpr bool kVarlen = true, kGqa = true;
};

CKGEN_ATTENTION_FWD_ENTRY(nv_f16_d64_window_varlen, nv_f16_d64_window_varlen_cfg, attention_fwd_nv)
