// rowops_math.h (ckgen/ops/rowops/device): the per-row states of the row ops and their merge rules, the row
// scalars and one thread's statistics over a tile, which the kinds (rowops_kinds.h: RowKind<kOp>, each kind's
// math) build on. All arithmetic is f32.
//
//   the package's kinds (rowops_kinds.h has their math):
//   op           statistics per row (state reduced across the row's threads)   row scalars      y(v)
//   kSoftmax     t = v*c, c = scale*log2(e); (m, d): m = max t,               m, inv_d = 1/d   2^(t - m) * inv_d
//                d = sum 2^(t - m)   (base 2: one v_exp_f32 / ex2.approx per element)
//   kLogSoftmax  the same                                                     l = m + log2 d   (t - l) * ln 2
//   kLayerNorm   (n, mean, M2) (Chan et al.; M2 = sum (v - mean)^2)           mean, rstd       (v - mean) * rstd [* w] [+ b]
//   kRmsNorm     ss = sum v^2                                                 rstd             v * rstd [* w] [+ b]
//   with rstd = 1 / sqrt(var + eps), var = M2 / cols (population variance, as torch) or ss / cols.
//
// Per-thread statistics are built one register tile at a time (the kind's fold / one_pass): softmax keeps a running
// (m, d), rescaling d by 2^(m_old - m_new) once per tile (online softmax); layer norm takes each vector's
// exact two-pass (n, mean, M2) over its kVec values and merges it into the running state (Chan et al.: stable
// whatever the data's offset, unlike sum / sum of squares; per vector rather than per tile so that only kVec
// converted values are live at a time). The merge rules (combine) are commutative, so a butterfly all-reduce
// gives bitwise identical results in every lane.
// TileStats: one thread's sums and maxima over its vectors of a tile (full, or masked to the row's columns).
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"
#include "rowops_frag.h"

// CKGEN_ROWOPS_STEP: a step of a pipeline (a loader, a statistic, an output pass): inline, but not forced
// (CKGEN_DEVICE forces it) so that the compiler simplifies each step on its own (unrolls its loops over the
// tile's vectors) before it inlines it into its caller, as it does with a lambda. Forced inlining of the whole
// pipeline leaves the tile in memory through the early optimizations (nvcc: more registers; clang: more SGPRs).
// CKGEN_ROWOPS_STEP_FORCED: a step that must be inlined on AMD (forced there, plain inline elsewhere): the output
// passes (RowGroup::by_kind, tile_amax, tile_y). Left to clang's choice under -fgpu-rdc, it kept one as a call and
// the row tile went to scratch (examples/rowops.ck layernorm_bf16: 16832 bytes of scratch, 4-12 SGPR spills on
// gfx90a/942/950); forcing every step instead spills SGPRs in add_rmsnorm_bf16_i8 on gfx942.
// CKGEN_ROWOPS_LAMBDA_FORCED: after a lambda's parameters, the same for a lambda (by_mask's: as a call, a kind's
// statistic spilled 12 SGPRs in gfx942's int8 RMS norm).
#if defined(CKGEN_PLATFORM_AMD)
#define CKGEN_ROWOPS_STEP __attribute__((device)) inline
#define CKGEN_ROWOPS_STEP_FORCED __attribute__((device, always_inline)) inline
#define CKGEN_ROWOPS_LAMBDA_FORCED __attribute__((always_inline))
#elif defined(CKGEN_PLATFORM_CUDA)
#define CKGEN_ROWOPS_STEP __device__ inline
#define CKGEN_ROWOPS_STEP_FORCED __device__ inline
#define CKGEN_ROWOPS_LAMBDA_FORCED
#else
#define CKGEN_ROWOPS_STEP inline
#define CKGEN_ROWOPS_STEP_FORCED inline
#define CKGEN_ROWOPS_LAMBDA_FORCED
#endif

