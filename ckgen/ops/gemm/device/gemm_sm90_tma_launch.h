// gemm_sm90_tma_launch.h (ckgen/ops/gemm/device): the host side of the Hopper GEMM body (gemm_sm90_tma.h) and its
// kernel entries. TmaGemm<Cfg> is the body (TmaGemmBody<Cfg>: the device code, its constants and shared-memory
// layout) with the launches the generated host entry calls: they build the tensor maps, check what the body needs
// of the operands (16-byte alignment, K > 0, an sm_90 device, ...) and launch the `<kernel>_tma` entry that one of
// the CKGEN_TMA_GEMM_*_ENTRY macros below defines, or return kNotApplicable (nothing launched) so that the
// portable mma.sync entry (gemm_mma_sm90.h) runs instead.
#pragma once

#include "gemm_sm90_tma.h"

namespace ckgen {
namespace nv {

template <class Cfg>
struct TmaGemm : TmaGemmBody<Cfg> {
  using Body = TmaGemmBody<Cfg>;
  using typename Body::TA;
  using typename Body::TB;
  using typename Body::TC;
  using typename Body::TBias;
  using typename Body::Operand;
  using Body::kAK;
  using Body::kBBoxRows;
  using Body::kBCols;
  using Body::kBK;
  using Body::kBlock;
  using Body::kBroadcastA;
  using Body::kBroadcastB;
  using Body::kCluster;
  using Body::kEB;
  using Body::kF8;
  using Body::kGroupMode;
  using Body::kKind;
  using Body::kNoTmaC;
  using Body::kNotApplicable;
  using Body::kOutN;
  using Body::kResidual;
  using Body::kRowElems;
  using Body::kSmemBytes;
  using Body::kThreads;
  using Body::kTmaStoreC;
  // Launches `kernel` (the generated `<kernel>_tma` entry) on `stream` and returns a ckgen status, or
  // kNotApplicable (nothing launched) when the device is not sm_90, the driver has no tensor maps, K == 0,
  // or an operand's base, leading dimension or batch stride is not 16-byte aligned, or C cannot be TMA-stored
  // (encode_c). M, N, batch > 0 and the leading dimensions were checked by the caller. The plain form is the
  // batched one with one item.
  template <class Kernel>
  static int launch(Kernel kernel, const TA* A, const TB* B, TC* C, Operand bias, int M, int N, int K,
                    long long lda, long long ldb, long long ldc, void* stream) {
    return launch(kernel, A, B, C, bias, M, N, K, 1, lda, ldb, ldc, 0, 0, 0, 0, stream);
  }

  template <class Kernel>
  static int launch(Kernel kernel, const TA* A, const TB* B, TC* C, Operand bias, int M, int N, int K,
                    int batch, long long lda, long long ldb, long long ldc, long long stride_a, long long stride_b,
                    long long stride_c, long long stride_bias, void* stream) {
    return launch_with(kernel, A, B, C, M, N, K, batch, lda, ldb, ldc, stride_a, stride_b, stride_c, stride_bias,
                       stream, bias);
  }

