// rowops_kinds.h (ckgen/ops/rowops/device): the per-kind math of the row ops, one trait per kind: RowKind<kOp>.
// The pipelines (rowops_pipeline_*.h) and RowGroup (rowops_row.h) are the same for every kind; what differs is
// here. The Python side names each kind's kOp in one table (ckgen/ops/rowops/kinds.py, RowKind.kop).
//
// RowKind<kOp> provides (all f32; Ts is a TileStats of one thread's tile, M a BoolConst: a partial tile):
//   using State                  the per-row state a looped row keeps (kN floats, init(), combine(a, b): a
//                                commutative merge, all-reduced over the row's threads; rowops_math.h has three)
//   kWeights                     the kind may take weight and bias (y *= weight, y += bias after y below)
//   kAmaxInScalars               int8 y: the row's amax of |y| is RowScalars::b (no amax pass; softmax: 1/d)
//   fold(ts, m, c, st)           the looped pipeline: the tile's statistics folded into the running state st
//   finish(st, cols, eps)        the row scalars from the row's reduced state
//   one_pass(ts, full, e, eps, red, mid)
//                                the one-pass pipeline: the row scalars of the row in one tile (full: the tile
//                                is full; e: the thread's RowEnv, e.c, e.inv_cols = 1 / cols and false, a
//                                partial tile's mask: by_mask, rowops_math.h), reducing by
//                                red.max / red.sum (RowReduce); mid() is called once the tile's own statistics
//                                are taken, before the first all-reduce
//   y(v, rs, c)                  y of one element before weight, bias and the cast / quantization
//   kRstd (optional, default false) RowScalars::b is the row's rstd = 1/sqrt(var + eps): a Cfg may ask for it
//                                as an output (Cfg::kRstd, rowops_config.h; RMS norm)
// c = scale * log2(e) (softmax works in base 2). Every function is forced inline (CKGEN_DEVICE): a kind's math
// is part of the pipeline step that calls it.
//
// A kind outside this package specializes RowKind<kOp> (an unused kOp) in its own header, which includes
// rowops_entry.h first; its kernel includes that header (kinds.py RowKind.header; docs/adding-an-op.md).
#pragma once

#include "ckgen/platform.h"
#include "rowops_math.h"

namespace ckgen {
namespace rowops {

enum : int { kSoftmax = 0, kLogSoftmax = 1, kLayerNorm = 2, kRmsNorm = 3, kQuantize = 4 };

template <int kOp>
struct RowKind;  // one specialization per kind (above: what it provides)

// softmax and log-softmax: (m, d) of t = v * c, m = max t, d = sum 2^(t - m); online softmax when looped
template <bool kLog>
struct SoftmaxKind {
  using State = SoftmaxState;
  static constexpr bool kWeights = false;
  static constexpr bool kAmaxInScalars = !kLog;

  template <class Ts, class M>
  CKGEN_DEVICE static void fold(const Ts& ts, M m, float c, State& st) {
    const float mx = max_f32(st.v[0], tile_tmax(ts, m, c));
    const float d = ts.expsum(m, c, mx);
    st.v[1] = st.v[1] * exp2_f32(st.v[0] - mx) + d;
    st.v[0] = mx;
  }
  CKGEN_DEVICE static RowScalars finish(const State& s, int, float) {
    if constexpr (kLog) return RowScalars{s.v[0] + log2_f32(s.v[1]), 0.0f};
    else return RowScalars{s.v[0], 1.0f / s.v[1]};
  }
  template <class Ts, class Env, class Red, class Mid>
  CKGEN_DEVICE static RowScalars one_pass(const Ts& ts, bool full, const Env& e, float eps, Red& red, Mid mid) {
    const float tm = by_mask(full, e.vec_row,
        [&](auto mk) CKGEN_ROWOPS_LAMBDA_FORCED { return tile_tmax(ts, mk, e.c); });
    mid();
    const float m = red.max(tm);
    const float dl = by_mask(full, e.vec_row,
        [&](auto mk) CKGEN_ROWOPS_LAMBDA_FORCED { return ts.expsum(mk, e.c, m); });
    const float d = red.sum(dl);
    return finish(State{{m, d}}, 0, eps);
  }
  CKGEN_DEVICE static float y(float v, const RowScalars& rs, float c) {
    if constexpr (kLog) return (v * c - rs.a) * kLn2;
    else return exp2_f32(v * c - rs.a) * rs.b;
  }
};

template <>
struct RowKind<kSoftmax> : SoftmaxKind<false> {};
template <>
struct RowKind<kLogSoftmax> : SoftmaxKind<true> {};

// layer norm: (n, mean, M2), the tiles' exact two-pass moments merged (Chan et al.); y = (v - mean) * rstd
template <>
struct RowKind<kLayerNorm> {
  using State = MomentState;
  static constexpr bool kWeights = true;
  static constexpr bool kAmaxInScalars = false;