namespace ckgen {
namespace rowops {

// Start value of softmax's running max: finite, so that exp(kLowest - m) of a thread that saw no column is 0
// or 1 * (d == 0), never exp(-inf + inf).
constexpr float kLowest = -3.40282347e38f;

struct SoftmaxState {
  static constexpr int kN = 2;
  float v[2];  // m (running max of t), d (sum of 2^(t - m))
  static CKGEN_DEVICE SoftmaxState init() { return SoftmaxState{{kLowest, 0.0f}}; }
  static CKGEN_DEVICE SoftmaxState combine(const SoftmaxState& a, const SoftmaxState& b) {
    const float m = max_f32(a.v[0], b.v[0]);
    return SoftmaxState{{m, a.v[1] * exp2_f32(a.v[0] - m) + b.v[1] * exp2_f32(b.v[0] - m)}};
  }
};

struct MomentState {
  static constexpr int kN = 3;
  float v[3];  // n (columns seen, as a float), mean, M2
  static CKGEN_DEVICE MomentState init() { return MomentState{{0.0f, 0.0f, 0.0f}}; }
  // Symmetric in a and b (weighted mean; (mb - ma)^2 == (ma - mb)^2).
  // No branch: n == 0 gives inv = 0 and the empty state back.
  static CKGEN_DEVICE MomentState combine(const MomentState& a, const MomentState& b) {
    const float n = a.v[0] + b.v[0];
    const float inv = n > 0.0f ? rcp_f32(n) : 0.0f;
    const float d = b.v[1] - a.v[1];
    return MomentState{{n, (a.v[0] * a.v[1] + b.v[0] * b.v[1]) * inv, a.v[2] + b.v[2] + d * d * (a.v[0] * b.v[0] * inv)}};
  }
};

struct SumState {
  static constexpr int kN = 1;
  float v[1];  // a sum (RMS norm: of v^2)
  static CKGEN_DEVICE SumState init() { return SumState{{0.0f}}; }
  static CKGEN_DEVICE SumState combine(const SumState& a, const SumState& b) { return SumState{{a.v[0] + b.v[0]}}; }
};

// The two per-row scalars y(v) needs, from the row's reduced state.
struct RowScalars {
  float a;  // softmax: m; log-softmax: m + log2 d; layer norm: mean; rms norm: unused (0) (rowops_kinds.h)
  float b;  // softmax: 1/d; log-softmax: unused; norms: rstd
};

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2 = 0.693147180559945309f;

// One thread's statistics over its kR vectors (buf) of a tile of a row, k the tile's column counts (nv(j): valid
// elements of vector j; rem: the row's columns from the tile's start). Each takes a BoolConst kM: false for a full
// tile (every element counts), true for a partial one (only the valid elements; vectors wholly past the row, the
// same for every thread of the row, are skipped).
// A partial tile of whole vectors (TileStats: M): a BoolConst<true> whose elements need no check of their own.
struct WholeVectors : BoolConst<true> {};
template <class M>
struct IsWholeVectors : BoolConst<false> {};
template <>
struct IsWholeVectors<WholeVectors> : BoolConst<true> {};

// AMD keeps two masks (full, each element checked): a third instantiation of a tile's statistics cost wave64 SGPRs
// (gfx90a's residual RMS norm spilled one).
#if defined(CKGEN_PLATFORM_AMD)
constexpr bool kWholeVectorMasks = false;
#else
constexpr bool kWholeVectorMasks = true;
#endif

// f(m) with m the mask type of a tile: BoolConst<false> a full tile, WholeVectors a partial one of a row of whole
// vectors (`whole`: cols % kVec == 0, e.g. RowEnv::vec_row; not on AMD: kWholeVectorMasks), BoolConst<true> another
// partial one. f: a generic lambda marked CKGEN_ROWOPS_LAMBDA_FORCED.
template <class F>
CKGEN_DEVICE auto by_mask(bool full, bool whole, F&& f) {
  if (full) return f(BoolConst<false>{});
  if constexpr (kWholeVectorMasks) {
    if (whole) return f(WholeVectors{});
  }
  (void)whole;
  return f(BoolConst<true>{});
}

template <int kR, int kVec, int kStep, class FS, class K>
struct TileStats {
  const FS (&buf)[kR];
  const K& k;

