// gemm_sm90_tma.h (ckgen/ops/gemm/device): the Hopper GEMM body (sm_90a): TMA loads, warp specialization, wgmma, persistent grid.
//
// Serves the Cfgs the planner gives a TmaBodyPlan (ckgen/ops/gemm/tma_body.py, plan_tma_body): f16 / bf16 A and B
// in any layout, tiles of 64 or 128 rows x 128 or 256 columns x 64 K (and 64 x 64 for few rows of A: twice the tiles
// of 64 x 128 to spread over the SMs; 128 x 192 for widths that 192 columns fill in whole waves, 4608 = 24 x 192;
// neither gated nor rotary), with 4 warps per 64 rows (one consumer
// warpgroup per 64 rows, each issuing wgmma m64nNk16 with N = the tile's columns), Cfg::kTmaStages stages of
// Cfg::kTmaSmemBytes in all; and fp8 (OCP e4m3 / e5m2) A row-major and B column-major (fp8 wgmma reads both
// K-major) on the same tiles with 128 K (one 128-byte row of 128 fp8 elements), wgmma m64nNk32. Both take the
// scalings of an epi::Scaled operand: tensor / row / col scales in the epilogue (epi::value, epi::gated_value; the
// overlapped epilogue kept), and fp8 ones block(128) scales folded per K tile (= one 128-K block) in registers
// (gemm_sm90_block_scales.h; tiles of 128 columns, no overlapped epilogue).
// The generated source adds a second kernel entry, `<kernel>_tma`, that calls TmaGemm<Cfg>::run; the host
// entry calls TmaGemm<Cfg>::launch first (TmaGemm: this body with its host side, gemm_sm90_tma_launch.h), which
// launches it when the device is sm_90 and the operands are TMA-addressable (16-byte aligned base and leading
// dimension, K > 0, ...), and otherwise returns kNotApplicable so that the portable mma.sync entry
// (gemm_mma_sm90.h) runs instead.
//
// Block of kThreads = 128 * (kConsumers + 1) threads, at most one per SM, grid = min(tiles, SMs):
//   warpgroup kConsumers (the last): the producer. After giving up registers (setmaxnreg 40), one thread
//     walks the block's tiles and K tiles, and for each K tile waits until its stage is empty, then issues
//     the TMA copies of the A and B tiles into it (128-byte swizzle; out-of-range rows and columns arrive
//     as zeros, which covers the M, N and K tails), completing on the stage's "full" mbarrier.
//   warpgroups 0 .. kConsumers-1: the consumers (setmaxnreg 232). Warpgroup w computes rows 64w .. 64w+63
//     of the tile: per K tile it waits for "full", issues 4 wgmma m64nNk16 (k16 steps) reading both
//     operands from the stage, commits them as one group and waits until only that group is pending; the
//     previous stage is then free, and each warp arrives on its "empty" mbarrier. After the last K tile:
//     the epilogue (Sm90Gemm::store_c, shared with the mma.sync body), straight from the accumulators,
//     while the producer already fills the stages with the block's next tile.
//     Epilogue overlap (kOverlapEpilogue: whole tiles of the tile and stream-K schedules, 16-bit row-major C
//     stored by TMA): the epilogue's
//     outputs are first finished and packed into registers (COut, half the accumulators' registers), then the
//     next tile's first K tile of wgmmas is issued into the zeroed accumulators, and only then are the outputs
//     staged in shared memory and TMA-stored, so the tensor cores work through the staging stores. That K
//     tile takes the next stage of the ring like any other (one "full" wait, one "empty" arrive per warp after
//     a wgmma_wait has completed its group, in the next tile's K loop); only its place in the code moves.
// Tiles are visited in the grouped order of the mma.sync body (kGroupM M tiles per N tile), block b taking
// tiles b, b + gridDim.x, ... (A ping-pong schedule, the two consumer warpgroups taking 64 x 256 units in turn
// so that one's epilogue overlaps the other's main loop, measured 8-14% slower on the H200: it moves 40 KiB
// per 64 x 256 x 64 step instead of 48 KiB per 128 x 256 x 64; docs/performance-log.md.)
//
// Schedules (gemm_work.h): a Cfg with kSchedule = kSplitK or kStreamK walks pieces of work instead of whole
// tiles: units (tile, split) b, b + gridDim.x, ... of tiles * splits, or stream-K worker b of gridDim.x. The
// producer loads each piece's K range; the consumers store a whole tile to C as above, and a part of one into
// its workspace slot, then finish the tile (gemm_sched::finish_tile, the consumer warpgroups synchronizing on
// named barrier 1) when they are the last to contribute.
//
// Clusters (kTmaCluster = 2; the tile schedule, dense, no block scales): the grid is clusters of two blocks,
// cluster c taking units c, c + clusters, ... of pairs of M-adjacent tiles (the same N tile), rank r the pair's
// tile r (the second may lie past M: it loads zeros and stores nothing). Each block's producer loads its A tile
// and half of B's boxes, multicast into both blocks' stages (the same shared addresses, completing on each block's
// "full" barrier, which expects the whole stage); a stage's "empty" barrier takes one arrive from every consumer
// warp of both blocks, since both producers write into it. The blocks meet at a cluster barrier after the
// barriers' setup and before they exit. (Measured on the H100, 2026-12-05: 0.94-1.0x the same kernels without
// clusters; cluster = auto takes none. An arrive with .release.cluster semantics made every K tile wait for it:
// 2.4-4x slower.)
//
// Grouped and masked kernels (mode = grouped | masked; Cfg::kGroupMode 1 | 2, Cfg::TIndex the index dtype): the
// block walks every group's tiles (gemm_group_walk.h: tiles b, b + gridDim.x, ... of the sequence of all groups'
// tiles) instead of the batch; the producer loads A rows from the group's first row (grouped: one A over all
// groups' rows, rows past the group arrive too and their outputs are dropped; masked: item g of A) and item g of
// B; the consumers store the group's rows only: by TMA from warps whose 16 rows lie in the group (C's map: grouped,
// one item of all rows; masked, an item per group), by the warp's own stores (store_c_rows) from the one whose rows
// run past it, where a box would cross into the next group, and from every warp when no map takes C (kNoTmaC).
// A grouped kernel's scales (tensor / row of A, tensor / col of B per group, fp8 or 16-bit) move to the tile's
// group with its bias (epi::for_group), so its epilogue applies them as a plain scaled kernel's.
//
// Shared memory: kStages stages of [A: kTileM rows x 128 B | B: kTileN rows x 128 B], each 1024-byte aligned,
// then 2 * kStages mbarriers. A K-major operand (A row-major, B column-major) is one TMA box of 128 bytes of K x rows;
// an MN-major one (A column-major, B row-major) is boxes of 64 M/N x 64 K, 8 KiB apart, read with the
// transpose bit (nv_wgmma.h has both descriptor forms).
#pragma once