  // Scaled kernels (fp8 or 16-bit; the `_tma` entry of CKGEN_TMA_GEMM_SCALED_ENTRY): the scale pointers travel
  // after the bias (block scales: with their leading dimensions; kb and nb were checked by the caller).
  template <class Kernel>
  static int launch(Kernel kernel, const TA* A, const TB* B, TC* C, const TBias* bias, const float* scale_a,
                    const float* scale_b, int M, int N, int K, long long lda, long long ldb, long long ldc,
                    void* stream) {
    static_assert(epi::IsScaled<Operand>::value && !kBlock, "launch with scales: a tensor / row / col scaled Cfg");
    return launch_with(kernel, A, B, C, M, N, K, 1, lda, ldb, ldc, 0LL, 0LL, 0LL, 0LL, stream, bias, scale_a, scale_b,
                       0LL, 0LL);
  }
  template <class Kernel>
  static int launch(Kernel kernel, const TA* A, const TB* B, TC* C, const TBias* bias, const float* scale_a,
                    const float* scale_b, int M, int N, int K, int batch, long long lda, long long ldb, long long ldc,
                    long long stride_a, long long stride_b, long long stride_c, long long stride_bias, void* stream) {
    static_assert(epi::IsScaled<Operand>::value && !kBlock, "launch with scales: a tensor / row / col scaled Cfg");
    return launch_with(kernel, A, B, C, M, N, K, batch, lda, ldb, ldc, stride_a, stride_b, stride_c, stride_bias,
                       stream, bias, scale_a, scale_b, 0LL, 0LL);
  }
  template <class Kernel>
  static int launch(Kernel kernel, const TA* A, const TB* B, TC* C, const TBias* bias, const float* scale_a,
                    const float* scale_b, int M, int N, int K, int /*kb*/, int /*nb*/, long long lda, long long ldb,
                    long long ldc, long long ld_scale_a, long long ld_scale_b, void* stream) {
    static_assert(kBlock, "launch with block scales: a block(128)-scaled Cfg");
    return launch_with(kernel, A, B, C, M, N, K, 1, lda, ldb, ldc, 0LL, 0LL, 0LL, 0LL, stream, bias, scale_a, scale_b,
                       ld_scale_a, ld_scale_b);
  }

  // The batched launch of every tile schedule's kernel; `epi...` are the entry's arguments between C and M (the
  // bias, or the bias and the scales).
  template <class Kernel, class... EpiArgs>
  static int launch_with(Kernel kernel, const TA* A, const TB* B, TC* C, int M, int N, int K, int batch, long long lda,
                         long long ldb, long long ldc, long long stride_a, long long stride_b, long long stride_c,
                         long long stride_bias, void* stream, EpiArgs... epi) {
    int sms = 0;
    CUtensorMap ta, tb, tcm;
    const int nba = stride_a == 0 ? 1 : batch, nbb = stride_b == 0 ? 1 : batch;
    if (!maps(&ta, &tb, A, B, M, N, K, nba, nbb, lda, ldb, stride_a, stride_b, &sms) ||
        !encode_c(&tcm, C, M, N, ldc, batch, stride_c))
      return kNotApplicable;
    const long long tiles = static_cast<long long>((M + Cfg::kTileM - 1) / Cfg::kTileM) *
                            ((N + kOutN - 1) / kOutN) * batch;
    if (tiles > 0x7fffffffLL) return kNotApplicable;
    const int flags = (nba == 1 && batch > 1 ? kBroadcastA : 0) | (nbb == 1 && batch > 1 ? kBroadcastB : 0);
    static int configured = 0;  // the kernel's shared-memory limit, raised once (cuda_host::launch)
    if constexpr (kCluster > 1) {  // clusters of kCluster M-adjacent tiles, as many as fit at once
      static int fit = 0;
      const long long units = static_cast<long long>(((M + Cfg::kTileM - 1) / Cfg::kTileM + kCluster - 1) / kCluster) *
                              ((N + kOutN - 1) / kOutN) * batch;
      const int st = launch_cluster_grid(kernel, &configured, &fit, units, kCluster, kThreads, kSmemBytes, stream, ta,
                                         tb, tcm, C, epi..., M, N, K, batch, ldc, stride_c, stride_bias, flags);
      return st == -1 ? kNotApplicable : st;
    }
    return cuda_host::launch(kernel, &configured, static_cast<unsigned>(tiles < sms ? tiles : sms), 1u, 1u, kThreads,
                             kSmemBytes, stream, ta, tb, tcm, C, epi..., M, N, K, batch, ldc, stride_c, stride_bias,
                             flags);
  }

