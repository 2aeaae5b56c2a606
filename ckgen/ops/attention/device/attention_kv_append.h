// attention_kv_append.h (ckgen/ops/attention/device): writes a step's new keys and values into the KV cache that
// op = attention_decode reads (op = attention_kv_append, ops/attention/kv_append.py). One body for every platform
// (global loads and stores only).
//
//   template <class Cfg, class... A> CKGEN_DEVICE void attention_kv_append(A... args);
//
// Arguments, in the ABI's order (Cfg::Args):
//   const T* K_new, V_new; T* K_cache, V_cache; const int* seqlens_k, block_table; const float* cos_sin;
//   int batch, seqlen_new, heads_kv, seqlen_k, num_pages, max_pages, rope_positions;
//   long long kn_batch_stride, kn_seq_stride, kn_head_stride, vn_... (3), k_page_stride, k_seq_stride,
//             k_head_stride, v_... (3), bt_batch_stride, cs_pos_stride;
// Token t of sequence b (K_new[b, t, h, :]) goes to cache position pos = seqlens_k[b] + t: contiguous
// (Cfg::kPageSize == 0) K_cache + b * k_page_stride + pos * k_seq_stride + h * k_head_stride; paged
// K_cache + block_table[b * bt_batch_stride + pos / P] * k_page_stride + (pos % P) * k_seq_stride + ...
// V likewise. seqlens_k holds the lengths before the step (they are not updated: the caller adds seqlen_new).
// A position past the capacity (seqlen_k, or max_pages * P) or a page id outside 0..num_pages-1 traps.
// Cfg::kRope: the key is rotated on the way (rotary embedding: Cfg::kRopeStyle, kRopeDim, the pairs and the table
// row of position pos as attention_rope.h defines them; computed in f32, rounded to T once); pos must be
// < rope_positions (else trap). Without kRope, cos_sin is not read (may be null) and Cfg has no kRopeStyle.
//
// Grid: x = ceil(seqlen_new * heads_kv * kHeadDim / kVec / 2 / kThreads), y = batch; thread i of the flattened x
// copies the chunk pair (c, c + kHeadDim / kVec / 2), c = i % pairs, of head (i / pairs) % heads_kv of token
// i / (pairs * heads_kv), of K and of V (kVec elements a chunk: 16-byte vectors where every base and stride
// allows, else element by element).
#pragma once

#include "attention_common.h"
#include "attention_rope.h"

