// rowops_quant.h (ckgen/ops/rowops/device): the quantized outputs of the row ops: y as int8 or as an 8-bit float
// (fp8_e4m3fn, fp8_e5m2, fp8_e4m3fnuz, fp8_e5m2fnuz: ckgen/blocks/fp8.h) with f32 scales, per row or per group of
// kQuantGroup consecutive columns of a row.
//
//   QuantOut<TOut>          (ckgen/blocks/quant.h) kQuant: TOut is int8 or an fp8 type (y is written with
//                           scales); kMax: the largest magnitude q takes (127; the fp8 max finite: 448, 57344, 240)
//   Cfg::kQuantGroup        (optional, default 0) 0: one scale per row, y_scale[row]; G > 0: one scale per G
//                           columns, y_scale[row * stride_scale + col / G] (the 1 x G group of fp8 GEMMs' block
//                           scales). Needs kVec | G, G | kVec * kRowThreads (every vector of a thread lies in one
//                           group, a group is G / kVec consecutive threads of a row) and G / kVec <= the wave size.
//   group_amax<P>(v)        the max of v over the G / kVec threads of a group (a butterfly within the wave;
//                           every thread of the row must call it: no divergence across a group)
//   quant_mul<P>(amax), quant_scale<P>(amax)   ckgen/blocks/quant.h's for TOut: kMax / amax (0 for amax == 0),
//                           amax / kMax (1 for amax == 0: the zero group dequantizes exactly)
//   Cfg::kQuantMx           (optional, default false) MX (OCP microscaling, ckgen/blocks/mx_quant.h): G = 32,
//                           TOut fp8_e4m3fn, fp8_e5m2 or fp4x2_e2m1fn (fp4 pairs), y_scale holds one E8M0 byte per
//                           group, e = mx_scale_code<TOut>(amax) (127 for an all-zero group), q = the element nearest
//                           y * mx_mul(e) (fp8: from_float<TOut>; fp4: fp4_code)
//   YPack<TOut>::value      y's values per element of TOut: 2 for fp4 pairs (fp4x2_e2m1fn: one byte holds columns
//                           2i (low nibble) and 2i + 1; y, its row stride and every column are addressed in bytes,
//                           at col / 2; kVec even, so a pair never straddles threads), else 1
//   ScaleT<Cfg>             y_scale's element type: float, or uint8_t (E8M0) with kQuantMx
//   group_scale<P>(amax)    the group's y_scale element: quant_scale<P>(amax), or the E8M0 code (kQuantMx)
//   group_mul<P>(s, amax)   the y -> q multiplier of a group whose scale element is s: quant_mul<P>(amax), or
//                           mx_mul(s) (kQuantMx: the exact power of two)
#pragma once

#include "ckgen/blocks/mx_quant.h"
#include "ckgen/blocks/mx_store.h"
#include "ckgen/blocks/quant.h"
#include "ckgen/blocks/reduce.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {
namespace rowops {

namespace detail {
CKGEN_CFG_OPTIONAL(QuantGroupOf, kQuantGroup, int, 0);
CKGEN_CFG_OPTIONAL(QuantMxOf, kQuantMx, bool, false);
}  // namespace detail

template <class Cfg>
using ScaleT = typename Select<detail::QuantMxOf<Cfg>::value, uint8_t, float>::type;

template <class T>
struct YPack {
  static constexpr int value = 1;
};
template <>
struct YPack<fp4x2_e2m1fn> {
  static constexpr int value = 2;
};

template <class P>
CKGEN_DEVICE float group_amax(float v) {
  return red::group_allreduce<P::kGroup / P::kVec, red::Max>(v);
}

template <class P>
CKGEN_DEVICE float quant_mul(float amax) {
  return ckgen::quant_mul<typename P::TOut>(amax);
}

template <class P>
CKGEN_DEVICE float quant_scale(float amax) {
  return ckgen::quant_scale<typename P::TOut>(amax);
}

template <class P>
CKGEN_DEVICE typename P::TScale group_scale(float amax) {
  if constexpr (P::kMx) return static_cast<uint8_t>(mx_scale_code<typename P::TOut>(amax));
  else return quant_scale<P>(amax);
}

template <class P>
CKGEN_DEVICE float group_mul(typename P::TScale s, float amax) {
  (void)s;
  (void)amax;
  if constexpr (P::kMx) return mx_mul(s);
  else return quant_mul<P>(amax);
}

}  // namespace rowops
}  // namespace ckgen
