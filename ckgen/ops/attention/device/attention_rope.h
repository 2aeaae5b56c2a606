// attention_rope.h (ckgen/ops/attention/device): the rotary position embedding (RoPE) the attention bodies apply
// on the way (op = attention_kv_append to the keys it writes; op = attention and op = attention_decode to the
// queries as they load them). The Python side, the DSL key and the table: ckgen/ops/attention/rope.py.
//
// A rotary Cfg has  kRopeStyle (kRopeNeox or kRopeGptj) and kRopeDim (rot: even, <= kHeadDim). Pair i < rot / 2
// of a row at position pos is (x, y) = (i, i + rot / 2) (neox, rotate-half) or (2 i, 2 i + 1) (gptj, interleaved),
// rotated with c = cs[i], s = cs[rot / 2 + i], cs = cos_sin + pos * cs_pos_stride (f32, vLLM's cos_sin_cache):
//   x' = x c - y s,  y' = y c + x s      (f32, rounded to T once by the caller); elements >= rot pass through.
// Bodies read kRopeStyle / kRopeDim only under `if constexpr (attn::kRope<Cfg>)`: a Cfg without rotary embedding
// has neither member.
#pragma once

#include "ckgen/blocks/rope.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {
namespace attn {

enum : int { kRopeNone = 0, kRopeNeox = 1, kRopeGptj = 2 };

CKGEN_CFG_OPTIONAL(RopeStyleOf, kRopeStyle, int, kRopeNone);
// Whether Cfg rotates (it has kRopeStyle and kRopeDim).
template <class Cfg>
constexpr bool kRope = RopeStyleOf<Cfg>::value != kRopeNone;

// Element d (< kHeadDim) of row x rotated at table row cs, in f32 (x: d contiguous; elements past kRot read as is).
template <int kStyle, int kRot, class T>
CKGEN_DEVICE float rope_elem(const T* x, int d, const float* cs) {
  static_assert(kStyle == kRopeNeox || kStyle == kRopeGptj, "kRopeStyle must be attn::kRopeNeox or kRopeGptj");
  static_assert(kRot >= 2 && kRot % 2 == 0, "kRopeDim must be even and >= 2");
  const float xd = to_float(gload(x + d));
  if (d >= kRot) return xd;
  constexpr int kHalf = kRot / 2;
  const bool first = kStyle == kRopeNeox ? d < kHalf : (d & 1) == 0;
  const int i = kStyle == kRopeNeox ? (first ? d : d - kHalf) : d >> 1;
  const int partner = kStyle == kRopeNeox ? (first ? d + kHalf : d - kHalf) : d ^ 1;
  const float c = gload(cs + i), s = gload(cs + kHalf + i), y = to_float(gload(x + partner));
  return first ? xd * c - y * s : xd * c + y * s;
}

// kN consecutive elements of row x from d0, rotated at table row cs and rounded to T; zeros where cs is null (a row
// outside the sequence, whose x is not read).
template <int kStyle, int kRot, int kN, class T>
CKGEN_DEVICE vec<T, kN> rope_run(const T* x, int d0, const float* cs) {
  vec<T, kN> v;
#pragma unroll
  for (int e = 0; e < kN; ++e)
    v.v[e] = cs != nullptr ? from_float<T>(rope_elem<kStyle, kRot>(x, d0 + e, cs)) : zero<T>();
  return v;
}

// The elements (x, y) of pair i (< kRot / 2).
template <int kStyle, int kRot>
CKGEN_DEVICE void rope_pair(int i, int& x, int& y) {
  x = kStyle == kRopeNeox ? i : 2 * i;
  y = kStyle == kRopeNeox ? i + kRot / 2 : 2 * i + 1;
}

// A tile's rotation in place in shared memory (the prefill and decode bodies' rope_q), kBatch pairs of a thread at a
// time. Pair i (< kPairs) of the tile is pair i % (kRot / 2) of tile row i / (kRot / 2); a thread's batch from i0
// holds pairs i0 + kStride * u (u < kBatch: kStride is the threads that share the tile).
//   read(i0, row_of)   the batch's table reads (a position, then a cosine and a sine), all issued before any is
//                      used so that their latencies overlap; row_of(r, cs) -> bool: whether tile row r is rotated
//                      (false: a row outside the sequence, left as is), and if so cs = its table row. A body may do
//                      other work (wait for its Q copy) between read() and apply().
//   apply(i0, ld, st)  the batch's pairs rotated through the body's accessors ld(r, col) -> float and
//                      st(r, col, float) (f32, element col of tile row r), both elements of a pair loaded before
//                      either is stored.
// (sm_90a, nvcc 13, against the two bodies' former loops: the same registers (decode 223 for 221, the same
// allocation), code within +-1.5 KiB; a bitmask rather than bools and row_of rather than a null table row keep it so.)
template <int kStyle, int kRot, int kPairs_, int kStride, int kBatch>
struct RopeBatch {
  static constexpr int kHalf = kRot / 2, kPairs = kPairs_;
  static constexpr int kStep = kStride * kBatch;  // from one batch of a thread to its next
  float c[kBatch], s[kBatch];
  unsigned in;  // bit u: pair u is in the tile and its row has a table row (else c = 1, s = 0: it is not rotated)
  static_assert(kBatch <= 32, "RopeBatch: at most 32 pairs per batch (one bit each)");

