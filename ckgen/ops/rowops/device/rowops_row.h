// rowops_row.h (ckgen/ops/rowops/device): what every row-op pipeline shares, for a RowProblem P (rowops_problem.h).
//
//   RowArgs<P>        the entry's arguments (rowops_forward.h: the contract)
//   RowEnv<P>         one thread's values for the whole launch: its lane in the row, the aligned-access checks of
//                     each tensor, the row groups and the tiles of a row
//   RowGroup<P>       one thread's part of one row group: its columns of each tensor, the tile in registers (buf)
//                     and where the row ends in it (k); the loads of pass 1 from global memory (x, + residual ->
//                     s, written to s_out) and of the later passes (s_out or x again), and the output passes:
//                     output() writes rstd (P::kRstd) and, unless y = none (P::kWriteY false), runs the int8 amax
//                     pass (backward over tiles) and the y pass (the other way), each starting from the tile the
//                     previous pass ended with (still in buf)
//   GlobalSource<P>   a pipeline's source of v: pass 1 from x (+ residual), later passes from s_out or x
//   TileWeights<P>    weight and bias of a full aligned tile, all kR vectors loaded before it (in flight together);
//                     the register-bounded pipeline reads them in batches instead (rowops_pipeline_bounded.h)
//
// A source (GlobalSource; rowops_pipeline_one_pass.h's StagedSource; rowops_pipeline_row_cached.h's CachedSource)
// has first(g, tile) (pass 1: v of `tile` into g.buf, g.k set), again(g, tile) (a later pass) and refill() (the
// one-pass pipeline calls it once pass 1's loads are used). A weights object has prefetch(g, tile) (a fast tile's
// vectors before its outputs) and get(g, tile, j, w, b) (vector j of a fast tile).
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"
#include "rowops_default_policy.h"
#include "rowops_frag.h"
#include "rowops_math.h"
#include "rowops_problem.h"
#include "rowops_quant.h"

namespace ckgen {
namespace rowops {

namespace detail {

CKGEN_DEVICE float abs_f32(float v) { return v < 0.0f ? -v : v; }

}  // namespace detail

template <class P>
struct RowArgs {
  const typename P::TIn* x;
  const typename P::TRes* residual;
  const typename P::TW* weight;
  const typename P::TW* bias;
  typename P::TOut* y;
  typename P::TRes* s_out;
  typename P::TScale* y_scale;  // float, or E8M0 bytes (P::kMx)
  int rows, cols;
  long long stride_x, stride_res, stride_y, stride_s;
  float scale, eps;
  long long stride_scale = 0;  // y_scale's row stride with per-group scales (P::kGroup > 0)
  float* rstd = nullptr;       // rows floats (P::kRstd)
};

template <class P>
struct RowEnv {
  int ntiles;       // tiles of a row (1: one pass)
  int tid, rt;      // the thread in the workgroup, in its row
  float c;          // scale * log2(e): softmax works in base 2
  bool x_ok, y_ok, r_ok = false, s_ok = false, w_ok = false, b_ok = false;  // vector accesses (vec_ok)
  bool whole = false;  // P::kWhole, the row is whole vectors (cols % kVec == 0) and y, weight, bias are aligned:
                       // a partial tile takes the fast path with a predicate per vector (RowGroup::by_kind)
  bool vec_row;        // the row is whole vectors (cols % kVec == 0): a partial tile's statistics check each of a
                       // thread's vectors as a whole, not each element (TileStats, WholeVectors)
  long long ngroups;  // row groups of kRowsPerBlock rows
  int gstride;        // the grid: a workgroup takes every gstride-th row group
  float inv_cols;

