// gemm_sm90_block_scales.h (ckgen/ops/gemm/device): the K loop of the Hopper GEMM body (gemm_sm90_tma.h) for
// block(128) scales (fp8 A 1 x 128, B 128 x 128; epi::Scaled with kScaleBlock).
//
// Body is TmaGemmBody<Cfg> (tiles of 128 or 64 columns: inside one 128-column block of B's scales; K tiles of 128:
// each K tile is one block kb = kt). Per K tile a
// consumer warpgroup's wgmmas overwrite a second accumulator set `part`; once their group completes, the stage is
// released and the warp's sums d += part * scale_a(row, kb) * scale_b(n0 / 128, kb) (scale_a at rows r0 + lane / 4
// and + 8, clamped to M - 1; scale_b of the tile's columns). A block's scales are read two K tiles ahead, so
// that their global loads hide behind the tensor cores' work instead of stalling every fold.
//
// Turns: with two consumer warpgroups (tiles of 128 rows) each one waits for its K tile's wgmmas before folding
// them; issued at once, both would wait and fold at once, the tensor cores idle meanwhile. So they take turns:
// warpgroup 1 issues a K tile's wgmmas once warpgroup 0 has issued that tile's (named barrier 2), warpgroup 0 the
// next tile's once warpgroup 1 has issued this one's (barrier 3): the tensor cores run them in that order, and each
// warpgroup's wait and fold overlap the other's wgmmas. Barrier 1 is the consumers' (gemm_sm90_tma.h ConsumerSync);
// each turn is a bar.arrive of one warpgroup (128 threads) met by a bar.sync of the other (256 in all). Warpgroup
// 0 issues its first K tile without waiting and takes warpgroup 1's last turn in finish(), so that every arrive is
// met. (Pairs of blocks with two sets of sums, the second block's wgmmas running through the first's fold, measured
// about 2% slower on the H200, before the turns.)
#pragma once

#include "ckgen/blocks/epilogue.h"
#include "ckgen/blocks/nv_wgmma.h"

namespace ckgen {
namespace nv {

#if defined(CKGEN_NV_WGMMA)
template <class Body>
struct BlockScaleLoop {
  static constexpr int kFrags = Body::kFrags;
  static constexpr bool kTurns = Body::kConsumers == 2;

  // K tiles kt0 .. kt1-1 of the tile into d (zeroed by the caller), the warp's rows r0 .. r0+15 of C (M rows in
  // all), its columns from n0; (s, phase): the ring's next stage, as Body::issue_k_tile keeps it. turned: warpgroup
  // 0 has issued a K tile of this block before (its next ones wait for their turn).
  template <class Operand>
  static CKGEN_DEVICE void run(float (&d)[4 * kFrags], uint32_t s0, uint32_t full0, uint32_t empty0, int wg, int& s,
                               uint32_t& phase, int kt0, int kt1, const Operand& op, int M, int r0, int n0, int lane,
                               bool& turned) {
    const int ra = r0 + (lane >> 2), rb = ra + 8;
    const float* sa0 = op.scale_a + static_cast<long long>(ra < M ? ra : M - 1) * op.ld_a;
    const float* sa1 = op.scale_a + static_cast<long long>(rb < M ? rb : M - 1) * op.ld_a;
    const float* sb = op.scale_b + static_cast<long long>(n0 / epi::kScaleBlockK) * op.ld_b;
    // the scales of blocks kt (x0) and kt + 1 (x1), in registers (shifted down each K tile; past kt1: unread)
    float b0 = 0.0f, a00 = 0.0f, a10 = 0.0f, b1 = 0.0f, a01 = 0.0f, a11 = 0.0f;
    if (kt0 < kt1) b0 = gload(sb + kt0), a00 = gload(sa0 + kt0), a10 = gload(sa1 + kt0);
    if (kt0 + 1 < kt1) b1 = gload(sb + kt0 + 1), a01 = gload(sa0 + kt0 + 1), a11 = gload(sa1 + kt0 + 1);
    float part[4 * kFrags];
    Body::zero(part);  // (overwritten by each block's first wgmma; defined for the asm's read-write operands)
    for (int kt = kt0; kt < kt1; ++kt) {
      if constexpr (kTurns) {
        if (wg == 1 || turned) await_turn(wg);
        turned = true;
      }
      const int cur = Body::template issue_k_tile<true>(part, s0, full0, wg, s, phase);
      if constexpr (kTurns) pass_turn(wg);
      const float f0 = a00 * b0, f1 = a10 * b0;
      b0 = b1, a00 = a01, a10 = a11;
      if (kt + 2 < kt1) b1 = gload(sb + kt + 2), a01 = gload(sa0 + kt + 2), a11 = gload(sa1 + kt + 2);
      wgmma_wait<0>();
      if (lane == 0) mbar_arrive(empty0 + 8 * cur);
#pragma unroll
      for (int i = 0; i < 4 * kFrags; ++i) d[i] += part[i] * ((i & 2) ? f1 : f0);  // register 4j + 2h + e: row +8h
    }
  }

  // After the block's last piece: warpgroup 0 takes warpgroup 1's last turn (the barrier is left at rest).
  static CKGEN_DEVICE void finish(int wg, bool turned) {
    if constexpr (kTurns) {
      if (wg == 0 && turned) await_turn(0);
    }
  }

  static CKGEN_DEVICE void await_turn(int wg) {
    if (wg == 0) asm volatile("bar.sync 3, 256;\n" ::: "memory");
    else asm volatile("bar.sync 2, 256;\n" ::: "memory");
  }
  static CKGEN_DEVICE void pass_turn(int wg) {
    if (wg == 0) asm volatile("bar.arrive 2, 256;\n" ::: "memory");
    else asm volatile("bar.arrive 3, 256;\n" ::: "memory");
  }
};
#endif

}  // namespace nv
}  // namespace ckgen
