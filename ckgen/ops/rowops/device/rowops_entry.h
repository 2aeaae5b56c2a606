// rowops_entry.h (ckgen/ops/rowops/device): the device entries of the generated row-op kernels, one per ABI
// shape of the registry's row ops (softmax: scale; layernorm: weight, bias, eps; rmsnorm: weight, eps), each taking
// exactly that ABI (ckgen/ops/rowops/abi.py) and calling rowops_forward<Cfg> (rowops_forward.h: the contract) with
// null pointers and zero for what the op has no argument for. Any kind (Cfg::kOp, rowops_kinds.h) whose op has
// that ABI may use an entry (kinds.py RowKind.entry):
//   softmax_entry<Cfg>(x, residual, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y, stride_s, scale)
//   layernorm_entry<Cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, <strides>, eps)
//   rmsnorm_entry<Cfg>(x, residual, weight, y, s_out, y_scale, rows, cols, <strides>, eps)
// and, for split rows (Cfg::kSplit > 0), each with a trailing void* workspace (rowops_pipeline_split.h).
//   quantize_entry<Cfg>(x, residual, y, s_out, y_scale, rows, cols, <strides>)
//   rmsnorm_rstd_entry<Cfg>(x, residual, weight, y, s_out, y_scale, rstd, rows, cols, <strides>, eps)
//                      the RMS norm with the rstd output (Cfg::kRstd; kinds.py RowKind.rstd_entry): rstd, rows
//                      floats, after y_scale; y is null with Cfg::kWriteY == false (y = none)
// y_scale is ScaleT<Cfg>* (rowops_quant.h): float, or E8M0 bytes (uint8_t) with Cfg::kQuantMx.
// Kernels with per-group scales (Cfg::kQuantGroup > 0, rowops_quant.h) also pass (groups, stride_scale), the
// last two arguments of their ABI: groups = ceil(cols / G) (checked by the host) and y_scale's row stride.
// The generated kernel (ckgen/ops/rowops/kernel.hip.j2) is a 1-D workgroup of Cfg::kThreads threads over
// rowops::grid_blocks<Cfg>(rows) workgroups (at most; any grid >= 1 is correct).
#pragma once

#include "rowops_forward.h"

namespace ckgen {
namespace rowops {

template <class Cfg>
CKGEN_DEVICE void softmax_entry(const typename Cfg::TIn* x, const typename Cfg::TRes* residual, typename Cfg::TOut* y,
                                typename Cfg::TRes* s_out, ScaleT<Cfg>* y_scale, int rows, int cols, long long stride_x,
                                long long stride_res, long long stride_y, long long stride_s, float scale,
                                int groups = 0, long long stride_scale = 0) {
  static_assert(!Cfg::kHasWeight && !Cfg::kHasBias, "softmax_entry: no weight or bias");
  (void)groups;
  rowops_forward<Cfg>(x, residual, nullptr, nullptr, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y,
                      stride_s, scale, 0.0f, stride_scale);
}

template <class Cfg>
CKGEN_DEVICE void layernorm_entry(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                  const typename Cfg::TW* weight, const typename Cfg::TW* bias, typename Cfg::TOut* y,
                                  typename Cfg::TRes* s_out, ScaleT<Cfg>* y_scale, int rows, int cols,
                                  long long stride_x, long long stride_res, long long stride_y, long long stride_s,
                                  float eps, int groups = 0, long long stride_scale = 0) {
  (void)groups;
  rowops_forward<Cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y,
                      stride_s, 1.0f, eps, stride_scale);
}

template <class Cfg>
CKGEN_DEVICE void rmsnorm_entry(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                const typename Cfg::TW* weight, typename Cfg::TOut* y, typename Cfg::TRes* s_out,
                                ScaleT<Cfg>* y_scale, int rows, int cols, long long stride_x, long long stride_res,
                                long long stride_y, long long stride_s, float eps, int groups = 0,
                                long long stride_scale = 0) {
  static_assert(!Cfg::kHasBias, "rmsnorm_entry: no bias");
  (void)groups;
  rowops_forward<Cfg>(x, residual, weight, nullptr, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y,
                      stride_s, 1.0f, eps, stride_scale);
}

template <class Cfg>
CKGEN_DEVICE void quantize_entry(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                 typename Cfg::TOut* y, typename Cfg::TRes* s_out, ScaleT<Cfg>* y_scale, int rows,
                                 int cols, long long stride_x, long long stride_res, long long stride_y,
                                 long long stride_s, int groups = 0, long long stride_scale = 0) {
  static_assert(!Cfg::kHasWeight && !Cfg::kHasBias, "quantize_entry: no weight or bias");
  (void)groups;
  rowops_forward<Cfg>(x, residual, nullptr, nullptr, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y,
                      stride_s, 1.0f, 0.0f, stride_scale);
}

// Split rows (Cfg::kSplit > 0): the same entries with the workspace last (rowops_pipeline_split.h).
template <class Cfg>
CKGEN_DEVICE void softmax_entry(const typename Cfg::TIn* x, const typename Cfg::TRes* residual, typename Cfg::TOut* y,
                                typename Cfg::TRes* s_out, ScaleT<Cfg>* y_scale, int rows, int cols, long long stride_x,
                                long long stride_res, long long stride_y, long long stride_s, float scale,
                                void* workspace) {
  static_assert(!Cfg::kHasWeight && !Cfg::kHasBias, "softmax_entry: no weight or bias");
  rowops_forward_split<Cfg>(x, residual, nullptr, nullptr, y, s_out, y_scale, rows, cols, stride_x, stride_res,
                            stride_y, stride_s, scale, 0.0f, workspace);
}

template <class Cfg>
CKGEN_DEVICE void layernorm_entry(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                  const typename Cfg::TW* weight, const typename Cfg::TW* bias, typename Cfg::TOut* y,
                                  typename Cfg::TRes* s_out, ScaleT<Cfg>* y_scale, int rows, int cols,
                                  long long stride_x, long long stride_res, long long stride_y, long long stride_s,
                                  float eps, void* workspace) {
  rowops_forward_split<Cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y,
                            stride_s, 1.0f, eps, workspace);
}

