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
// row of position pos as attention_rope.h defines them; computed in f32, rounded to T once; by 16-byte units where
// the vectors, style and rotary dim allow: rotate_k_chunks); pos must be
// < rope_positions (else trap). Without kRope, cos_sin is not read (may be null) and Cfg has no kRopeStyle.
//
// Cfg::kRotateQ (rotary Cfg only): the ABI also has T* Q [batch, seqlen_new, heads, kHeadDim] (strides q_batch_,
// q_seq_, q_head_stride; int heads after rope_positions), and Q[b, t, h, :] is rotated in place at the same position
// pos = seqlens_k[b] + t (dims >= kRopeDim are neither read nor written).
//
// Grid: x = ceil((kv_items + q_items) / kThreads), y = batch. kv_items = seqlen_new * heads_kv * kHeadDim / kVec / 2:
// thread i < kv_items copies the chunk pair (c, c + kHeadDim / kVec / 2), c = i % pairs, of head
// (i / pairs) % heads_kv of token i / (pairs * heads_kv), of K and of V (kVec elements a chunk: 16-byte vectors
// where every base and stride allows, else element by element). With kRotateQ, q_items = seqlen_new * heads *
// ceil(kRopeDim / 2 / kVec): thread kv_items + j rotates the kVec pairs u * kVec.. (u = j % units, the last run
// shorter) of query head (j / units) % heads of token j / (units * heads): it reads every element of those pairs
// before writing them, and no other thread touches them (in place without races).
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

// Thread's two K chunks (columns d0 and d1 = d0 + kHeadDim / 2, read from kn, written to kd) rotated by 16-byte
// units (attn::RopeChunks) where vectors, the style and the rotary dim allow: rotate-half over the whole head (the
// chunks are each other's partners: unit d0 / 8) or interleaved with rot a multiple of 8 (each chunk a unit of its
// own, a chunk past rot copied). Returns false, having written nothing, otherwise (the caller rotates element by
// element). wide: the table's rows are 16-byte aligned (RopeChunks::vec_ok).
template <class Cfg, class T>
CKGEN_DEVICE bool rotate_k_chunks(const T* kn, T* kd, int d0, int d1, const float* cs, bool vec, bool wide) {
  using R = attn::RopeChunks<Cfg::kRopeStyle, Cfg::kRopeDim>;
  constexpr bool kHalves = R::kNeox && Cfg::kRopeDim == Cfg::kHeadDim, kAlone = !R::kNeox && R::kOk;
  if constexpr (sizeof(T) != 2 || Cfg::kVec != 8 || !(kHalves || kAlone)) {
    return false;
  } else {
    if (!vec) return false;
    auto x = bit_cast<ckgen::vec<uint32_t, 4>>(load_chunk<T, 8>(kn + d0, true));
    auto y = bit_cast<ckgen::vec<uint32_t, 4>>(load_chunk<T, 8>(kn + d1, true));
    float c[R::kPairs], s[R::kPairs];
    if constexpr (kHalves) {
      R::read(cs, d0 / 8, c, s, wide);
      R::template rotate<T>(x.v, y.v, c, s);
    } else {
      if (d0 < Cfg::kRopeDim) {
        R::read(cs, d0 / 8, c, s, wide);
        R::template rotate<T>(x.v, y.v, c, s);  // (interleaved: y is not touched)
      }
      if (d1 < Cfg::kRopeDim) {
        R::read(cs, d1 / 8, c, s, wide);
        R::template rotate<T>(y.v, x.v, c, s);
      }
    }
    store_chunk<T, 8>(kd + d0, bit_cast<ckgen::vec<T, 8>>(x), true);
    store_chunk<T, 8>(kd + d1, bit_cast<ckgen::vec<T, 8>>(y), true);
    return true;
  }
}