  template <class RowOf>
  CKGEN_DEVICE void read(int i0, RowOf row_of) {
    in = 0;
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = i0 + kStride * u;
      const float* cs = nullptr;
      c[u] = 1.0f;
      s[u] = 0.0f;
      if (i < kPairs && row_of(i / kHalf, cs)) {  // (one branch around both reads)
        in |= 1u << u;
        c[u] = gload(cs + i % kHalf);
        s[u] = gload(cs + kHalf + i % kHalf);
      }
    }
  }
  template <class Ld, class St>
  CKGEN_DEVICE void apply(int i0, Ld ld, St st) const {
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (!(in >> u & 1u)) continue;
      const int i = i0 + kStride * u, r = i / kHalf;
      int x, y;
      rope_pair<kStyle, kRot>(i % kHalf, x, y);
      float a = ld(r, x), b = ld(r, y);
      rope_rotate(a, b, c[u], s[u]);
      st(r, x, a);
      st(r, y, b);
    }
  }
};

// The cosines and sines of kN consecutive pairs from pair i0 (i0 + kN <= kHalf) of table row cs: 16-byte loads where
// wide (then cs + i0 and cs + kHalf + i0 must be 16-byte aligned: RopeChunks::vec_ok and i0 % 4 == 0), else one float
// at a time.
template <int kHalf, int kN>
CKGEN_DEVICE void rope_table_run(const float* cs, int i0, float (&c)[kN], float (&s)[kN], bool wide) {
  const float* ci = cs + i0;
  if constexpr (kN % 4 == 0) {
    if (wide) {
#pragma unroll
      for (int k = 0; k < kN / 4; ++k) {
        const vec<float, 4> a = gload(reinterpret_cast<const vec<float, 4>*>(ci) + k);
        const vec<float, 4> b = gload(reinterpret_cast<const vec<float, 4>*>(ci + kHalf) + k);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          c[4 * k + e] = a.v[e];
          s[4 * k + e] = b.v[e];
        }
      }
      return;
    }
  }
#pragma unroll
  for (int e = 0; e < kN; ++e) {
    c[e] = gload(ci + e);
    s[e] = gload(ci + kHalf + e);
  }
}

