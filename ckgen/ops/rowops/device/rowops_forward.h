// rowops_forward.h (ckgen/ops/rowops/device): row-wise ops over the last dimension of a rows x cols matrix:
// softmax, log-softmax, layer norm, RMS norm, each with an optional fused residual add and an optional int8
// output with a per-row scale. One body for AMD (wave64), the emulator and NVIDIA (warp of 32).
//
// ---------------------------------------------------------------- entry
//   template <class Cfg>
//   CKGEN_DEVICE void rowops_forward(const TIn* x, const TRes* residual, const TW* weight, const TW* bias,
//                                    TOut* y, TRes* s_out, float* y_scale, int rows, int cols,
//                                    long long stride_x, long long stride_res, long long stride_y,
//                                    long long stride_s, float scale, float eps);
//   called from a kernel with a 1-D workgroup of Cfg::kThreads threads:
//     CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(Cfg::kThreads) void k(<the same parameters>) { rowops_forward<Cfg>(...); }
//   Grid: 1-D, rowops::grid_blocks<Cfg>(rows) workgroups = min(ceil(rows / kRowsPerBlock), kMaxGridBlocks);
//   any grid >= 1 is correct (workgroups loop over row groups with a grid stride). rows <= 0 or cols <= 0:
//   launch nothing (the body returns at once for cols <= 0).
//
//   Matrices are row-major with a row stride (elements, >= cols) per tensor: x, residual, y, s_out. weight and
//   bias are vectors of cols elements. Pointers that may be null: residual and s_out (both non-null exactly
//   when kResidual), weight (when !kHasWeight), bias (when !kHasBias), y_scale (when !kQuantI8); the body
//   never touches a pointer its Cfg does not use. y may alias x and s_out may alias x or residual (same
//   element type and stride: in-place); no other overlap.
//
// ---------------------------------------------------------------- numerics (f32 throughout)
//   v = x, or with kResidual: s = x + residual rounded to TRes (written to s_out) and v = s (as stored,
//   like torch's `h = x + r; norm(h)`). The op (rowops_math.h) is applied to v:
//     softmax y = exp(scale*v - m) / d, log-softmax y = scale*v - m - log d (m = max scale*v, d = sum exp;
//     evaluated in base 2: one exp2_f32 per element and pass, v_exp_f32 / ex2.approx),
//     layer norm y = (v - mean) * rstd [* weight] [+ bias], rms norm y = v * rstd [* weight] [+ bias],
//     rstd = 1/sqrt(var + eps), var = mean((v - mean)^2) (population) or mean(v^2).
//   y is cast to TOut (round to nearest even). kQuantI8 (TOut = int8_t): amax = max |y| over the row
//   (softmax: 1/d, exactly the largest y), y_scale[row] = amax / 127 and q = rne(y * (127 / amax)) saturated
//   to [-127, 127] (the product by the row's reciprocal may differ from y / scale by one ulp before rounding).
//   An all-zero row (amax == 0) gets y_scale = 1 and q = 0 (dequantizes exactly; no division by zero).
//
// ---------------------------------------------------------------- data path
//   A row is owned by kRowThreads threads (kRowsPerBlock rows per workgroup). It is cut into tiles of
//   kTileCols = kRegVecs * kVec * kRowThreads columns; in a tile, thread t of the row holds kRegVecs vectors of
//   kVec elements, vector j at column j * kVec * kRowThreads + t * kVec (consecutive threads read
//   consecutive 16 bytes: coalesced). Vector accesses are used when the tensor's base and row stride keep
//   every vector aligned (checked per tensor at run time), per-element accesses otherwise and for the
//   vectors that straddle the end of the row (detail::load / store: clamped indices on AMD, predicated under
//   CUDA); nothing outside [0, cols) of a row is touched. Full tiles of aligned tensors take one straight run
//   of vector loads (all in flight at once); only partial tiles pay for masks.
//     pass 1 (forward over tiles): load the tile (x, residual; write s), update the thread's statistics;
//     all-reduce the statistics over the row's threads (rowops_math.h states; ckgen/blocks/reduce.h:
//       group_allreduce_state within a wave, MultiWave through LDS when kWavesPerRow > 1);
//     [kQuantI8 and not softmax: pass 2, backward over tiles: amax of y, all-reduce Max]
//     pass 3 (opposite direction to the previous pass): y = op(v), store.
//   The tile that ends a pass is still in registers and starts the next one; other tiles are re-read from
//   global memory (s_out when kResidual, else x). kLooped == false: the body is compiled for one tile
//   (cols <= kTileCols, checked: a trap), so the row is read once and y written once. kLooped == true: any
//   cols; rows longer than one tile read v twice (three times with the int8 amax pass), minus one tile.
//   Global bytes per element (single pass): sizeof(TIn) + sizeof(TOut), plus 2 * sizeof(TRes) with
//   kResidual; weight and bias are one row for all rows (L2 / L1). bf16: 4 (8 with the residual).
//
// ---------------------------------------------------------------- Cfg (compile-time constants)
//   using TIn, TRes, TW, TOut;       x; residual and s; weight and bias; y (::int8_t when kQuantI8)
//   kOp                              rowops::kSoftmax | kLogSoftmax | kLayerNorm | kRmsNorm
//   kHasWeight, kHasBias             norms only; kResidual (any op), kQuantI8
//   kVec                             elements per vector access (16 bytes of TIn for full speed)
//   kWaveSize                        the platform's (64 AMD, 32 NVIDIA)
//   kRowThreads                      threads per row: a power of two (part of a wave, a wave, or waves)
//   kWavesPerRow                     kRowThreads / kWaveSize, or 1 when a row takes part of one wave
//   kRowsPerBlock, kThreads          kThreads = kRowsPerBlock * kRowThreads, a multiple of kWaveSize
//   kRegVecs, kTileCols              vectors per thread per tile; kTileCols = kRegVecs * kVec * kRowThreads
//   kLooped                          false: cols <= kTileCols (single pass); true: any cols
//   kLdsBytes                        MultiWave scratch when kWavesPerRow > 1 (rowops::lds_bytes<Cfg>()), else 0
#pragma once

