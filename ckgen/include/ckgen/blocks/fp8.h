// ckgen/blocks/fp8.h: the four 8-bit float element types and their exact conversions (platform layer).
//
// Types (one byte of storage each; the encoding is part of the type, never a run-time flag):
//   fp8_e4m3fn    OCP E4M3: bias 7, no infinities, NaN only S.1111.111, -0 exists, max finite 448.
//   fp8_e5m2      OCP E5M2: bias 15, IEEE-like (S.11111.00 = inf, S.11111.xx = NaN), max finite 57344.
//   fp8_e4m3fnuz  FNUZ E4M3: bias 8, max finite 240, one NaN (0x80), no -0, no inf.
//   fp8_e5m2fnuz  FNUZ E5M2: bias 16, max finite 57344, one NaN (0x80), no -0, no inf.
// (OCP: gfx950 and NVIDIA sm_89+; FNUZ: gfx942. The targets table says which encoding each target's fp8
// hardware uses: Target.fp8_encoding, ckgen/targets.)
//
// Contract:
//   to_float(x)         exact (every fp8 value is a float; NaN codes give a NaN, e5m2's infinities +-inf).
//   from_float<T>(f)    round to nearest, ties to even, SATURATING: a finite |f| above the largest finite value and
//                       +-inf give +-max finite (the serving convention: vLLM / SGLang quantizers clamp to
//                       +-max, and NVIDIA's cvt .satfinite does the same); NaN gives a NaN (0x7F for OCP, 0x80
//                       for FNUZ); FNUZ has no -0, so -0 and negative values that round to 0 give 0x00.
//   fp8_bits(x)         the code; fp8_from_bits<T>(u) the element of a code.
//   fp8x2_bits<T>(a, b) from_float of two floats, their codes in bits 0-7 and 8-15 (CUDA: one packed cvt).
//   fp8x2_to_floats<T, kHigh>(w, a, b)  to_float of the two codes in w's low (kHigh: high) 16 bits (one packed cvt
//                       on AMD's native encoding and CUDA's OCP types).
//   IsFp8<T>::value     T is one of the four types.
//
// Hardware: on AMD, when the kernel source defines the target's native encoding (CKGEN_FP8_NATIVE_FNUZ or
// CKGEN_FP8_NATIVE_OCP, from ckgen.targets.device_defines), the types of that encoding convert with
// v_cvt_pk_{fp8,bf8}_f32 (after a NaN-preserving clamp to +-max) and v_cvt_f32_{fp8,bf8}; on NVIDIA the OCP
// types use cuda_fp8.h (__NV_SATFINITE). Everything else (the emulator, the other encoding) runs the bit code
// below, which tests/include/test_fp8.py checks exhaustively against a float64 reference.
#pragma once

#include "ckgen/types.h"

#if defined(__CUDACC__)
#include <cuda_fp8.h>
#endif

