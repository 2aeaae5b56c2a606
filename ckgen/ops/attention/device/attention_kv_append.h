// attention_kv_append.h (ckgen/ops/attention/device): writes a step's new keys and values into the KV cache that
// op = attention_decode reads (op = attention_kv_append, ops/attention/kv_append.py). One body for every platform
// (global loads and stores only).
//
//   template <class Cfg, class... A> CKGEN_DEVICE void attention_kv_append(A... args);
//
// Arguments, in the ABI's order (Cfg::Args):
//   const T* K_new, V_new; T* K_cache, V_cache; const int* seqlens_k, block_table;
//   int batch, seqlen_new, heads_kv, seqlen_k, num_pages, max_pages;
//   long long kn_batch_stride, kn_seq_stride, kn_head_stride, vn_... (3), k_page_stride, k_seq_stride,
//             k_head_stride, v_... (3), bt_batch_stride;
// Token t of sequence b (K_new[b, t, h, :]) goes to cache position pos = seqlens_k[b] + t: contiguous
// (Cfg::kPageSize == 0) K_cache + b * k_page_stride + pos * k_seq_stride + h * k_head_stride; paged
// K_cache + block_table[b * bt_batch_stride + pos / P] * k_page_stride + (pos % P) * k_seq_stride + ...
// V likewise. seqlens_k holds the lengths before the step (they are not updated: the caller adds seqlen_new).
// A position past the capacity (seqlen_k, or max_pages * P) or a page id outside 0..num_pages-1 traps.
//
// Grid: x = ceil(seqlen_new * heads_kv * kHeadDim / kVec / kThreads), y = batch; thread i of the flattened x
// copies kVec elements (chunk i % (kHeadDim / kVec) of head (i / chunks) % heads_kv of token i / (chunks *
// heads_kv)) of K and of V; 16-byte vectors where every base and stride allows, else element by element.
#pragma once

#include "attention_common.h"

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

// kVec elements at src -> dst (vector or per element).
template <class T, int kV>
CKGEN_DEVICE void copy(const T* src, T* dst, bool vec) {
  if (vec) {
    gstore(reinterpret_cast<ckgen::vec<T, kV>*>(dst), gload(reinterpret_cast<const ckgen::vec<T, kV>*>(src)));
  } else {
    for (int e = 0; e < kV; ++e) gstore(dst + e, gload(src + e));
  }
}

template <class Cfg>
CKGEN_DEVICE void append(const attn::Args<Cfg>& p) {
  using T = typename Cfg::T;
  constexpr int kChunks = Cfg::kHeadDim / Cfg::kVec;
  const long long i = static_cast<long long>(block_id(0)) * Cfg::kThreads + thread_id();
  if (i >= static_cast<long long>(p.seqlen_new) * p.heads_kv * kChunks) return;
  const int b = block_id(1);
  const int ch = static_cast<int>(i % kChunks), h = static_cast<int>(i / kChunks % p.heads_kv);
  const int t = static_cast<int>(i / (static_cast<long long>(kChunks) * p.heads_kv));
  const long long pos = static_cast<long long>(gload(p.seqlens_k + b)) + t;
  const long long cap = Cfg::kPageSize ? static_cast<long long>(p.max_pages) * Cfg::kPageSize : p.seqlen_k;
  if (pos < 0 || pos >= cap) trap("attention_kv_append: seqlens_k[b] + token past the cache's capacity");
  long long kc = 0, vc = 0, row = pos;
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
  const int d0 = ch * Cfg::kVec;
  const bool vec = vec_ok<Cfg>(p);
  copy<T, Cfg::kVec>(p.K_new + b * p.kn_batch_stride + t * p.kn_seq_stride + h * p.kn_head_stride + d0,
                     p.K_cache + kc + row * p.k_seq_stride + h * p.k_head_stride + d0, vec);
  copy<T, Cfg::kVec>(p.V_new + b * p.vn_batch_stride + t * p.vn_seq_stride + h * p.vn_head_stride + d0,
                     p.V_cache + vc + row * p.v_seq_stride + h * p.v_head_stride + d0, vec);
}

}  // namespace attn_append

template <class Cfg, class... A>
CKGEN_DEVICE void attention_kv_append(A... args) {
  attn_append::append<Cfg>(attn::Args<Cfg>{args...});
}

}  // namespace ckgen