#include "gemm_group_walk.h"
#include "gemm_mma_sm90.h"
#include "gemm_sm90_block_scales.h"
#include "gemm_sm90_tma_store.h"
#include "gemm_work.h"
#include "ckgen/blocks/nv_cluster.h"
#include "ckgen/blocks/nv_wgmma.h"

namespace ckgen {
namespace nv {

// mode = grouped (1) / masked (2) Cfgs (gemm_group_walk.h); their index dtype and per-row bias
CKGEN_CFG_OPTIONAL(GroupModeOf, kGroupMode, int, 0);
CKGEN_CFG_OPTIONAL(BiasRowOf, kBiasRow, bool, false);
// thread-block cluster of the tile schedule: kTmaCluster M-adjacent tiles sharing their B tile (header comment)
CKGEN_CFG_OPTIONAL(ClusterOf, kTmaCluster, int, 1);
template <class C, class = void>
struct IndexOf {
  using type = int;
};
template <class C>
struct IndexOf<C, decltype(void(sizeof(typename C::TIndex)))> {
  using type = typename C::TIndex;
};

template <class Cfg>
struct TmaGemmBody {
  using Config = Cfg;
  using TA = typename Cfg::TA;
  using TB = typename Cfg::TB;
  using TC = typename Cfg::TC;
  using TBias = typename Cfg::TBias;
  using Operand = epi::Operand<Cfg>;  // the bias pointer, or with the residual or the fp8 scales (blocks/epilogue.h)
  using COp = typename Cfg::COperand;
  using Epi = Sm90Gemm<Cfg>;

