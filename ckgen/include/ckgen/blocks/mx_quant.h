// ckgen/blocks/mx_quant.h: OCP microscaling (MX v1.0) quantization of f32 values: a block of 32 values shares one
// E8M0 scale 2^(e - 127), each value is stored as an element of T (fp8_e4m3fn, fp8_e5m2, or a nibble of
// fp4x2_e2m1fn). For the op bodies that write MX outputs (element-wise, row ops); the float64 reference:
// ckgen/ir/quant.py.
//
// Contract:
//   MxElem<T>::kEmax      the largest element's exponent: 8 (e4m3fn, max 448), 15 (e5m2, max 57344), 2 (e2m1, max 6)
//   mx_scale_code<T>(amax)   e = floor(log2(amax)) - kEmax + 127, clamped to 0..254; 127 (a scale of 1) for
//                            amax == 0; 255 (NaN) for a non-finite amax
//   mx_mul(e)             2^(127 - e): the exact power of two that takes y to the element's range (NaN for 255)
//   fp4_code(x)           the E2M1 code (low 4 bits) nearest x, ties to the even code, saturating at +-6 (NaN: 6)
//   fp4_value(c)          the value of E2M1 code c (low 4 bits; the emulator's decode of fp4 operands)
//   fp4_pack<N>(v, mul)   N values (N even) as N / 2 bytes of fp4 pairs (vec<uint8_t, N / 2>): byte i =
//                         fp4_code(v[2i] * mul) | fp4_code(v[2i + 1] * mul) << 4 (the even column in the low nibble)
// q = element nearest y * mx_mul(e): fp8 through from_float (nearest even, saturating), fp4 through fp4_code.
#pragma once

#include "ckgen/blocks/fp8.h"
#include "ckgen/types.h"

namespace ckgen {

template <class T>
struct MxElem;
template <>
struct MxElem<fp8_e4m3fn> {
  static constexpr int kEmax = 8;
};
template <>
struct MxElem<fp8_e5m2> {
  static constexpr int kEmax = 15;
};
template <>
struct MxElem<fp4x2_e2m1fn> {
  static constexpr int kEmax = 2;
};

template <class T>
CKGEN_HD int mx_scale_code(float amax) {
  if (!(amax <= 3.4028235e38f)) return 255;  // NaN or inf
  if (amax == 0.0f) return 127;
  const int e = static_cast<int>((float_bits(amax) >> 23) & 0xFF) - MxElem<T>::kEmax;  // (0 for a subnormal amax)
  return e < 0 ? 0 : e > 254 ? 254 : e;
}

CKGEN_HD float mx_mul(int e) {
  if (e == 255) return bits_float(0x7FC00000u);
  return e == 254 ? bits_float(0x00400000u) : bits_float(static_cast<uint32_t>(254 - e) << 23);  // (2^-127: subnormal)
}

// E2M1 magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0..7); the midpoints between them, a tie going to the even code.
CKGEN_HD uint32_t fp4_code(float x) {
  const float a = x < 0.0f ? -x : x;
  const uint32_t m = a <= 0.25f ? 0u : a < 0.75f ? 1u : a <= 1.25f ? 2u : a < 1.75f ? 3u
                   : a <= 2.5f ? 4u : a < 3.5f ? 5u : a <= 5.0f ? 6u : 7u;  // (NaN: 7)
  return m | ((float_bits(x) >> 28) & 8u);
}

// Sign bit 3, exponent bits 2..1 (bias 1; 0 subnormal: m * 0.5), mantissa bit 0; no inf / NaN.
CKGEN_HD float fp4_value(uint32_t c) {
  const uint32_t e = (c >> 1) & 3u, m = c & 1u;
  const float mag = e == 0 ? 0.5f * static_cast<float>(m) : static_cast<float>((2u + m) << e) * 0.25f;
  return (c & 8u) ? -mag : mag;
}

template <int N>
CKGEN_HD vec<uint8_t, N / 2> fp4_pack(const float (&v)[N], float mul) {
  static_assert(N % 2 == 0, "fp4_pack: whole pairs");
  vec<uint8_t, N / 2> w;
#pragma unroll
  for (int i = 0; i < N / 2; ++i)
    w.v[i] = static_cast<uint8_t>(fp4_code(v[2 * i] * mul) | (fp4_code(v[2 * i + 1] * mul) << 4));
  return w;
}

}  // namespace ckgen
