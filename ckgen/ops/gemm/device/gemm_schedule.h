// gemm_schedule.h (ckgen/ops/gemm/device): the split-K and stream-K schedules on the portable bodies
// (gemm_mfma.h on AMD and the emulator, gemm_mma_sm90.h on NVIDIA). The planner gives kernels with
// `schedule = splitk...` or `streamk` this header and `ckgen::gemm_sched::scheduled` as their entry; the work,
// the workspace and the fix-up are gemm_work.h's.
//
//   split-K:  grid (ceil(N / kTileN), ceil(M / kTileM), S): workgroup (x, y, z) computes split z of tile (y, x).
//   stream-K: grid (P, 1, 1): workgroup w runs stream-K worker w of P, segment after segment.
// Each piece of work runs the body's tile function on the K range of its segment, its operands offset to the
// tile's origin and its output the segment's slot (PartialCfg: raw accumulators), then finish_tile. One
// instantiation of the tile function per kernel (its static LDS is not duplicated).
#pragma once

#include "ckgen/platform.h"
#if defined(CKGEN_PLATFORM_CUDA)
#include "gemm_mma_sm90.h"
#else
#include "gemm_mfma.h"
#endif
#include "gemm_work.h"

namespace ckgen {
namespace gemm_sched {

// tile<C>: the piece's tile at the origin of its (offset) operands; B read as gate / up columns starts at the
// output columns gn0 of gN (the body's gated_loads Cfgs: B is not offset then).
#if defined(CKGEN_PLATFORM_CUDA)
constexpr bool kSlotRowMajor = true;  // the mma.sync epilogue stores row pairs
template <class C>
CKGEN_DEVICE void tile(const typename C::TA* A, const typename C::TB* B, typename C::TC* Cp,
                       epi::Operand<C> bias, int M, int N, int K, long long lda, long long ldb, long long ldc,
                       int gn0, int gN) {
  nv::Sm90Gemm<C>::run_tile(A, B, Cp, bias, M, N, K, lda, ldb, ldc, 0, 0, gn0, gN);
}
#else
constexpr bool kSlotRowMajor = false;  // MFMA accumulators hold runs of rows: column-major slots store vectors
template <class C>
CKGEN_DEVICE void tile(const typename C::TA* A, const typename C::TB* B, typename C::TC* Cp,
                       epi::Operand<C> bias, int M, int N, int K, long long lda, long long ldb, long long ldc,
                       int gn0, int gN) {
  gemm_mfma_tile<C>(A, B, Cp, bias, M, N, K, lda, ldb, ldc, 0, 0, gn0, gN);
}
#endif
// The width of the runs of gate, then up, columns in a gated Cfg's slot (the body's warp / wave N extent:
// blk::GatedRows), 0 for other Cfgs.
template <class Cfg>
constexpr int kSlotGateWave = epi::gated<Cfg>() ? Cfg::kWaveTileN : 0;

// The slot element type of a Cfg: its accumulator, or the atomic adder.
template <class Cfg>
using SlotOut = typename Select<ScheduleOf<Cfg>::atomic, AddF32, typename Cfg::TAcc>::type;

// One segment: the tile's K range into the segment's slot, then the fix-up.
template <class Cfg>
CKGEN_DEVICE void run_segment(const Seg& g, const Problem& pb, Workspace<typename Cfg::TAcc> ws,
                              const typename Cfg::TA* A, const typename Cfg::TB* B, typename Cfg::TC* C,
                              epi::Operand<Cfg> bias, int M, int N, int K, long long lda, long long ldb,
                              long long ldc, int* ticket) {
  using P = PartialCfg<Cfg, SlotOut<Cfg>, kSlotRowMajor>;
  constexpr int kOutN = epi::out_tile_n<Cfg>();
  constexpr bool kGated = epi::gated<Cfg>();
  const int m0 = (g.tile / pb.tiles_n) * Cfg::kTileM;
  const int n0 = (g.tile % pb.tiles_n) * kOutN;
  const int k0 = g.kt0 * Cfg::kTileK;
  const int k1 = g.kt1 * Cfg::kTileK < K ? g.kt1 * Cfg::kTileK : K;
  const int mr = M - m0 < Cfg::kTileM ? M - m0 : Cfg::kTileM;
  const int nr = N - n0 < kOutN ? N - n0 : kOutN;
  const typename Cfg::TA* a = Cfg::kARowMajor ? A + static_cast<long long>(m0) * lda + k0
                                              : A + m0 + static_cast<long long>(k0) * lda;
  const int bn0 = kGated ? 0 : n0;  // (gated: the piece reads B's gate / up columns of output columns n0..)
  const typename Cfg::TB* b = Cfg::kBRowMajor ? B + static_cast<long long>(k0) * ldb + bn0
                                              : B + static_cast<long long>(bn0) * ldb + k0;
  auto* slot = reinterpret_cast<typename P::TC*>(ws.slots + static_cast<long long>(g.slot) * Cfg::kTileM * Cfg::kTileN);
  // (a gated piece writes the raw gate and up sums of all kTileN columns; finish_tile pairs them)
  tile<P>(a, b, slot, PartialOperand<Cfg>::make(bias, k0 / epi::kScaleBlockK, m0, n0), mr, kGated ? Cfg::kTileN : nr,
          k1 > k0 ? k1 - k0 : 0, lda, ldb, kSlotRowMajor ? Cfg::kTileN : Cfg::kTileM, n0, N);
  finish_tile<Cfg, kSlotRowMajor, BlockSync, Cfg::kThreads, kSlotGateWave<Cfg>>(g, ws, C, bias, ldc, m0, n0, mr, nr,
                                                                                 thread_id(), ticket, N);
}

// The scheduled kernel's body: the GEMM's arguments and the workspace (the ABI's last argument).
template <class Cfg>
CKGEN_DEVICE void scheduled(const typename Cfg::TA* A, const typename Cfg::TB* B, typename Cfg::TC* C,
                            epi::Operand<Cfg> bias, int M, int N, int K, long long lda, long long ldb,
                            long long ldc, void* workspace) {
  constexpr int kKind = ScheduleOf<Cfg>::value;
  static_assert(kKind == kSplitK || kKind == kStreamK, "gemm_sched::scheduled: kSchedule is kSplitK or kStreamK");
  CKGEN_LDS(int, ticket, 4);
  const Problem pb(M, N, K, Cfg::kTileM, epi::out_tile_n<Cfg>(), Cfg::kTileK);
  const Workspace<typename Cfg::TAcc> ws(workspace, pb.tiles);
  if constexpr (kKind == kSplitK) {
    const Seg g = splitk_seg(block_id(1) * pb.tiles_n + block_id(0), block_id(2), grid_dim(2), pb.kt,
                             ScheduleOf<Cfg>::atomic);
    run_segment<Cfg>(g, pb, ws, A, B, C, bias, M, N, K, lda, ldb, ldc, ticket);
  } else {
    const StreamK sk(block_id(0), grid_dim(0), pb.tiles, pb.kt);
    Seg g;
    for (int j = 0; sk.seg(j, g); ++j) {
      if (j > 0) barrier();  // the previous segment's LDS and ticket reads are done
      // (the problem and the workspace recomputed per segment from opaque sizes: nothing scalar lives across
      // the body but the kernel's arguments)
      const int m = CKGEN_UNIFORM(opaque(M)), n = CKGEN_UNIFORM(opaque(N)), k = CKGEN_UNIFORM(opaque(K));
      const Problem pj(m, n, k, Cfg::kTileM, epi::out_tile_n<Cfg>(), Cfg::kTileK);
      run_segment<Cfg>(g, pj, Workspace<typename Cfg::TAcc>(workspace, pj.tiles), A, B, C, bias, m, n, k, lda, ldb,
                       ldc, ticket);
    }
  }
}

// The scaled form (Cfg::EpiOperand is an epi::Scaled): the scale pointers follow the bias.
template <class Cfg>
CKGEN_DEVICE void scheduled(const typename Cfg::TA* A, const typename Cfg::TB* B, typename Cfg::TC* C,
                            const typename Cfg::TBias* bias, const float* scale_a, const float* scale_b, int M, int N,
                            int K, long long lda, long long ldb, long long ldc, void* workspace) {
  scheduled<Cfg>(A, B, C, epi::Operand<Cfg>::make(bias, scale_a, scale_b), M, N, K, lda, ldb, ldc, workspace);
}

// Block-scaled kernels: the K and N block counts (checked by the host entry) and the scales' leading dimensions.
template <class Cfg>
CKGEN_DEVICE void scheduled(const typename Cfg::TA* A, const typename Cfg::TB* B, typename Cfg::TC* C,
                            const typename Cfg::TBias* bias, const float* scale_a, const float* scale_b, int M, int N,
                            int K, int /*kb*/, int /*nb*/, long long lda, long long ldb, long long ldc,
                            long long ld_scale_a, long long ld_scale_b, void* workspace) {
  scheduled<Cfg>(A, B, C, epi::Operand<Cfg>::make(bias, scale_a, scale_b, ld_scale_a, ld_scale_b), M, N, K, lda, ldb,
                 ldc, workspace);
}

}  // namespace gemm_sched
}  // namespace ckgen