  CKGEN_DEVICE RowEnv(const RowArgs<P>& a, int t)
      : ntiles(P::kSingle ? 1 : (a.cols - 1) / P::kTile + 1),
        tid(t),
        rt(t % P::kRowThreads),
        c(a.scale * kLog2e),
        x_ok(detail::vec_ok<typename P::TIn, P::kVec>(a.x, a.stride_x)),
        y_ok(!P::kWriteY || detail::vec_ok<typename P::TOut, P::kVec / P::kYPack>(a.y, a.stride_y)),
        vec_row(a.cols % P::kVec == 0) {
    if constexpr (P::kResidual) {
      r_ok = detail::vec_ok<typename P::TRes, P::kVec>(a.residual, a.stride_res);
      s_ok = detail::vec_ok<typename P::TRes, P::kVec>(a.s_out, a.stride_s);
    }
    if constexpr (P::kHasWeight) w_ok = detail::vec_ok<typename P::TW, P::kVec>(a.weight, 0);
    if constexpr (P::kHasBias) b_ok = detail::vec_ok<typename P::TW, P::kVec>(a.bias, 0);
    whole = P::kWhole && a.cols % P::kVec == 0 && y_ok && (!P::kHasWeight || w_ok) && (!P::kHasBias || b_ok);
    ngroups = (static_cast<long long>(a.rows) + P::kRowsPerBlock - 1) / P::kRowsPerBlock;
    gstride = grid_dim(0);
    inv_cols = 1.0f / static_cast<float>(a.cols);
  }
};

template <class P>
struct RowGroup {
  using TIn = typename P::TIn;
  using TRes = typename P::TRes;
  using TW = typename P::TW;
  using TOut = typename P::TOut;
  using FS = typename P::FS;
  using FX = typename P::FX;
  using FR = typename P::FR;
  using FW = typename P::FW;
  using FO = typename P::FO;
  using Pol = RowPolicy<P>;
  using Stats = TileStats<P::kR, P::kVec, P::kStep, FS, typename P::Counts>;
  static constexpr int kR = P::kR;
  static constexpr int kVec = P::kVec;

  const RowArgs<P>& a;
  const RowEnv<P>& e;
  long long row;  // this thread's row
  int ncols;      // a thread past the last row accesses nothing (0), joins the reductions
  // This thread's first column of each tensor, kept per lane (ckgen::per_lane: on AMD a VGPR pair), so that the
  // per-vector and per-tile offsets are added to it instead of becoming SGPR bases, one per tensor and vector
  // (which ran out of SGPRs).
  const TIn* xr;
  TOut* yr = nullptr;
  const TRes* rr = nullptr;
  TRes* sr = nullptr;
  const TW* wr = nullptr;
  const TW* br = nullptr;
  FS buf[kR];  // the tile in registers (TIn, or s as TRes)
  typename P::Counts k{};
  bool fast = false;  // the current tile takes the fast path (fast_tile)

  CKGEN_DEVICE RowGroup(const RowArgs<P>& args, const RowEnv<P>& env, long long g)
      : a(args), e(env), row(g * P::kRowsPerBlock + env.tid / P::kRowThreads), ncols(row < args.rows ? args.cols : 0) {
    const long long tcol = static_cast<long long>(e.rt) * kVec;
    xr = per_lane(a.x + (row * a.stride_x + tcol));
    if constexpr (P::kWriteY) yr = per_lane(a.y + (row * a.stride_y + tcol / P::kYPack));  // (fp4: bytes)
    if constexpr (P::kResidual) {
      rr = per_lane(a.residual + (row * a.stride_res + tcol));
      sr = per_lane(a.s_out + (row * a.stride_s + tcol));
    }
    if constexpr (P::kHasWeight) wr = per_lane(a.weight + tcol);
    if constexpr (P::kHasBias) br = per_lane(a.bias + tcol);
  }

  // tiles of the row (a constant 1 for one pass)
  CKGEN_DEVICE int ntiles() const { return P::kSingle ? 1 : e.ntiles; }
  CKGEN_DEVICE void set_tile(int tile) { k = Pol::counts(ncols, tile, e.rt); }