namespace ckgen {

// (the four storage structs live in types.h, which host code includes too)

// The parameters of a format. kMaxCode: the largest finite positive code (kMax its value); kNanCode: the NaN
// from_float gives.
template <class T>
struct Fp8Format;
template <>
struct Fp8Format<fp8_e4m3fn> {
  static constexpr int kExp = 4, kMan = 3, kBias = 7;
  static constexpr bool kFnuz = false, kInf = false, kE5 = false;
  static constexpr uint32_t kMaxCode = 0x7E, kNanCode = 0x7F;
  static constexpr float kMax = 448.0f;  // the largest finite value (the code kMaxCode)
};
template <>
struct Fp8Format<fp8_e5m2> {
  static constexpr int kExp = 5, kMan = 2, kBias = 15;
  static constexpr bool kFnuz = false, kInf = true, kE5 = true;
  static constexpr uint32_t kMaxCode = 0x7B, kNanCode = 0x7F;
  static constexpr float kMax = 57344.0f;  // the largest finite value (the code kMaxCode)
};
template <>
struct Fp8Format<fp8_e4m3fnuz> {
  static constexpr int kExp = 4, kMan = 3, kBias = 8;
  static constexpr bool kFnuz = true, kInf = false, kE5 = false;
  static constexpr uint32_t kMaxCode = 0x7F, kNanCode = 0x80;
  static constexpr float kMax = 240.0f;  // the largest finite value (the code kMaxCode)
};
template <>
struct Fp8Format<fp8_e5m2fnuz> {
  static constexpr int kExp = 5, kMan = 2, kBias = 16;
  static constexpr bool kFnuz = true, kInf = false, kE5 = true;
  static constexpr uint32_t kMaxCode = 0x7F, kNanCode = 0x80;
  static constexpr float kMax = 57344.0f;  // the largest finite value (the code kMaxCode)
};

template <class T>
CKGEN_HD uint32_t fp8_bits(T x) {
  return x.bits;
}
template <class T>
CKGEN_HD T fp8_from_bits(uint32_t u) {
  T t;
  t.bits = static_cast<uint8_t>(u);
  return t;
}

namespace fp8_detail {

// x >> s rounded to nearest, ties to even (1 <= s <= 31, x < 2^31).
CKGEN_HD uint32_t shift_rne(uint32_t x, int s) {
  return (x + (1u << (s - 1)) - 1u + ((x >> s) & 1u)) >> s;
}

// The exact value of a code (bit code).
template <class T>
CKGEN_HD float decode(uint32_t u) {
  using F = Fp8Format<T>;
  const uint32_t sign = u & 0x80u, mag = u & 0x7Fu;
  const uint32_t e = mag >> F::kMan, m = mag & ((1u << F::kMan) - 1u);
  const uint32_t sbit = sign << 24;
  if (F::kFnuz && u == 0x80u) return bits_float(0x7FC00000u);
  if (!F::kFnuz && e == (1u << F::kExp) - 1u && (F::kInf || m == (1u << F::kMan) - 1u)) {
    if (F::kInf && m == 0) return bits_float(sbit | 0x7F800000u);
    return bits_float(sbit | 0x7FC00000u);
  }
  if (e == 0) {  // subnormal: m * 2^(1 - bias - kMan); the float is normal (exponent >= -18)
    if (m == 0) return bits_float(sbit);
    int k = 0;  // normalize: m = 1.f * 2^k
    while (!(m >> (k + 1) == 0)) ++k;
    const uint32_t frac = (m - (1u << k)) << (23 - k);
    const int exp = k + 1 - F::kBias - F::kMan + 127;
    return bits_float(sbit | (static_cast<uint32_t>(exp) << 23) | frac);
  }
  const uint32_t exp = e - F::kBias + 127;
  return bits_float(sbit | (exp << 23) | (m << (23 - F::kMan)));
}

// float -> code: round to nearest even, saturate to +-max finite (inf too), NaN -> kNanCode (bit code).
template <class T>
CKGEN_HD uint32_t encode(float f) {
  using F = Fp8Format<T>;
  const uint32_t u = float_bits(f);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return F::kNanCode;
  uint32_t mag;
  const int ef = static_cast<int>(a >> 23);
  if (a == 0x7F800000u) {
    mag = F::kMaxCode;
  } else if (ef == 0) {
    mag = 0;  // float subnormals are far below half the smallest fp8 subnormal
  } else {
    const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;  // 1.f * 2^23
    const int e = ef - 127 + F::kBias;                  // the fp8 exponent field if normal
    const int shift = 23 - F::kMan + (e >= 1 ? 0 : 1 - e);
    if (shift >= 25) {
      mag = 0;  // below half the smallest subnormal (mant < 2^24 <= 2^(shift - 1))
    } else {
      // normal: (e - 1) * 2^kMan + rounded 1.m (a carry to 2^(kMan+1) steps the exponent); subnormal: the
      // rounded significand is the code itself (reaching 2^kMan gives the smallest normal).
      const uint32_t r = shift_rne(mant, shift);
      mag = e >= 1 ? (static_cast<uint32_t>(e - 1) << F::kMan) + r : r;
    }
    if (mag > F::kMaxCode) mag = F::kMaxCode;
  }
  if (F::kFnuz && mag == 0) return 0u;  // no negative zero
  return sign | mag;
}

}  // namespace fp8_detail

// ---------------------------------------------------------------- hardware paths
#if defined(__AMDGCN__) && (defined(CKGEN_FP8_NATIVE_FNUZ) || defined(CKGEN_FP8_NATIVE_OCP))
namespace fp8_detail {
#if defined(CKGEN_FP8_NATIVE_FNUZ)
template <class T>
struct Native {
  static constexpr bool value = IsSame<T, fp8_e4m3fnuz>::value || IsSame<T, fp8_e5m2fnuz>::value;
};
#else
template <class T>
struct Native {
  static constexpr bool value = IsSame<T, fp8_e4m3fn>::value || IsSame<T, fp8_e5m2>::value;
};
#endif
template <class T>
CKGEN_HD float max_finite() {
  return decode<T>(Fp8Format<T>::kMaxCode);
}
}  // namespace fp8_detail
#endif

template <class T>
CKGEN_HD float fp8_to_float(T x) {
#if defined(__AMDGCN__) && (defined(CKGEN_FP8_NATIVE_FNUZ) || defined(CKGEN_FP8_NATIVE_OCP))
  if constexpr (fp8_detail::Native<T>::value) {
    if constexpr (Fp8Format<T>::kE5) return __builtin_amdgcn_cvt_f32_bf8(static_cast<int>(x.bits), 0);
    else return __builtin_amdgcn_cvt_f32_fp8(static_cast<int>(x.bits), 0);
  }
#elif defined(__CUDA_ARCH__)
  if constexpr (!Fp8Format<T>::kFnuz) {
    const __half_raw h = __nv_cvt_fp8_to_halfraw(x.bits, Fp8Format<T>::kE5 ? __NV_E5M2 : __NV_E4M3);
    return __half2float(__half(h));
  }
#endif
  return fp8_detail::decode<T>(x.bits);
}

template <class T>
CKGEN_HD T fp8_from_float(float f) {
#if defined(__AMDGCN__) && (defined(CKGEN_FP8_NATIVE_FNUZ) || defined(CKGEN_FP8_NATIVE_OCP))
  if constexpr (fp8_detail::Native<T>::value) {
    // v_cvt_pk_*_f32 rounds to nearest even; clamp first (a select keeps NaN a NaN) so that it saturates.
    const float mx = fp8_detail::max_finite<T>();
    const float c = __builtin_amdgcn_fmed3f(f, -mx, mx);
    const float in = f != f ? f : c;
    const int w = Fp8Format<T>::kE5 ? __builtin_amdgcn_cvt_pk_bf8_f32(in, in, 0, false)
                                    : __builtin_amdgcn_cvt_pk_fp8_f32(in, in, 0, false);
    const uint32_t code = static_cast<uint32_t>(w) & 0xFFu;
    // FNUZ has no -0: whatever the converter gives a -0 or a negative value rounding to 0, 0x80 (the NaN) is
    // only right for a NaN input
    if constexpr (Fp8Format<T>::kFnuz) return fp8_from_bits<T>(code == 0x80u && f == f ? 0u : code);
    return fp8_from_bits<T>(code);
  }
#elif defined(__CUDA_ARCH__)
  if constexpr (!Fp8Format<T>::kFnuz)
    return fp8_from_bits<T>(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, Fp8Format<T>::kE5 ? __NV_E5M2 : __NV_E4M3));
#endif
  return fp8_from_bits<T>(fp8_detail::encode<T>(f));
}

