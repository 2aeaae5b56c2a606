// rowops_frag.h (ckgen/ops/rowops/device): the row ops' register fragments and memory accesses
// (rowops_forward.h's data path).
//
//   Frag<T, kVec>        kVec elements of T packed in 32-bit words (w[]), as they lie in memory: two 16-bit
//                        elements per word, four int8. The tile lives in registers in this form, so a vector of
//                        8 bf16 costs 4 registers whatever path loaded it (a struct of 8 uint16 had ptxas keep 8
//                        registers, one per element, wherever a partial vector could reach it).
//   elem(f, e)           element e as f32 (bf16: one shift or and; f16: one convert; f32: free)
//   pack<T>(y)           kVec f32 -> Frag<T> rounded to nearest even (CUDA: cvt.rn.bf16x2 / f16x2, one
//                        instruction per two elements; elsewhere from_float per element); int8: from_float; fp8 on
//                        CUDA: fp8x2_bits per two elements (ckgen/blocks/fp8.h: one cvt.rn.satfinite per pair).
//   load(p, n, ok)       n valid elements (0 .. kVec) at p: one vector access when n == kVec and ok, else per
//                        element (tail modes below); nothing outside [p, p + n) is read
//   store(p, n, ok, f)   the first n elements of f
//   Tail modes (CKGEN_ROWOPS_PREDICATED_TAIL; default on under CUDA, off elsewhere; the emulator tests both):
//     predicated: element e < n at p + e, elements past n read as 0, stores of e < n only;
//     clamped (AMD): element e reads p[min(e, n - 1)] (past n: a DUPLICATE of element n - 1, n <= 0: zeros)
//       and stores go to p + min(e, n - 1): elements past n were computed from the same inputs as n - 1, so
//       they store n - 1's own value again (no branch or lane mask per element).
//
//   Asynchronous copies (CKGEN_ROWOPS_ASYNC: CUDA sm_80+, and the emulator with warps of 32, whose cp.async
//   model is ckgen/emu/nv.h): cp16(dst, src, bytes) copies bytes (0..16) from global memory to 16 bytes of
//   shared memory and zero-fills the rest (cp.async.cg: L2 only); cp_commit() closes a group; cp_wait<N>()
//   waits until at most N of this thread's groups are pending and makes their bytes visible to this thread.
#pragma once

#include "ckgen/blocks/fp8.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"

#ifndef CKGEN_ROWOPS_PREDICATED_TAIL
#if defined(CKGEN_PLATFORM_CUDA)
#define CKGEN_ROWOPS_PREDICATED_TAIL 1
#else
#define CKGEN_ROWOPS_PREDICATED_TAIL 0
#endif
#endif

// Per-group scales (tile_y_group, rowops_row.h) stored after the tile's loop rather than inside it: a store under a
// per-thread branch in each unrolled vector's step kept nvcc from scheduling the steps tightly (sm_90a, 1x128 fp8:
// quantize at 4096 columns 61 -> 46 registers, add + RMS norm 64 -> 60, RMS norm at 7168 112 -> 75: one more
// workgroup per SM each). On AMD the in-loop store stays: after the loop, gfx942's layer norm at 3000 columns
// spilled 6 SGPRs (at the 106 limit either way). The NVIDIA plans' emulator builds set it as the CUDA build does.
#ifndef CKGEN_ROWOPS_GROUP_SCALES_AFTER
#if defined(CKGEN_PLATFORM_CUDA)
#define CKGEN_ROWOPS_GROUP_SCALES_AFTER 1
#else
#define CKGEN_ROWOPS_GROUP_SCALES_AFTER 0
#endif
#endif

#if defined(CKGEN_PLATFORM_CUDA)
#define CKGEN_ROWOPS_ASYNC 1
#elif defined(CKGEN_PLATFORM_EMU) && CKGEN_EMU_WAVE_SIZE == 32
#include "ckgen/emu/nv.h"
#define CKGEN_ROWOPS_ASYNC 1
#else
#define CKGEN_ROWOPS_ASYNC 0
#endif