  // The tile's kR vectors of a row (src: this thread's first column of it) from global memory (detail::load_tile).
  template <class F, class T>
  CKGEN_ROWOPS_STEP void load_vecs(F (&out)[kR], const T* src, bool ok, int tile) const {
    detail::load_tile<P::kStep>(out, src + Pol::col0(tile, 0), k, ok);
  }
  // buf = s = x + residual rounded to TRes
  CKGEN_DEVICE void sum_residual(const FX (&xv)[kR], const FR (&rv)[kR]) {
#pragma unroll
    for (int j = 0; j < kR; ++j) {
      float sv[kVec];
#pragma unroll
      for (int i = 0; i < kVec; ++i) sv[i] = detail::elem(xv[j], i) + detail::elem(rv[j], i);
      buf[j] = detail::pack<TRes, kVec>(sv);
    }
  }
  // buf = s = x + residual rounded to TRes, written to s_out
  CKGEN_DEVICE void add_residual(const FX (&xv)[kR], const FR (&rv)[kR], int tile) {
    sum_residual(xv, rv);
#pragma unroll
    for (int j = 0; j < kR; ++j)
      if (k.full || j * P::kStep < k.rem) detail::store<TRes, kVec>(sr + Pol::col0(tile, j), k.nv(j), e.s_ok, buf[j]);
  }
  // Pass 1 from global memory: x (+ residual -> s, stored) of `tile` into buf.
  CKGEN_DEVICE void load_global(int tile) {
    if constexpr (P::kResidual) {
      FX xv[kR];
      FR rv[kR];
      load_vecs(xv, xr, e.x_ok, tile);
      load_vecs(rv, rr, e.r_ok, tile);
      add_residual(xv, rv, tile);
    } else {
      load_vecs(buf, xr, e.x_ok, tile);
    }
  }
  // Later passes from global memory: v again, from s_out (kResidual: this thread wrote it in pass 1) or x.
  CKGEN_ROWOPS_STEP void reload_global(int tile) {
    set_tile(tile);
    if constexpr (P::kResidual) load_vecs(buf, sr, e.s_ok, tile);
    else load_vecs(buf, xr, e.x_ok, tile);
  }

  // The aligned full tile: every access of the tile's vectors (y, weight, bias) is one vector instruction, with
  // no branch per vector, so that the weight and bias loads of all vectors are in flight together.
  CKGEN_ROWOPS_STEP bool fast_tile() const {
    return k.full && e.y_ok && (!P::kHasWeight || e.w_ok) && (!P::kHasBias || e.b_ok);
  }
  // vector j of weight and bias outside the fast path (full or masked)
  CKGEN_ROWOPS_STEP void weights(int tile, int j, FW& w, FW& b) const {
    if constexpr (P::kHasWeight) w = k.full && e.w_ok ? Pol::template weight_vector<false>(wr + Pol::col0(tile, j))
                                                      : detail::load<TW, kVec>(wr + Pol::col0(tile, j), k.nv(j), e.w_ok);
    if constexpr (P::kHasBias) b = k.full && e.b_ok ? Pol::template weight_vector<true>(br + Pol::col0(tile, j))
                                                    : detail::load<TW, kVec>(br + Pol::col0(tile, j), k.nv(j), e.b_ok);
    (void)w; (void)b;
  }
  // y of element i of vector j (before the cast / quantization)
  CKGEN_ROWOPS_STEP float y_of(const RowScalars& rs, int j, int i, const FW& w, const FW& b) const {
    float yv = P::Kind::y(detail::elem(buf[j], i), rs, e.c);
    if constexpr (P::kHasWeight) yv *= detail::elem(w, i);
    if constexpr (P::kHasBias) yv += detail::elem(b, i);
    (void)w; (void)b;
    return yv;
  }