#include "ckgen/blocks/reduce.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"
#include "rowops_math.h"

#ifndef CKGEN_ROWOPS_PREDICATED_TAIL
#if defined(CKGEN_PLATFORM_CUDA)
#define CKGEN_ROWOPS_PREDICATED_TAIL 1
#else
#define CKGEN_ROWOPS_PREDICATED_TAIL 0
#endif
#endif

namespace ckgen {
namespace rowops {

constexpr long long kMaxGridBlocks = 1LL << 20;  // blocks x 1024 threads stays below 2^32 work-items (AMD)

template <class Cfg>
CKGEN_HD constexpr long long grid_blocks(long long rows) {
  const long long g = rows > 0 ? (rows + Cfg::kRowsPerBlock - 1) / Cfg::kRowsPerBlock : 0;
  return g < kMaxGridBlocks ? g : kMaxGridBlocks;
}

template <class Cfg>
using Reducer = red::MultiWave<Cfg::kThreads / Cfg::kWaveSize, Cfg::kWavesPerRow, StateOf<Cfg::kOp>::type::kN>;

// LDS the body declares (bytes): the cross-wave scratch when a row spans waves.
template <class Cfg>
constexpr int lds_bytes() {
  return Cfg::kWavesPerRow > 1 ? Reducer<Cfg>::kLdsBytes : 0;
}

template <class Cfg>
constexpr bool check_cfg() {
  constexpr int W = Cfg::kWaveSize;
  static_assert(W == kPlatformWaveSize, "kWaveSize must be the platform's wave size (64 AMD, 32 NVIDIA)");
  static_assert(Cfg::kOp >= kSoftmax && Cfg::kOp <= kRmsNorm, "kOp: rowops::kSoftmax/kLogSoftmax/kLayerNorm/kRmsNorm");
  static_assert(Cfg::kOp >= kLayerNorm || (!Cfg::kHasWeight && !Cfg::kHasBias),
                "kHasWeight/kHasBias: softmax and log-softmax have no weight or bias");
  static_assert(!Cfg::kQuantI8 || __is_same(typename Cfg::TOut, ::int8_t), "kQuantI8 needs TOut = ::int8_t");
  static_assert(Cfg::kQuantI8 || !__is_same(typename Cfg::TOut, ::int8_t), "TOut = ::int8_t needs kQuantI8 (a scale)");
  static_assert(Cfg::kVec >= 1 && (Cfg::kVec & (Cfg::kVec - 1)) == 0 && Cfg::kVec <= 16, "kVec: a power of two <= 16");
  static_assert(Cfg::kRowThreads >= 1, "kRowThreads >= 1");
  static_assert((Cfg::kRowThreads & (Cfg::kRowThreads - 1)) == 0, "kRowThreads: a power of two");
  static_assert(Cfg::kWavesPerRow == (Cfg::kRowThreads >= W ? Cfg::kRowThreads / W : 1),
                "kWavesPerRow != kRowThreads / kWaveSize (1 when a row takes part of a wave)");
  static_assert(Cfg::kRowsPerBlock >= 1 && Cfg::kThreads == Cfg::kRowsPerBlock * Cfg::kRowThreads,
                "kThreads != kRowsPerBlock * kRowThreads");
  static_assert(Cfg::kThreads % W == 0 && Cfg::kThreads <= 1024, "kThreads: full waves, at most 1024");
  static_assert(Cfg::kRegVecs >= 1, "kRegVecs >= 1");
  static_assert(Cfg::kTileCols == Cfg::kRegVecs * Cfg::kVec * Cfg::kRowThreads, "kTileCols != kRegVecs*kVec*kRowThreads");
  static_assert(Cfg::kLdsBytes == lds_bytes<Cfg>(), "kLdsBytes != rowops::lds_bytes<Cfg>() (cross-wave scratch)");
  return true;
}

namespace detail {

template <bool B>
struct Bool {
  static constexpr bool value = B;
};

template <bool kFirst, class A, class B>
struct Pick {
  using type = A;
};
template <class A, class B>
struct Pick<false, A, B> {
  using type = B;
};

CKGEN_DEVICE float abs_f32(float v) { return v < 0.0f ? -v : v; }

// Whether every kVec-element vector of every row of (base, stride) is aligned for one vector access.
template <class T, int kVec>
CKGEN_DEVICE bool vec_ok(const T* base, long long stride) {
  constexpr long long a = alignof(vec<T, kVec>);
  return reinterpret_cast<unsigned long long>(base) % a == 0 && (stride * static_cast<long long>(sizeof(T))) % a == 0;
}

// n valid elements (n <= 0 .. kVec) at p: one vector access when n == kVec and ok, else per element. The
// per-element path has no branch and no select per element (on AMD each costs an exec mask or a lane mask in
// SGPRs): element e reads element min(e, n - 1), always inside the row, so that the elements past n REPEAT
// element n - 1 (the "duplicate" invariant store() relies on); n <= 0 reads nothing and gives zeros.
//
// CKGEN_ROWOPS_PREDICATED_TAIL (default: on under CUDA, off elsewhere; the emulator tests both): predicated
// element accesses instead (element e at p + e, an immediate offset from one address; elements past n are 0,
// no duplicate invariant needed): predication is free on NVIDIA, where the clamped indices cost a 64-bit
// address per element in registers.
template <class T, int kVec>
CKGEN_DEVICE vec<T, kVec> load(const T* p, int n, bool ok) {
  if (n >= kVec && ok) return gload(reinterpret_cast<const vec<T, kVec>*>(p));
  vec<T, kVec> r;
#if CKGEN_ROWOPS_PREDICATED_TAIL
#pragma unroll
  for (int e = 0; e < kVec; ++e) r.v[e] = e < n ? gload(p + e) : zero<T>();
#else
  if (n > 0) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) r.v[e] = gload(p + (e < n - 1 ? e : n - 1));
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e) r.v[e] = zero<T>();
  }
#endif
  return r;
}