  static constexpr int kConsumers = Cfg::kTileM / 64;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kStages = Cfg::kTmaStages;
  static constexpr int kGroupM = GroupMOf<Cfg>::value;
  static constexpr bool kAK = Cfg::kARowMajor;   // A K-contiguous
  static constexpr bool kBK = !Cfg::kBRowMajor;  // B K-contiguous
  static constexpr int kEB = static_cast<int>(sizeof(TA));  // operand element bytes: 2 (f16, bf16) or 1 (fp8)
  static constexpr int kRow = 128;                // bytes of one smem row: 64 16-bit or 128 fp8 elements of K
  static constexpr int kRowElems = kRow / kEB;    // elements of one smem row (a TMA box's inner extent)
  static constexpr int kKStep = 32 / kEB;         // K of one wgmma: k16 (16-bit), k32 (fp8); 32 bytes of a row
  static constexpr bool kF8 = kEB == 1;
  // block(128) scales (epi::Scaled with kScaleBlock): each K tile (one 128-K block) is summed by its wgmmas into
  // a second accumulator set, then folded into the tile's sums times scale_a(row, kb) * scale_b(col / 128, kb)
  static constexpr bool kBlock = epi::IsBlockScaled<Operand>::value;
  static constexpr int kBox = 64 * kRow;          // one 64 x 64 box of an MN-major operand
  static constexpr int kABytes = Cfg::kTileM * kRow;
  static constexpr int kBBytes = Cfg::kTileN * kRow;
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kFrags = Cfg::kTileN / 8;   // a warp's 8-column accumulator fragments (4 floats each)
  // Gated epilogues (swiglu, geglu; blocks/epilogue.h): the tile's first kTileN / 2 B rows in shared memory are
  // gate columns, the rest the matching up columns (blk::GatedRows over the warpgroup's whole N extent), loaded
  // as boxes of kGateRun columns; fragment j < kFrags / 2 is a gate, j + kFrags / 2 its up; a tile writes kOutN
  // columns of C (kOutFrags fragments).
  static constexpr bool kGated = epi::gated<Cfg>();
  static constexpr int kGateBlock = epi::GateOf<Cfg>::kBlock;
  static constexpr int kOutN = epi::out_tile_n<Cfg>();
  static constexpr int kOutFrags = kOutN / 8;
  static constexpr int kGateRun = kGateBlock && kGateBlock < kOutN ? kGateBlock : kOutN;
  using GateRows = blk::GatedRows<Cfg::kTileN, Cfg::kTileN, kGateBlock>;
  static constexpr int kCBoxes = kOutN / 64;  // a warp's 16 x 64 boxes of C (TMA-store epilogue)
  static constexpr int kBCols = kGated ? 2 : 1;                    // B's columns per column of C
  // B's boxes per stage: K-major, kBBoxes boxes of kBBoxRows rows (a run of gate / up columns, or 1 / kCluster of
  // the tile); MN-major, boxes of 64 columns. With a cluster, CTA r loads boxes r, r + kCluster, ... for all.
  static constexpr int kCluster = ClusterOf<Cfg>::value;
  static constexpr int kBBoxRows = kGated ? kGateRun : Cfg::kTileN / kCluster;  // a K-major B box's rows
  static constexpr int kBBoxes = kBK ? Cfg::kTileN / kBBoxRows : Cfg::kTileN / 64;
  static constexpr int kBarOffset = kStages * kStageBytes;
  // The epilogue's staging space, one region per consumer warp (its 16 rows x kTileN columns of C):
  //  - 16-bit row-major C (kTmaStoreC): kCBoxes boxes of 16 rows x 64 columns, 128-byte swizzled, 1024-byte aligned,
  //    written out by TMA stores that overlap the next tile's main loop;
  //  - otherwise Sm90Gemm::store_c_staged's 16 rows x 128 bytes (+16), drained by 16-byte stores.
  // A residual R (laid out as C) goes through the same boxes with the TMA-store epilogue: each warp copies its
  // 16 rows of R into them with cp.async while its tile's main loop runs (prefetch_residual), and finish_c adds
  // each output's residual from there, at the place where store_c_tma then writes the output (these three:
  // TmaStoreEpilogue, gemm_sm90_tma_store.h).
  static constexpr int kGroupMode = GroupModeOf<Cfg>::value;
  static constexpr bool kResidual = epi::IsResidual<Operand>::value;
  static constexpr bool kTmaStoreC = sizeof(TC) == 2 && Cfg::kCRowMajor;
  static constexpr int kResChunk = 4;  // finish_c: a residual's fragments per compiler barrier
  using Store = TmaStoreEpilogue<TmaGemmBody>;  // the TMA-store epilogue (gemm_sm90_tma_store.h)
  static constexpr int kEpiSub = 128 / (8 * static_cast<int>(sizeof(TC)));  // 8-column fragments per pass
  static constexpr int kEpiWarpBytes = kTmaStoreC ? kCBoxes * 2048 : Epi::template kStagingBytesOf<kEpiSub>;
  static constexpr int kEpiOffset = kTmaStoreC ? (kBarOffset + 2 * kStages * 8 + 1023) / 1024 * 1024
                                               : kBarOffset + 2 * kStages * 8;
  static constexpr int kSmemBytes = 1024 + kEpiOffset + 4 * kConsumers * kEpiWarpBytes;  // 1024: alignment slack
  static constexpr int kNotApplicable = -1;
  static constexpr int kKind = gemm_sched::ScheduleOf<Cfg>::value;
  static_assert(!(kF8 && (kGated || epi::IsResidual<Operand>::value)),
                "fp8 operands: no gated or residual epilogue on the Hopper body (the planner refuses it)");
  static_assert(!kGated || (kBK ? kGateRun % 8 == 0 : kGateRun % 64 == 0),
                "gated: B's runs of gate / up columns are whole TMA boxes (8 rows K-major, 64 columns MN-major)");
  // The next tile's first wgmmas go out before this tile's staging stores (header comment): the tile schedule's
  // tiles, and stream-K's whole tiles (Work keeps no stream-K state live through them: with it, ptxas spilled 4
  // bytes at 168 registers in the residual and fp8-scaled kernels; sm_90a, nvcc 13).
  static constexpr bool kOverlapEpilogue = kTmaStoreC && !kBlock && kKind != gemm_sched::kSplitK;
  static constexpr bool kAtomic = gemm_sched::ScheduleOf<Cfg>::atomic;
  using Partial = gemm_sched::PartialCfg<Cfg, typename Select<kAtomic, gemm_sched::AddF32, float>::type, true>;