// Item i of the KV part (I: unsigned when every item index fits in 32 bits, else long long: 64-bit divisions by a
// run-time divisor cost several times the 32-bit ones, and every thread makes two).
template <class Cfg, class I>
CKGEN_DEVICE void append_kv(const attn::Args<Cfg>& p, I i) {
  using T = typename Cfg::T;
  constexpr int kHalf = Cfg::kHeadDim / Cfg::kVec / 2;  // chunk pairs (ch, ch + kHalf) per (token, head)
  const int b = block_id(1);
  const I heads_kv = static_cast<I>(p.heads_kv);
  const int ch = static_cast<int>(i % kHalf), h = static_cast<int>(i / kHalf % heads_kv);
  const int t = static_cast<int>(i / (static_cast<I>(kHalf) * heads_kv));
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
    using R = attn::RopeChunks<kStyle, kRot>;
    if (!rotate_k_chunks<Cfg>(kn, kd, d0, d1, cs, vec, R::vec_ok(p.cos_sin, p.cs_pos_stride))) {
      store_chunk<T, Cfg::kVec>(kd + d0, attn::rope_run<kStyle, kRot, Cfg::kVec>(kn, d0, cs), vec);
      store_chunk<T, Cfg::kVec>(kd + d1, attn::rope_run<kStyle, kRot, Cfg::kVec>(kn, d1, cs), vec);
    }
  } else {
    store_chunk<T, Cfg::kVec>(kd + d0, load_chunk<T, Cfg::kVec>(kn + d0, vec), vec);
    store_chunk<T, Cfg::kVec>(kd + d1, load_chunk<T, Cfg::kVec>(kn + d1, vec), vec);
  }
  store_chunk<T, Cfg::kVec>(vd + d0, load_chunk<T, Cfg::kVec>(vn + d0, vec), vec);
  store_chunk<T, Cfg::kVec>(vd + d1, load_chunk<T, Cfg::kVec>(vn + d1, vec), vec);
}

// Element k (< 2 kVec) of the run of query pairs u0 .. u0 + kVec - 1 (rot / 2 = kHalf pairs): neox (rotate-half)
// holds the x elements u0.. in k < kVec and their y partners u0 + kHalf.. in k >= kVec; gptj (interleaved) holds the
// 2 kVec consecutive elements from 2 u0 (pair e at k = 2 e, 2 e + 1). Its offset in the row, and whether its pair
// exists (e < n, the pairs of this run).
template <int kStyle, int kV, int kHalf>
CKGEN_DEVICE int q_elem(int u0, int k, int n, bool& ok) {
  if constexpr (kStyle == attn::kRopeNeox) {
    ok = (k % kV) < n;
    return u0 + (k < kV ? k : kHalf + k - kV);
  } else {
    ok = k < 2 * n;
    return 2 * u0 + k;
  }
}