  // The tensor maps of A and B (nba / nbb items) and the device's SM count, or false when the body cannot take
  // these operands (see launch()). Every launch below builds its maps here, and C's with encode_c.
  static bool maps(CUtensorMap* ta, CUtensorMap* tb, const TA* A, const TB* B, int M, int N, int K, int nba, int nbb,
                   long long lda, long long ldb, long long stride_a, long long stride_b, int* sms) {
    if (K <= 0 || !aligned16(A, lda, kEB) || !aligned16(B, ldb, kEB) || (stride_a * kEB) % 16 ||
        (stride_b * kEB) % 16)
      return false;
    if (!sm90_device(sms)) return false;  // (the portable path reports a failed query)
    // (inner extent, outer extent, leading dimension, items, batch stride, box inner, box outer) per operand layout
    const bool ok_a = kAK ? encode(ta, A, K, M, lda, nba, stride_a, kRowElems, Cfg::kTileM)
                          : encode(ta, A, M, K, lda, nba, stride_a, 64, 64);
    const bool ok_b = kBK ? encode(tb, B, K, kBCols * N, ldb, nbb, stride_b, kRowElems, kBBoxRows)
                          : encode(tb, B, kBCols * N, K, ldb, nbb, stride_b, 64, 64);
    return ok_a && ok_b;
  }

  // Grouped kernels (kGroupMode 1): A is M x K (every group's rows), `index` the groups' end rows; masked
  // (kGroupMode 2): A is groups x M x K, `index` the counts; B is groups x K x N (stride_b apart) in both. The
  // grid: at most one block per SM, never more than the bound on the tiles (grouped: (ceil(M / tile M) + groups)
  // x N tiles; masked: groups x ceil(M / tile M) x N tiles). C's tensor map (kTmaStoreC): grouped, one item of M
  // rows; masked, groups items stride_c apart; a C it cannot take is stored by the warps themselves (kNoTmaC), but
  // with a residual (prefetched by 16-byte copies) the launch is kNotApplicable. Otherwise kNotApplicable as
  // launch() says.
  template <class Kernel, class TI>
  static int launch_grouped(Kernel kernel, const TA* A, const TB* B, TC* C, Operand bias, const TI* index, int M,
                            int N, int K, int groups, long long lda, long long ldb, long long ldc, long long stride_b,
                            long long stride_bias, void* stream) {
    return launch_grouped(kernel, A, B, C, bias, index, M, N, K, groups, lda, ldb, ldc, 0LL, stride_b, 0LL,
                          stride_bias, stream);
  }

  // Scaled grouped kernels (fp8 or 16-bit, mode = grouped; the `_tma` entry's arguments of a scaled grouped
  // kernel): A's scales per tensor or row, B's per group (tensor: one each) or per group and column (col:
  // groups x N, ld_scale_b apart), as torch._scaled_grouped_mm takes them. The operand carries the base pointers;
  // the walk moves them to each tile's group (epi::for_group), which reads the tensor scales.
  template <class Kernel, class TI>
  static int launch_grouped(Kernel kernel, const TA* A, const TB* B, TC* C, const TBias* bias, const float* scale_a,
                            const float* scale_b, const TI* index, int M, int N, int K, int groups, long long lda,
                            long long ldb, long long ldc, long long ld_scale_b, long long stride_b,
                            long long stride_bias, void* stream) {
    static_assert(epi::IsScaled<Operand>::value, "launch_grouped with scales: a scaled Cfg");
    return launch_grouped(kernel, A, B, C, Operand{bias, scale_a, scale_b, 1.0f, 0LL, ld_scale_b}, index, M, N, K,
                          groups, lda, ldb, ldc, stride_b, stride_bias, stream);
  }
  template <class Kernel, class TI>
  static int launch_grouped(Kernel kernel, const TA* A, const TB* B, TC* C, const TBias* bias, const float* scale_a,
                            const float* scale_b, const TI* index, int M, int N, int K, int groups, long long lda,
                            long long ldb, long long ldc, long long stride_b, long long stride_bias, void* stream) {
    return launch_grouped(kernel, A, B, C, bias, scale_a, scale_b, index, M, N, K, groups, lda, ldb, ldc, 0LL,
                          stride_b, stride_bias, stream);
  }