  // The block's pieces of work, in order: first its whole tiles b, b + grid, ... (next_whole: every tile of the
  // tile schedule; stream-K's data-parallel waves, the first (tiles / grid) * grid tiles; split-K's tiles when
  // there is one split), then its parts of tiles (next_part: split-K's units (tile, split) b, b + grid, ... of
  // tiles * splits; stream-K's segments of worker b of grid past its whole tiles). The whole tiles' walk is the
  // same code for every schedule (the consumers' overlapped epilogue keeps wgmmas in flight across it, which
  // ptxas serializes after control flow it cannot prove uniform).
  struct Work {
    int tiles, kt, splits, u, stride, whole, j;  // (j: stream-K's next segment, -1 until the parts begin)
    CKGEN_DEVICE Work(int tiles_, int kt_, int splits_)
        : tiles(tiles_), kt(kt_), splits(splits_), u(block_id(0) / kCluster), stride(grid_dim(0) / kCluster),
          whole(kKind == gemm_sched::kTile ? tiles_
                : kKind == gemm_sched::kStreamK ? gemm_sched::StreamK::whole_tiles(tiles_, kt_, grid_dim(0))
                : splits_ == 1 ? tiles_ : 0),
          j(-1) {}
    CKGEN_DEVICE bool next_whole(gemm_sched::Seg& g) {
      if (u >= whole) return false;
      g.tile = u;
      g.kt0 = 0;
      g.kt1 = kt;
      g.count = 1;
      u += stride;
      return true;
    }
    CKGEN_DEVICE bool next_part(gemm_sched::Seg& g) {
      if constexpr (kKind == gemm_sched::kStreamK) {  // (StreamK's segments past the worker's whole tiles)
        if (whole == tiles) return false;
        if (j < 0) j = tiles / grid_dim(0);
        return gemm_sched::StreamK(block_id(0), grid_dim(0), tiles, kt).seg(j++, g);
      } else if constexpr (kKind == gemm_sched::kSplitK) {
        if (whole > 0 || u >= tiles * splits) return false;
        g = gemm_sched::splitk_seg(u / splits, u % splits, splits, kt, kAtomic);
        u += stride;
        return true;
      } else {
        return false;
      }
    }
  };

  // Where a piece of work lies: item b (batch item, or group) of B, and of A, C and bias where they have items;
  // the first row of its rows in A and C (a grouped kernel's group start, else 0); the M of its tile (the group's
  // rows, else M); the tile's origin.
  struct Place {
    int b, row0, rows, m0, n0;
  };

  using TIndex = typename IndexOf<Cfg>::type;
  using Groups = typename Select<kGroupMode == 2, gemm_grouped::ByCounts<TIndex>, gemm_grouped::ByOffsets<TIndex>>::type;

  // The block's pieces in order, with their places: Work's (plain, batched, scheduled), or with kGroupMode the
  // group walk's (whole tiles b, b + gridDim.x, ... of every group's; `batch` is then the groups).
  struct Pieces {
    Work work;
    gemm_grouped::GroupCursor<Cfg, Groups> cursor;
    int tiles_m, tiles_n, M, nk, t;  // (tiles_m: M's tiles, or with a cluster its runs of kCluster tiles)
    CKGEN_DEVICE Pieces(int M_, int N, int nk_, int batch, int splits, const void* index)
        : work(kGroupMode ? 0 : cluster_rows(M_) * ((N + kOutN - 1) / kOutN) * batch, nk_, splits),
          cursor(Groups{static_cast<const TIndex*>(index), M_}, kGroupMode ? batch : 0, N),
          tiles_m(cluster_rows(M_)), tiles_n((N + kOutN - 1) / kOutN), M(M_), nk(nk_), t(block_id(0)) {}
    static CKGEN_DEVICE int cluster_rows(int M_) {
      return ((M_ + Cfg::kTileM - 1) / Cfg::kTileM + kCluster - 1) / kCluster;
    }
    // The next whole tile (with kGroupMode: of the group walk), or false; its place.
    CKGEN_DEVICE bool next_whole(gemm_sched::Seg& g, Place& p) {
      if constexpr (kGroupMode != 0) {
        if (!cursor.seek(t)) return false;
        const gemm_grouped::GroupTile tl = cursor.at(t);
        t += grid_dim(0);
        g.tile = 0;
        g.kt0 = 0;
        g.kt1 = nk;
        g.count = 1;
        p = Place{tl.g, kGroupMode == 1 ? tl.row0 : 0, tl.rows, tl.m0, tl.n0};
        return true;
      } else {
        return work.next_whole(g) && place(g, p);
      }
    }
    // The next part of a tile (after every whole tile), or false; its place.
    CKGEN_DEVICE bool next_part(gemm_sched::Seg& g, Place& p) {
      if constexpr (kGroupMode != 0) {
        return false;
      } else {
        return work.next_part(g) && place(g, p);
      }
    }
    // Every piece in order (the producer's walk).
    CKGEN_DEVICE bool next(gemm_sched::Seg& g, Place& p) {
      if constexpr (kKind == gemm_sched::kTile || kGroupMode != 0) return next_whole(g, p);
      else return next_whole(g, p) || next_part(g, p);
    }
    CKGEN_DEVICE bool place(const gemm_sched::Seg& g, Place& p) const {
      tile_origin(g.tile, tiles_m, tiles_n, p.b, p.m0, p.n0);
      if constexpr (kCluster > 1) p.m0 = p.m0 * kCluster + cluster_rank() * Cfg::kTileM;  // (maybe past M)
      p.row0 = 0;
      p.rows = M;
      return true;
    }
  };