// rope_run's kN elements from d0 (a multiple of kN) when they load as vectors: the run, its partners' run (rotate-half:
// d0 +- rot / 2; interleaved: the run itself) and their table entries read whole (x 16-byte aligned: `aligned`;
// the table where RopeChunks::vec_ok), rotated in f32 as rope_elem does and rounded to T once. kOk: the runs never
// straddle a half of rot (rotate-half: rot / 2 a multiple of kN; interleaved: kN even); otherwise, or unaligned,
// rope_run. Zeros where cs is null.
template <int kStyle, int kRot, int kN, class T>
CKGEN_DEVICE vec<T, kN> rope_vec(const T* x, int d0, const float* cs, bool aligned, bool wide) {
  constexpr int kHalf = kRot / 2;
  constexpr bool kNeox = kStyle == kRopeNeox;
  constexpr bool kOk = kNeox ? kHalf % kN == 0 : kN % 2 == 0;
  if constexpr (!kOk) {
    return rope_run<kStyle, kRot, kN>(x, d0, cs);
  } else {
    if (cs == nullptr) {
      vec<T, kN> z;
#pragma unroll
      for (int e = 0; e < kN; ++e) z.v[e] = zero<T>();
      return z;
    }
    if (!aligned) return rope_run<kStyle, kRot, kN>(x, d0, cs);
    const vec<T, kN> a = gload(reinterpret_cast<const vec<T, kN>*>(x + d0));
    if (d0 >= kRot) return a;
    vec<T, kN> out;
    if constexpr (kNeox) {
      const bool first = d0 < kHalf;  // x of its pairs (else y)
      const int i0 = first ? d0 : d0 - kHalf;
      const vec<T, kN> b = gload(reinterpret_cast<const vec<T, kN>*>(x + (first ? d0 + kHalf : d0 - kHalf)));
      float c[kN], s[kN];
      rope_table_run<kHalf>(cs, i0, c, s, wide && i0 % 4 == 0);
#pragma unroll
      for (int e = 0; e < kN; ++e) {  // (x, y) of pair i0 + e: this run's element and its partner, in pair order
        float x = to_float(first ? a.v[e] : b.v[e]), y = to_float(first ? b.v[e] : a.v[e]);
        rope_rotate(x, y, c[e], s[e]);
        out.v[e] = from_float<T>(first ? x : y);
      }
    } else {
      float c[kN / 2], s[kN / 2];
      rope_table_run<kHalf>(cs, d0 / 2, c, s, wide && (d0 / 2) % 4 == 0);
#pragma unroll
      for (int e = 0; e < kN / 2; ++e) {
        float x = to_float(a.v[2 * e]), y = to_float(a.v[2 * e + 1]);
        rope_rotate(x, y, c[e], s[e]);
        out.v[2 * e] = from_float<T>(x);
        out.v[2 * e + 1] = from_float<T>(y);
      }
    }
    return out;
  }
}

// A row's rotation by 16-byte chunks of a 16-bit T (8 elements), for bodies that hold the row in shared memory:
// unit u of a row is 8 rotate-half pairs (neox: pairs 8u.., x in the chunk at column 8u, y in the chunk at
// rot / 2 + 8u) or the 4 interleaved pairs of one chunk (gptj: columns 8u..8u+7). kOk: rot splits into whole units.
//   read(cs, u, c, s, wide) unit u's kPairs cosines and sines of table row cs (16-byte loads where wide: cs 16-byte
//                           aligned; else one float at a time)
//   rotate(x, y, c, s)      the unit's chunks (x, and y for neox; four 32-bit words each) rotated in f32
//                           (rope_rotate) and rounded to T once
template <int kStyle, int kRot>
struct RopeChunks {
  static constexpr int kHalf = kRot / 2;
  static constexpr bool kNeox = kStyle == kRopeNeox;
  static constexpr int kPairs = kNeox ? 8 : 4;                // pairs per unit
  static constexpr int kUnits = kNeox ? kHalf / 8 : kRot / 8;  // units per row
  static constexpr bool kOk = kNeox ? kHalf % 8 == 0 : kRot % 8 == 0;

