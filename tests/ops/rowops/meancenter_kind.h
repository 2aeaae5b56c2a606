// meancenter_kind.h (tests/ops/rowops): the device half of a row-op kind that test_rowops_kinds.py adds from
// outside the package: mean-only centering, y = (v - mean) [* weight] [+ bias]. It includes the row ops' entry
// header first, then specializes ckgen::rowops::RowKind for its kOp (ckgen/ops/rowops/device/rowops_kinds.h
// states what a kind provides); the kernel includes this header in place of rowops_entry.h (RowKind.header).
#pragma once

#include "rowops_entry.h"

namespace ckgen_test {
constexpr int kMeanCenter = 100;  // a kOp no package kind uses
}  // namespace ckgen_test

namespace ckgen {
namespace rowops {

// state: the sum of v; row scalars: a = mean (b unused: 1)
template <>
struct RowKind<ckgen_test::kMeanCenter> {
  using State = SumState;
  static constexpr bool kWeights = true;
  static constexpr bool kAmaxInScalars = false;

  template <class Ts, class M>
  CKGEN_DEVICE static void fold(const Ts& ts, M m, float, State& st) {
    st.v[0] += ts.sum(m);
  }
  CKGEN_DEVICE static RowScalars finish(const State& s, int cols, float) {
    return RowScalars{s.v[0] / static_cast<float>(cols), 1.0f};
  }
  template <class Ts, class Env, class Red, class Mid>
  CKGEN_DEVICE static RowScalars one_pass(const Ts& ts, bool full, const Env& e, float, Red& red, Mid mid) {
    const float sl = full ? ts.sum(BoolConst<false>{}) : ts.sum(BoolConst<true>{});
    mid();
    return RowScalars{red.sum(sl) * e.inv_cols, 1.0f};
  }
  CKGEN_DEVICE static float y(float v, const RowScalars& rs, float) { return v - rs.a; }
};

}  // namespace rowops
}  // namespace ckgen