  // f(kM, kFast) for the current tile's kind: fast (full, weights in registers: wts.prefetch first when
  // `prefetch`), whole (a partial tile of a row of whole aligned vectors, e.whole, where Wts::kWhole: the fast
  // path with vector j of this thread predicated on k.nv(j) > 0, weights prefetched the same way), full, or
  // masked (partial). The
  // prefetch stands inside the fast branches on purpose: issued before the branch (for every tile kind), the kR
  // weight / bias vectors stay live across the full and masked paths too, and clang 22 spilled there (gfx90a,
  // rung 1); inside it they are live only where they are used.
  template <class Wts, class F>
  CKGEN_ROWOPS_STEP_FORCED void by_kind(Wts& wts, bool prefetch, int tile, F&& f) {
    if (fast) {
      if (prefetch) wts.prefetch(*this, tile, BoolConst<false>{});
      f(BoolConst<false>{}, BoolConst<true>{});
    } else if (Wts::kWhole && e.whole) {
      if constexpr (Wts::kWhole) {
        if (prefetch) wts.prefetch(*this, tile, BoolConst<true>{});
        f(BoolConst<true>{}, BoolConst<true>{});
      }
    } else if (k.full) {
      f(BoolConst<false>{}, BoolConst<false>{});
    } else {
      f(BoolConst<true>{}, BoolConst<false>{});
    }
  }
  // amax = max(amax, |y|) over the valid elements of the tile in buf
  template <class M, class Fast, class Wts>
  CKGEN_ROWOPS_STEP_FORCED void tile_amax(M, Fast, int tile, const RowScalars& rs, Wts& wts, float& amax) {
    const Stats ts{buf, k};
#pragma unroll
    for (int j = 0; j < kR; ++j) {
      if (!ts.live(M{}, j)) continue;
      FW w, b;
      if constexpr (Fast::value) wts.get(*this, tile, j, w, b, M{});
      else weights(tile, j, w, b);
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        const float av = detail::abs_f32(y_of(rs, j, i, w, b));
        amax = max_f32(amax, ts.valid(M{}, j, i) ? av : 0.0f);
      }
    }
  }
  // y of the tile in buf, stored
  template <class M, class Fast, class Wts>
  CKGEN_ROWOPS_STEP_FORCED void tile_y(M, Fast, int tile, const RowScalars& rs, float qmul, Wts& wts) {
    const Stats ts{buf, k};
#pragma unroll
    for (int j = 0; j < kR; ++j) {
      if (!ts.live(M{}, j)) continue;
      FW w, b;
      if constexpr (Fast::value) wts.get(*this, tile, j, w, b, M{});
      else weights(tile, j, w, b);
      float o[kVec];
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        const float yv = y_of(rs, j, i, w, b);
        o[i] = P::kQuant ? yv * qmul : yv;
      }
      const FO f = detail::pack<TOut, kVec>(o);
      if constexpr (Fast::value) {
        if (!M::value || k.nv(j) > 0) detail::store_vector<TOut, kVec>(yr + Pol::col0(tile, j), f);
      }
      else if constexpr (M::value) detail::store<TOut, kVec>(yr + Pol::col0(tile, j), k.nv(j), e.y_ok, f);
      else detail::store<TOut, kVec>(yr + Pol::col0(tile, j), kVec, e.y_ok, f);
    }
  }

