// attention_common.h (ckgen/ops/attention/device): what the fused attention forward bodies share:
// the argument struct, the per-(batch, head) problem, the mask rule, the key range and tile
// classification, the cross-lane shuffle of the row statistics, and the result of a row that sees
// no key. The bodies are attention_fwd_amd.h (MFMA, wave64; also the emulator) and attention_fwd_nv.h
// (mma.sync, warp32). Their common ABI:
//
//   template <class Cfg, class... A> CKGEN_DEVICE void attention_fwd_<amd|nv>(A... args);
//
// called by the generated device entry with the kernel's arguments in the order of the op's ABI
// (ckgen/ops/attention/abi.py), which also declares them as the members of Cfg::Args (attn::Args<Cfg>; the
// kernel source renders both from that one list, ckgen/ops/attention/kernel.hip.j2):
//
//   const T* Q, K, V; T* O; float* LSE; const int* cu_seqlens_q, cu_seqlens_k;
//   int batch, heads, heads_kv, seqlen_q, seqlen_k;
//   long long {q,k,v,o}_{batch,seq,head}_stride, lse_batch_stride, lse_head_stride;
//   float scale; int window_left, window_right;
//
// T = Cfg::T (ckgen::f16 or ckgen::bf16). Strides are in elements; the head dimension (Cfg::kHeadDim
// elements) is contiguous. Element (b, s, h, d) of Q is Q[b * q_batch_stride + s * q_seq_stride +
// h * q_head_stride + d]: BSHD is (S*H*D, H*D, D), BHSD is (H*S*D, D, S*D); K, V, O likewise (K and V
// with heads_kv heads). LSE (f32) of query row s of (b, h) is LSE[b * lse_batch_stride +
// h * lse_head_stride + s] ([B, H, S]: lse_batch_stride = H*S, lse_head_stride = S).
//
//   O = softmax(scale * Q.K^T + mask) . V,  LSE = log(sum_j exp(scale * q.k_j)) over the visible keys
//
// * scale must be finite and > 0 (the running maximum is kept on the unscaled logits).
// * GQA / MQA (Cfg::kGqa): query head h reads KV head h / (heads / heads_kv); heads must be a
//   multiple of heads_kv. Without kGqa, heads_kv must equal heads.
// * Varlen (Cfg::kVarlen): cu_seqlens_q and cu_seqlens_k (int32, batch + 1 entries, non-decreasing,
//   starting at 0) give sequence b the tokens [cu[b], cu[b+1]) of the packed tensors
//   [total_tokens, heads, d]; seqlen_q must then be >= every query length (it sizes the grid; rows
//   past it are not computed), seqlen_k is not read, the batch strides are not used (the token
//   offset is cu[b] * seq_stride), and LSE row s of (b, h) is LSE[h * lse_head_stride + cu_q[b] + s]
//   (FlashAttention's varlen [H, total_q]: lse_head_stride = total_q). Without kVarlen the
//   cu_seqlens pointers are not read and may be null.
// * LSE may be null (not written). O and LSE are written only for rows s < the sequence's length.
// * Masks (Cfg::kMask), with sq, sk the lengths of the sequence and off = sk - sq (bottom-right
//   alignment, FlashAttention >= 2.1): query i sees key j iff j < sk and
//     kMaskNone:   always
//     kMaskCausal: j <= i + off                                         (window_left/right ignored)
//     kMaskWindow: (window_left < 0 or j >= i + off - window_left) and (window_right < 0 or
//                  j <= i + off + window_right)          (negative = unlimited; (-1, 0) is causal)
// * A row that sees no key (causal with sq > sk, a window beyond the keys, sk == 0) gets O = 0 and
//   LSE = -inf (the log of an empty sum). (FlashAttention 2 writes +inf there; a backward must treat
//   such rows as constants.)
// * Numerics: products on matrix instructions with f32 accumulation; running max and sum in f32,
//   exp2 with scale * log2(e) folded in (one FMA + one exp2 per logit); P is rounded to T before
//   P.V; O is rounded to T once at the end.
//
// Grid (both bodies): x = ceil(seqlen_q / Cfg::kBlockM) query tiles, y = heads, z = batch
// (y, z <= 65535 on NVIDIA); 1-D blocks of Cfg::kThreads threads. Block x computes query tile
// (grid_x - 1 - x): the last (longest under a causal mask) tiles start first. Blocks whose tile lies
// beyond the sequence (varlen) exit at once.
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {
namespace attn {

enum : int { kMaskNone = 0, kMaskCausal = 1, kMaskWindow = 2 };

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -__builtin_inff();

// The kernel's arguments (members named as above): a struct the generated Cfg declares from the ABI.
template <class Cfg>
using Args = typename Cfg::Args;

// The visibility rule of one (batch, head) problem, normalized: key j is visible from query i iff
// j < sk and (!right || j <= i + off + wr) and (!left || j >= i + off - wl). 64-bit sums: window
// extents may be as large as int allows.
struct Mask {
  int sq, sk;
  long long off, wl, wr;
  bool left, right;

  CKGEN_DEVICE bool visible(int i, int j) const {
    const long long d = static_cast<long long>(j) - i - off;
    return j < sk && (!right || d <= wr) && (!left || d >= -wl);
  }
  // Keys [lo, hi) visible from at least one of the rows [r0, r1), r0 < r1; hi <= lo when none.
  CKGEN_DEVICE void key_range(int r0, int r1, int& lo, int& hi) const {
    long long l = 0, h = sk;
    if (left) l = r0 + off - wl;
    if (right) h = r1 - 1 + off + wr + 1;
    l = l < 0 ? 0 : l;
    h = h > sk ? sk : h;
    lo = static_cast<int>(l > sk ? sk : l);
    hi = static_cast<int>(h < 0 ? 0 : h);
  }
  // Whether some (row, key) of rows [r0, r1) x keys [n0, n1) is hidden (the tile needs the per-element mask).
  CKGEN_DEVICE bool partial(int r0, int r1, int n0, int n1) const {
    return n1 > sk || (right && n1 - 1 - static_cast<long long>(r0) - off > wr) ||
           (left && n0 - static_cast<long long>(r1 - 1) - off < -wl);
  }
  // Keys [row_lo(i), row_hi(i)) are those row i sees, clamped to [0, sk] (empty when hi <= lo): visible(i, j)
  // == (row_lo(i) <= j && j < row_hi(i)) for every j >= 0. 32-bit bounds per row replace the 64-bit test per
  // element; rows of one workgroup see the tile [n0, n1) whole iff n0 >= row_lo(r1 - 1) && n1 <= row_hi(r0)
  // (the same as !partial(r0, r1, n0, n1): both bounds grow with the row).
  CKGEN_DEVICE int row_lo(int i) const {
    if (!left) return 0;
    const long long l = i + off - wl;
    return static_cast<int>(l < 0 ? 0 : (l > sk ? sk : l));
  }
  CKGEN_DEVICE int row_hi(int i) const {
    if (!right) return sk;
    const long long h = i + off + wr + 1;
    return static_cast<int>(h < 0 ? 0 : (h > sk ? sk : h));
  }
};

// The K/V tiles of kBlockN keys that the query rows [m0, r1) visit (Mask::key_range), walked from tile t_last down
// (nt of them; nt == 0: none), and the keys [full_lo, full_hi) every one of those rows sees: a tile
// [n0, n0 + kBlockN) inside them needs no per-element mask (needs_mask).
template <int kBlockN>
struct TileWalk {
  int nt, t_last, full_lo, full_hi;

  CKGEN_DEVICE TileWalk(const Mask& mask, int m0, int r1) {
    int lo, hi;
    mask.key_range(m0, r1, lo, hi);
    const int t_first = lo / kBlockN;
    nt = hi > lo ? (hi - 1) / kBlockN - t_first + 1 : 0;
    t_last = t_first + nt - 1;
    full_lo = mask.row_lo(r1 - 1);
    full_hi = mask.row_hi(m0);
  }
  // the first key of the j-th tile of the walk
  CKGEN_DEVICE int n0(int j) const { return (t_last - j) * kBlockN; }
  CKGEN_DEVICE bool needs_mask(int n0) const { return n0 < full_lo || n0 + kBlockN > full_hi; }
};

// The query tile [m0, m0 + kBlockM) of the block (rows at or past the sequence's mask.sq are not computed): the
// K/V tiles its rows visit.
template <int kBlockM, int kBlockN>
CKGEN_DEVICE TileWalk<kBlockN> tile_walk(const Mask& mask, int m0) {
  return TileWalk<kBlockN>(mask, m0, m0 + kBlockM < mask.sq ? m0 + kBlockM : mask.sq);
}

// The first query row of this block's tile (the grid rule above: block x computes tile grid_x - 1 - x).
template <int kBlockM>
CKGEN_DEVICE int tile_row0() {
  return (grid_dim(0) - 1 - block_id(0)) * kBlockM;
}

template <int kMask>
CKGEN_DEVICE Mask make_mask(int sq, int sk, int window_left, int window_right) {
  Mask m;
  m.sq = sq;
  m.sk = sk;
  m.off = static_cast<long long>(sk) - sq;
  m.wl = window_left;
  m.wr = kMask == kMaskCausal ? 0 : window_right;
  m.left = kMask == kMaskWindow && window_left >= 0;
  m.right = kMask == kMaskCausal || (kMask == kMaskWindow && window_right >= 0);
  return m;
}

// One (batch, head) problem: lengths and the element offsets of its row 0 in Q, K, V, O and LSE.
struct Problem {
  int sq, sk;
  long long q, k, v, o, lse;
};

// The problem of (b, h); false when the sequence has no query row at or after m0 (nothing to do).
template <bool kVarlen, bool kGqa, class P>
CKGEN_DEVICE bool make_problem(const P& p, int b, int h, int m0, Problem& pr) {
  const int hk = kGqa ? h / (p.heads / p.heads_kv) : h;
  long long tq, tk;
  if constexpr (kVarlen) {
    const int q0 = gload(p.cu_seqlens_q + b), k0 = gload(p.cu_seqlens_k + b);
    pr.sq = gload(p.cu_seqlens_q + b + 1) - q0;
    pr.sk = gload(p.cu_seqlens_k + b + 1) - k0;
    tq = q0;
    tk = k0;
    pr.q = tq * p.q_seq_stride;
    pr.k = tk * p.k_seq_stride;
    pr.v = tk * p.v_seq_stride;
    pr.o = tq * p.o_seq_stride;
    pr.lse = tq;
  } else {
    pr.sq = p.seqlen_q;
    pr.sk = p.seqlen_k;
    pr.q = b * p.q_batch_stride;
    pr.k = b * p.k_batch_stride;
    pr.v = b * p.v_batch_stride;
    pr.o = b * p.o_batch_stride;
    pr.lse = b * p.lse_batch_stride;
  }
  pr.q += h * p.q_head_stride;
  pr.k += hk * p.k_head_stride;
  pr.v += hk * p.v_head_stride;
  pr.o += h * p.o_head_stride;
  pr.lse += h * p.lse_head_stride;
  return m0 < pr.sq;
}

// ---------------------------------------------------------------- cross-lane exchange
// xor_shuffle(v, mask, lane): the value v of lane (lane ^ mask) of the same wave / warp, through the platform's
// cross-lane layer (ckgen::shfl_xor: ds_bpermute / DPP / ds_swizzle on AMD, shuffles on CUDA, emulated on emu).
CKGEN_DEVICE float xor_shuffle(float v, int mask, int /*lane*/) { return ::ckgen::shfl_xor(v, mask); }

// Lanes of one wave / warp agree again (their shared-memory accesses before are ordered before those after).
CKGEN_DEVICE void wave_sync() {
#if defined(__CUDACC__)
  __syncwarp();
#elif defined(CKGEN_PLATFORM_EMU)
  (void)::ckgen::emu::readfirstlane(0);
#else
  __builtin_amdgcn_wave_barrier();
#endif
}

// A scheduling fence (AMD): the compiler moves no instruction across it. Bounds how far the scheduler
// hoists LDS reads ahead of the MFMAs that use them (each hoisted read holds registers).
CKGEN_DEVICE void sched_fence() {
#if defined(CKGEN_PLATFORM_AMD)
  __builtin_amdgcn_sched_barrier(0);
#endif
}

CKGEN_DEVICE float fmax_f32(float a, float b) { return a > b ? a : b; }

// The max (lanes_max) or sum (lanes_sum) of v over the lanes lane ^ x, x = kFrom, 2 kFrom, .. < kTo (powers of
// two): a butterfly, every lane of the group ends with the result. The groups are the lanes that hold one query
// row's values (the quad on NVIDIA: 1, 4; lanes lane % kInstrN on AMD: kInstrN, 64).
template <int kFrom, int kTo>
CKGEN_DEVICE float lanes_max(float v, int lane) {
#pragma unroll
  for (int x = kFrom; x < kTo; x <<= 1) v = fmax_f32(v, xor_shuffle(v, x, lane));
  return v;
}
template <int kFrom, int kTo>
CKGEN_DEVICE float lanes_sum(float v, int lane) {
#pragma unroll
  for (int x = kFrom; x < kTo; x <<= 1) v += xor_shuffle(v, x, lane);
  return v;
}

// One online-softmax step of a row: m_run (the running max of the unscaled logits; -inf: no key yet) takes the
// tile's max mx. Returns alpha, the factor that rescales the row's running sum and output, and sets mbias, the new
// max in the exp2 domain (p = exp2(s * sl2 - mbias)); a row still without keys gets mbias 0, so its p are 0.
CKGEN_DEVICE float online_max(float& m_run, float mx, float sl2, float& mbias) {
  const float m_new = fmax_f32(m_run, mx);
  const float m_use = m_new == kNegInf ? 0.0f : m_new;
  const float alpha = exp2_f32((m_run - m_use) * sl2);
  mbias = m_use * sl2;
  m_run = m_new;
  return alpha;
}

// Row statistics -> the row's results. m: running max of the unscaled logits (-inf: no key seen),
// l: sum of exp2((s - m) * scale * log2 e). Returns 1 / l (0 for an empty row) and sets lse.
CKGEN_DEVICE float finish_row(float m, float l, float scale, float& lse) {
  if (l > 0.0f) {
    lse = m * scale + log2_f32(l) * kLn2;
    return 1.0f / l;
  }
  lse = kNegInf;
  return 0.0f;
}

// Optional Cfg member kWavesPerEu (AMD): at least that many waves per SIMD, i.e. at most 512 / n
// registers per lane. 2 caps a wave at 256 VGPRs, which makes the compiler keep the MFMA accumulators
// in VGPRs (no AGPR copies around the softmax's rescale of O); the default 1 sets no limit.
template <class C, class = void>
struct WavesPerEu {
  static constexpr int value = 1;
};
template <class C>
struct WavesPerEu<C, decltype(void(C::kWavesPerEu))> {
  static constexpr int value = C::kWavesPerEu;
};

}  // namespace attn
}  // namespace ckgen

#if defined(CKGEN_PLATFORM_AMD)
#define CKGEN_ATTENTION_ENTRY_ATTRS(CFG) __attribute__((amdgpu_waves_per_eu(::ckgen::attn::WavesPerEu<CFG>::value)))
#else
#define CKGEN_ATTENTION_ENTRY_ATTRS(CFG)
#endif
