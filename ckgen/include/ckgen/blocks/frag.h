// ckgen/blocks/frag.h: register fragments of vectors as they lie in memory, and their vector accesses (the row ops'
// and the GEMM's vector body's data path).
//
//   Frag<T, kVec>           kVec elements of T packed in 32-bit words (w[]), as they lie in memory: two 16-bit
//                           elements per word, four 8-bit. A vector of 8 bf16 costs 4 registers whatever path loaded it
//                           (a struct of 8 uint16 had ptxas keep 8 registers, one per element).
//   elem(f, e)              element e as f32 (bf16: one shift or and; f16: one convert; f32: free; fp8: to_float)
//   elem_bits(f, e)         element e's raw bits; from_elem_bits builds a Frag from kVec raw elements
//   to_floats(f, out)       every element as f32 (fp8: two per packed conversion, fp8x2_to_floats)
//   vec_ok<T, kVec>(p, ld)  whether every kVec-element vector of every row of (p, ld) is aligned for one access
//   load_vector(p)          one vector access of kVec elements at p (aligned: vec_ok)
//   load_vector_l1<.., P>   the same with an L1 policy (CUDA, 16-byte vectors; AMD kL1Stream; else load_vector)
//   load_zero_filled(p, n, ok)  n valid elements: one access when whole and aligned, else element loads, zeros past n
//   store_vector(p, f)      one vector store of f at p (aligned)
#pragma once

#include "ckgen/blocks/fp8.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {
namespace blk {

template <class T, int kVec>
struct Frag {
  static constexpr int kBytes = kVec * static_cast<int>(sizeof(T));
  static constexpr int kWords = (kBytes + 3) / 4;
  uint32_t w[kWords];
};

// The raw bits of one element, zero-extended.
template <class T>
CKGEN_DEVICE uint32_t bits_of(T v) {
  if constexpr (sizeof(T) == 4) return bit_cast<uint32_t>(v);
  else if constexpr (sizeof(T) == 2) return static_cast<uint32_t>(bit_cast<uint16_t>(v));
  else return static_cast<uint32_t>(bit_cast<uint8_t>(v));
}
template <class T>
CKGEN_DEVICE T from_bits(uint32_t b) {
  if constexpr (sizeof(T) == 4) return bit_cast<T>(b);
  else if constexpr (sizeof(T) == 2) return bit_cast<T>(static_cast<uint16_t>(b));
  else return bit_cast<T>(static_cast<uint8_t>(b));
}

// Element e's bits (e a constant after unrolling).
template <class T, int kVec>
CKGEN_DEVICE uint32_t elem_bits(const Frag<T, kVec>& f, int e) {
  constexpr int kB = static_cast<int>(sizeof(T));
  if constexpr (kB == 4) {
    return f.w[e];
  } else {
    constexpr int kPer = 4 / kB;
    return (f.w[e / kPer] >> (8 * kB * (e % kPer))) & ((1u << (8 * kB)) - 1u);
  }
}

template <class T, int kVec>
CKGEN_DEVICE float elem(const Frag<T, kVec>& f, int e) {
  if constexpr (__is_same(T, bf16)) {
    const uint32_t word = f.w[e / 2];
    return bits_float(e % 2 ? (word & 0xffff0000u) : (word << 16));
  } else if constexpr (__is_same(T, float)) {
    return bits_float(f.w[e]);
  } else {
    return to_float(from_bits<T>(elem_bits(f, e)));
  }
}

// Every element of f as f32: elem() each, but fp8 two per conversion (ckgen/blocks/fp8.h, fp8x2_to_floats).
template <class T, int kVec>
CKGEN_DEVICE void to_floats(const Frag<T, kVec>& f, float (&out)[kVec]) {
  if constexpr (IsFp8<T>::value && kVec % 4 == 0) {
#pragma unroll
    for (int i = 0; i < kVec / 4; ++i) {
      fp8x2_to_floats<T, false>(f.w[i], out[4 * i], out[4 * i + 1]);
      fp8x2_to_floats<T, true>(f.w[i], out[4 * i + 2], out[4 * i + 3]);
    }
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e) out[e] = elem(f, e);
  }
}

template <class T, int kVec>
CKGEN_DEVICE Frag<T, kVec> from_elem_bits(const uint32_t (&b)[kVec]) {
  Frag<T, kVec> f;
  constexpr int kB = static_cast<int>(sizeof(T));
#pragma unroll
  for (int i = 0; i < Frag<T, kVec>::kWords; ++i) f.w[i] = 0u;
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    if constexpr (kB == 4) f.w[e] = b[e];
    else f.w[e / (4 / kB)] |= b[e] << (8 * kB * (e % (4 / kB)));
  }
  return f;
}

// Whether every kVec-element vector of every row of (base, stride) is aligned for one vector access.
template <class T, int kVec>
CKGEN_DEVICE bool vec_ok(const T* base, long long stride) {
  constexpr long long a = alignof(vec<T, kVec>);
  return reinterpret_cast<unsigned long long>(base) % a == 0 && (stride * static_cast<long long>(sizeof(T))) % a == 0;
}