  // y of the tile in buf quantized per group of P::kGroup columns (rowops_quant.h), stored with the groups'
  // scales: every vector of this thread lies in one group, reduced over the group's threads. Every thread of
  // the row takes every step (the group's butterfly); vectors past the row count as amax 0. The group's first
  // thread stores the scale: inside the loop, or with CKGEN_ROWOPS_GROUP_SCALES_AFTER (rowops_frag.h) after it,
  // all of the tile's at once.
  template <class M, class Fast, class Wts>
  CKGEN_ROWOPS_STEP_FORCED void tile_y_group(M, Fast, int tile, const RowScalars& rs, Wts& wts) {
    const Stats ts{buf, k};
    constexpr int kLanes = P::kGroup / kVec;
    constexpr bool kAfter = CKGEN_ROWOPS_GROUP_SCALES_AFTER;
    float scale[kR];  // (kAfter) the scales of this thread's groups (f32; E8M0 codes too, P::kMx: exact)
#pragma unroll
    for (int j = 0; j < kR; ++j) {
      scale[j] = 1.0f;
      if (!ts.live(M{}, j)) continue;  // uniform over the row's threads
      const bool in = !M::value || k.nv(j) > 0;
      float o[kVec];
      float amax = 0.0f;
      if (in) {
        FW w, b;
        if constexpr (Fast::value) wts.get(*this, tile, j, w, b, M{});
        else weights(tile, j, w, b);
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
          o[i] = y_of(rs, j, i, w, b);
          amax = max_f32(amax, ts.valid(M{}, j, i) ? detail::abs_f32(o[i]) : 0.0f);
        }
      }
      amax = group_amax<P>(amax);
      if (!in) continue;
      const typename P::TScale sc = group_scale<P>(amax);
      if constexpr (kAfter) {
        scale[j] = sc;
      } else {
        const long long col = Pol::col0(tile, j) + static_cast<long long>(e.rt) * kVec;
        if (e.rt % kLanes == 0) gstore(a.y_scale + (row * a.stride_scale + col / P::kGroup), sc);
      }
      const float qmul = group_mul<P>(sc, amax);
#pragma unroll
      for (int i = 0; i < kVec; ++i) o[i] *= qmul;
      if constexpr (P::kYPack == 2) {  // fp4 pairs: kVec / 2 bytes at col / 2 (blocks/mx_store.h)
        uint8_t* const p = reinterpret_cast<uint8_t*>(yr + Pol::col0(tile, j) / 2);
        if constexpr (Fast::value) fp4_store<kVec>(p, kVec, true, o, 1.0f);
        else if constexpr (M::value) fp4_store<kVec>(p, k.nv(j), e.y_ok && k.nv(j) >= kVec, o, 1.0f);
        else fp4_store<kVec>(p, kVec, e.y_ok, o, 1.0f);
      } else {
        const FO f = detail::pack<TOut, kVec>(o);
        if constexpr (Fast::value) detail::store_vector<TOut, kVec>(yr + Pol::col0(tile, j), f);
        else if constexpr (M::value) detail::store<TOut, kVec>(yr + Pol::col0(tile, j), k.nv(j), e.y_ok, f);
        else detail::store<TOut, kVec>(yr + Pol::col0(tile, j), kVec, e.y_ok, f);
      }
    }
    if constexpr (kAfter) {
      // vector j's group: column col0(tile, 0) + j * kStep + rt * kVec of the row (col0 and kStep are multiples of
      // the group, rowops_quant.h)
      static_assert(P::kStep % P::kGroup == 0 && P::kTile % P::kGroup == 0, "a group lies within a vector step");
      typename P::TScale* const sr =
          a.y_scale + (row * a.stride_scale + (Pol::col0(tile, 0) + static_cast<long long>(e.rt) * kVec) / P::kGroup);
      if (e.rt % kLanes == 0) {
#pragma unroll
        for (int j = 0; j < kR; ++j) {
          if (ts.live(M{}, j) && (!M::value || k.nv(j) > 0))
            gstore(sr + j * (P::kStep / P::kGroup), static_cast<typename P::TScale>(scale[j]));
        }
      }
    }
    (void)scale;
  }

  // Per-row scales (int8 or fp8 y, P::kGroup == 0): the y -> q multiplier (kMax / amax), y_scale written; amax
  // by a pass backward over the tiles (softmax: the largest y is exp(0) / d). 1 otherwise.
  template <class Src, class Wts>
  CKGEN_DEVICE float quant_pass(const RowScalars& rs, Src& src, Wts& wts, RowReduce<P>& red) {
    float qmul = 1.0f;
    if constexpr (P::kQuant && P::kGroup == 0) {
      float amax;
      if constexpr (P::kAmaxPass) {
        amax = 0.0f;
        const int n = ntiles();
        for (int tile = n - 1; tile >= 0; --tile) {
          if (tile != n - 1) src.again(*this, tile);
          if (!P::kSingle) fast = fast_tile();  // single pass: set in pass 1
          by_kind(wts, true, tile, [&](auto kM, auto kFast) { tile_amax(kM, kFast, tile, rs, wts, amax); });
        }
        amax = red.max(amax);
      } else {
        amax = rs.b;
      }
      qmul = quant_mul<P>(amax);
      if (e.rt == 0 && row < a.rows) gstore(a.y_scale + row, quant_scale<P>(amax));
    }
    return qmul;
  }
  // rstd[row] = the row scalars' b (P::kRstd), by the row's first thread
  CKGEN_DEVICE void write_rstd(const RowScalars& rs) const {
    if constexpr (P::kRstd) {
      if (e.rt == 0 && row < a.rows) gstore(a.rstd + row, rs.b);
    }
    (void)rs;
  }
  // The outputs after the statistics: rstd, then (unless y = none: P::kWriteY false) y.
  template <class Src, class Wts>
  CKGEN_DEVICE void output(const RowScalars& rs, Src& src, Wts& wts, RowReduce<P>& red) {
    write_rstd(rs);
    if constexpr (P::kWriteY) output_y(rs, src, wts, red);
    (void)src; (void)wts; (void)red;
  }
  // The passes of y: the int8 amax pass, then y (the other way over the tiles).
  template <class Src, class Wts>
  CKGEN_DEVICE void output_y(const RowScalars& rs, Src& src, Wts& wts, RowReduce<P>& red) {
    const float qmul = quant_pass(rs, src, wts, red);
    const bool forward = P::kAmaxPass;  // starts from the tile the previous pass ended with (still in buf)
    const int n = ntiles();
    for (int i = 0; i < n; ++i) {
      const int tile = forward ? i : n - 1 - i;
      if (i != 0) src.again(*this, tile);
      // (the amax pass ended with this tile: fast and the fast weights are its own)
      const bool next = i != 0 || !P::kAmaxPass;
      if (next && !P::kSingle) fast = fast_tile();  // single pass: set in pass 1
      by_kind(wts, next, tile, [&](auto kM, auto kFast) {
        if constexpr (P::kGroup > 0) tile_y_group(kM, kFast, tile, rs, wts);
        else tile_y(kM, kFast, tile, rs, qmul, wts);
      });
    }
  }
};