  // M: BoolConst<false> a full tile; BoolConst<true> a partial one, each element checked; WholeVectors a partial
  // one of whole vectors (the row a whole number of them): each of the thread's vectors valid or not as a whole.
  // vector j holds a valid element for some thread of the row (uniform over the row's threads), or, of whole
  // vectors, for this thread
  template <class M>
  CKGEN_DEVICE bool live(M, int j) const {
    if constexpr (IsWholeVectors<M>::value) return k.nv(j) > 0;
    else if constexpr (M::value) return j * kStep < k.rem;
    else return true;
  }
  template <class M>
  CKGEN_DEVICE bool valid(M, int j, int e) const {
    if constexpr (M::value && !IsWholeVectors<M>::value) return e < k.nv(j);
    else return true;
  }
  // acc = f(acc, v, valid) over the elements v of the live vectors, in order (valid: a constant true for a full
  // tile); the fold every statistic below is
  template <class M, class F>
  CKGEN_DEVICE float fold(M m, float acc, F f) const {
#pragma unroll
    for (int j = 0; j < kR; ++j) {
      if (!live(m, j)) continue;
#pragma unroll
      for (int e = 0; e < kVec; ++e) acc = f(acc, detail::elem(buf[j], e), valid(m, j, e));
    }
    return acc;
  }
  // the largest of v (Neg: of -v) over the valid elements; kLowest when none
  template <class M, class Neg>
  CKGEN_DEVICE float max(M m, Neg) const {
    return fold(m, kLowest, [](float mx, float v, bool ok) { return max_f32(mx, ok ? (Neg::value ? -v : v) : kLowest); });
  }
  // sum of 2^(v * c - mx) over the valid elements
  template <class M>
  CKGEN_DEVICE float expsum(M m, float c, float mx) const {
    return fold(m, 0.0f, [=](float d, float v, bool ok) {
      const float p = exp2_f32(v * c - mx);
      return d + (ok ? p : 0.0f);
    });
  }
  template <class M>
  CKGEN_DEVICE float sum(M m) const {
    return fold(m, 0.0f, [](float s, float v, bool ok) { return s + (ok ? v : 0.0f); });
  }
  // sum of (v - mean)^2 over the valid elements
  template <class M>
  CKGEN_DEVICE float m2(M m, float mean) const {
    return fold(m, 0.0f, [=](float s, float v, bool ok) {
      const float d = v - mean;
      return s + (ok ? d : 0.0f) * d;
    });
  }
  // sum of v^2 over the valid elements
  template <class M>
  CKGEN_DEVICE float sumsq(M m) const {
    return fold(m, 0.0f, [](float s, float v, bool ok) { return s + (ok ? v : 0.0f) * v; });
  }
  // the number of valid elements
  template <class M>
  CKGEN_DEVICE float count(M) const {
    if constexpr (M::value) {
      int n = 0;
#pragma unroll
      for (int j = 0; j < kR; ++j) n += k.nv(j);
      return static_cast<float>(n);
    } else {
      return static_cast<float>(kR * kVec);
    }
  }
};

// max t = max(v * c) over the valid elements of a tile (ts: its TileStats) = |c| * max(v * sign(c))
template <class Stats, class M>
CKGEN_ROWOPS_STEP float tile_tmax(const Stats& ts, M m, float c) {
  const float abs_c = c < 0.0f ? -c : c;
  const float mx = c < 0.0f ? ts.max(m, BoolConst<true>{}) : ts.max(m, BoolConst<false>{});
  return mx * abs_c;
}

}  // namespace rowops
}  // namespace ckgen