  template <class Ts, class M>
  CKGEN_DEVICE static void fold(const Ts& ts, M m, float, State& st) {
    const float n = ts.count(m);
    const float inv = n > 0.0f ? rcp_f32(n) : 0.0f;
    const float mean = ts.sum(m) * inv;
    st = MomentState::combine(st, MomentState{{n, mean, ts.m2(m, mean)}});
  }
  CKGEN_DEVICE static RowScalars finish(const State& s, int cols, float eps) {
    return RowScalars{s.v[1], rsqrt_f32(s.v[2] / static_cast<float>(cols) + eps)};
  }
  // the mean by one all-reduce, then sum (v - mean)^2 by a second (the exact two-pass variance)
  template <class Ts, class Env, class Red, class Mid>
  CKGEN_DEVICE static RowScalars one_pass(const Ts& ts, bool full, const Env& e, float eps, Red& red, Mid mid) {
    const float sl = by_mask(full, e.vec_row, [&](auto mk) CKGEN_ROWOPS_LAMBDA_FORCED { return ts.sum(mk); });
    mid();
    const float mean = red.sum(sl) * e.inv_cols;
    const float ml = by_mask(full, e.vec_row, [&](auto mk) CKGEN_ROWOPS_LAMBDA_FORCED { return ts.m2(mk, mean); });
    const float m2 = red.sum(ml);
    return RowScalars{mean, rsqrt_f32(m2 * e.inv_cols + eps)};
  }
  CKGEN_DEVICE static float y(float v, const RowScalars& rs, float) { return (v - rs.a) * rs.b; }
};

// RMS norm: the sum of v^2; y = v * rstd (rstd = RowScalars::b: the rstd output, kRstd)
template <>
struct RowKind<kRmsNorm> {
  using State = SumState;
  static constexpr bool kWeights = true;
  static constexpr bool kAmaxInScalars = false;
  static constexpr bool kRstd = true;

  template <class Ts, class M>
  CKGEN_DEVICE static void fold(const Ts& ts, M m, float, State& st) {
    st.v[0] += ts.sumsq(m);
  }
  CKGEN_DEVICE static RowScalars finish(const State& s, int cols, float eps) {
    return RowScalars{0.0f, rsqrt_f32(s.v[0] / static_cast<float>(cols) + eps)};
  }
  template <class Ts, class Env, class Red, class Mid>
  CKGEN_DEVICE static RowScalars one_pass(const Ts& ts, bool full, const Env& e, float eps, Red& red, Mid mid) {
    const float sl = by_mask(full, e.vec_row, [&](auto mk) CKGEN_ROWOPS_LAMBDA_FORCED { return ts.sumsq(mk); });
    mid();
    const float ss = red.sum(sl);
    return RowScalars{0.0f, rsqrt_f32(ss * e.inv_cols + eps)};
  }
  CKGEN_DEVICE static float y(float v, const RowScalars& rs, float) { return v * rs.b; }
};

// quantize: y = v, quantized (int8 / fp8 y, rowops_quant.h); the statistic is amax = max |v|, which is the
// row's amax of y (kAmaxInScalars: RowScalars::b), so a per-row scale needs no amax pass
struct AmaxState {
  static constexpr int kN = 1;
  float v[1];  // max |v| (0 for no column)
  static CKGEN_DEVICE AmaxState init() { return AmaxState{{0.0f}}; }
  static CKGEN_DEVICE AmaxState combine(const AmaxState& a, const AmaxState& b) {
    return AmaxState{{max_f32(a.v[0], b.v[0])}};
  }
};

template <>
struct RowKind<kQuantize> {
  using State = AmaxState;
  static constexpr bool kWeights = false;
  static constexpr bool kAmaxInScalars = true;

  template <class Ts, class M>
  CKGEN_DEVICE static float amax(const Ts& ts, M m) {
    return ts.fold(m, 0.0f, [](float a, float v, bool ok) { return max_f32(a, ok ? (v < 0.0f ? -v : v) : 0.0f); });
  }
  template <class Ts, class M>
  CKGEN_DEVICE static void fold(const Ts& ts, M m, float, State& st) {
    st.v[0] = max_f32(st.v[0], amax(ts, m));
  }
  CKGEN_DEVICE static RowScalars finish(const State& s, int, float) { return RowScalars{0.0f, s.v[0]}; }
  template <class Ts, class Env, class Red, class Mid>
  CKGEN_DEVICE static RowScalars one_pass(const Ts& ts, bool full, const Env& e, float, Red& red, Mid mid) {
    const float l = by_mask(full, e.vec_row, [&](auto mk) CKGEN_ROWOPS_LAMBDA_FORCED { return amax(ts, mk); });
    mid();
    return RowScalars{0.0f, red.max(l)};
  }
  CKGEN_DEVICE static float y(float v, const RowScalars&, float) { return v; }
};

}  // namespace rowops
}  // namespace ckgen