// The kR vectors of one thread in a tile: straight vector loads when the whole tile lies inside the row
// (full) and the tensor is aligned (ok), so that all of them are in flight at once; else vector by vector.
template <class T, int kVec, int kR, int kStep>
CKGEN_DEVICE void load_tile(const T* p, const int (&nv)[kR], bool full, bool ok, vec<T, kVec> (&out)[kR]) {
  if (full && ok) {
#pragma unroll
    for (int j = 0; j < kR; ++j) out[j] = gload(reinterpret_cast<const vec<T, kVec>*>(p + j * kStep));
  } else {
#pragma unroll
    for (int j = 0; j < kR; ++j) out[j] = load<T, kVec>(p + j * kStep, nv[j], ok);
  }
}

// Store the first n elements of v. Per element (not aligned, or a partial vector): element e goes to
// min(e, n - 1). With the duplicate invariant (every input of v's elements past n repeats element n - 1, so
// they were computed from the same values), that stores element n - 1's own value again: harmless, and free
// of per-element branches and selects.
template <class T, int kVec>
CKGEN_DEVICE void store(T* p, int n, bool ok, const vec<T, kVec>& v) {
  if (n >= kVec && ok) {
    gstore(reinterpret_cast<vec<T, kVec>*>(p), v);
  } else if (n > 0) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
#if CKGEN_ROWOPS_PREDICATED_TAIL
      if (e < n) gstore(p + e, v.v[e]);  // predicated (see load())
#else
      gstore(p + (e < n - 1 ? e : n - 1), v.v[e]);
#endif
    }
  }
}

