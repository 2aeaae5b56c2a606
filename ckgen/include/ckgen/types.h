// ckgen/types.h: platform-independent element types, conversions and vector types.
//
// Contract (docs/design.md, "platform API"):
//   ckgen::f16      IEEE binary16 (_Float16; CUDA: __half).
//   ckgen::bf16     16-bit storage struct (the high half of an IEEE binary32); from_float rounds to
//                   nearest even and keeps NaN a (quiet) NaN.
//   ckgen::fp8_e4m3fn, fp8_e5m2, fp8_e4m3fnuz, fp8_e5m2fnuz  8-bit float storage structs (one code each); their
//                   conversions are in ckgen/blocks/fp8.h.
//   to_float(x)     any element type -> float (exact for f16, bf16, int8; int32 rounds as float does).
//   from_float<T>   float -> T: f16/bf16 round to nearest even; int8_t/int32_t round to nearest even
//                   and saturate, NaN -> 0.
//   saturate_int<T>(long long) exact integer -> int8_t/int32_t with saturation (integer epilogues).
//   pack2<T>(lo, hi) two floats -> one word of two f16/bf16 (cvt.rn.*x2 on NVIDIA devices).
//   ext_vector_type typedefs (clang only: host clang++ for emu, amdgcn device); not under nvcc.
//   ckgen::vec<T, N> an aligned array used for vector global / LDS accesses.
//
// This header is included by every platform header and must stay free of platform macros other than
// the compiler guards below. It defines CKGEN_HD (host+device inline) for its own functions.
#pragma once

#if defined(__HIPCC_RTC__)
// hiprtc's built-in header already typedefs int32_t, uint32_t, int64_t, uint64_t (as int / long long);
// the host's stdint.h would conflict with those.
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
#else
#include <stdint.h>
#endif

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define CKGEN_HD __host__ __device__ inline
#elif defined(__HIP__)
// -nogpuinc: no HIP headers, so spell the attributes out.
#define CKGEN_HD __attribute__((host, device)) inline
#else
#define CKGEN_HD inline
#endif

namespace ckgen {

// ---------------------------------------------------------------- f16
#if defined(__CUDACC__)
using f16 = __half;
CKGEN_HD float to_float(f16 x) { return __half2float(x); }
#else
using f16 = _Float16;
CKGEN_HD float to_float(f16 x) { return static_cast<float>(x); }
#endif

// ---------------------------------------------------------------- bf16
struct bf16 {
  uint16_t bits;
};

// 8-bit floats: storage only here (host code sees these types in kernel signatures); ckgen/blocks/fp8.h has the
// formats and the conversions.
struct fp8_e4m3fn {
  uint8_t bits;
};
struct fp8_e5m2 {
  uint8_t bits;
};
struct fp8_e4m3fnuz {
  uint8_t bits;
};
struct fp8_e5m2fnuz {
  uint8_t bits;
};
// Two OCP FP4 (E2M1) values in one byte, the even index in the low nibble: storage only (the block-scaled MFMA
// takes the bytes as they are; the emulator decodes them).
struct fp4x2_e2m1fn {
  uint8_t bits;
};

CKGEN_HD uint32_t float_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}
CKGEN_HD float bits_float(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

CKGEN_HD float to_float(bf16 x) { return bits_float(static_cast<uint32_t>(x.bits) << 16); }
CKGEN_HD float to_float(float x) { return x; }
CKGEN_HD float to_float(::int8_t x) { return static_cast<float>(x); }
CKGEN_HD float to_float(::int32_t x) { return static_cast<float>(x); }

CKGEN_HD bf16 bf16_from_float(float f) {
  const uint32_t u = float_bits(f);
  // NaN: keep sign and top payload, force quiet; else round to nearest, ties to even (inf stays inf).
  // A select, not a branch: on AMD a branch per converted element costs an exec-mask save each.
  const uint32_t nan = (u >> 16) | 0x0040u;
  const uint32_t rne = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  bf16 r;
  r.bits = static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rne);
  return r;
}

// Round to nearest even without libm (v_rndne_f32 on amdgcn).
CKGEN_HD float rint_f32(float x) { return __builtin_rintf(x); }

template <class T>
CKGEN_HD T saturate_int(long long v) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 4, "saturate_int: int8_t or int32_t");
  constexpr long long lo = sizeof(T) == 1 ? -128LL : -2147483648LL;
  constexpr long long hi = sizeof(T) == 1 ? 127LL : 2147483647LL;
  return static_cast<T>(v < lo ? lo : (v > hi ? hi : v));
}

template <class T>
struct FromFloat;

template <>
struct FromFloat<float> {
  static CKGEN_HD float cvt(float f) { return f; }
};
template <>
struct FromFloat<f16> {
#if defined(__CUDACC__)
  static CKGEN_HD f16 cvt(float f) { return __float2half_rn(f); }
#else
  static CKGEN_HD f16 cvt(float f) { return static_cast<f16>(f); }
#endif
};
template <>
struct FromFloat<bf16> {
  static CKGEN_HD bf16 cvt(float f) { return bf16_from_float(f); }
};
template <>
struct FromFloat< ::int8_t> {
  static CKGEN_HD ::int8_t cvt(float f) {
    if (!(f == f)) return 0;
    float r = rint_f32(f);
    r = r < -128.0f ? -128.0f : (r > 127.0f ? 127.0f : r);
    return static_cast<::int8_t>(static_cast<int>(r));
  }
};
template <>
struct FromFloat< ::int32_t> {
  static CKGEN_HD ::int32_t cvt(float f) {
    if (!(f == f)) return 0;
    float r = rint_f32(f);
    // 2147483648.0f is the first float above INT32_MAX.
    if (r >= 2147483648.0f) return 2147483647;
    if (r < -2147483648.0f) return -2147483647 - 1;
    return static_cast<::int32_t>(r);
  }
};

