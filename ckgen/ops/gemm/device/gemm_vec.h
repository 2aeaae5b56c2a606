// gemm_vec.h (ckgen/ops/gemm/device): the GEMM's vector body (`instr = none`), for skinny products: a few rows of A
// against a wide, K-contiguous B (nn.Linear's weight at decode: M = 1..8). No matrix instruction, no LDS, no
// workspace: B is streamed from memory once per M tile with 16-byte loads (read once: the non-coherent path past the
// L1 on CUDA, blk::kL1Stream; A, which every wave reads, through the non-coherent path with its L1 lines,
// blk::kL1ReadOnly), and the sums are f32 multiply-adds (contracted to FMAs by the device compilers).
//
// Layout (the planner checked it: ckgen/ops/gemm/vector.py): A row-major and B column-major (both K-contiguous), f16,
// bf16, f32 or fp8 (then A and B of one byte each), f32 sums. Workgroup (x, y, z): columns x * kTileN .. of C, rows
// y * kTileM .., batch item z. Each of its kWavesN waves owns kRows = kTileN / kWavesN columns (rows of B) and all
// kTileM rows; lane l takes the kVec elements at k = l * kVec + s * kWaveSize * kVec (s = 0, 1, ...) of every one of
// them, kUnroll such steps of each row of B in flight before their FMAs. The lanes' partial sums meet by
// wave_allreduce (ckgen/blocks/reduce.h); lane (r * kTileM + m) % kWaveSize finishes value (m, r) through the
// epilogue (ckgen/blocks/epilogue.h: alpha, beta, the scales, the chain, the residual).
//
// Bounds: rows of A past M and columns past N read the last row / column (clamped; their sums are never stored);
// the K tail and unaligned operands (vec_ok) take element loads of the valid elements only. M = 0 or N = 0 launch
// no workgroup (the host entry); K = 0 gives epilogue(0). Block scales (block(128)): each lane's vector lies in one
// 128-K block (kVec divides 128), whose scales of A's row and B's 128-column block multiply its sums there.
#pragma once

#include "ckgen/blocks/epilogue.h"
#include "ckgen/blocks/frag.h"
#include "ckgen/blocks/reduce.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"
#include "gemm_forms.h"

namespace ckgen {
namespace gemm_vec_detail {

template <class Cfg>
constexpr bool check_cfg() {
  return Cfg::kARowMajor && !Cfg::kBRowMajor && Cfg::kTileN == Cfg::kWavesN * Cfg::kRows &&
         Cfg::kTileK == Cfg::kWaveSize * Cfg::kVec * Cfg::kUnroll && Cfg::kThreads == Cfg::kWavesN * Cfg::kWaveSize &&
         sizeof(typename Cfg::TA) == sizeof(typename Cfg::TB) && Cfg::kVec * sizeof(typename Cfg::TA) <= 16;
}

// What one vector of each row of B adds to acc, with the vectors of A at the same k (block scales: times the
// scales of A's rows and B's column blocks for K block k / 128).
template <class Cfg>
struct Step {
  static constexpr int kM = Cfg::kTileM;
  static constexpr int kR = Cfg::kRows;
  static constexpr int kVec = Cfg::kVec;
  using FragB = blk::Frag<typename Cfg::TB, kVec>;
  const typename Cfg::TA* const* a;  // kM row pointers of A
  epi::Operand<Cfg> op;
  int row0, col0, m_last, n_last;    // first row / column of C, last valid ones (clamping the scales' reads)
  bool aligned;

  // kWhole: the vectors at k are whole and aligned (the main loop), read with one access each and no test
  template <bool kWhole>
  CKGEN_DEVICE void add(float (&acc)[kR][kM], const FragB (&b)[kR], int k, int n) const {
    constexpr bool kBlock = epi::IsBlockScaled<epi::Operand<Cfg>>::value;
    float bf[kR][kVec];
#pragma unroll
    for (int r = 0; r < kR; ++r) blk::to_floats(b[r], bf[r]);
    float part[kR][kM];  // (block scales: this vector's sums, scaled below; else the sums go straight to acc)
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      float af[kVec];
      if constexpr (kWhole) blk::to_floats(blk::load_vector_l1<typename Cfg::TA, kVec, blk::kL1ReadOnly>(a[m] + k), af);
      else blk::to_floats(blk::load_zero_filled<typename Cfg::TA, kVec, blk::kL1ReadOnly>(a[m] + k, n, aligned), af);
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        float s = kBlock ? 0.0f : acc[r][m];
#pragma unroll
        for (int e = 0; e < kVec; ++e) s += af[e] * bf[r][e];
        if constexpr (kBlock) part[r][m] = s;
        else acc[r][m] = s;
      }
    }
    if constexpr (kBlock) {
      constexpr int kBlk = epi::kScaleBlockK;
      const int kb = k / kBlk;
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        const float sa = gload(op.scale_a + min_i(row0 + m, m_last) * op.ld_a + kb);
#pragma unroll
        for (int r = 0; r < kR; ++r)
          acc[r][m] += part[r][m] * (sa * gload(op.scale_b + (min_i(col0 + r, n_last) / kBlk) * op.ld_b + kb));
      }
    }
  }

  static CKGEN_DEVICE int min_i(int x, int y) { return x < y ? x : y; }
};