  template <class Kernel, class TI>
  static int launch_grouped(Kernel kernel, const TA* A, const TB* B, TC* C, Operand bias, const TI* index, int M,
                            int N, int K, int groups, long long lda, long long ldb, long long ldc, long long stride_a,
                            long long stride_b, long long stride_c, long long stride_bias, void* stream) {
    static_assert(kGroupMode == 1 || kGroupMode == 2, "launch_grouped: a grouped or masked Cfg");
    static_assert(kGroupMode == 1 || (!kF8 && !epi::IsScaled<Operand>::value),
                  "launch_grouped: masked kernels take 16-bit operands, no scales");
    static_assert(!kBlock && !epi::IsMxScaled<Operand>::value, "launch_grouped: tensor / row / col scales only");
    int sms = 0;
    CUtensorMap ta, tb, tcm;
    const int nba = kGroupMode == 2 && stride_a != 0 ? groups : 1, nbb = stride_b == 0 ? 1 : groups;
    if (!maps(&ta, &tb, A, B, M, N, K, nba, nbb, lda, ldb, stride_a, stride_b, &sms)) return kNotApplicable;
    const bool c_ok = encode_c(&tcm, C, M, N, ldc, kGroupMode == 1 ? 1 : groups, stride_c);
    if (kResidual && !c_ok) return kNotApplicable;
    const long long tiles_m = (M + Cfg::kTileM - 1) / Cfg::kTileM, tiles_n = (N + kOutN - 1) / kOutN;
    const long long bound = (kGroupMode == 1 ? tiles_m + groups : tiles_m * groups) * tiles_n;
    if (bound > 0x7fffffffLL || bound < 1) return kNotApplicable;
    const int flags = (nba == 1 ? kBroadcastA : 0) | (nbb == 1 ? kBroadcastB : 0) | (c_ok ? 0 : kNoTmaC);
    static int configured = 0;
    return cuda_host::launch(kernel, &configured, static_cast<unsigned>(bound < sms ? bound : sms), 1u, 1u, kThreads,
                             kSmemBytes, stream, ta, tb, tcm, C, bias, static_cast<const void*>(index), M, N, K, groups,
                             ldc, stride_c, stride_bias, flags);
  }

  // The scheduled kernels (split-K, stream-K; never batched): `splits` per tile (split-K), at most `workers`
  // blocks (stream-K); the workspace as gemm_work.h lays it out. Scaled ones (fp8 or 16-bit:
  // CKGEN_TMA_GEMM_SCALED_SCHED_ENTRY) take the scale pointers after the bias (block scales: with their leading
  // dimensions); tensor / row / col-scaled partial sums meet unscaled and the last contributor scales their sum
  // (gemm_sched::finish_tile), block-scaled ones are folded per K tile (one block) before they meet.
  template <class Kernel>
  static int launch_sched(Kernel kernel, const TA* A, const TB* B, TC* C, Operand bias, int M, int N, int K,
                          long long lda, long long ldb, long long ldc, void* workspace, int splits, int workers,
                          void* stream) {
    static_assert(!epi::IsScaled<Operand>::value, "launch_sched with an operand: an unscaled Cfg");
    return launch_sched_with(kernel, A, B, C, M, N, K, lda, ldb, ldc, workspace, splits, workers, stream, bias);
  }
  template <class Kernel>
  static int launch_sched(Kernel kernel, const TA* A, const TB* B, TC* C, const TBias* bias, const float* scale_a,
                          const float* scale_b, int M, int N, int K, long long lda, long long ldb, long long ldc,
                          void* workspace, int splits, int workers, void* stream) {
    static_assert(epi::IsScaled<Operand>::value && !kBlock, "launch_sched with scales: a tensor / row / col scaled Cfg");
    return launch_sched_with(kernel, A, B, C, M, N, K, lda, ldb, ldc, workspace, splits, workers, stream, bias,
                             scale_a, scale_b, 0LL, 0LL);
  }
  template <class Kernel>
  static int launch_sched(Kernel kernel, const TA* A, const TB* B, TC* C, const TBias* bias, const float* scale_a,
                          const float* scale_b, int M, int N, int K, int /*kb*/, int /*nb*/, long long lda,
                          long long ldb, long long ldc, long long ld_scale_a, long long ld_scale_b, void* workspace,
                          int splits, int workers, void* stream) {
    static_assert(kBlock, "launch_sched with block scales: a block(128)-scaled Cfg");
    return launch_sched_with(kernel, A, B, C, M, N, K, lda, ldb, ldc, workspace, splits, workers, stream, bias,
                             scale_a, scale_b, ld_scale_a, ld_scale_b);
  }
  template <class Kernel, class... EpiArgs>
  static int launch_sched_with(Kernel kernel, const TA* A, const TB* B, TC* C, int M, int N, int K, long long lda,
                               long long ldb, long long ldc, void* workspace, int splits, int workers, void* stream,
                               EpiArgs... epi) {
    int sms = 0;
    CUtensorMap ta, tb, tcm;
    if (!maps(&ta, &tb, A, B, M, N, K, 1, 1, lda, ldb, 0LL, 0LL, &sms) || !encode_c(&tcm, C, M, N, ldc, 1, 0LL))
      return kNotApplicable;
    const long long tiles = static_cast<long long>((M + Cfg::kTileM - 1) / Cfg::kTileM) * ((N + kOutN - 1) / kOutN);
    long long blocks = kKind == gemm_sched::kStreamK ? workers : tiles * (splits < 1 ? 1 : splits);
    if (blocks > sms) blocks = sms;
    if (blocks < 1 || tiles * splits > 0x7fffffffLL) return kNotApplicable;
    static int configured = 0;
    return cuda_host::launch(kernel, &configured, static_cast<unsigned>(blocks), 1u, 1u, kThreads, kSmemBytes, stream,
                             ta, tb, tcm, C, epi..., M, N, K, 1, ldc, 0LL, 0LL, 0, workspace, splits < 1 ? 1 : splits);
  }

