// bench/attention_kernels.cu: hand-written Cfgs of the NVIDIA attention body (attention_fwd_nv.h), each with
// an extern "C" launcher, for bench/attention.py (ctypes). ATTN_PART selects a slice so that the slices
// build in parallel; without it, everything. Build (repository root; bench/attention.py --build does it):
//   nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC --expt-relaxed-constexpr -Xptxas -v \
//     -gencode=arch=compute_90a,code=sm_90a -Ickgen/include -Ickgen/ops/attention/device \
//     -DATTN_PART=<n> bench/attention_kernels.cu -o bench/_build/libattn<n>.so
//
//   int NAME(Q, K, V, O, LSE, cu_q, cu_k, batch, heads_q, heads_kv, seqlen_q, seqlen_k,
//            const long long strides[14], float scale, int window_left, int window_right, void* stream)
//     launches the grid of attention_common.h (ceil(seqlen_q / kBlockM), heads_q, batch) with kLdsBytes of
//     dynamic shared memory; returns a ckgen status (0: launched).
//   void NAME_info(int out[11]): dtype (0 f16, 1 bf16), head dim, kBlockM, kBlockN, kWarps, kStages,
//     kQInRegs, kMask (0 none, 1 causal, 2 window), kVarlen, kGqa, shared-memory bytes.
#include "attention_fwd_nv.h"

namespace attnb {

template <class T_, int D, int BM, int BN, int W, int ST, bool QR, int MASK, bool VL>
struct Cfg {
  using T = T_;
  static constexpr int kHeadDim = D, kBlockM = BM, kBlockN = BN;
  static constexpr int kWarps = W, kWaveSize = 32, kThreads = W * 32;
  static constexpr int kStages = ST;
  static constexpr bool kQInRegs = QR;
  static constexpr int kLdsBytes = 2 * BM * D + 2 * ST * 2 * BN * D;
  static constexpr int kMask = MASK;
  static constexpr bool kVarlen = VL, kGqa = true;
};

}  // namespace attnb

using ckgen::bf16;
using ckgen::f16;
[[maybe_unused]] constexpr int NONE = ckgen::attn::kMaskNone, CAUSAL = ckgen::attn::kMaskCausal,
                               WINDOW = ckgen::attn::kMaskWindow;