namespace ckgen {
namespace attn_append {

template <class Cfg, class P>
CKGEN_DEVICE bool vec_ok(const P& p) {
  constexpr int kV = Cfg::kVec;
  auto al = [](const void* ptr, long long s) {
    return (reinterpret_cast<unsigned long long>(ptr) % (kV * sizeof(typename Cfg::T))) == 0 && s % kV == 0;
  };
  return al(p.K_new, p.kn_batch_stride) && al(p.K_new, p.kn_seq_stride) && al(p.K_new, p.kn_head_stride) &&
         al(p.V_new, p.vn_batch_stride) && al(p.V_new, p.vn_seq_stride) && al(p.V_new, p.vn_head_stride) &&
         al(p.K_cache, p.k_page_stride) && al(p.K_cache, p.k_seq_stride) && al(p.K_cache, p.k_head_stride) &&
         al(p.V_cache, p.v_page_stride) && al(p.V_cache, p.v_seq_stride) && al(p.V_cache, p.v_head_stride);
}

// kVec elements at p (a vector load, or per element).
template <class T, int kV>
CKGEN_DEVICE ckgen::vec<T, kV> load_chunk(const T* p, bool vec) {
  if (vec) return gload(reinterpret_cast<const ckgen::vec<T, kV>*>(p));
  ckgen::vec<T, kV> v;
  for (int e = 0; e < kV; ++e) v.v[e] = gload(p + e);
  return v;
}
template <class T, int kV>
CKGEN_DEVICE void store_chunk(T* p, const ckgen::vec<T, kV>& v, bool vec) {
  if (vec) {
    gstore(reinterpret_cast<ckgen::vec<T, kV>*>(p), v);
  } else {
    for (int e = 0; e < kV; ++e) gstore(p + e, v.v[e]);
  }
}

// The cache element offsets (K, V) of position pos of sequence b (its page when paged); traps past the capacity.
template <class Cfg>
CKGEN_DEVICE void cache_rows(const attn::Args<Cfg>& p, int b, long long pos, long long& kc, long long& vc) {
  const long long cap = Cfg::kPageSize ? static_cast<long long>(p.max_pages) * Cfg::kPageSize : p.seqlen_k;
  if (pos < 0 || pos >= cap) trap("attention_kv_append: seqlens_k[b] + token past the cache's capacity");
  long long row = pos;
  if constexpr (Cfg::kPageSize != 0) {
    const int pg = gload(p.block_table + b * p.bt_batch_stride + pos / Cfg::kPageSize);
    if (pg < 0 || pg >= p.num_pages) trap("attention_kv_append: block_table entry outside 0..num_pages-1");
    kc = pg * p.k_page_stride;
    vc = pg * p.v_page_stride;
    row = pos % Cfg::kPageSize;
  } else {
    kc = b * p.k_page_stride;
    vc = b * p.v_page_stride;
  }
  kc += row * p.k_seq_stride;
  vc += row * p.v_seq_stride;
}

template <class Cfg>
CKGEN_DEVICE void append(const attn::Args<Cfg>& p) {
  using T = typename Cfg::T;
  constexpr int kHalf = Cfg::kHeadDim / Cfg::kVec / 2;  // chunk pairs (ch, ch + kHalf) per (token, head)
  const long long i = static_cast<long long>(block_id(0)) * Cfg::kThreads + thread_id();
  if (i >= static_cast<long long>(p.seqlen_new) * p.heads_kv * kHalf) return;
  const int b = block_id(1);
  const int ch = static_cast<int>(i % kHalf), h = static_cast<int>(i / kHalf % p.heads_kv);
  const int t = static_cast<int>(i / (static_cast<long long>(kHalf) * p.heads_kv));
  const long long pos = static_cast<long long>(gload(p.seqlens_k + b)) + t;
  long long kc, vc;
  cache_rows<Cfg>(p, b, pos, kc, vc);
  const int d0 = ch * Cfg::kVec, d1 = d0 + Cfg::kHeadDim / 2;
  const bool vec = vec_ok<Cfg>(p);
  const T* kn = p.K_new + b * p.kn_batch_stride + t * p.kn_seq_stride + h * p.kn_head_stride;
  const T* vn = p.V_new + b * p.vn_batch_stride + t * p.vn_seq_stride + h * p.vn_head_stride;
  T* kd = p.K_cache + kc + h * p.k_head_stride;
  T* vd = p.V_cache + vc + h * p.v_head_stride;
  if constexpr (Cfg::kRope) {
    const float* cs = attn::rope_row(p.cos_sin, p.cs_pos_stride, pos, p.rope_positions,
                                     "attention_kv_append: seqlens_k[b] + token past cos_sin's positions");
    constexpr int kStyle = Cfg::kRopeStyle, kRot = Cfg::kRopeDim;
    store_chunk<T, Cfg::kVec>(kd + d0, attn::rope_run<kStyle, kRot, Cfg::kVec>(kn, d0, cs), vec);
    store_chunk<T, Cfg::kVec>(kd + d1, attn::rope_run<kStyle, kRot, Cfg::kVec>(kn, d1, cs), vec);
  } else {
    store_chunk<T, Cfg::kVec>(kd + d0, load_chunk<T, Cfg::kVec>(kn + d0, vec), vec);
    store_chunk<T, Cfg::kVec>(kd + d1, load_chunk<T, Cfg::kVec>(kn + d1, vec), vec);
  }
  store_chunk<T, Cfg::kVec>(vd + d0, load_chunk<T, Cfg::kVec>(vn + d0, vec), vec);
  store_chunk<T, Cfg::kVec>(vd + d1, load_chunk<T, Cfg::kVec>(vn + d1, vec), vec);
}

}  // namespace attn_append

template <class Cfg, class... A>
CKGEN_DEVICE void attention_kv_append(A... args) {
  attn_append::append<Cfg>(attn::Args<Cfg>{args...});
}

}  // namespace ckgen
