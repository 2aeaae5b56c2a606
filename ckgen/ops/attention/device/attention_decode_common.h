// attention_decode_common.h (ckgen/ops/attention/device): what the decode bodies of op = attention_decode share
// (ops/attention/decode.py): the argument contract, where a workgroup works, the packed rows, the key range of a
// row, and the split-KV hand-off (workspace slots, the combine kernel). The bodies are
// attention_decode_amd.h (MFMA, wave64; also the emulator) and attention_decode_nv.h (mma.sync, warp32; also the
// emulator with CKGEN_EMU_WAVE_SIZE=32). Their ABI:
//
//   template <class Cfg, class... A> CKGEN_DEVICE void attention_decode_<amd|nv>(A... args);
//
// The arguments, in the ABI's order (ops/attention/decode_abi.py; Cfg::Args declares them):
//
//   const T* Q, K, V; T* O; float* LSE; const int* seqlens_k, block_table, seqlens_q; void* workspace;
//   int batch, heads, heads_kv, seqlen_q, seqlen_k, num_pages, max_pages, num_splits;
//   long long q_batch_stride, q_seq_stride, q_head_stride, k_page_stride, k_seq_stride, k_head_stride,
//             v_page_stride, v_seq_stride, v_head_stride, o_batch_stride, o_seq_stride, o_head_stride,
//             lse_batch_stride, lse_head_stride, bt_batch_stride;
//   float scale;
//
// Q, O: element (b, s, h, d) at b * batch_stride + s * seq_stride + h * head_stride + d; LSE (b, h, s) at
// b * lse_batch_stride + h * lse_head_stride + s (LSE may be null). Sequence b has len = seqlens_k[b] keys,
// 0 <= len <= capacity (Cfg::kPageSize == 0: seqlen_k; else max_pages * kPageSize), else the workgroup traps.
// Key j of (b, hk):
//   kPageSize == 0:  K + b * k_page_stride + j * k_seq_stride + hk * k_head_stride
//   kPageSize == P:  K + pg * k_page_stride + (j % P) * k_seq_stride + hk * k_head_stride,
//                    pg = block_table[b * bt_batch_stride + j / P] in 0..num_pages-1 (else trap)
// V likewise. Sequence b has sq = seqlens_q[b] query tokens (0 <= sq <= seqlen_q, else trap; seqlens_q null: sq =
// seqlen_q); rows of tokens s >= sq are not computed and O / LSE there are not written. Query token s sees key j
// iff j < len and (kMask == kMaskCausal: j <= s + len - sq: the tokens are the last sq of the sequence). A row
// that sees no key gets O = 0, LSE = -inf.
//
// Rows (GQA packing): the group = heads / heads_kv query heads of KV head hk and the sq tokens make group * sq
// rows; row r is query head hk * group + r / sq, token r % sq. A workgroup computes kBlockM rows (a row tile)
// against one split of the keys; the row tiles are sized by seqlen_q, and those past a sequence's rows exit.
//
// Grid: x = row_tiles * splits (row tile x / splits, split x % splits; row_tiles = ceil(rows / kBlockM)),
// y = heads_kv, z = batch. Split sp of a sequence with nt = ceil(len / kBlockN) key tiles takes the tiles
// [sp * per, min(nt, (sp + 1) * per)), per = ceil(nt / splits) (possibly none). With splits == 1 the workgroup
// writes O and LSE itself. Otherwise it writes its rows' normalized output and LSE (f32; a split with no keys:
// 0 and -inf) to its slot of the workspace, and the host entry then launches <kernel>_combine (combine below; the
// split count in num_splits), whose workgroups merge the slots of one row each, in split order:
// LSE = log(sum_s exp(LSE_s)), O = sum_s exp(LSE_s - LSE) O_s (deterministic: no order depends on timing), then
// zero the slots they read (the workspace contract: zero-filled on entry and on exit).
// Workspace: floats o[tiles][splits][kBlockM][kHeadDim], floats lse[tiles][splits][kBlockM];
// tiles = batch * heads_kv * row_tiles, tile (b, hk, rt) = (b * heads_kv + hk) * row_tiles + rt.
#pragma once

#include "attention_common.h"