namespace ckgen {
namespace rowops {
namespace detail {

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

// fp8 y converted two at a time (CUDA's packed cvt). Not on AMD: there the pairs cost SGPRs (gfx942, clang 22: a
// looped residual RMS norm with e4m3fnuz y, 64 threads x 2 vectors, spilled 16 against none per element).
#if defined(CKGEN_PLATFORM_CUDA)
constexpr bool kFp8Pairs = true;
#else
constexpr bool kFp8Pairs = false;
#endif

template <class T, int kVec>
CKGEN_DEVICE Frag<T, kVec> pack(const float (&y)[kVec]) {
  if constexpr (sizeof(T) == 2 && kVec % 2 == 0) {
    Frag<T, kVec> f;
#pragma unroll
    for (int i = 0; i < kVec / 2; ++i) f.w[i] = pack2<T>(y[2 * i], y[2 * i + 1]);
    return f;
  } else if constexpr (kFp8Pairs && IsFp8<T>::value && kVec % 2 == 0) {  // two codes per cvt (fp8x2_bits)
    Frag<T, kVec> f;
#pragma unroll
    for (int i = 0; i < Frag<T, kVec>::kWords; ++i) f.w[i] = 0u;
#pragma unroll
    for (int i = 0; i < kVec / 2; ++i) f.w[i / 2] |= fp8x2_bits<T>(y[2 * i], y[2 * i + 1]) << (16 * (i % 2));
    return f;
  } else {
    uint32_t b[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) b[e] = bits_of(from_float<T>(y[e]));
    return from_elem_bits<T, kVec>(b);
  }
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
// the L2 only), kL1EvictLast (kept in the L1 before other lines; bench/rowops_persistent_probe.cu's experiments).
enum L1Policy { kL1Default = 0, kL1Bypass = 1, kL1EvictLast = 2 };
template <class T, int kVec, int kPolicy>
CKGEN_DEVICE Frag<T, kVec> load_vector_l1(const T* p) {
  using F = Frag<T, kVec>;
  static_assert(kPolicy >= kL1Default && kPolicy <= kL1EvictLast, "load_vector_l1: an L1Policy");
#if defined(CKGEN_PLATFORM_CUDA)
  if constexpr (F::kBytes == 16 && kPolicy != kL1Default) {
    F f;
    if constexpr (kPolicy == kL1Bypass)
      asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(f.w[0]), "=r"(f.w[1]), "=r"(f.w[2]), "=r"(f.w[3]) : "l"(p));
    else
      asm volatile("ld.global.L1::evict_last.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(f.w[0]), "=r"(f.w[1]), "=r"(f.w[2]), "=r"(f.w[3]) : "l"(p));
    return f;
  }
#endif
  return load_vector<T, kVec>(p);
}

template <class T, int kVec>
CKGEN_DEVICE Frag<T, kVec> load(const T* p, int n, bool ok) {
  if (n >= kVec && ok) return load_vector<T, kVec>(p);
  uint32_t b[kVec];
#if CKGEN_ROWOPS_PREDICATED_TAIL
#pragma unroll
  for (int e = 0; e < kVec; ++e) b[e] = e < n ? bits_of(gload(p + e)) : 0u;
#else
  if (n > 0) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) b[e] = bits_of(gload(p + (e < n - 1 ? e : n - 1)));
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e) b[e] = 0u;
  }
#endif
  return from_elem_bits<T, kVec>(b);
}

// Where a row ends in one thread's vectors of a tile (vector j: kStep columns after vector j - 1). nv(j) is computed
// where it is used rather than kept per vector (kR registers for the masked paths of a tile).
template <int kVec, int kStep>
struct TileCounts {
  int first;  // columns of the row from the thread's first vector of the tile (<= 0: none)
  int rem;    // columns of the row from the tile's start (<= 0: none); uniform over the row's threads
  bool full;  // every vector of the tile lies inside the row (for every thread of the row)
  // the valid elements of vector j (0 .. kVec)
  CKGEN_DEVICE int nv(int j) const {
    const int n = first - j * kStep;
    return n < 0 ? 0 : (n > kVec ? kVec : n);
  }
};

// kR vectors kStep elements apart from p (a thread's first column of a row tile) into out: one access per vector
// when every vector lies inside the row (k.full) and the row is aligned (ok); otherwise vector j takes its
// k.nv(j) elements (load), and vectors wholly past the row (j * kStep >= k.rem) are zero.
template <int kStep, class T, int kVec, int kR>
CKGEN_DEVICE void load_tile(Frag<T, kVec> (&out)[kR], const T* p, const TileCounts<kVec, kStep>& k, bool ok) {
  if (k.full && ok) {
#pragma unroll
    for (int j = 0; j < kR; ++j) out[j] = load_vector<T, kVec>(p + j * kStep);
  } else {
#pragma unroll
    for (int j = 0; j < kR; ++j) {
      if (j * kStep < k.rem) {
        out[j] = load<T, kVec>(p + j * kStep, k.nv(j), ok);
      } else {
#pragma unroll
        for (int i = 0; i < Frag<T, kVec>::kWords; ++i) out[j].w[i] = 0u;
      }
    }
  }
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

template <class T, int kVec>
CKGEN_DEVICE void store(T* p, int n, bool ok, const Frag<T, kVec>& f) {
  if (n >= kVec && ok) {
    store_vector<T, kVec>(p, f);
  } else if (n > 0) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
#if CKGEN_ROWOPS_PREDICATED_TAIL
      if (e < n) gstore(p + e, from_bits<T>(elem_bits(f, e)));
#else
      gstore(p + (e < n - 1 ? e : n - 1), from_bits<T>(elem_bits(f, e)));
#endif
    }
  }
}

