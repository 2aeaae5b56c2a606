// elementwise_quant.h: y = expr(a, b, c) element by element, quantized to int8 or fp8 with one f32 scale per
// kQuantGroup consecutive columns of a row (ckgen/blocks/quant.h), or with kQuantMx to MX (ckgen/blocks/mx_quant.h:
// fp8 e4m3fn / e5m2 or fp4 pairs, one E8M0 scale byte per 32 columns), for every platform.
//
// Contract: elementwise_body.h's Cfg and launch, plus
//   TY               ::int8_t or an fp8 type (ckgen/blocks/fp8.h)
//   kQuantGroup      G: the columns of one scale group; kVec | G, G / kVec <= the wave size and
//                    kThreads * kVec a multiple of G (a group is G / kVec consecutive threads of one wave, and a
//                    workgroup's chunk of a row is whole groups)
//   elementwise_quant_forward<Cfg>(a, b, c, y, y_scale, rows, cols, stride_a, stride_b, stride_c, stride_y,
//                                  groups, stride_scale)
//   For each group: amax = max |v| of its values v = expr(...) (f32), y_scale[row * stride_scale + col / G] =
//   amax / kMax and q = from_float<TY>(v * (kMax / amax)) (nearest even, saturating); an all-zero group gets
//   scale 1 and q 0; the last group of a row may be shorter. groups (= ceil(cols / G)) is the host's to check.
//   kQuantMx         (optional, default false) G = 32 and MX: y_scale holds E8M0 bytes e = mx_scale_code<TY>(amax)
//                    and q = the element nearest v * mx_mul(e); an fp4 y (fp4x2_e2m1fn) is cols / 2 bytes a row, the
//                    even column in the low nibble (cols even and kVec even: the host's and the planner's checks).
// Each thread evaluates its kUnroll vectors (by vectors in aligned rows, else element by element), then every
// thread of the workgroup takes part in each vector's group all-reduce (a butterfly over G / kVec lanes), inside
// the row or past it (amax 0), so no exchange sits in a divergent branch.
#pragma once

#include "ckgen/blocks/mx_quant.h"
#include "ckgen/blocks/mx_store.h"
#include "ckgen/blocks/quant.h"
#include "ckgen/blocks/reduce.h"
#include "ckgen/platform.h"
#include "elementwise_body.h"