template <class T, int kVec>
CKGEN_DEVICE Frag<T, kVec> load_vector(const T* p) {
  using F = Frag<T, kVec>;
  F f;
  if constexpr (F::kBytes % 4 == 0) {
    const vec<uint32_t, F::kWords> v = gload(reinterpret_cast<const vec<uint32_t, F::kWords>*>(p));
#pragma unroll
    for (int i = 0; i < F::kWords; ++i) f.w[i] = v.v[i];
  } else {
    const vec<T, kVec> v = gload(reinterpret_cast<const vec<T, kVec>*>(p));
    uint32_t b[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) b[e] = bits_of(v.v[e]);
    f = from_elem_bits<T, kVec>(b);
  }
  return f;
}

// load_vector with an L1 policy (CUDA, 16-byte vectors; elsewhere load_vector): kL1Default, kL1Bypass (ld.global.cg:
// the L2 only), kL1EvictLast (kept in the L1 before other lines; bench/rowops_persistent_probe.cu's experiments),
// kL1Stream (read once: the non-coherent path without an L1 line, ld.global.nc.L1::no_allocate; only for memory no
// thread of the launch writes; on AMD a nontemporal load, global_load_dwordx4 ... nt, as streaming GEMV kernels for
// CDNA read their weights), kL1ReadOnly (read by many threads, written by none of the launch: the non-coherent path
// with its L1 line, ld.global.nc; on AMD a plain load).
enum L1Policy { kL1Default = 0, kL1Bypass = 1, kL1EvictLast = 2, kL1Stream = 3, kL1ReadOnly = 4 };
template <class T, int kVec, int kPolicy>
CKGEN_DEVICE Frag<T, kVec> load_vector_l1(const T* p) {
  using F = Frag<T, kVec>;
  static_assert(kPolicy >= kL1Default && kPolicy <= kL1ReadOnly, "load_vector_l1: an L1Policy");
#if defined(CKGEN_PLATFORM_CUDA)
  if constexpr (F::kBytes == 16 && kPolicy != kL1Default) {
    F f;
    if constexpr (kPolicy == kL1Bypass)
      asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(f.w[0]), "=r"(f.w[1]), "=r"(f.w[2]), "=r"(f.w[3]) : "l"(p));
    else if constexpr (kPolicy == kL1EvictLast)
      asm volatile("ld.global.L1::evict_last.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(f.w[0]), "=r"(f.w[1]), "=r"(f.w[2]), "=r"(f.w[3]) : "l"(p));
    else if constexpr (kPolicy == kL1ReadOnly)
      asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(f.w[0]), "=r"(f.w[1]), "=r"(f.w[2]), "=r"(f.w[3]) : "l"(p));
    else
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(f.w[0]), "=r"(f.w[1]), "=r"(f.w[2]), "=r"(f.w[3]) : "l"(p));
    return f;
  }
#elif defined(__AMDGCN__)
  if constexpr (F::kBytes == 16 && kPolicy == kL1Stream) {  // a nontemporal load (the nt bit): not kept in the caches
    const int4_t v = __builtin_nontemporal_load(reinterpret_cast<const int4_t*>(p));
    F f;
#pragma unroll
    for (int i = 0; i < 4; ++i) f.w[i] = static_cast<uint32_t>(v[i]);
    return f;
  }
#endif
  return load_vector<T, kVec>(p);
}

// The kVec elements at p of which the first n (<= kVec) are valid: one access (load_vector_l1 with kPolicy) when
// n == kVec and the vector is aligned (ok), else one load per valid element and zeros past them; nothing outside
// [p, p + n) is read.
template <class T, int kVec, int kPolicy = kL1Default>
CKGEN_DEVICE Frag<T, kVec> load_zero_filled(const T* p, int n, bool ok) {
  if (n >= kVec && ok) return load_vector_l1<T, kVec, kPolicy>(p);
  uint32_t b[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) b[e] = e < n ? bits_of(gload(p + e)) : 0u;
  return from_elem_bits<T, kVec>(b);
}

template <class T, int kVec>
CKGEN_DEVICE void store_vector(T* p, const Frag<T, kVec>& f) {
  using F = Frag<T, kVec>;
  if constexpr (F::kBytes % 4 == 0) {
    vec<uint32_t, F::kWords> v;
#pragma unroll
    for (int i = 0; i < F::kWords; ++i) v.v[i] = f.w[i];
    gstore(reinterpret_cast<vec<uint32_t, F::kWords>*>(p), v);
  } else {
    vec<T, kVec> v;
#pragma unroll
    for (int e = 0; e < kVec; ++e) v.v[e] = from_bits<T>(elem_bits(f, e));
    gstore(reinterpret_cast<vec<T, kVec>*>(p), v);
  }
}

}  // namespace blk
}  // namespace ckgen