// 1.0f when element e of a vector with n valid elements is valid, else 0.0f: integer min/max and a convert,
// so that masking needs no lane mask (SGPRs on AMD).
CKGEN_DEVICE float weight(int n, int e) {
  int k = n - e;
  k = k < 0 ? 0 : k;
  k = k > 1 ? 1 : k;
  return static_cast<float>(k);
}

}  // namespace detail

template <class Cfg>
CKGEN_DEVICE void rowops_forward_impl(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                      const typename Cfg::TW* weight, const typename Cfg::TW* bias,
                                      typename Cfg::TOut* y, typename Cfg::TRes* s_out, float* y_scale, int rows,
                                      int cols, long long stride_x, long long stride_res, long long stride_y,
                                      long long stride_s, float scale, float eps, float* lds) {
  static_assert(check_cfg<Cfg>(), "Cfg");
  using TIn = typename Cfg::TIn;
  using TRes = typename Cfg::TRes;
  using TW = typename Cfg::TW;
  using TOut = typename Cfg::TOut;
  using TS = typename detail::Pick<Cfg::kResidual, TRes, TIn>::type;  // v as held: s (TRes) or x (TIn)
  using State = typename StateOf<Cfg::kOp>::type;
  constexpr int kVec = Cfg::kVec;
  constexpr int kR = Cfg::kRegVecs;
  constexpr int kStep = kVec * Cfg::kRowThreads;  // columns between a thread's vectors
  constexpr int kTile = Cfg::kTileCols;
  constexpr bool kAmaxPass = Cfg::kQuantI8 && Cfg::kOp != kSoftmax;
  (void)residual; (void)weight; (void)bias; (void)s_out; (void)y_scale; (void)stride_res; (void)stride_s;
  (void)lds; (void)eps;

  if (cols <= 0) return;
  if constexpr (!Cfg::kLooped) {
    if (cols > kTile) trap("rowops: cols > Cfg::kTileCols for a single-pass (kLooped == false) configuration");
  }
  const int ntiles = Cfg::kLooped ? (cols - 1) / kTile + 1 : 1;

  const int tid = thread_id();
  const int rt = tid % Cfg::kRowThreads;  // thread within the row
  const float c = scale * kLog2e;         // softmax works in base 2
  const bool x_ok = detail::vec_ok<TIn, kVec>(x, stride_x);
  const bool y_ok = detail::vec_ok<TOut, kVec>(y, stride_y);
  bool r_ok = false, s_ok = false, w_ok = false, b_ok = false;
  if constexpr (Cfg::kResidual) {
    r_ok = detail::vec_ok<TRes, kVec>(residual, stride_res);
    s_ok = detail::vec_ok<TRes, kVec>(s_out, stride_s);
  }
  if constexpr (Cfg::kHasWeight) w_ok = detail::vec_ok<TW, kVec>(weight, 0);
  if constexpr (Cfg::kHasBias) b_ok = detail::vec_ok<TW, kVec>(bias, 0);

  Reducer<Cfg> reducer(lds);
  auto allreduce = [&](State s) -> State {
    if constexpr (Cfg::kWavesPerRow > 1) return reducer.template allreduce_state<State>(s);
    else return red::group_allreduce_state<Cfg::kRowThreads>(s);
  };
  auto allmax = [&](float v) -> float {
    if constexpr (Cfg::kWavesPerRow > 1) return reducer.template allreduce<red::Max>(v);
    else return red::group_allreduce<Cfg::kRowThreads, red::Max>(v);
  };

  const long long ngroups = (static_cast<long long>(rows) + Cfg::kRowsPerBlock - 1) / Cfg::kRowsPerBlock;
  const int gstride = grid_dim(0);
  for (long long g = block_id(0); g < ngroups; g += gstride) {
    const long long row = g * Cfg::kRowsPerBlock + tid / Cfg::kRowThreads;
    const int ncols = row < rows ? cols : 0;  // a thread past the last row accesses nothing, joins the reductions
    // This thread's first column of each tensor, kept per lane (ckgen::per_lane: on AMD a VGPR pair), so that
    // the per-vector and per-tile offsets are added to it instead of becoming SGPR bases, one per tensor and
    // vector (which ran out of SGPRs).
    const long long tcol = static_cast<long long>(rt) * kVec;
    const TIn* xr = per_lane(x + (row * stride_x + tcol));
    TOut* yr = per_lane(y + (row * stride_y + tcol));
    const TRes* rr = nullptr;
    TRes* sr = nullptr;
    if constexpr (Cfg::kResidual) {
      rr = per_lane(residual + (row * stride_res + tcol));
      sr = per_lane(s_out + (row * stride_s + tcol));
    }
    const TW* wr = nullptr;
    const TW* br = nullptr;
    if constexpr (Cfg::kHasWeight) wr = per_lane(weight + tcol);
    if constexpr (Cfg::kHasBias) br = per_lane(bias + tcol);

    vec<TS, kVec> buf[kR];   // the tile in registers (TIn, or s as TRes)
    int nv[kR];              // valid elements of each vector
    bool full = false;       // every vector of the tile lies inside the row
    auto set_counts = [&](int tile) {
      const int rem = ncols - tile * kTile;  // no overflow: tile * kTile < cols
      full = rem >= kTile;
#pragma unroll
      for (int j = 0; j < kR; ++j) {
        const int n = rem - (j * kStep + rt * kVec);
        nv[j] = n < 0 ? 0 : (n > kVec ? kVec : n);
      }
    };
    auto col0 = [&](int tile, int j) -> long long {  // relative to the thread's first column
      return static_cast<long long>(tile) * kTile + j * kStep;
    };
    // Pass 1 load: x (+ residual -> s, stored), into buf.
    auto load_first = [&](int tile) {
      set_counts(tile);
      if constexpr (Cfg::kResidual) {
        vec<TIn, kVec> xv[kR];
        vec<TRes, kVec> rv[kR];
        detail::load_tile<TIn, kVec, kR, kStep>(xr + col0(tile, 0), nv, full, x_ok, xv);
        detail::load_tile<TRes, kVec, kR, kStep>(rr + col0(tile, 0), nv, full, r_ok, rv);
#pragma unroll
        for (int j = 0; j < kR; ++j) {
#pragma unroll
          for (int e = 0; e < kVec; ++e) buf[j].v[e] = from_float<TRes>(to_float(xv[j].v[e]) + to_float(rv[j].v[e]));
          detail::store<TRes, kVec>(sr + col0(tile, j), nv[j], s_ok, buf[j]);
        }
      } else {
        detail::load_tile<TIn, kVec, kR, kStep>(xr + col0(tile, 0), nv, full, x_ok, buf);
      }
    };
    // Later passes: v again, from s_out (kResidual: this thread wrote it in pass 1) or x.
    auto load_again = [&](int tile) {
      set_counts(tile);
      if constexpr (Cfg::kResidual) detail::load_tile<TRes, kVec, kR, kStep>(sr + col0(tile, 0), nv, full, s_ok, buf);
      else detail::load_tile<TIn, kVec, kR, kStep>(xr + col0(tile, 0), nv, full, x_ok, buf);
    };
    // Masking of the columns past the end, only in tiles that are not full (kM: the tile is partial): weight
    // 1.0f / 0.0f per element (detail::weight; no lane masks), softmax's t pushed to -FLT_MAX.
    auto wt = [&](auto kM, int j, int e) -> float {
      if constexpr (decltype(kM)::value) return detail::weight(nv[j], e);
      else return 1.0f;
    };

    // ---------------------------------------------------------------- pass 1: statistics
    State st = State::init();
    auto tile_stats = [&](auto kM) {
      if constexpr (Cfg::kOp == kSoftmax || Cfg::kOp == kLogSoftmax) {
        // max t = c * (max v or min v, by the sign of c): the values are converted again for the exponentials
        // rather than kept as floats (registers). Partial tiles push masked t to -FLT_MAX (2^(t - m) = 0).
        float vmax = -__builtin_huge_valf(), vmin = __builtin_huge_valf();
#pragma unroll
        for (int j = 0; j < kR; ++j)
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            float v = to_float(buf[j].v[e]);
            if constexpr (decltype(kM)::value) {  // a masked element must not widen [vmin, vmax]: use a valid one
              const float w = wt(kM, j, e);
              v = w * v + (1.0f - w) * to_float(buf[0].v[0]);
            }
            vmax = max_f32(vmax, v);
            vmin = -max_f32(-vmin, -v);
          }
        float tm = max_f32(vmax * c, vmin * c);
        if constexpr (decltype(kM)::value) tm = nv[0] > 0 ? tm : kLowest;  // no valid element in this tile
        const float m = max_f32(st.v[0], tm);
        float d = 0.0f;
#pragma unroll
        for (int j = 0; j < kR; ++j)
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            float tt = to_float(buf[j].v[e]) * c;
            if constexpr (decltype(kM)::value) tt -= (1.0f - wt(kM, j, e)) * 3.40282347e38f;
            d += exp2_f32(tt - m);  // 2^(-FLT_MAX - m) = 0
          }
        st.v[1] = st.v[1] * exp2_f32(st.v[0] - m) + d;
        st.v[0] = m;
      } else if constexpr (Cfg::kOp == kLayerNorm) {
#pragma unroll
        for (int j = 0; j < kR; ++j) {
          float n, inv;  // valid elements of the vector, 1/n (0 when none)
          if constexpr (decltype(kM)::value) {
            n = static_cast<float>(nv[j] < 0 ? 0 : (nv[j] > kVec ? kVec : nv[j]));
            inv = n > 0.0f ? rcp_f32(n) : 0.0f;
          } else {
            n = static_cast<float>(kVec);
            inv = 1.0f / kVec;
          }
          float sum = 0.0f;
#pragma unroll
          for (int e = 0; e < kVec; ++e) sum += wt(kM, j, e) * to_float(buf[j].v[e]);
          const float mean = sum * inv;
          float m2 = 0.0f;
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            const float d = to_float(buf[j].v[e]) - mean;
            m2 += wt(kM, j, e) * (d * d);
          }
          st = MomentState::combine(st, MomentState{{n, mean, m2}});
        }
      } else {
        float ss = 0.0f;
#pragma unroll
        for (int j = 0; j < kR; ++j)
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            const float v = to_float(buf[j].v[e]);
            ss += wt(kM, j, e) * (v * v);
          }
        st.v[0] += ss;
      }
    };
    for (int tile = 0; tile < ntiles; ++tile) {
      load_first(tile);
      if (full) tile_stats(detail::Bool<false>{});
      else tile_stats(detail::Bool<true>{});
    }
    st = allreduce(st);
    const RowScalars rs = finish<Cfg::kOp>(st, cols, eps);

    auto weights = [&](int tile, int j, vec<TW, kVec>& w, vec<TW, kVec>& b) {
      if constexpr (Cfg::kHasWeight) w = detail::load<TW, kVec>(wr + col0(tile, j), nv[j], w_ok);
      if constexpr (Cfg::kHasBias) b = detail::load<TW, kVec>(br + col0(tile, j), nv[j], b_ok);
    };
    auto y_of = [&](int j, int e, const vec<TW, kVec>& w, const vec<TW, kVec>& b) -> float {
      float wf = 1.0f, bf = 0.0f;
      if constexpr (Cfg::kHasWeight) wf = to_float(w.v[e]);
      if constexpr (Cfg::kHasBias) bf = to_float(b.v[e]);
      return apply<Cfg::kOp, Cfg::kHasWeight, Cfg::kHasBias>(to_float(buf[j].v[e]), rs, c, wf, bf);
    };

    // ---------------------------------------------------------------- pass 2 (int8 only): amax of y
    float qmul = 1.0f;  // y -> q multiplier (127 / amax)
    if constexpr (Cfg::kQuantI8) {
      float amax;
      if constexpr (kAmaxPass) {
        amax = 0.0f;
        for (int tile = ntiles - 1; tile >= 0; --tile) {
          if (tile != ntiles - 1) load_again(tile);
          auto tile_amax = [&](auto kM) {
#pragma unroll
            for (int j = 0; j < kR; ++j) {
              vec<TW, kVec> w, b;
              weights(tile, j, w, b);
#pragma unroll
              for (int e = 0; e < kVec; ++e) amax = max_f32(amax, detail::abs_f32(y_of(j, e, w, b)) * wt(kM, j, e));
            }
          };
          if (full) tile_amax(detail::Bool<false>{});
          else tile_amax(detail::Bool<true>{});
        }
        amax = allmax(amax);
      } else {
        amax = rs.b;  // softmax: the largest y is exp(0) / d
      }
      qmul = amax > 0.0f ? 127.0f / amax : 0.0f;
      if (rt == 0 && row < rows) gstore(y_scale + row, amax > 0.0f ? amax / 127.0f : 1.0f);
    }

    // ---------------------------------------------------------------- pass 3: y
    // Starts from the tile the previous pass ended with (still in buf).
    const bool forward = kAmaxPass;
    for (int i = 0; i < ntiles; ++i) {
      const int tile = forward ? i : ntiles - 1 - i;
      if (i != 0) load_again(tile);
#pragma unroll
      for (int j = 0; j < kR; ++j) {
        vec<TW, kVec> w, b;
        weights(tile, j, w, b);
        vec<TOut, kVec> o;
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const float yv = y_of(j, e, w, b);
          if constexpr (Cfg::kQuantI8) o.v[e] = from_float<TOut>(yv * qmul);
          else o.v[e] = from_float<TOut>(yv);
        }
        detail::store<TOut, kVec>(yr + col0(tile, j), nv[j], y_ok, o);
      }
    }
  }
}

template <class Cfg>
CKGEN_DEVICE void rowops_forward(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                 const typename Cfg::TW* weight, const typename Cfg::TW* bias, typename Cfg::TOut* y,
                                 typename Cfg::TRes* s_out, float* y_scale, int rows, int cols, long long stride_x,
                                 long long stride_res, long long stride_y, long long stride_s, float scale,
                                 float eps) {
  float* lds = nullptr;
  if constexpr (lds_bytes<Cfg>() > 0) {
    CKGEN_LDS(float, rowops_scratch, lds_bytes<Cfg>() / static_cast<int>(sizeof(float)));
    lds = rowops_scratch;
  }
  rowops_forward_impl<Cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y,
                           stride_s, scale, eps, lds);
}

}  // namespace rowops

using rowops::rowops_forward;

}  // namespace ckgen