template <class P>
struct GlobalSource {
  CKGEN_DEVICE explicit GlobalSource(const RowGroup<P>&) {}
  CKGEN_ROWOPS_STEP void first(RowGroup<P>& g, int tile) {
    g.set_tile(tile);
    g.load_global(tile);
  }
  CKGEN_DEVICE void again(RowGroup<P>& g, int tile) { g.reload_global(tile); }
  CKGEN_DEVICE void refill() {}
};

// One aligned vector of weight (kBias: of bias) at p where `in`, else zero (a vector past the row: no access).
template <class P, bool kBias>
CKGEN_DEVICE typename P::FW weight_or_zero(const typename P::TW* p, bool in) {
  typename P::FW f;
  if (in) return RowPolicy<P>::template weight_vector<kBias>(p);
#pragma unroll
  for (int i = 0; i < P::FW::kWords; ++i) f.w[i] = 0u;
  return f;
}

template <class P>
struct TileWeights {
  static constexpr bool kWhole = P::kWhole;  // whole-vector tiles take the fast path (RowGroup::by_kind)
  typename P::FW wt[P::kR], bt[P::kR];
  // every vector of the tile (M: those of this thread inside the row, k.nv(j) > 0; the rest are zero)
  template <class M>
  CKGEN_ROWOPS_STEP void prefetch(const RowGroup<P>& g, int tile, M) {
#pragma unroll
    for (int j = 0; j < P::kR; ++j) {
      const bool in = !M::value || g.k.nv(j) > 0;
      if constexpr (P::kHasWeight) wt[j] = weight_or_zero<P, false>(g.wr + RowPolicy<P>::col0(tile, j), in);
      if constexpr (P::kHasBias) bt[j] = weight_or_zero<P, true>(g.br + RowPolicy<P>::col0(tile, j), in);
      (void)in;
    }
    (void)g; (void)tile;
  }
  template <class M>
  CKGEN_ROWOPS_STEP void get(const RowGroup<P>&, int, int j, typename P::FW& w, typename P::FW& b, M) const {
    if constexpr (P::kHasWeight) w = wt[j];
    if constexpr (P::kHasBias) b = bt[j];
    (void)w; (void)b; (void)j;
  }
};

}  // namespace rowops
}  // namespace ckgen