  // The consumer warpgroups' barrier (named barrier 1; the producer does not take part).
  struct ConsumerSync {
    static CKGEN_DEVICE void sync() { asm volatile("bar.sync 1, %0;\n" ::"n"(128 * kConsumers) : "memory"); }
  };

  static_assert(sizeof(TB) == sizeof(TA) && (kEB == 2 || kEB == 1),
                "the TMA body takes 16-bit A and B (f16, bf16) or 8-bit float ones (fp8 e4m3 / e5m2)");
  static_assert(((Cfg::kTileM == 64 || Cfg::kTileM == 128) && (Cfg::kTileN == 128 || Cfg::kTileN == 256) ||
                 (Cfg::kTileM == 64 && Cfg::kTileN == 64 || Cfg::kTileM == 128 && Cfg::kTileN == 192) && !kGated &&
                     !epi::IsRotary<Operand>::value) &&
                    Cfg::kTileK == kRowElems,
                "the TMA body's tiles are 64 or 128 x 128 or 256, or 64 x 64 and 128 x 192 (not gated, not rotary), x "
                "(128 bytes of K: 64 16-bit, 128 fp8 elements)");
  static_assert(!kF8 || (kAK && kBK), "fp8 wgmma reads both operands K-major: A row-major, B column-major");
  static_assert(!kBlock || (kF8 && Cfg::kTileN <= 128 && kGroupMode == 0),
                "block scales: fp8 tiles of 128 or 64 columns (one 128-column block of B's scales; two accumulator "
                "sets per thread), not grouped");
  static_assert(Cfg::kThreads == 128 * kConsumers, "kWavesM * kWavesN must be 4 warps per consumer warpgroup");
  static_assert(kStages >= 2, "kTmaStages must be >= 2");
  static_assert(kCluster == 1 || (kCluster == 2 && kKind == gemm_sched::kTile && kGroupMode == 0 && !kBlock &&
                                  kBBoxes % kCluster == 0),
                "kTmaCluster: 1, or 2 on the tile schedule, not grouped, not block-scaled (the planner's rule)");
  static_assert(kSmemBytes == Cfg::kTmaSmemBytes, "kTmaSmemBytes (planned) differs from what this body lays out");

  // Tile t of the order (batch item by batch item, each in the grouped order) -> its batch item, first row
  // and first column.
  static CKGEN_DEVICE void tile_origin(int t, int tiles_m, int tiles_n, int& b, int& m0, int& n0) {
    const int per = tiles_m * tiles_n;
    b = t / per;
    int tm, tn;
    grouped_tile(t - b * per, tiles_m, tiles_n, kGroupM, tm, tn);
    m0 = tm * Cfg::kTileM;
    n0 = tn * kOutN;
  }

  // flags: kBroadcastA / kBroadcastB when that operand's batch stride is 0 (its tensor map has one item);
  // kNoTmaC: a grouped kernel's C that no tensor map takes (every warp stores its own rows: store_c_rows).
  static constexpr int kBroadcastA = 1, kBroadcastB = 2, kNoTmaC = 4;

