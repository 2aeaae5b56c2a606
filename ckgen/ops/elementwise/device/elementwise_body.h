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
// elements between rows (0: one row broadcast over all). Rows whose starts keep every vector aligned go
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

// The row of one input (NULL stays NULL; a broadcast row has stride 0).
template <class T>
CKGEN_DEVICE const T* row_of(const T* base, long long row, long long stride) {
  return base == nullptr ? base : base + row * stride;
}

// One thread's vectors of one input: kUnroll vectors of kVec elements, loaded before any is used, so that every
// load of the chunk is in flight at once (a store to y, which may alias an input, would otherwise order them).
template <class T, int kVec, int kUnroll>
struct Vectors {
  vec<T, kVec> v[kUnroll];

  CKGEN_DEVICE void load(const T* row, const long long* col, int full) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < full) v[u] = gload(reinterpret_cast<const vec<T, kVec>*>(row + col[u]));
  }
  CKGEN_DEVICE float at(int u, int e) const { return to_float(v[u].v[e]); }
};

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

// Whether every vector of these rows is aligned for one vector access (a row's start: the chunks are whole vectors).
template <class Cfg>
CKGEN_DEVICE bool rows_aligned(const typename Cfg::TA* a, const typename Cfg::TB* b, const typename Cfg::TC* c,
                               const typename Cfg::TY* y) {
  constexpr int kVec = Cfg::kVec;
  return aligned<typename Cfg::TA, kVec>(a) && aligned<typename Cfg::TY, kVec>(y) &&
         (!Cfg::kHasB || aligned<typename Cfg::TB, kVec>(b)) && (!Cfg::kHasC || aligned<typename Cfg::TC, kVec>(c));
}

// One thread's kUnroll vectors of its workgroup's chunk of a row: their columns, how many lead wholly inside an
// aligned row (full: those go by vectors), and the inputs' vectors loaded, all in flight before any is used.
template <class Cfg>
struct Chunk {
  static constexpr int kVec = Cfg::kVec, kUnroll = Cfg::kUnroll;
  long long col[kUnroll];
  int full = 0;
  Vectors<typename Cfg::TA, kVec, kUnroll> va;
  Vectors<typename Cfg::TB, kVec, kUnroll> vb;
  Vectors<typename Cfg::TC, kVec, kUnroll> vc;

  CKGEN_DEVICE Chunk(const typename Cfg::TA* ar, const typename Cfg::TB* br, const typename Cfg::TC* cr,
                     const typename Cfg::TY* yr, long long cols) {
    const long long chunk = static_cast<long long>(block_id(0)) * Cfg::kThreads * kVec * kUnroll;
    const bool vectors = rows_aligned<Cfg>(ar, br, cr, yr);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      col[u] = chunk + (static_cast<long long>(u) * Cfg::kThreads + thread_id()) * kVec;
      if (vectors && col[u] + kVec <= cols && full == u) full = u + 1;
    }
    va.load(ar, col, full);
    if constexpr (Cfg::kHasB) vb.load(br, col, full);
    if constexpr (Cfg::kHasC) vc.load(cr, col, full);
  }
};

template <class Cfg>
CKGEN_DEVICE void elementwise_forward(const typename Cfg::TA* a, const typename Cfg::TB* b,
                                      const typename Cfg::TC* c, typename Cfg::TY* y, long long rows,
                                      long long cols, long long stride_a, long long stride_b, long long stride_c,
                                      long long stride_y) {
  constexpr int kVec = Cfg::kVec, kUnroll = Cfg::kUnroll;
  const long long row = block_id(1);
  if (row >= rows) return;
  const auto* ar = row_of(a, row, stride_a);
  const auto* br = row_of(Cfg::kHasB ? b : nullptr, row, stride_b);
  const auto* cr = row_of(Cfg::kHasC ? c : nullptr, row, stride_c);
  auto* yr = y + row * stride_y;
  const Chunk<Cfg> ch(ar, br, cr, yr, cols);
  const long long* col = ch.col;
  const int full = ch.full;
  const auto& va = ch.va;
  const auto& vb = ch.vb;
  const auto& vc = ch.vc;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    if (u < full) {
      vec<typename Cfg::TY, kVec> out;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float v[3] = {va.at(u, e), Cfg::kHasB ? vb.at(u, e) : 0.0f, Cfg::kHasC ? vc.at(u, e) : 0.0f};
        out.v[e] = from_float<typename Cfg::TY>(Cfg::Expr::eval(v));
      }
      gstore(reinterpret_cast<vec<typename Cfg::TY, kVec>*>(yr + col[u]), out);
    } else if (col[u] < cols) {
      scalar_steps<Cfg>(ar, br, cr, yr, col[u], col[u] + kVec < cols ? col[u] + kVec : cols);
    }
  }
}

}  // namespace ew
}  // namespace ckgen
