// elementwise_body.h: y = expr(a, b, c) element by element over a rows x cols matrix, for every platform.
//
// Contract (Cfg from the generated kernel, ckgen/ops/elementwise/__init__.py's kernel_view):
//   TA TB TC TY      element types (TB / TC: TA's when the kernel has no b / c, whose pointers are then NULL)
//   Expr             ew::Expr<...> (elementwise_expr.h)
//   kHasB, kHasC     whether b / c are read (an input broadcast over the rows comes with stride 0)
//   kVec             elements per vector access (16 bytes of the widest tensor); kThreads; kUnroll: vectors per
//                    thread in flight
// Launch: grid.x = ceil(cols / (kThreads * kVec * kUnroll)) column chunks, grid.y = rows (one row per workgroup
// row; the host splits more than 65535 rows into consecutive launches, moving the row pointers). Strides are
// elements between rows (a row vector's is unused). Rows whose pointers and strides keep every vector aligned go
// by vectors; others, and the last cols % kVec columns, element by element. Nothing past cols is read or written.
#pragma once

#include "ckgen/platform.h"
#include "elementwise_expr.h"

namespace ckgen {
namespace ew {

template <class T, int kVec>
CKGEN_DEVICE bool aligned(const T* row) {
  return reinterpret_cast<unsigned long long>(row) % alignof(vec<T, kVec>) == 0;
}

template <class T, int kVec>
CKGEN_DEVICE void load(const T* p, float* out) {
  const vec<T, kVec> v = gload(reinterpret_cast<const vec<T, kVec>*>(p));
#pragma unroll
  for (int e = 0; e < kVec; ++e) out[e] = to_float(v.v[e]);
}

// The row of one input (NULL stays NULL; a broadcast row has stride 0).
template <class T>
CKGEN_DEVICE const T* row_of(const T* base, long long row, long long stride) {
  return base == nullptr ? base : base + row * stride;
}

// kVec elements from column col of each input row, then y.
template <class Cfg>
CKGEN_DEVICE void vector_step(const typename Cfg::TA* a, const typename Cfg::TB* b, const typename Cfg::TC* c,
                              typename Cfg::TY* y, long long col) {
  constexpr int kVec = Cfg::kVec;
  float in[3][kVec] = {};
  load<typename Cfg::TA, kVec>(a + col, in[0]);
  if constexpr (Cfg::kHasB) load<typename Cfg::TB, kVec>(b + col, in[1]);
  if constexpr (Cfg::kHasC) load<typename Cfg::TC, kVec>(c + col, in[2]);
  vec<typename Cfg::TY, kVec> out;
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    const float v[3] = {in[0][e], in[1][e], in[2][e]};
    out.v[e] = from_float<typename Cfg::TY>(Cfg::Expr::eval(v));
  }
  gstore(reinterpret_cast<vec<typename Cfg::TY, kVec>*>(y + col), out);
}

// Columns [col, end) one element at a time.
template <class Cfg>
CKGEN_DEVICE void scalar_steps(const typename Cfg::TA* a, const typename Cfg::TB* b, const typename Cfg::TC* c,
                               typename Cfg::TY* y, long long col, long long end) {
  for (long long i = col; i < end; ++i) {
    const float v[3] = {to_float(gload(a + i)), Cfg::kHasB ? to_float(gload(b + i)) : 0.0f,
                        Cfg::kHasC ? to_float(gload(c + i)) : 0.0f};
    gstore(y + i, from_float<typename Cfg::TY>(Cfg::Expr::eval(v)));
  }
}

template <class Cfg>
CKGEN_DEVICE void elementwise_forward(const typename Cfg::TA* a, const typename Cfg::TB* b,
                                      const typename Cfg::TC* c, typename Cfg::TY* y, long long rows,
                                      long long cols, long long stride_a, long long stride_b, long long stride_c,
                                      long long stride_y) {
  constexpr int kVec = Cfg::kVec;
  const long long row = block_id(1);
  if (row >= rows) return;
  const auto* ar = row_of(a, row, stride_a);
  const auto* br = row_of(Cfg::kHasB ? b : nullptr, row, stride_b);
  const auto* cr = row_of(Cfg::kHasC ? c : nullptr, row, stride_c);
  auto* yr = y + row * stride_y;
  const bool vectors = aligned<typename Cfg::TA, kVec>(ar) && aligned<typename Cfg::TY, kVec>(yr) &&
                       (!Cfg::kHasB || aligned<typename Cfg::TB, kVec>(br)) &&
                       (!Cfg::kHasC || aligned<typename Cfg::TC, kVec>(cr));
  const long long chunk = static_cast<long long>(block_id(0)) * Cfg::kThreads * kVec * Cfg::kUnroll;
#pragma unroll
  for (int u = 0; u < Cfg::kUnroll; ++u) {
    const long long col = chunk + (static_cast<long long>(u) * Cfg::kThreads + thread_id()) * kVec;
    if (col >= cols) break;
    if (vectors && col + kVec <= cols) {
      vector_step<Cfg>(ar, br, cr, yr, col);
    } else {
      scalar_steps<Cfg>(ar, br, cr, yr, col, col + kVec < cols ? col + kVec : cols);
    }
  }
}

}  // namespace ew
}  // namespace ckgen
