// rowops_frag.h (ckgen/ops/rowops/device): the row ops' register fragments and memory accesses
// (rowops_forward.h's data path).
//
//   Frag<T, kVec>, elem(f, e), load_vector, load_vector_l1, store_vector: ckgen/blocks/frag.h (shared with the GEMM's
//                        vector body); the tile lives in registers as Frags.
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
#include "ckgen/blocks/frag.h"
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

// the fragments and their vector accesses (ckgen/blocks/frag.h)
using blk::bits_of;
using blk::elem;
using blk::elem_bits;
using blk::Frag;
using blk::from_bits;
using blk::from_elem_bits;
using blk::kL1Bypass;
using blk::kL1Default;
using blk::kL1EvictLast;
using blk::L1Policy;
using blk::load_vector;
using blk::load_vector_l1;
using blk::store_vector;
using blk::vec_ok;

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

template <class T, int kVec>
CKGEN_DEVICE Frag<T, kVec> load(const T* p, int n, bool ok) {
#if CKGEN_ROWOPS_PREDICATED_TAIL
  return blk::load_zero_filled<T, kVec>(p, n, ok);
#else
  if (n >= kVec && ok) return load_vector<T, kVec>(p);
  uint32_t b[kVec];
  if (n > 0) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) b[e] = bits_of(gload(p + (e < n - 1 ? e : n - 1)));
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e) b[e] = 0u;
  }
  return from_elem_bits<T, kVec>(b);
#endif
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