  static CKGEN_DEVICE void run(const TensorMap& ta, const TensorMap& tb, const TensorMap& tc, TC* C,
                               Operand bias, int M, int N, int K, int batch, long long ldc, long long stride_c,
                               long long stride_bias, int flags, void* workspace = nullptr, int splits = 1,
                               const void* index = nullptr) {
#if defined(CKGEN_NV_WGMMA)
    extern __shared__ __align__(1024) unsigned char ckgen_smem[];
    const uint32_t s0 = (smem_addr(ckgen_smem) + 1023u) & ~1023u;
    const uint32_t full0 = s0 + kBarOffset;
    const uint32_t empty0 = full0 + 8 * kStages;
    const int tid = thread_id();
    const int warp = tid >> 5;
    if (tid == 0) {
      for (int s = 0; s < kStages; ++s) {
        mbar_init(full0 + 8 * s, 1);                           // the producer's arrive + the TMA bytes
        mbar_init(empty0 + 8 * s, 4 * kConsumers * kCluster);  // one arrive per consumer warp of the cluster
      }
      mbar_init_fence();
    }
    if constexpr (kCluster > 1) cluster_sync();  // (the peers' barriers are initialized before any use)
    else barrier();
    const int tiles_m = (M + Cfg::kTileM - 1) / Cfg::kTileM;
    const int tiles_n = (N + kOutN - 1) / kOutN;
    const int tiles = tiles_m * tiles_n * batch;
    const int nk = (K + Cfg::kTileK - 1) / Cfg::kTileK;
    if (warp / 4 == kConsumers) {
      setmaxnreg_dec<40>();
      if (tid == 128 * kConsumers) produce(ta, tb, s0, full0, empty0, M, N, nk, batch, splits, index, flags);
    } else {
      setmaxnreg_inc<232>();
      consume(s0, full0, empty0, tc, C, bias, M, N, K, batch, ldc, stride_c, stride_bias, tiles, nk, workspace, splits,
              index, flags);
    }
    if constexpr (kCluster > 1) {  // no CTA leaves while a peer may still arrive on its barriers or write its stages
      __syncwarp();
      cluster_sync();
    }
#else
    __trap();  // the host entry launches this kernel only on sm_90 devices, where the sm_90a code runs
#endif
  }

#if defined(CKGEN_NV_WGMMA)
  // The producer (one thread): for each K tile of the block's pieces, waits until its stage is empty (in every CTA
  // of the cluster), then loads A's tile and B's boxes (with a cluster: this CTA's share of them, multicast to
  // every CTA), all completing on the stage's "full" barrier.
  static CKGEN_DEVICE void produce(const TensorMap& ta, const TensorMap& tb, uint32_t s0, uint32_t full0,
                                   uint32_t empty0, int M, int N, int nk, int batch, int splits, const void* index,
                                   int flags) {
    const int rank = kCluster > 1 ? cluster_rank() : 0;
    int s = 0;
    uint32_t phase = 0;
    Pieces work(M, N, nk, batch, splits, index);
    gemm_sched::Seg g;
    Place p;
    while (work.next(g, p)) {
      const int m0 = p.row0 + p.m0;  // A's first row of the tile
      const int n0 = p.n0;
      const int ba = (flags & kBroadcastA) ? 0 : p.b;
      const int bb = (flags & kBroadcastB) ? 0 : p.b;
      for (int kt = g.kt0; kt < g.kt1; ++kt) {
        mbar_wait(empty0 + 8 * s, phase ^ 1);
        const uint32_t full = full0 + 8 * s;
        mbar_expect_tx(full, kStageBytes);
        const uint32_t sa = s0 + s * kStageBytes;
        const uint32_t sb = sa + kABytes;
        const int k0 = kt * Cfg::kTileK;
        if constexpr (kAK) {
          tma_load_3d(sa, &ta, k0, m0, ba, full);
        } else {
#pragma unroll
          for (int j = 0; j < Cfg::kTileM / 64; ++j) tma_load_3d(sa + j * kBox, &ta, m0 + 64 * j, k0, ba, full);
        }
#pragma unroll
        for (int j = 0; j < kBBoxes; ++j) {
          if (kCluster > 1 && j % kCluster != rank) continue;
          const int r = j * (kBK ? kBBoxRows : 64);  // the box's first row (K-major) / column (MN-major) in the tile
          int col = n0 + r;
          if constexpr (kGated) col = static_cast<int>(GateRows{n0, N}.phys(r));  // a run of gate or up columns
          if constexpr (kBK) load_b(sb + r * kRow, &tb, k0, col, bb, full);
          else load_b(sb + j * kBox, &tb, col, k0, bb, full);
        }
        if (++s == kStages) {
          s = 0;
          phase ^= 1;
        }
      }
    }
  }

  // One box of B into this CTA's stage, or with a cluster into every CTA's (the same shared address in each).
  static CKGEN_DEVICE void load_b(uint32_t dst, const TensorMap* tb, int c0, int c1, int c2, uint32_t full) {
    if constexpr (kCluster > 1) tma_load_3d_multicast(dst, tb, c0, c1, c2, full, (1u << kCluster) - 1u);
    else tma_load_3d(dst, tb, c0, c1, c2, full);
  }

  // Frees a stage (one arrive of a consumer warp): on its "empty" barrier in every CTA of the cluster, whose
  // producers all write into it.
  static CKGEN_DEVICE void release(uint32_t empty) {
    if constexpr (kCluster > 1) {
      const int rank = cluster_rank();
      mbar_arrive(empty);
#pragma unroll
      for (int c = 1; c < kCluster; ++c) mbar_arrive_cluster(empty, (rank + c) % kCluster);
    } else {
      mbar_arrive(empty);
    }
  }