namespace ckgen {
namespace attn_dec {

// Where one workgroup works: its sequence, KV head, row tile, split, and its key tiles [t0, t1).
struct Work {
  int b, hk, rt, sp, splits, row_tiles, group, sq, rows, len, t0, t1;
};

// What the split kernel and the combine kernel derive alike: the sequence b (block z), the KV head hk (block y),
// the group, the row tiles, the sequence's query tokens sq (checked) and its packed rows.
template <class Cfg, class P>
CKGEN_DEVICE Work sequence_rows(const P& p) {
  Work w{};
  w.group = p.heads / p.heads_kv;
  w.row_tiles = (w.group * p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM;
  w.hk = block_id(1);
  w.b = block_id(2);
  w.sq = p.seqlens_q != nullptr ? gload(p.seqlens_q + w.b) : p.seqlen_q;
  if (w.sq < 0 || w.sq > p.seqlen_q) trap("attention_decode: seqlens_q[b] outside 0..seqlen_q");
  w.rows = w.group * w.sq;
  return w;
}

template <class Cfg, class P>
CKGEN_DEVICE Work make_work(const P& p) {
  Work w = sequence_rows<Cfg>(p);
  w.splits = grid_dim(0) / w.row_tiles;
  w.rt = block_id(0) / w.splits;
  w.sp = block_id(0) % w.splits;
  w.len = gload(p.seqlens_k + w.b);
  const long long cap = Cfg::kPageSize ? static_cast<long long>(p.max_pages) * Cfg::kPageSize : p.seqlen_k;
  if (w.len < 0 || w.len > cap) trap("attention_decode: seqlens_k[b] outside 0..capacity");
  const int nt = (w.len + Cfg::kBlockN - 1) / Cfg::kBlockN;
  const int per = (nt + w.splits - 1) / w.splits;
  const int t0 = w.sp * per;
  w.t0 = t0 < nt ? t0 : nt;
  w.t1 = w.t0 + per < nt ? w.t0 + per : nt;
  return w;
}

// The packed row r's query head and token; false past the rows.
template <class P>
CKGEN_DEVICE bool row_of(const P& /*p*/, const Work& w, int r, int& h, int& s) {
  const int sq = w.sq > 0 ? w.sq : 1;
  h = w.hk * w.group + r / sq;
  s = r % sq;
  return r < w.rows;
}

// Whether the workgroup's row tile holds rows of its sequence (else it has nothing to do).
template <class Cfg>
CKGEN_DEVICE bool has_rows(const Work& w) {
  return w.rt * Cfg::kBlockM < w.rows;
}

// The keys token s sees: [0, keys_of).
template <int kMask, class P>
CKGEN_DEVICE int keys_of(const P& /*p*/, const Work& w, int s) {
  if constexpr (kMask == attn::kMaskCausal) {
    const int hi = s + w.len - w.sq + 1;
    return hi < 0 ? 0 : (hi > w.len ? w.len : hi);
  }
  return w.len;
}

// The element offset of K/V row n0 (a multiple of kBlockN: the AMD body's tile lies in one page) of (b, hk) (paged:
// its page from the block table, checked).
template <class Cfg, class P>
CKGEN_DEVICE long long kv_row(const P& p, const Work& w, int n0, long long page_stride, long long seq_stride,
                              long long head_stride) {
  long long off = w.hk * head_stride;
  if constexpr (Cfg::kPageSize != 0) {
    const int pg = gload(p.block_table + w.b * p.bt_batch_stride + n0 / Cfg::kPageSize);
    if (pg < 0 || pg >= p.num_pages) trap("attention_decode: block_table entry outside 0..num_pages-1");
    return off + pg * page_stride + static_cast<long long>(n0 % Cfg::kPageSize) * seq_stride;
  }
  return off + w.b * page_stride + static_cast<long long>(n0) * seq_stride;
}

// A workspace value another workgroup wrote (CUDA: from L2, past the SM's L1).
CKGEN_DEVICE float slot_load(const float* p) {
#if defined(__CUDACC__)
  return __ldcg(p);
#else
  return gload(p);
#endif
}

// The row tile's slots in the workspace: o (split 0's first row; a split is kBlockM x kHeadDim floats) and lse
// (split 0's; kBlockM floats a split).
template <class Cfg>
struct Slots {
  float* o;
  float* lse;

  template <class P>
  CKGEN_DEVICE Slots(const P& p, const Work& w) {
    constexpr int kD = Cfg::kHeadDim, kBM = Cfg::kBlockM;
    const long long tiles = static_cast<long long>(p.batch) * p.heads_kv * w.row_tiles;
    const long long tile = (static_cast<long long>(w.b) * p.heads_kv + w.hk) * w.row_tiles + w.rt;
    float* all_o = static_cast<float*>(p.workspace);
    o = all_o + tile * w.splits * kBM * kD;
    lse = all_o + tiles * w.splits * kBM * kD + tile * w.splits * kBM;
  }
  // this split's row lr: its kHeadDim outputs and its LSE
  CKGEN_DEVICE float* o_row(const Work& w, int lr) const {
    return o + (static_cast<long long>(w.sp) * Cfg::kBlockM + lr) * Cfg::kHeadDim;
  }
  CKGEN_DEVICE float* lse_of(const Work& w, int lr) const { return lse + w.sp * Cfg::kBlockM + lr; }
};

// 4 consecutive floats of a slot (16-byte aligned) another workgroup wrote: one vector load.
CKGEN_DEVICE vec<float, 4> slot_load4(const float* p) {
#if defined(__CUDACC__)
  const float4 f = __ldcg(reinterpret_cast<const float4*>(p));
  return vec<float, 4>{{f.x, f.y, f.z, f.w}};
#else
  return gload(reinterpret_cast<const vec<float, 4>*>(p));
#endif
}

// exp(x - m) for a maximum m >= x; 0 when m is -inf (then x is -inf too).
CKGEN_DEVICE float exp_below(float x, float m) { return m == attn::kNegInf ? 0.0f : exp_f32(x - m); }

// <kernel>_combine: after the split kernel, with p.num_splits = its split count (> 1). Grid: x = row_tiles *
// kBlockM (row tile x / kBlockM, its row x % kBlockM), y = heads_kv, z = batch; a workgroup of kHeadDim / 4 *
// Cfg::kCombineLanes threads takes one row: each quad (4 columns) is kCombineLanes adjacent lanes, lane j taking
// the splits j, j + kCombineLanes, ... So that the reads of many splits are in flight at once, no load depends on
// a sum: the row's max LSE (each lane's, then the lanes' by xor shuffles), then each lane's sums of
// exp(LSE_s - max) and exp(LSE_s - max) O_s, added across the lanes by xor shuffles (a fixed order: the same bits
// every run). Lane 0 of a quad writes O (quad 0 also LSE); then every thread zeroes the slots it read.
template <class Cfg, class P>
CKGEN_DEVICE void combine(const P& p) {
  using T = typename Cfg::T;
  constexpr int kD = Cfg::kHeadDim, kBM = Cfg::kBlockM, kLanes = Cfg::kCombineLanes;
  Work w = sequence_rows<Cfg>(p);
  w.splits = p.num_splits;
  w.rt = block_id(0) / kBM;
  const int lr = block_id(0) % kBM;
  int h, s;
  if (!row_of(p, w, w.rt * kBM + lr, h, s)) return;  // the whole workgroup: a row past the sequence's rows
  const int t = thread_id(), lane = lane_id(), d0 = t / kLanes * 4, j = t % kLanes;
  const Slots<Cfg> sl(p, w);
  float* lse = sl.lse + lr;
  float* o = sl.o + static_cast<long long>(lr) * kD + d0;
  const long long o_split = static_cast<long long>(kBM) * kD;
  const int mine = (w.splits - j + kLanes - 1) / kLanes;  // this lane's splits: j + i * kLanes, i < mine
  float m = attn::kNegInf;
#if defined(__CUDACC__)  // (clang for AMD does not unroll these two loops on request; it warns, and unrolls as it likes)
#pragma unroll 4
#endif
  for (int i = 0; i < mine; ++i) m = attn::fmax_f32(m, slot_load(lse + (j + i * kLanes) * kBM));
  m = attn::lanes_max<1, kLanes>(m, lane);
  float sum = 0.0f;
  vec<float, 4> acc{{0.0f, 0.0f, 0.0f, 0.0f}};
#if defined(__CUDACC__)
#pragma unroll 4
#endif
  for (int i = 0; i < mine; ++i) {
    const int sp = j + i * kLanes;
    const float wt = exp_below(slot_load(lse + sp * kBM), m);
    const vec<float, 4> so = slot_load4(o + sp * o_split);
    sum += wt;
#pragma unroll
    for (int c = 0; c < 4; ++c) acc.v[c] += wt * so.v[c];
  }
  sum = attn::lanes_sum<1, kLanes>(sum, lane);
#pragma unroll
  for (int c = 0; c < 4; ++c) acc.v[c] = attn::lanes_sum<1, kLanes>(acc.v[c], lane);
  if (j == 0) {
    const float inv = m != attn::kNegInf ? 1.0f / sum : 0.0f;
    T* orow = p.O + w.b * p.o_batch_stride + s * p.o_seq_stride + h * p.o_head_stride + d0;
#pragma unroll
    for (int c = 0; c < 4; ++c) gstore(orow + c, from_float<T>(acc.v[c] * inv));
    if (d0 == 0 && p.LSE != nullptr)
      gstore(p.LSE + w.b * p.lse_batch_stride + h * p.lse_head_stride + s,
             m != attn::kNegInf ? m + log_f32(sum) : attn::kNegInf);
  }
  const vec<float, 4> zero{{0.0f, 0.0f, 0.0f, 0.0f}};
  for (int sp = j; sp < w.splits; sp += kLanes) gstore(reinterpret_cast<vec<float, 4>*>(o + sp * o_split), zero);
  barrier();  // every thread has read the row's LSEs
  if (d0 == 0)
    for (int sp = j; sp < w.splits; sp += kLanes) gstore(lse + sp * kBM, 0.0f);
}

}  // namespace attn_dec

// The entry body of <kernel>_combine (its arguments: the decode kernel's). Launched as a programmatic dependent of
// the decode kernel (CKGEN_LAUNCH_DEPENDENT): nothing is read before that kernel is done.
template <class Cfg, class... A>
CKGEN_DEVICE void attention_decode_combine(A... args) {
  grid_dependency_wait();
  attn_dec::combine<Cfg>(attn::Args<Cfg>{args...});
}

}  // namespace ckgen