  // Kernels whose epilogue ends in `-> residual` (Operand is an epi::Residual): the residual R follows the bias in
  // the host entry's arguments; it travels to the device in the operand (R is read with C's layout, so nothing
  // else about it is checked here).
  template <class Kernel, class... Rest>
  static int launch(Kernel kernel, const TA* A, const TB* B, TC* C, const TBias* bias, const TC* residual,
                    Rest... rest) {
    static_assert(epi::IsResidual<Operand>::value, "launch with a residual: a Cfg whose EpiOperand is epi::Residual");
    if (kTmaStoreC && !aligned16(residual, 8, 2)) return kNotApplicable;  // (prefetch_residual's 16-byte copies)
    return launch(kernel, A, B, C, Operand{bias, residual, C}, rest...);
  }
  template <class Kernel, class... Rest>
  static int launch_grouped(Kernel kernel, const TA* A, const TB* B, TC* C, const TBias* bias, const TC* residual,
                            Rest... rest) {
    static_assert(epi::IsResidual<Operand>::value, "launch with a residual: a Cfg whose EpiOperand is epi::Residual");
    if (kTmaStoreC && !aligned16(residual, 8, 2)) return kNotApplicable;  // (prefetch_residual's 16-byte copies)
    return launch_grouped(kernel, A, B, C, Operand{bias, residual, C}, rest...);
  }
  template <class Kernel, class... Rest>
  static int launch_sched(Kernel kernel, const TA* A, const TB* B, TC* C, const TBias* bias, const TC* residual,
                          Rest... rest) {
    static_assert(epi::IsResidual<Operand>::value, "launch with a residual: a Cfg whose EpiOperand is epi::Residual");
    if (kTmaStoreC && !aligned16(residual, 8, 2)) return kNotApplicable;  // (prefetch_residual's 16-byte copies)
    return launch_sched(kernel, A, B, C, Operand{bias, residual, C}, rest...);
  }

  // Rotary kernels (rope = gptj(...); Operand is an epi::Rotary): the host entry's arguments with the rotary inputs
  // (positions, cos_sin after the bias; rope_positions, rope_cols after K; cs_pos_stride after ldc), which travel
  // in the operand.
  template <class Kernel>
  static int launch(Kernel kernel, const TA* A, const TB* B, TC* C, const TBias* bias, const int* positions,
                    const float* cos_sin, int M, int N, int K, int npos, int cols, long long lda, long long ldb,
                    long long ldc, long long cs_stride, void* stream) {
    static_assert(epi::IsRotary<Operand>::value, "launch with rotary inputs: a Cfg whose EpiOperand is epi::Rotary");
    return launch(kernel, A, B, C, Operand{bias, positions, cos_sin, npos, cols, cs_stride}, M, N, K, lda, ldb, ldc,
                  stream);
  }