// Thread j of the query part (kRotateQ): its run of pairs of one query row, read whole (two kVec vectors when the run
// is full, the layout allows and Q's base and strides are aligned; else element by element), rotated in f32 at table
// row cs, rounded to T once and written back.
template <class Cfg, class I>
CKGEN_DEVICE void rotate_q(const attn::Args<Cfg>& p, I j) {
  using T = typename Cfg::T;
  constexpr int kV = Cfg::kVec, kRot = Cfg::kRopeDim, kHalf = kRot / 2, kStyle = Cfg::kRopeStyle;
  constexpr int kUnits = (kHalf + kV - 1) / kV;
  constexpr bool kRunsAligned = kStyle == attn::kRopeGptj || kHalf % kV == 0;  // both vectors start at kV multiples
  const I heads = static_cast<I>(p.heads);
  const int b = block_id(1), u = static_cast<int>(j % kUnits), h = static_cast<int>(j / kUnits % heads);
  const int t = static_cast<int>(j / (static_cast<I>(kUnits) * heads));
  const long long pos = static_cast<long long>(gload(p.seqlens_k + b)) + t;
  const float* cs = attn::rope_row(p.cos_sin, p.cs_pos_stride, pos, p.rope_positions,
                                   "attention_kv_append: seqlens_k[b] + token past cos_sin's positions (Q)");
  T* q = p.Q + b * p.q_batch_stride + t * p.q_seq_stride + h * p.q_head_stride;
  const int u0 = u * kV, n = kHalf - u0 < kV ? kHalf - u0 : kV;
  auto al = [](const void* ptr, long long s) {
    return (reinterpret_cast<unsigned long long>(ptr) % (kV * sizeof(T))) == 0 && s % kV == 0;
  };
  const bool vec = kRunsAligned && n == kV && al(p.Q, p.q_batch_stride) && al(p.Q, p.q_seq_stride) &&
                   al(p.Q, p.q_head_stride);
  bool ok;
  T* lo = q + q_elem<kStyle, kV, kHalf>(u0, 0, n, ok);
  T* hi = q + q_elem<kStyle, kV, kHalf>(u0, kV, n, ok);
  ckgen::vec<T, kV> a, c;
  if (vec) {
    a = load_chunk<T, kV>(lo, true);
    c = load_chunk<T, kV>(hi, true);
  }
  float r[2 * kV];
#pragma unroll
  for (int k = 0; k < 2 * kV; ++k) {
    const int off = q_elem<kStyle, kV, kHalf>(u0, k, n, ok);
    r[k] = vec ? to_float(k < kV ? a.v[k] : c.v[k - kV]) : ok ? to_float(gload(q + off)) : 0.f;
  }
  float cc[kV], ss[kV];  // the run's cosines and sines (all kV of them on the vector path: n == kV there)
  if (vec) {
    attn::rope_table_run<kHalf>(cs, u0, cc, ss, kV % 4 == 0 && attn::RopeChunks<kStyle, kRot>::vec_ok(p.cos_sin,
                                                                                                      p.cs_pos_stride));
  } else {
#pragma unroll
    for (int e = 0; e < kV; ++e) {
      if (e >= n) break;
      cc[e] = gload(cs + u0 + e);
      ss[e] = gload(cs + kHalf + u0 + e);
    }
  }
#pragma unroll
  for (int e = 0; e < kV; ++e) {
    if (e >= n) break;
    const int xi = kStyle == attn::kRopeNeox ? e : 2 * e, yi = kStyle == attn::kRopeNeox ? kV + e : 2 * e + 1;
    rope_rotate(r[xi], r[yi], cc[e], ss[e]);
  }
  if (vec) {
#pragma unroll
    for (int k = 0; k < kV; ++k) {
      a.v[k] = from_float<T>(r[k]);
      c.v[k] = from_float<T>(r[kV + k]);
    }
    store_chunk<T, kV>(lo, a, true);
    store_chunk<T, kV>(hi, c, true);
    return;
  }
#pragma unroll
  for (int k = 0; k < 2 * kV; ++k) {
    const int off = q_elem<kStyle, kV, kHalf>(u0, k, n, ok);
    if (ok) gstore(q + off, from_float<T>(r[k]));
  }
}

// This thread's item (the grid rule above), its index of type I.
template <class Cfg, class I>
CKGEN_DEVICE void append_item(const attn::Args<Cfg>& p, long long i, long long kv_items, long long q_items) {
  if (i < kv_items) {
    append_kv<Cfg>(p, static_cast<I>(i));
    return;
  }
  if constexpr (Cfg::kRotateQ) {
    if (i - kv_items < q_items) rotate_q<Cfg>(p, static_cast<I>(i - kv_items));
  }
}

template <class Cfg>
CKGEN_DEVICE void append(const attn::Args<Cfg>& p) {
  const long long i = static_cast<long long>(block_id(0)) * Cfg::kThreads + thread_id();
  const long long kv_items = static_cast<long long>(p.seqlen_new) * p.heads_kv * (Cfg::kHeadDim / Cfg::kVec / 2);
  long long q_items = 0;
  if constexpr (Cfg::kRotateQ) {
    static_assert(Cfg::kRope, "kRotateQ needs a rotary Cfg");
    constexpr int kUnits = (Cfg::kRopeDim / 2 + Cfg::kVec - 1) / Cfg::kVec;
    q_items = static_cast<long long>(p.seqlen_new) * p.heads * kUnits;
  }
  if (kv_items + q_items <= 0x7fffffffLL)
    append_item<Cfg, unsigned>(p, i, kv_items, q_items);
  else
    append_item<Cfg, long long>(p, i, kv_items, q_items);
}

}  // namespace attn_append

template <class Cfg, class... A>
CKGEN_DEVICE void attention_kv_append(A... args) {
  attn_append::append<Cfg>(attn::Args<Cfg>{args...});
}

}  // namespace ckgen