  // The consumers' walk: first the pieces that are whole tiles (every piece of the tile schedule and of grouped
  // kernels; stream-K's data-parallel waves), stored to C with the overlapped epilogue where the Cfg has it; then
  // the parts of tiles (split-K's units, stream-K's last tiles), each into its slot and finished by the last
  // contributor. Two loops, so that no path re-enters the first with its accumulators' wgmmas not in flight after
  // a branch ptxas cannot prove uniform (the fix-up's ticket): such a join made it serialize every wgmma (C7514).
  static CKGEN_DEVICE void consume(uint32_t s0, uint32_t full0, uint32_t empty0, const TensorMap& tc, TC* C,
                                   Operand bias, int M, int N, int K, int batch, long long ldc, long long stride_c,
                                   long long stride_bias, int tiles, int nk, void* workspace, int splits,
                                   const void* index, int flags) {
    extern __shared__ __align__(1024) unsigned char ckgen_smem[];
    const int tid = thread_id();
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int wg = warp >> 2;
    const int row0 = wg * 64 + (warp & 3) * 16;  // this warp's first row of the tile
    int s = 0;           // the stage of the next K tile to issue (the producer's order) ...
    uint32_t phase = 0;  // ... and the parity of its "full" phase
    int prev = 0;        // the stage of the latest issued K tile, released once its group is complete
    int issued = 0;      // K tiles of the coming tile already issued (by the overlapped epilogue): 0 or 1
    bool turned = false;  // (block scales) warpgroup 0 has issued a K tile: its next ones wait for their turn
    float d[4 * kFrags];
    zero(d);
    Pieces work(M, N, nk, batch, splits, index);
    gemm_sched::Seg g;
    Place p;
    // C of a piece's batch item (or group), and its bias / epilogue operand
    auto c_of = [&](const Place& q) { return C + q.b * stride_c + (Cfg::kCRowMajor ? q.row0 * ldc : q.row0); };
    auto bias_of = [&](const Place& q) {
      const Operand moved =
          bias ? bias + (kGroupMode == 1 && BiasRowOf<Cfg>::value ? q.row0 : q.b * stride_bias) : bias;
      if constexpr (kGroupMode == 1) return epi::for_group(moved, q.row0, q.b);  // (the group's scales)
      else return moved;
    };
    // The tile's outputs -> C (kTmaStoreC): by TMA stores at the tile's place in C's map, or (grouped / masked: a
    // warp whose rows run past the group's, or kNoTmaC) by the warp's own stores of the rows inside.
    auto store_out = [&](const typename Store::COut& out, const Place& q, TC* Cq, uint32_t st, unsigned char* sp) {
      if constexpr (kGroupMode != 0) {
        if ((flags & kNoTmaC) || q.m0 + row0 + 16 > q.rows) {
          Store::store_c_rows(out, row0, q.m0, q.n0, Cq, q.rows, N, ldc, lane, sp, !(flags & kNoTmaC));
          return;
        }
      }
      Store::store_c_tma(out, row0, (kGroupMode == 1 ? q.row0 : 0) + q.m0, q.n0, kGroupMode == 1 ? 0 : q.b, lane, st,
                         sp, tc);
    };
    // The piece's K loop into d (after the `issued` K tiles the overlapped epilogue issued), then its sums as
    // the epilogue's accumulator fragments.
    auto k_loop = [&](const gemm_sched::Seg& sg, const Operand& biasb, int Mg, int m0, int n0,
                      COp (&acc)[1][kFrags]) {
      if constexpr (kBlock) {
        BlockScaleLoop<TmaGemmBody>::run(d, s0, full0, empty0, wg, s, phase, sg.kt0, sg.kt1, biasb, Mg, m0 + row0,
                                         n0, lane, turned);
      } else {
        for (int kt = sg.kt0 + issued; kt < sg.kt1; ++kt) {
          const int cur = issue_k_tile(d, s0, full0, wg, s, phase);
          wgmma_wait<1>();  // the previous K tile's group is complete: its stage may be refilled
          if (kt > sg.kt0 && lane == 0) release(empty0 + 8 * prev);
          prev = cur;
        }
        wgmma_wait<0>();
        if (sg.kt1 > sg.kt0 && lane == 0) release(empty0 + 8 * prev);
      }
#pragma unroll
      for (int j = 0; j < kFrags; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[0][j].r[e] = d[4 * j + e];
    };
    bool more = work.next_whole(g, p);
    while (more) {
      const int m0 = p.m0, n0 = p.n0;
      const int Mg = p.rows;  // the tile's M: the group's rows (grouped / masked), else M
      TC* const Cb = c_of(p);
      const Operand biasb = bias_of(p);
      if constexpr (!kOverlapEpilogue) zero(d);  // (the overlapped epilogue zeroed them before issuing)
      const uint32_t st = s0 + kEpiOffset + warp * kEpiWarpBytes;  // this warp's staging (shared address)
      unsigned char* const sp = ckgen_smem + (st - smem_addr(ckgen_smem));
      if constexpr (kResidual && kTmaStoreC) Store::prefetch_residual(Cb, biasb, row0, m0, n0, Mg, N, ldc, lane, st);
      if constexpr (Store::kRopePrefetch) Store::prefetch_rope(biasb, row0, m0, n0, Mg, N, lane, st);
      COp acc[1][kFrags];
      k_loop(g, biasb, Mg, m0, n0, acc);
      if constexpr (kTmaStoreC) {
        if constexpr (kResidual) {
          cp_async_wait<0>();
          __syncwarp();
        }
        typename Store::COut out;
        Store::finish_c(acc, row0, m0, n0, Cb, biasb, Mg, N, ldc, lane, sp, out);  // the last reads of the accumulators
        if constexpr (kOverlapEpilogue) {
          gemm_sched::Seg next;
          Place next_place;
          if (!work.next_whole(next, next_place)) {  // the block's last whole tile
            store_out(out, p, Cb, st, sp);
            break;
          }
          // The next tile's first K tile (there is one: the launch refuses K <= 0) goes to the tensor cores
          // before the staging stores; the K loop above releases its stage (as `prev`) after the wgmma_wait
          // that completes its group. (No path without these wgmmas joins this one before that loop: a join
          // of accumulators in flight with ones that are not makes ptxas wait for the wgmmas right there. The
          // next tile is taken before they go out: the group walk's loop, run while they are in flight, made
          // ptxas serialize every wgmma, C7518.)
          zero(d);
          prev = issue_k_tile(d, s0, full0, wg, s, phase);
          issued = 1;
          store_out(out, p, Cb, st, sp);
          g = next;
          p = next_place;
          continue;
        }
        store_out(out, p, Cb, st, sp);
      } else if constexpr (Cfg::kCRowMajor) {
        Epi::template store_c_staged<1, kFrags, kEpiSub>(acc, row0, 0, m0, n0, Cb, biasb, Mg, N, ldc, lane, sp);
      } else {
        Epi::template store_c<1, kFrags>(acc, row0, 0, m0, n0, Cb, biasb, Mg, N, ldc, lane >> 2, lane & 3);
      }
      more = work.next_whole(g, p);
    }
    if constexpr (kKind != gemm_sched::kTile) {  // the parts of tiles: into their slots, the last one finishing
      issued = 0;
      while (work.next_part(g, p)) {
        zero(d);
        const Operand biasb = bias_of(p);
        COp acc[1][kFrags];
        k_loop(g, biasb, p.rows, p.m0, p.n0, acc);
        finish_part(g, acc, workspace, tiles, c_of(p), biasb, p.rows, N, ldc, p.m0, p.n0, tid, wg, warp, lane);
      }
    }
    if constexpr (kBlock) BlockScaleLoop<TmaGemmBody>::finish(wg, turned);
    if constexpr (kTmaStoreC) {
      if (lane == 0) bulk_wait<0>();  // every C store of this warp has landed before the kernel ends
    }
  }

  static CKGEN_DEVICE void zero(float (&d)[4 * kFrags]) {
#pragma unroll
    for (int i = 0; i < 4 * kFrags; ++i) d[i] = 0.0f;
  }

  // Waits until stage s is full, then issues its K tile's wgmmas (this warpgroup's 64 rows) into d as one
  // committed group, not waited for; returns s, and moves (s, phase) on to the next stage of the ring. A K step
  // is 32 bytes of K (k16 of 16-bit operands, k32 of fp8 ones); kOverwrite: the first one overwrites d (fp8).
  template <bool kOverwrite = false>
  static CKGEN_DEVICE int issue_k_tile(float (&d)[4 * kFrags], uint32_t s0, uint32_t full0, int wg, int& s,
                                       uint32_t& phase) {
    const int cur = s;
    mbar_wait(full0 + 8 * cur, phase);
    const uint32_t sa = s0 + cur * kStageBytes + wg * kBox;  // this warpgroup's 64 rows of A (both layouts)
    const uint32_t sb = s0 + cur * kStageBytes + kABytes;
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < Cfg::kTileK / kKStep; ++k) {
      const uint64_t da = kAK ? sw128_desc(sa + 32 * k, kLboUnused) : sw128_desc(sa + 2048 * k, kBox);
      const uint64_t db = kBK ? sw128_desc(sb + 32 * k, kLboUnused) : sw128_desc(sb + 2048 * k, kBox);
      if constexpr (kF8) {
        wgmma_m64k32_f8<Cfg::kTileN, TA, TB>(d, da, db, kOverwrite && k == 0 ? 0 : 1);
      } else {
        wgmma_m64k16<Cfg::kTileN, TA, kAK ? 0 : 1, kBK ? 0 : 1>(d, da, db);
      }
    }
    wgmma_commit();
    if (++s == kStages) {
      s = 0;
      phase ^= 1;
    }
    return cur;
  }