  // The tensor map C is TMA-stored through (kTmaStoreC; otherwise a zeroed, unused one: true), or false when C cannot
  // be: its base, leading dimension or batch stride not 16-byte aligned, or N not a multiple of 8 (the H200 was
  // seen to write a row's last 16-byte chunk whole, past N).
  static bool encode_c(CUtensorMap* map, const TC* C, int M, int N, long long ldc, int batch, long long stride_c) {
    *map = CUtensorMap{};  // (what the kernel is passed when C is not TMA-stored)
    if constexpr (kTmaStoreC) {
      return aligned16(C, ldc, 2) && N % 8 == 0 && (batch == 1 || (stride_c * 2) % 16 == 0) &&
             encode(map, C, N, M, ldc, batch, stride_c, 64, 16, 2);
    } else {
      return true;
    }
  }

  // A 3-D tensor map over elements of eb bytes (the operands' by default): `inner` contiguous elements per line,
  // `outer` lines `ld` elements apart, `items` of those `bstride` elements apart (one item: the stride is never
  // used), boxes of box_inner x box_outer x 1 with the 128-byte swizzle.
  static bool encode(CUtensorMap* map, const void* base, long long inner, long long outer, long long ld,
                     long long items, long long bstride, unsigned box_inner, unsigned box_outer, int eb = kEB) {
    const long long line_bytes = ld * eb;
    const long long item_bytes = items > 1 ? bstride * eb : ((line_bytes * outer + 15) / 16) * 16;
    if (line_bytes >= (1LL << 40) || item_bytes >= (1LL << 40)) return false;
    const cuuint64_t dims[3] = {static_cast<cuuint64_t>(inner), static_cast<cuuint64_t>(outer),
                                static_cast<cuuint64_t>(items)};
    const cuuint64_t strides[2] = {static_cast<cuuint64_t>(line_bytes), static_cast<cuuint64_t>(item_bytes)};
    const cuuint32_t box[3] = {box_inner, box_outer, 1};
    return encode_sw128(map, base, 3, dims, strides, box, eb);
  }
};

}  // namespace nv
}  // namespace ckgen

// The `<name>_tma` entry of a scheduled Cfg (split-K, stream-K): the same with the workspace and the split count.
#define CKGEN_TMA_GEMM_SCHED_ENTRY(name, Cfg)                                                                  \
  extern "C" __global__ void __launch_bounds__(::ckgen::nv::TmaGemm<Cfg>::kThreads, 1) name##_tma(             \
      const __grid_constant__ ::ckgen::nv::TensorMap ta, const __grid_constant__ ::ckgen::nv::TensorMap tb,    \
      const __grid_constant__ ::ckgen::nv::TensorMap tc, typename Cfg::TC* C, ::ckgen::epi::Operand<Cfg> bias,   \
      int M, int N, int K, int batch, long long ldc, long long stride_c, long long stride_bias, int flags,       \
      void* workspace, int splits) {                                                                           \
    ::ckgen::nv::TmaGemm<Cfg>::run(ta, tb, tc, C, bias, M, N, K, batch, ldc, stride_c, stride_bias, flags,     \
                                   workspace, splits);                                                         \
  }