// ---------------------------------------------------------------- asynchronous copies to shared memory
#if CKGEN_ROWOPS_ASYNC
#if defined(CKGEN_PLATFORM_CUDA)
CKGEN_DEVICE uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
// "memory" clobbers: the compiler must not move shared-memory reads of a stage across the copies that
// refill it or the wait that lands them.
CKGEN_DEVICE void cp16(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
CKGEN_DEVICE void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
CKGEN_DEVICE void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}
// Bytes of dynamic shared memory this launch has (%dynamic_smem_size).
CKGEN_DEVICE unsigned dynamic_smem_bytes() {
  unsigned n;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
  return n;
}
// The launch's dynamic shared memory where it holds `bytes` (a staged ring's), else null: the launch gave less.
CKGEN_DEVICE unsigned char* dynamic_smem(int bytes) {
  extern __shared__ __align__(16) unsigned char rowops_dyn_smem[];
  return dynamic_smem_bytes() >= static_cast<unsigned>(bytes) ? rowops_dyn_smem : nullptr;
}
#else
inline uint32_t smem_u32(const void* p) { return ::ckgen::nv::smem_addr(p); }
inline void cp16(uint32_t dst, const void* src, int bytes) { ::ckgen::nv::cp_async16_zfill(dst, src, bytes); }
inline void cp_commit() { ::ckgen::nv::cp_async_commit(); }
template <int kPending>
inline void cp_wait() {
  ::ckgen::nv::cp_async_wait<kPending>();
}
#endif
#else
// No cp.async here (AMD): stages<Cfg>() is 0 and these are never called; they keep the body's names declared.
CKGEN_DEVICE uint32_t smem_u32(const void*) { return 0u; }
CKGEN_DEVICE void cp16(uint32_t, const void*, int) { trap("rowops: cp.async on a platform without it"); }
CKGEN_DEVICE void cp_commit() {}
template <int kPending>
CKGEN_DEVICE void cp_wait() {}
#endif

}  // namespace detail
}  // namespace rowops
}  // namespace ckgen