  static CKGEN_DEVICE int x_col(int u) { return 8 * u; }
  static CKGEN_DEVICE int y_col(int u) { return kHalf + 8 * u; }  // (neox)
  // Whether table rows at cos_sin + k * stride are 16-byte aligned for read().
  static CKGEN_DEVICE bool vec_ok(const float* cos_sin, long long stride) {
    return kHalf % 4 == 0 && stride % 4 == 0 && reinterpret_cast<unsigned long long>(cos_sin) % 16 == 0;
  }
  static CKGEN_DEVICE void read(const float* cs, int u, float (&c)[kPairs], float (&s)[kPairs], bool wide) {
    rope_table_run<kHalf>(cs, kPairs * u, c, s, wide);
  }
  template <class T>
  static CKGEN_DEVICE float elem(const uint32_t (&w)[4], int k) {
    return to_float(bit_cast<T>(static_cast<uint16_t>(w[k / 2] >> (16 * (k % 2)))));
  }
  template <class T>
  static CKGEN_DEVICE void rotate(uint32_t (&x)[4], uint32_t (&y)[4], const float (&c)[kPairs],
                                  const float (&s)[kPairs]) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if constexpr (kNeox) {  // pair e: x element e, y element e
        float xo[2], yo[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int e = 2 * k + h;
          xo[h] = elem<T>(x, e);
          yo[h] = elem<T>(y, e);
          rope_rotate(xo[h], yo[h], c[e], s[e]);
        }
        x[k] = pack2<T>(xo[0], xo[1]);
        y[k] = pack2<T>(yo[0], yo[1]);
      } else {  // pair k: elements 2k, 2k + 1 of x (word k)
        float a = elem<T>(x, 2 * k), b = elem<T>(x, 2 * k + 1);
        rope_rotate(a, b, c[k], s[k]);
        x[k] = pack2<T>(a, b);
      }
    }
  }
};

// Row pos of the table (traps when pos is outside 0..positions-1; `who` names the kernel and the argument).
CKGEN_DEVICE const float* rope_row(const float* cos_sin, long long stride, long long pos, long long positions,
                                   const char* who) {
  if (pos < 0 || pos >= positions) trap(who);
  return cos_sin + pos * stride;
}

// rope_row without its trap, for a caller that traps later (outside a loop, where a trap site costs registers): the
// row of pos when it is inside 0..positions-1, else row 0 with `bad` set.
CKGEN_DEVICE const float* rope_row_or_first(const float* cos_sin, long long stride, long long pos,
                                            long long positions, bool& bad) {
  const bool in = pos >= 0 && pos < positions;
  bad |= !in;
  return cos_sin + (in ? pos : 0) * stride;
}

// Prefill (op = attention, rotary Cfg): the position of query row `row` of batch item b's sequence:
// positions[b * pos_batch_stride + row] (dense, [batch, seqlen_q]) or positions[cu_seqlens_q[b] + row] (varlen,
// [total_q]).
template <class Cfg, class P>
CKGEN_DEVICE long long query_position(const P& p, int b, int row) {
  long long at;
  if constexpr (Cfg::kVarlen) {
    at = static_cast<long long>(gload(p.cu_seqlens_q + b)) + row;
  } else {
    at = b * p.pos_batch_stride + row;
  }
  return gload(p.positions + at);
}

constexpr const char* kQueryPositionError =
    "attention: a positions entry outside 0..rope_positions-1 (the rows of cos_sin)";

// The table row of that position (query_position); outside 0..rope_positions-1 traps.
template <class Cfg, class P>
CKGEN_DEVICE const float* query_rope_row(const P& p, int b, int row) {
  return rope_row(p.cos_sin, p.cs_pos_stride, query_position<Cfg>(p, b, row), p.rope_positions, kQueryPositionError);
}

// Decode (op = attention_decode, rotary Cfg): the table row of query token s of a sequence of len keys and sq query
// tokens (the last sq of the sequence): position len - sq + s; outside 0..rope_positions-1 traps.
template <class P>
CKGEN_DEVICE const float* decode_rope_row(const P& p, int len, int sq, int s) {
  return rope_row(p.cos_sin, p.cs_pos_stride, static_cast<long long>(len) - sq + s, p.rope_positions,
                  "attention_decode: seqlens_k[b] - seqlens_q[b] + token outside 0..rope_positions-1 (cos_sin)");
}

}  // namespace attn
}  // namespace ckgen