template <class Cfg>
CKGEN_DEVICE void rmsnorm_entry(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                const typename Cfg::TW* weight, typename Cfg::TOut* y, typename Cfg::TRes* s_out,
                                ScaleT<Cfg>* y_scale, int rows, int cols, long long stride_x, long long stride_res,
                                long long stride_y, long long stride_s, float eps, void* workspace) {
  static_assert(!Cfg::kHasBias, "rmsnorm_entry: no bias");
  rowops_forward_split<Cfg>(x, residual, weight, nullptr, y, s_out, y_scale, rows, cols, stride_x, stride_res,
                            stride_y, stride_s, 1.0f, eps, workspace);
}

// RMS norm with rstd (Cfg::kRstd): rstd after y_scale; the split form takes the workspace last.
template <class Cfg>
CKGEN_DEVICE void rmsnorm_rstd_entry(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                     const typename Cfg::TW* weight, typename Cfg::TOut* y, typename Cfg::TRes* s_out,
                                     ScaleT<Cfg>* y_scale, float* rstd, int rows, int cols, long long stride_x,
                                     long long stride_res, long long stride_y, long long stride_s, float eps,
                                     int groups = 0, long long stride_scale = 0) {
  static_assert(!Cfg::kHasBias && detail::RstdOf<Cfg>::value, "rmsnorm_rstd_entry: no bias, kRstd");
  (void)groups;
  rowops_forward<Cfg>(x, residual, weight, nullptr, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y,
                      stride_s, 1.0f, eps, stride_scale, rstd);
}

template <class Cfg>
CKGEN_DEVICE void rmsnorm_rstd_entry(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                     const typename Cfg::TW* weight, typename Cfg::TOut* y, typename Cfg::TRes* s_out,
                                     ScaleT<Cfg>* y_scale, float* rstd, int rows, int cols, long long stride_x,
                                     long long stride_res, long long stride_y, long long stride_s, float eps,
                                     void* workspace) {
  static_assert(!Cfg::kHasBias && detail::RstdOf<Cfg>::value, "rmsnorm_rstd_entry: no bias, kRstd");
  rowops_forward_split<Cfg>(x, residual, weight, nullptr, y, s_out, y_scale, rows, cols, stride_x, stride_res,
                            stride_y, stride_s, 1.0f, eps, workspace, rstd);
}

}  // namespace rowops
}  // namespace ckgen