// The body on one matrix (gemm_forms.h's Body).
struct VecBody {
  template <class Cfg>
  static CKGEN_DEVICE void run(const typename Cfg::TA* A, const typename Cfg::TB* B, typename Cfg::TC* C,
                               epi::Operand<Cfg> op, int M, int N, int K, long long lda, long long ldb, long long ldc);
};

}  // namespace gemm_vec_detail

template <class Cfg>
CKGEN_DEVICE void gemm_vec_detail::VecBody::run(const typename Cfg::TA* A, const typename Cfg::TB* B,
                                                typename Cfg::TC* C, epi::Operand<Cfg> op, int M, int N, int K,
                                                long long lda, long long ldb, long long ldc) {
  static_assert(gemm_vec_detail::check_cfg<Cfg>(), "Cfg");
  using TA = typename Cfg::TA;
  using TB = typename Cfg::TB;
  constexpr int kM = Cfg::kTileM;
  constexpr int kR = Cfg::kRows;
  constexpr int kVec = Cfg::kVec;
  constexpr int kStep = Cfg::kWaveSize * kVec;  // K elements one step of the wave covers
  const int lane = lane_id();
  const int row0 = block_id(1) * kM;
  const int col0 = block_id(0) * Cfg::kTileN + wave_id() * kR;
  if (col0 >= N) return;  // (a whole wave past N: nothing to read or write; no barrier follows)
  const TA* a[kM];
#pragma unroll
  for (int m = 0; m < kM; ++m) a[m] = A + static_cast<long long>(row0 + m < M ? row0 + m : M - 1) * lda;
  const TB* b[kR];
#pragma unroll
  for (int r = 0; r < kR; ++r) b[r] = B + static_cast<long long>(col0 + r < N ? col0 + r : N - 1) * ldb;
  const bool aligned = blk::vec_ok<TA, kVec>(A, lda) && blk::vec_ok<TB, kVec>(B, ldb);
  const gemm_vec_detail::Step<Cfg> step{a, op, row0, col0, M - 1, N - 1, aligned};
  using FragB = typename gemm_vec_detail::Step<Cfg>::FragB;

  float acc[kR][kM];
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int m = 0; m < kM; ++m) acc[r][m] = 0.0f;

  int k = lane * kVec;
  if (aligned) {  // whole steps: kUnroll vectors of every row of B in flight, then their FMAs
    for (; k + (Cfg::kUnroll - 1) * kStep + kVec <= K; k += Cfg::kUnroll * kStep) {
      FragB bv[Cfg::kUnroll][kR];
#pragma unroll
      for (int u = 0; u < Cfg::kUnroll; ++u)
#pragma unroll
        for (int r = 0; r < kR; ++r) bv[u][r] = blk::load_vector_l1<TB, kVec, blk::kL1Stream>(b[r] + k + u * kStep);
#pragma unroll
      for (int u = 0; u < Cfg::kUnroll; ++u) step.template add<true>(acc, bv[u], k + u * kStep, kVec);
    }
  }
  for (; k < K; k += kStep) {  // the rest one vector at a time (the K tail and unaligned operands: element loads)
    FragB bv[kR];
    const int n = K - k < kVec ? K - k : kVec;
#pragma unroll
    for (int r = 0; r < kR; ++r) bv[r] = blk::load_zero_filled<TB, kVec, blk::kL1Stream>(b[r] + k, n, aligned);
    step.template add<false>(acc, bv, k, n);
  }

#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      const float v = red::wave_allreduce<red::Sum>(acc[r][m]);
      const int row = row0 + m;
      const int col = col0 + r;
      if (lane == (r * kM + m) % Cfg::kWaveSize && row < M && col < N) {
        const long long off = Cfg::kCRowMajor ? static_cast<long long>(row) * ldc + col
                                              : static_cast<long long>(col) * ldc + row;
        gstore(C + off, epi::finish<Cfg>(v, row, col, C, off, op));
      }
    }
}

// The kernel's entry (kernel.hip.j2 calls it with the arguments of its ABI): every form of gemm_forms.h.
template <class Cfg, class... Args>
CKGEN_DEVICE void gemm_vec(Args... args) {
  GemmForms<gemm_vec_detail::VecBody>::template entry<Cfg>(args...);
}

}  // namespace ckgen