#define ATTN_KERNEL(NAME, TY, D, BM, BN, W, ST, QR, MASK, VL)                                                     \
  using NAME##_cfg = attnb::Cfg<TY, D, BM, BN, W, ST, QR, MASK, VL>;                                             \
  static_assert(NAME##_cfg::kLdsBytes == ckgen::attn_nv::smem_bytes<NAME##_cfg>(), "smem formula");             \
  CKGEN_ATTENTION_FWD_ENTRY(NAME##_kernel, NAME##_cfg, attention_fwd_nv)                                        \
  extern "C" int NAME(const void* q, const void* k, const void* v, void* o, float* lse, const int* cu_q,         \
                      const int* cu_k, int batch, int heads_q, int heads_kv, int seqlen_q, int seqlen_k,         \
                      const long long* st, float scale, int window_left, int window_right, void* stream) {       \
    using C = NAME##_cfg;                                                                                       \
    static int configured = 0;                                                                                  \
    const unsigned gx = (unsigned)((seqlen_q + C::kBlockM - 1) / C::kBlockM);                                  \
    return ckgen::cuda_host::launch(NAME##_kernel, &configured, gx, heads_q, batch, C::kThreads, C::kLdsBytes, \
                                    stream, (const C::T*)q, (const C::T*)k, (const C::T*)v, (C::T*)o, lse,     \
                                    cu_q, cu_k, batch, heads_q, heads_kv, seqlen_q, seqlen_k, st[0], st[1],    \
                                    st[2], st[3], st[4], st[5], st[6], st[7], st[8], st[9], st[10], st[11],    \
                                    st[12], st[13], scale, window_left, window_right);                         \
  }                                                                                                             \
  extern "C" void NAME##_info(int* out) {                                                                       \
    const int v[11] = {ckgen::attn_nv::IsSame<TY, bf16>::value ? 1 : 0, D, BM, BN, W, ST, QR ? 1 : 0, MASK,       \
                       VL ? 1 : 0, 1, NAME##_cfg::kLdsBytes};                                                   \
    for (int i = 0; i < 11; ++i) out[i] = v[i];                                                                 \
  }

// Names: <dtype>_d<D>_<mask>_m<BM>w<W>n<BN>s<ST><q: Q in smem | r: Q in registers>[_varlen]
#if !defined(ATTN_PART) || ATTN_PART == 0
// d128 bf16: FlashAttention-2's shape (4 warps x 32 rows, Q re-read from smem; two blocks per SM), with
// 64-key tiles in 2 stages or 32-key tiles in 3 stages
ATTN_KERNEL(bf16_d128_none_m128w4n64s2q, bf16, 128, 128, 64, 4, 2, false, NONE, false)
ATTN_KERNEL(bf16_d128_causal_m128w4n64s2q, bf16, 128, 128, 64, 4, 2, false, CAUSAL, false)
ATTN_KERNEL(bf16_d128_none_m128w4n32s3q, bf16, 128, 128, 32, 4, 3, false, NONE, false)
ATTN_KERNEL(bf16_d128_causal_m128w4n32s3q, bf16, 128, 128, 32, 4, 3, false, CAUSAL, false)
#endif
#if !defined(ATTN_PART) || ATTN_PART == 1
// d128 bf16: 8 warps x 16 rows, Q in registers (one block per SM); 4 warps x 16 rows (two blocks per SM)
ATTN_KERNEL(bf16_d128_none_m128w8n64s2r, bf16, 128, 128, 64, 8, 2, true, NONE, false)
ATTN_KERNEL(bf16_d128_causal_m128w8n64s2r, bf16, 128, 128, 64, 8, 2, true, CAUSAL, false)
ATTN_KERNEL(bf16_d128_none_m64w4n64s2r, bf16, 128, 64, 64, 4, 2, true, NONE, false)
ATTN_KERNEL(bf16_d128_causal_m64w4n64s2r, bf16, 128, 64, 64, 4, 2, true, CAUSAL, false)
#endif
#if !defined(ATTN_PART) || ATTN_PART == 2
// d64 bf16
ATTN_KERNEL(bf16_d64_none_m128w4n64s2q, bf16, 64, 128, 64, 4, 2, false, NONE, false)
ATTN_KERNEL(bf16_d64_causal_m128w4n64s2q, bf16, 64, 128, 64, 4, 2, false, CAUSAL, false)
ATTN_KERNEL(bf16_d64_none_m128w4n64s2r, bf16, 64, 128, 64, 4, 2, true, NONE, false)
ATTN_KERNEL(bf16_d64_causal_m128w4n64s2r, bf16, 64, 128, 64, 4, 2, true, CAUSAL, false)
#endif
#if !defined(ATTN_PART) || ATTN_PART == 3
ATTN_KERNEL(bf16_d64_none_m64w4n128s2r, bf16, 64, 64, 128, 4, 2, true, NONE, false)
ATTN_KERNEL(bf16_d64_causal_m64w4n128s2r, bf16, 64, 64, 128, 4, 2, true, CAUSAL, false)
ATTN_KERNEL(bf16_d64_none_m128w8n128s2r, bf16, 64, 128, 128, 8, 2, true, NONE, false)
ATTN_KERNEL(bf16_d64_causal_m128w8n128s2r, bf16, 64, 128, 128, 8, 2, true, CAUSAL, false)
#endif
#if !defined(ATTN_PART) || ATTN_PART == 4
// coverage: f16, sliding window, varlen, d256
ATTN_KERNEL(f16_d128_none_m128w4n64s2q, f16, 128, 128, 64, 4, 2, false, NONE, false)
ATTN_KERNEL(f16_d128_causal_m128w4n64s2q, f16, 128, 128, 64, 4, 2, false, CAUSAL, false)
ATTN_KERNEL(bf16_d128_window_m128w4n64s2q, bf16, 128, 128, 64, 4, 2, false, WINDOW, false)
ATTN_KERNEL(bf16_d128_causal_m128w4n64s2q_varlen, bf16, 128, 128, 64, 4, 2, false, CAUSAL, true)
#endif
#if !defined(ATTN_PART) || ATTN_PART == 5
ATTN_KERNEL(f16_d64_window_m64w4n128s2r_varlen, f16, 64, 64, 128, 4, 2, true, WINDOW, true)
ATTN_KERNEL(bf16_d256_none_m128w8n32s1q, bf16, 256, 128, 32, 8, 1, false, NONE, false)
ATTN_KERNEL(bf16_d256_causal_m128w8n32s1q, bf16, 256, 128, 32, 8, 1, false, CAUSAL, false)
ATTN_KERNEL(f16_d128_causal_m64w4n64s3r_varlen, f16, 128, 64, 64, 4, 3, true, CAUSAL, true)
#endif
#if !defined(ATTN_PART) || ATTN_PART == 6
// d128 bf16: 8 warps x 16 rows with 128-key tiles, Q in registers
ATTN_KERNEL(bf16_d128_none_m128w8n128s2r, bf16, 128, 128, 128, 8, 2, true, NONE, false)
ATTN_KERNEL(bf16_d128_causal_m128w8n128s2r, bf16, 128, 128, 128, 8, 2, true, CAUSAL, false)
#endif