// The `<name>_tma` entry of a scaled scheduled Cfg (any scaling but mx): both of the above.
#define CKGEN_TMA_GEMM_SCALED_SCHED_ENTRY(name, Cfg)                                                           \
  extern "C" __global__ void __launch_bounds__(::ckgen::nv::TmaGemm<Cfg>::kThreads, 1) name##_tma(             \
      const __grid_constant__ ::ckgen::nv::TensorMap ta, const __grid_constant__ ::ckgen::nv::TensorMap tb,    \
      const __grid_constant__ ::ckgen::nv::TensorMap tc, typename Cfg::TC* C, const typename Cfg::TBias* bias,   \
      const float* scale_a, const float* scale_b, long long ld_scale_a, long long ld_scale_b, int M, int N, int K, \
      int batch, long long ldc, long long stride_c, long long stride_bias, int flags, void* workspace,           \
      int splits) {                                                                                            \
    ::ckgen::nv::TmaGemm<Cfg>::run(ta, tb, tc, C,                                                              \
                                   Cfg::EpiOperand::make(bias, scale_a, scale_b, ld_scale_a, ld_scale_b), M, N, \
                                   K, batch, ldc, stride_c, stride_bias, flags, workspace, splits);            \
  }

// The `<name>_tma` device entry of a Cfg planned with the Hopper body (the kernel template emits one
// CKGEN_TMA_GEMM_ENTRY(name, Cfg) line; the tensor maps travel as __grid_constant__ parameters).
#define CKGEN_TMA_GEMM_ENTRY(name, Cfg)                                                                        \
  extern "C" __global__ void __launch_bounds__(::ckgen::nv::TmaGemm<Cfg>::kThreads, 1) name##_tma(             \
      const __grid_constant__ ::ckgen::nv::TensorMap ta, const __grid_constant__ ::ckgen::nv::TensorMap tb,    \
      const __grid_constant__ ::ckgen::nv::TensorMap tc, typename Cfg::TC* C, ::ckgen::epi::Operand<Cfg> bias,   \
      int M, int N, int K, int batch, long long ldc, long long stride_c, long long stride_bias, int flags) {     \
    ::ckgen::nv::TmaGemm<Cfg>::run(ta, tb, tc, C, bias, M, N, K, batch, ldc, stride_c, stride_bias, flags);    \
  }

// The `<name>_tma` entry of a scaled Cfg (epi::Scaled: fp8 or 16-bit operands): the scale pointers (and the block
// scales' leading dimensions, 0 otherwise) after the bias; the epilogue operand is made on the device (tensor scales
// are read at every launch).
#define CKGEN_TMA_GEMM_SCALED_ENTRY(name, Cfg)                                                                 \
  extern "C" __global__ void __launch_bounds__(::ckgen::nv::TmaGemm<Cfg>::kThreads, 1) name##_tma(             \
      const __grid_constant__ ::ckgen::nv::TensorMap ta, const __grid_constant__ ::ckgen::nv::TensorMap tb,    \
      const __grid_constant__ ::ckgen::nv::TensorMap tc, typename Cfg::TC* C, const typename Cfg::TBias* bias,   \
      const float* scale_a, const float* scale_b, long long ld_scale_a, long long ld_scale_b, int M, int N, int K, \
      int batch, long long ldc, long long stride_c, long long stride_bias, int flags) {                         \
    ::ckgen::nv::TmaGemm<Cfg>::run(ta, tb, tc, C,                                                              \
                                   Cfg::EpiOperand::make(bias, scale_a, scale_b, ld_scale_a, ld_scale_b), M, N, \
                                   K, batch, ldc, stride_c, stride_bias, flags);                               \
  }

// The `<name>_tma` entry of a grouped / masked Cfg: the index tensor (offsets or counts) and the groups.
#define CKGEN_TMA_GEMM_GROUPED_ENTRY(name, Cfg)                                                                \
  extern "C" __global__ void __launch_bounds__(::ckgen::nv::TmaGemm<Cfg>::kThreads, 1) name##_tma(             \
      const __grid_constant__ ::ckgen::nv::TensorMap ta, const __grid_constant__ ::ckgen::nv::TensorMap tb,    \
      const __grid_constant__ ::ckgen::nv::TensorMap tc, typename Cfg::TC* C, ::ckgen::epi::Operand<Cfg> bias,   \
      const void* index, int M, int N, int K, int groups, long long ldc, long long stride_c, long long stride_bias, \
      int flags) {                                                                                             \
    ::ckgen::nv::TmaGemm<Cfg>::run(ta, tb, tc, C, bias, M, N, K, groups, ldc, stride_c, stride_bias, flags, nullptr, \
                                   1, index);                                                                  \
  }