namespace ckgen {
namespace ew {

namespace detail {
CKGEN_CFG_OPTIONAL(QuantMxOf, kQuantMx, bool, false);
}  // namespace detail

// vector u of this thread as f32 values (0 past cols) and their amax
template <class Cfg, class VA, class VB, class VC>
CKGEN_DEVICE float quant_values(const VA& va, const VB& vb, const VC& vc, const typename Cfg::TA* ar,
                                const typename Cfg::TB* br, const typename Cfg::TC* cr, int u, bool whole,
                                long long col, long long cols, float (&o)[Cfg::kVec]) {
  float amax = 0.0f;
#pragma unroll
  for (int e = 0; e < Cfg::kVec; ++e) {
    const long long i = col + e;
    float v[3] = {0.0f, 0.0f, 0.0f};
    if (whole) {
      v[0] = va.at(u, e);
      v[1] = Cfg::kHasB ? vb.at(u, e) : 0.0f;
      v[2] = Cfg::kHasC ? vc.at(u, e) : 0.0f;
    } else if (i < cols) {
      v[0] = to_float(gload(ar + i));
      v[1] = Cfg::kHasB ? to_float(gload(br + i)) : 0.0f;
      v[2] = Cfg::kHasC ? to_float(gload(cr + i)) : 0.0f;
    }
    o[e] = whole || i < cols ? Cfg::Expr::eval(v) : 0.0f;
    amax = max_f32(amax, o[e] < 0.0f ? -o[e] : o[e]);
  }
  return amax;
}

// vector u of q stored (whole: one vector store; else the elements before cols)
template <class Cfg>
CKGEN_DEVICE void quant_store(typename Cfg::TY* yr, bool whole, long long col, long long cols,
                              const float (&o)[Cfg::kVec], float qmul) {
  using TY = typename Cfg::TY;
  if constexpr (IsFp8<TY>::value && Cfg::kVec % 4 == 0) {
    if (whole) {  // two codes per conversion (fp8x2_bits), stored as kVec / 4 words
      vec<uint32_t, Cfg::kVec / 4> w;
#pragma unroll
      for (int i = 0; i < Cfg::kVec / 4; ++i)
        w.v[i] = fp8x2_bits<TY>(o[4 * i] * qmul, o[4 * i + 1] * qmul) |
                 (fp8x2_bits<TY>(o[4 * i + 2] * qmul, o[4 * i + 3] * qmul) << 16);
      gstore(reinterpret_cast<vec<uint32_t, Cfg::kVec / 4>*>(yr + col), w);
      return;
    }
  }
  vec<TY, Cfg::kVec> out;
#pragma unroll
  for (int e = 0; e < Cfg::kVec; ++e) out.v[e] = from_float<TY>(o[e] * qmul);
  if (whole) {
    gstore(reinterpret_cast<vec<TY, Cfg::kVec>*>(yr + col), out);
  } else {
#pragma unroll
    for (int e = 0; e < Cfg::kVec; ++e)
      if (col + e < cols) gstore(yr + col + e, out.v[e]);
  }
}

// vector u of an MX q stored: fp4 pairs packed two per byte (whole: one vector store; else the pairs before cols),
// fp8 as quant_store with the power-of-two multiplier
template <class Cfg>
CKGEN_DEVICE void mx_store(typename Cfg::TY* yr, bool whole, long long col, long long cols,
                           const float (&o)[Cfg::kVec], float mul) {
  if constexpr (IsSame<typename Cfg::TY, fp4x2_e2m1fn>::value) {
    fp4_store<Cfg::kVec>(reinterpret_cast<uint8_t*>(yr) + col / 2, cols - col, whole, o, mul);
  } else {
    quant_store<Cfg>(yr, whole, col, cols, o, mul);
  }
}

template <class Cfg, class TS>
CKGEN_DEVICE void elementwise_quant_forward(const typename Cfg::TA* a, const typename Cfg::TB* b,
                                            const typename Cfg::TC* c, typename Cfg::TY* y, TS* y_scale,
                                            long long rows, long long cols, long long stride_a, long long stride_b,
                                            long long stride_c, long long stride_y, int groups,
                                            long long stride_scale) {
  constexpr int kVec = Cfg::kVec, kUnroll = Cfg::kUnroll, kG = Cfg::kQuantGroup, kLanes = kG / kVec;
  constexpr bool kMx = detail::QuantMxOf<Cfg>::value;
  static_assert(kMx || QuantOut<typename Cfg::TY>::kQuant, "elementwise_quant_forward: TY is int8 or an fp8 type");
  static_assert(!kMx || (kG == 32 && kVec % 2 == 0), "kQuantMx: groups of 32, kVec even (fp4 pairs)");
  static_assert(kG % kVec == 0 && kLanes <= kPlatformWaveSize && (Cfg::kThreads * kVec) % kG == 0,
                "kQuantGroup: kVec | G, G / kVec <= the wave size, G | kThreads * kVec");
  (void)groups;
  const long long row = block_id(1);
  if (row >= rows) return;  // the workgroup's row: uniform
  const auto* ar = row_of(a, row, stride_a);
  const auto* br = row_of(Cfg::kHasB ? b : nullptr, row, stride_b);
  const auto* cr = row_of(Cfg::kHasC ? c : nullptr, row, stride_c);
  auto* yr = y + row * stride_y;  // (fp4 pairs: stride_y in bytes, as y's elements)
  TS* sr = y_scale + row * stride_scale;
  const Chunk<Cfg> ch(ar, br, cr, yr, cols);
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    float o[kVec];
    const bool whole = u < ch.full;
    float amax = quant_values<Cfg>(ch.va, ch.vb, ch.vc, ar, br, cr, u, whole, ch.col[u], cols, o);
    amax = red::group_allreduce<kLanes, red::Max>(amax);  // every thread, every u
    if (ch.col[u] >= cols) continue;
    if constexpr (kMx) {
      const int e = mx_scale_code<typename Cfg::TY>(amax);
      if (thread_id() % kLanes == 0) gstore(sr + ch.col[u] / kG, static_cast<TS>(e));
      mx_store<Cfg>(yr, whole, ch.col[u], cols, o, mx_mul(e));
    } else {
      if (thread_id() % kLanes == 0) gstore(sr + ch.col[u] / kG, quant_scale<typename Cfg::TY>(amax));
      quant_store<Cfg>(yr, whole, ch.col[u], cols, o, quant_mul<typename Cfg::TY>(amax));
    }
  }
}

}  // namespace ew
}  // namespace ckgen