template <class T>
CKGEN_HD T from_float(float f) {
  return FromFloat<T>::cvt(f);
}

// The zero of an element type (bf16 and f16 need no constructor call from int).
template <class T>
CKGEN_HD T zero() {
  T z;
  __builtin_memset(&z, 0, sizeof(T));
  return z;
}

// Type traits without std headers (device code): Select<c, A, B>::type is A when c, else B; IsSame<A, B>.
template <bool kCond, class A, class B>
struct Select {
  using type = A;
};
template <class A, class B>
struct Select<false, A, B> {
  using type = B;
};
template <class A, class B>
struct IsSame {
  static constexpr bool value = false;
};
template <class A>
struct IsSame<A, A> {
  static constexpr bool value = true;
};
// A compile-time bool as a type (to hand a generic lambda a constant: f(BoolConst<true>{})).
template <bool B>
struct BoolConst {
  static constexpr bool value = B;
};

// An optional member of a body's Cfg: CKGEN_CFG_OPTIONAL(Trait, kMember, Type, fallback) declares Trait<C>, whose
// value is C::kMember when the Cfg C declares it, else `fallback` (an expression that may name C).
#define CKGEN_CFG_OPTIONAL(Trait, member, Type, fallback)                  \
  template <class C, class = void>                                         \
  struct Trait {                                                           \
    static constexpr Type value = fallback;                                \
  };                                                                       \
  template <class C>                                                       \
  struct Trait<C, decltype(void(C::member))> {                             \
    static constexpr Type value = C::member;                               \
  }

// A value the compiler cannot see through (AMD: pinned in a VGPR at this point, so that what is derived from it
// is computed after it and not hoisted as scalar state; elsewhere the identity).
template <class T>
CKGEN_HD T opaque(T x) {
#if defined(__AMDGCN__)
  __asm__ volatile("" : "+v"(x));
#endif
  return x;
}

// Bit-cast between equally sized trivially copyable types (no std headers on device).
template <class To, class From>
CKGEN_HD To bit_cast(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast: sizes differ");
  To t;
  __builtin_memcpy(&t, &f, sizeof(To));
  return t;
}

// Two floats -> one 32-bit word of two 16-bit T (f16 or bf16), lo in bits 0..15, each rounded to nearest even as
// from_float rounds (a NaN stays a NaN). NVIDIA devices: one cvt.rn.{bf16,f16}x2.f32; elsewhere two from_float.
template <class T>
CKGEN_HD uint32_t pack2(float lo, float hi) {
  static_assert(sizeof(T) == 2, "pack2: a 16-bit element type (f16, bf16)");
#if defined(__CUDA_ARCH__)
  uint32_t r;
  if constexpr (IsSame<T, bf16>::value) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));  // the first source -> the upper half
  } else {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  }
  return r;
#else
  return static_cast<uint32_t>(bit_cast<uint16_t>(from_float<T>(lo))) |
         (static_cast<uint32_t>(bit_cast<uint16_t>(from_float<T>(hi))) << 16);
#endif
}

// ---------------------------------------------------------------- vectors
namespace detail {
constexpr int vec_align(int bytes) {
  // largest power of two dividing bytes, at most 16
  return (bytes % 16 == 0) ? 16 : (bytes % 8 == 0) ? 8 : (bytes % 4 == 0) ? 4 : (bytes % 2 == 0) ? 2 : 1;
}
}  // namespace detail

// An aligned array of N elements: a load/store of one vec<T, N> is one vector memory instruction
// (e.g. vec<f16, 8> -> global_load_dwordx4 / ds_read_b128) when the address is so aligned.
template <class T, int N>
struct alignas(detail::vec_align(static_cast<int>(sizeof(T)) * N)) vec {
  T v[N];
};

#if defined(__clang__) && !defined(__CUDACC__)
// clang ext_vector_type operand types of the matrix builtins.
typedef _Float16 half4_t __attribute__((ext_vector_type(4)));
typedef _Float16 half8_t __attribute__((ext_vector_type(8)));
typedef short short2_t __attribute__((ext_vector_type(2)));
typedef short short4_t __attribute__((ext_vector_type(4)));
typedef short short8_t __attribute__((ext_vector_type(8)));
typedef float float2_t __attribute__((ext_vector_type(2)));
typedef float float4_t __attribute__((ext_vector_type(4)));
typedef float float16_t __attribute__((ext_vector_type(16)));
typedef float float32_t __attribute__((ext_vector_type(32)));
typedef int int2_t __attribute__((ext_vector_type(2)));
typedef int int4_t __attribute__((ext_vector_type(4)));
// WARNING: ckgen::int16_t and ckgen::int32_t are VECTORS of 16 / 32 ints (integer MFMA accumulators,
// names as in the targets table), not the scalar ::int16_t / ::int32_t. Inside namespace ckgen always
// spell the scalar types with the leading :: (::int8_t, ::int16_t, ::int32_t).
typedef int int16_t __attribute__((ext_vector_type(16)));
typedef int int32_t __attribute__((ext_vector_type(32)));
typedef double double4_t __attribute__((ext_vector_type(4)));
typedef int i32x8_t __attribute__((ext_vector_type(8)));  // 32 fp8 bytes: gfx950 scaled MFMA operands
#if __clang_major__ >= 17
typedef __bf16 bf16x8_t __attribute__((ext_vector_type(8)));  // gfx950 bf16 MFMA operands
#endif
#endif

}  // namespace ckgen
