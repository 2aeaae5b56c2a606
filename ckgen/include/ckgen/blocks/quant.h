// ckgen/blocks/quant.h: symmetric quantization of f32 values to int8 or an 8-bit float (ckgen/blocks/fp8.h) with
// an f32 scale per row or group, for the op bodies that write quantized outputs (row ops, element-wise).
//
// Contract:
//   QuantOut<T>::kQuant     T is ::int8_t or an fp8 type (fp8_e4m3fn, fp8_e5m2, fp8_e4m3fnuz, fp8_e5m2fnuz)
//   QuantOut<T>::kMax       the largest magnitude q takes: 127; 448, 57344, 240, 57344 (the fp8 max finite)
//   quant_mul<T>(amax)      the y -> q multiplier kMax / amax; 0 for amax == 0 (an all-zero group: q = 0)
//   quant_scale<T>(amax)    the scale stored beside q: amax / kMax; 1 for amax == 0 (q * scale = 0 exactly)
// q = from_float<T>(y * quant_mul<T>(amax)): nearest even, saturating (the element at amax may exceed kMax by an
// ulp of the product; from_float clamps it). The float64 reference: ckgen/ir/quant.py.
#pragma once

#include "ckgen/blocks/fp8.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {

template <class T>
struct QuantOut {
  static constexpr bool kQuant = false;
  static constexpr float kMax = 1.0f;
};
template <>
struct QuantOut< ::int8_t> {
  static constexpr bool kQuant = true;
  static constexpr float kMax = 127.0f;
};
template <class F>
struct Fp8QuantOut {
  static constexpr bool kQuant = true;
  static constexpr float kMax = Fp8Format<F>::kMax;
};
template <>
struct QuantOut<fp8_e4m3fn> : Fp8QuantOut<fp8_e4m3fn> {};
template <>
struct QuantOut<fp8_e5m2> : Fp8QuantOut<fp8_e5m2> {};
template <>
struct QuantOut<fp8_e4m3fnuz> : Fp8QuantOut<fp8_e4m3fnuz> {};
template <>
struct QuantOut<fp8_e5m2fnuz> : Fp8QuantOut<fp8_e5m2fnuz> {};

template <class T>
CKGEN_DEVICE float quant_mul(float amax) {
  return amax > 0.0f ? QuantOut<T>::kMax / amax : 0.0f;
}

template <class T>
CKGEN_DEVICE float quant_scale(float amax) {
  return amax > 0.0f ? amax / QuantOut<T>::kMax : 1.0f;
}

}  // namespace ckgen