// Whether T is one of the four fp8 types.
template <class T>
struct IsFp8 {
  static constexpr bool value = IsSame<T, fp8_e4m3fn>::value || IsSame<T, fp8_e5m2>::value ||
                                IsSame<T, fp8_e4m3fnuz>::value || IsSame<T, fp8_e5m2fnuz>::value;
};

// Two floats -> their codes in the low 16 bits (a in bits 0-7, b in bits 8-15), each exactly fp8_from_float<T>'s:
// on CUDA one cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 for the OCP types (cuda_fp8.h's __nv_cvt_float2_to_fp8x2, which
// puts its .x in the low byte), elsewhere two conversions.
template <class T>
CKGEN_HD uint32_t fp8x2_bits(float a, float b) {
#if defined(__CUDA_ARCH__)
  if constexpr (!Fp8Format<T>::kFnuz)
    return static_cast<uint32_t>(__nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE,
                                                          Fp8Format<T>::kE5 ? __NV_E5M2 : __NV_E4M3));
#endif
  return fp8_bits(fp8_from_float<T>(a)) | (fp8_bits(fp8_from_float<T>(b)) << 8);
}

// Two codes of w as floats, each exactly fp8_to_float's: bits 0-7 and 8-15 (kHigh: 16-23 and 24-31). One packed
// conversion where the target's hardware has one for T (AMD: v_cvt_pk_f32_{fp8,bf8}, which selects the word half;
// CUDA, OCP types: cvt.rn.f16x2.{e4m3x2,e5m2x2}, exact, then two exact widenings), elsewhere two decodes.
template <class T, bool kHigh>
CKGEN_HD void fp8x2_to_floats(uint32_t w, float& a, float& b) {
#if defined(__AMDGCN__) && (defined(CKGEN_FP8_NATIVE_FNUZ) || defined(CKGEN_FP8_NATIVE_OCP))
  if constexpr (fp8_detail::Native<T>::value) {
    const auto v = Fp8Format<T>::kE5 ? __builtin_amdgcn_cvt_pk_f32_bf8(static_cast<int>(w), kHigh)
                                     : __builtin_amdgcn_cvt_pk_f32_fp8(static_cast<int>(w), kHigh);
    a = v[0];
    b = v[1];
    return;
  }
#elif defined(__CUDA_ARCH__)
  if constexpr (!Fp8Format<T>::kFnuz) {
    const __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(kHigh ? w >> 16 : w & 0xFFFFu),
                                                    Fp8Format<T>::kE5 ? __NV_E5M2 : __NV_E4M3);
    const float2 f = __half22float2(__half2(r));
    a = f.x;
    b = f.y;
    return;
  }