  static CKGEN_DEVICE void finish_part(const gemm_sched::Seg& g, const COp (&acc)[1][kFrags], void* workspace, int tiles,
                                       TC* C, Operand bias, int M, int N, long long ldc, int m0, int n0, int tid,
                                       int wg, int warp, int lane) {
    __shared__ int ticket[4];
    const gemm_sched::Workspace<float> ws(workspace, tiles);
    const int mr = M - m0 < Cfg::kTileM ? M - m0 : Cfg::kTileM;
    const int nr = N - n0 < kOutN ? N - n0 : kOutN;  // (the tile's columns of C)
    auto* slot = reinterpret_cast<typename Partial::TC*>(ws.slots + static_cast<long long>(g.slot) * Cfg::kTileM * Cfg::kTileN);
    // (block scales: the sums are folded already; the partial operand scales them by 1. Gated: the raw gate and up
    // sums of all kTileN columns, gates in the first half: GateRows over the whole tile)
    Sm90Gemm<Partial>::template store_c<1, kFrags>(acc, wg * 64 + (warp & 3) * 16, 0, 0, 0, slot,
                                                gemm_sched::PartialOperand<Cfg>::make(bias, 0, 0, 0), mr,
                                                kGated ? Cfg::kTileN : nr, Cfg::kTileN, lane >> 2, lane & 3);
    gemm_sched::finish_tile<Cfg, true, ConsumerSync, 128 * kConsumers, kGated ? Cfg::kTileN : 0>(
        g, ws, C, bias, ldc, m0, n0, mr, nr, tid, ticket, N);
    ConsumerSync::sync();  // the ticket is read by every consumer before the next piece's finish writes it
  }
#endif
};

}  // namespace nv
}  // namespace ckgen