#endif
  const uint32_t s = kHigh ? w >> 16 : w;
  a = fp8_detail::decode<T>(s & 0xFFu);
  b = fp8_detail::decode<T>((s >> 8) & 0xFFu);
}

// The element-type API of types.h (to_float / from_float<T>) for the fp8 types.
CKGEN_HD float to_float(fp8_e4m3fn x) { return fp8_to_float(x); }
CKGEN_HD float to_float(fp8_e5m2 x) { return fp8_to_float(x); }
CKGEN_HD float to_float(fp8_e4m3fnuz x) { return fp8_to_float(x); }
CKGEN_HD float to_float(fp8_e5m2fnuz x) { return fp8_to_float(x); }

template <>
struct FromFloat<fp8_e4m3fn> {
  static CKGEN_HD fp8_e4m3fn cvt(float f) { return fp8_from_float<fp8_e4m3fn>(f); }
};
template <>
struct FromFloat<fp8_e5m2> {
  static CKGEN_HD fp8_e5m2 cvt(float f) { return fp8_from_float<fp8_e5m2>(f); }
};
template <>
struct FromFloat<fp8_e4m3fnuz> {
  static CKGEN_HD fp8_e4m3fnuz cvt(float f) { return fp8_from_float<fp8_e4m3fnuz>(f); }
};
template <>
struct FromFloat<fp8_e5m2fnuz> {
  static CKGEN_HD fp8_e5m2fnuz cvt(float f) { return fp8_from_float<fp8_e5m2fnuz>(f); }
};

}  // namespace ckgen
