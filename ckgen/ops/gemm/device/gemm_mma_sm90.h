// gemm_mma_sm90.h (ckgen/ops/gemm/device): the portable GEMM kernel body on NVIDIA tensor cores (mma.sync; sm_80 and sm_90).
// On sm_90 the Cfgs planned with a TMA variant also get the Hopper body, gemm_sm90_tma.h (with its host side,
// gemm_sm90_tma_launch.h, included at the end), which the host entry prefers; this body then serves the operands
// that one cannot take.
//
//   C = Epilogue(alpha * A.B + beta * C) cast to TC,  A: M x K, B: K x N, C: M x N
//
// Instantiated from the same Cfg struct as the AMD body (docs/design.md, "Cfg contract"); a wave is
// a warp of 32 threads. Members read: TA TB TC TAcc TBias, kARowMajor kBRowMajor kCRowMajor,
// kTileM/N/K, kWavesM/N, kThreads, kWaveTileM/N, kInstrM/N/K, kRepM/N, AOperand BOperand COperand
// (u32x4_t, u32x2_t, f32x4_t / i32x4_t: the mma.sync of TA is chosen here, MmaOf), kAlpha kBeta kIntegerEpilogue, Epilogue, kLdsBytes (the dynamic shared memory the launcher
// passes; checked against what this body needs), and two optional members:
//   kStages  cp.async pipeline depth (tiles in flight in shared memory); default max(2, kLdsBuffers)
//   kGroupM  block rasterization: consecutive blocks walk kGroupM M tiles before the next N tile,
//            so that a wave of blocks shares A and B tiles in L2; default 8
//
// One block (kThreads threads, 1-D) computes one kTileM x kTileN tile of C. The grid is
// (ceil(N / kTileN), ceil(M / kTileM)); the block -> tile map is grouped (kGroupM).
//
// Data path per K tile of kTileK:
//   global --cp.async 16 B (zero fill past M, N, K; per-element loads when a matrix's rows are not
//   16-byte aligned)--> shared memory, kStages tiles deep, each operand tile stored along its global
//   contiguous dimension with 16-byte chunks XOR-swizzled (so that ldmatrix reads 8 rows without bank
//   conflicts) --ldmatrix (.trans for 16-bit MN-contiguous tiles; per-element shared loads for 8- and
//   32-bit MN-contiguous tiles)--> fragments --Cfg::mma--> f32 / s32 accumulators in registers.
// The pipeline is the classic multistage one: the loads of tile kt + kStages - 1 are issued while
// tile kt is computed, one barrier per K tile, fragments of the next k step loaded ahead.
//
// Block(128) scales (epi::Scaled with kScaleBlock): each 128-K block's sums are folded, scaled, into a second set of
// accumulators (fold_block_scales) at the block's last K tile. MX scales (kScaleMx, E8M0 bytes per row of A / column
// of B and 32 K's) the same way per 32-K block (fold_mx_scales; the planner makes kTileK 32): the portable form of
// what gfx950's block-scaled MFMA does in the instruction.
//
// The store of C (direct, or staged through shared memory) is Sm90Epilogue, gemm_mma_sm90_epilogue.h.
//
// Any M, N, K >= 0 is handled: no global access leaves A, B, C, bias.
#pragma once

#include "ckgen/blocks/epilogue.h"
#include "ckgen/blocks/nv_mma.h"
#include "ckgen/blocks/nv_smem.h"
#include "ckgen/blocks/tile_loader.h"
#include "gemm_forms.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"
#include "gemm_mma_sm90_epilogue.h"

namespace ckgen {
namespace nv {

// ---------------------------------------------------------------- optional Cfg members
CKGEN_CFG_OPTIONAL(StagesOf, kStages, int, C::kLdsBuffers < 2 ? 2 : C::kLdsBuffers);
CKGEN_CFG_OPTIONAL(GroupMOf, kGroupM, int, 8);

template <class Cfg>
struct Sm90Gemm : Sm90Epilogue<Cfg> {
  using Epi = Sm90Epilogue<Cfg>;  // the store of C (gemm_mma_sm90_epilogue.h)
  using TA = typename Cfg::TA;
  using TB = typename Cfg::TB;
  using TC = typename Cfg::TC;
  using TBias = typename Cfg::TBias;
  using Operand = epi::Operand<Cfg>;  // the bias pointer, or with the scales (epilogue.h)
  using AOp = typename Cfg::AOperand;
  using BOp = typename Cfg::BOperand;
  using COp = typename Cfg::COperand;

  static constexpr int kStages = StagesOf<Cfg>::value;
  static constexpr int kGroupM = GroupMOf<Cfg>::value;
  static constexpr int kWarps = Cfg::kWavesM * Cfg::kWavesN;
  static constexpr int kThreads = Cfg::kThreads;
  static constexpr int kEB = static_cast<int>(sizeof(TA));
  static constexpr int kKStep = 32 / kEB;  // elements of K per instruction (32 bytes)
  static constexpr int kKSteps = Cfg::kTileK / kKStep;

  // Shared-memory tiles: A as (M lines of K) when row-major, else (K lines of M); B as (N lines of K)
  // when column-major, else (K lines of N).
  static constexpr bool kAK = Cfg::kARowMajor;
  static constexpr bool kBK = !Cfg::kBRowMajor;
  using TileA = SmemTile<TA, kAK ? Cfg::kTileM : Cfg::kTileK, kAK ? Cfg::kTileK : Cfg::kTileM, kThreads>;
  using TileB = SmemTile<TB, kBK ? Cfg::kTileN : Cfg::kTileK, kBK ? Cfg::kTileK : Cfg::kTileN, kThreads>;
  static constexpr int kStageBytes = TileA::kBytes + TileB::kBytes;
  // Gated epilogues (swiglu, geglu; blocks/epilogue.h): B's tile holds, per warp, gate columns then the matching up
  // columns (blk::GatedRows); fragment j < RN / 2 is a gate, j + RN / 2 its up; a tile writes kOutN columns of C.
  using Epi::kGated;
  using Epi::kOutN;
  static constexpr bool kGatedB = epi::gated_loads<Cfg>();  // B read as gate / up columns (a gated Cfg, or its piece)
  using GateRows = blk::GatedRows<Cfg::kTileN, Cfg::kWaveTileN, epi::GateBlockOf<Cfg>::value>;
  static constexpr int kSmemBytes = kStages * kStageBytes;
  // block(128) scales (epi::Scaled with kScaleBlock): acc sums the current 128-K block; at the block's last K tile
  // (or the last one) fold_block adds it, scaled, into a second set (tot), which the epilogue then stores
  // mx(32) scales likewise per 32-K block, the factors 2^(e - 127) of E8M0 bytes (fold_mx_scales)
  static constexpr bool kMx = epi::IsMxScaled<Operand>::value;
  static constexpr bool kBlock = epi::IsBlockScaled<Operand>::value || kMx;
  static constexpr int kFoldK = kMx ? epi::kScaleMxK : epi::kScaleBlockK;
  static_assert(!kBlock || kFoldK % Cfg::kTileK == 0, "block / mx scales: kTileK must divide the scale block");

  static_assert(Cfg::kWaveSize == 32, "kWaveSize: NVIDIA warps have 32 threads");
  static_assert(kThreads == kWarps * 32, "kThreads must be kWavesM * kWavesN * 32");
  static_assert(sizeof(TA) == sizeof(TB), "TA and TB must have the same width");
  static_assert(Cfg::kInstrM == 16 && Cfg::kInstrN == 8 && Cfg::kInstrK == kKStep,
                "kInstrM/N/K must be an mma.sync m16n8k(32 bytes) shape: 16x8x16 (f16/bf16), 16x8x32 (i8), 16x8x8 (tf32)");
  static_assert(Cfg::kWaveTileM == Cfg::kTileM / Cfg::kWavesM && Cfg::kWaveTileN == Cfg::kTileN / Cfg::kWavesN,
                "kWaveTileM/N must be kTileM/kWavesM and kTileN/kWavesN");
  static_assert(Cfg::kRepM * 16 == Cfg::kWaveTileM && Cfg::kRepN * 8 == Cfg::kWaveTileN,
                "kRepM/kRepN must be kWaveTileM/16 and kWaveTileN/8");
  static_assert(Cfg::kRepN % 2 == 0, "kWaveTileN must be a multiple of 16 (B fragments load in pairs)");
  static_assert(Cfg::kTileK % kKStep == 0, "kTileK must be a multiple of kInstrK");
  static_assert(kStages >= 2, "kStages must be >= 2");
  static_assert(Cfg::kLdsBytes >= kSmemBytes,
                "kLdsBytes (the dynamic shared memory passed at launch) is smaller than kStages * (A + B tile bytes)");

  static CKGEN_DEVICE void run(const TA* A, const TB* B, TC* C, Operand bias, int M, int N, int K,
                               long long lda, long long ldb, long long ldc) {
    // ---- grouped tile rasterization
    const int tiles_n = grid_dim(0);
    const int tiles_m = grid_dim(1);
    int tm, tn;
    grouped_tile(block_id(1) * tiles_n + block_id(0), tiles_m, tiles_n, kGroupM, tm, tn);
    const int n0 = tn * kOutN;
    run_tile(A, B, C, bias, M, N, K, lda, ldb, ldc, tm * Cfg::kTileM, n0, n0, N);
  }

  // The tile of C whose first row and column are m0, n0 (the split-K / stream-K schedules of gemm_schedule.h
  // call it once per piece of work). B read as gate / up columns (kGatedB) comes from the output columns gn0.. of
  // gN (B has 2 gN): n0, N but for a gated Cfg's pieces, which write the raw tile.
  static CKGEN_DEVICE void run_tile(const TA* A, const TB* B, TC* C, Operand bias, int M, int N, int K,
                                    long long lda, long long ldb, long long ldc, int m0, int n0, int gn0, int gN) {
    // Two copies of the body: 16-byte cp.async when both operands' lines are 16-byte aligned,
    // per-element loads otherwise (kept apart so that the fast path carries no slow-path registers).
    // (gated halves with row-major B: the up columns start at N, on 16-byte chunks only when N is a multiple; the
    // other Cfgs keep the plain test, which nvcc compiles to fewer registers than one with a folded extra term)
    constexpr bool kUpAtN = kGatedB && Cfg::kBRowMajor && epi::GateBlockOf<Cfg>::value == 0;
    if constexpr (kUpAtN) {
      if (aligned16(A, lda, kEB) && aligned16(B, ldb, kEB) && (gN * kEB) % 16 == 0) {
        body<true>(A, B, C, bias, M, N, K, lda, ldb, ldc, m0, n0, gn0, gN);
      } else {
        body<false>(A, B, C, bias, M, N, K, lda, ldb, ldc, m0, n0, gn0, gN);
      }
    } else if (aligned16(A, lda, kEB) && aligned16(B, ldb, kEB)) {
      body<true>(A, B, C, bias, M, N, K, lda, ldb, ldc, m0, n0, gn0, gN);
    } else {
      body<false>(A, B, C, bias, M, N, K, lda, ldb, ldc, m0, n0, gn0, gN);
    }
  }

  template <bool kVec>
  static CKGEN_DEVICE void body(const TA* A, const TB* B, TC* C, Operand bias, int M, int N, int K,
                                long long lda, long long ldb, long long ldc, int m0, int n0, int gn0, int gN) {
    extern __shared__ __align__(1024) unsigned char ckgen_smem[];
    const int tid = thread_id();
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int wm = warp / Cfg::kWavesN;
    const int wn = warp % Cfg::kWavesN;

    const uint32_t s0 = smem_addr(ckgen_smem);
    const int nk = (K + Cfg::kTileK - 1) / Cfg::kTileK;

    // A: lines are M (K-contiguous) or K; B: lines are N (K-contiguous) or K.
    const typename TileA::template Loader<kVec, !kAK> la(A, lda, kAK ? m0 : 0, kAK ? 0 : m0, tid);
    const int bn0 = kGatedB ? 0 : n0;  // (gate / up columns: the map places B's columns)
    const typename TileB::template Loader<kVec, !kBK> lb(B, ldb, kBK ? bn0 : 0, kBK ? 0 : bn0, tid);
    auto load_stage = [&](int kt, int stage) {
      const uint32_t sa = s0 + stage * kStageBytes;
      const uint32_t sb = sa + TileA::kBytes;
      const int k0 = kt * Cfg::kTileK;
      la.load(sa, A, k0, kAK ? M : K, kAK ? K : M, tid);
      if constexpr (kGatedB) lb.load_mapped(sb, B, k0, gN - gn0, K, tid, GateRows{gn0, gN});
      else lb.load(sb, B, k0, kBK ? N : K, kBK ? K : N, tid);
    };

    // ---- per-lane fragment offsets (bytes inside one stage's tile)
    const int g = lane >> 2;
    const int t = lane & 3;
    const int q = lane >> 3;
    const int r8 = lane & 7;
    const int wrow = wm * Cfg::kWaveTileM;  // warp's first row (M) in the tile
    const int wcol = wn * Cfg::kWaveTileN;  // warp's first column (N) in the tile

    // ldmatrix row addresses. K-contiguous tiles: the swizzle depends on the line only through bits
    // the warp / fragment offsets (multiples of 16 lines) leave alone, so one offset per k step.
    // MN-contiguous 16-bit tiles: one offset per fragment (the chunk varies), plus 16 lines per k step.
    constexpr int kAOffs = kAK ? kKSteps : Cfg::kRepM;
    constexpr int kBOffs = kBK ? kKSteps : Cfg::kRepN / 2;
    uint32_t a_off[kAOffs];
    uint32_t b_off[kBOffs];
#pragma unroll
    for (int x = 0; x < kAOffs; ++x) {
      if constexpr (kAK) a_off[x] = wrow * TileA::kRowBytes + TileA::offset(lane & 15, x * 2 + (lane >> 4));
      else a_off[x] = TileA::offset((q >> 1) * 8 + r8, (wrow + x * 16) / 8 + (q & 1));
    }
#pragma unroll
    for (int x = 0; x < kBOffs; ++x) {
      if constexpr (kBK) b_off[x] = wcol * TileB::kRowBytes + TileB::offset(r8 + ((lane >> 4) << 3), x * 2 + ((lane >> 3) & 1));
      else b_off[x] = TileB::offset((q & 1) * 8 + r8, (wcol + x * 16) / 8 + (q >> 1));
    }

    AOp af[2][Cfg::kRepM];
    BOp bfr[2][Cfg::kRepN];

    auto load_frags = [&](int stage, int ks, int buf) {
      const unsigned char* sbase = ckgen_smem + stage * kStageBytes;
      const uint32_t sa = s0 + stage * kStageBytes;
      const uint32_t sb = sa + TileA::kBytes;
      // A
#pragma unroll
      for (int i = 0; i < Cfg::kRepM; ++i) {
        uint32_t r[4];
        if constexpr (kAK) {
          ldmatrix_x4(r, sa + a_off[ks] + i * 16 * TileA::kRowBytes);
        } else if constexpr (sizeof(TA) == 2) {
          ldmatrix_x4_trans(r, sa + a_off[i] + ks * 16 * TileA::kRowBytes);
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int m = wrow + i * 16 + g + (j & 1) * 8;
            int offs[4 / sizeof(TA)];
#pragma unroll
            for (int e = 0; e < 4 / kEB; ++e) {
              const int k = ks * kKStep + ((j >> 1) * 16 + t * 4) / kEB + e;
              offs[e] = TileA::elem_offset(k, m);
            }
            r[j] = lds_word<TA>(sbase, offs);
          }
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) af[buf][i].r[j] = prep<TA>(r[j]);
      }
      // B, two n8 fragments at a time
#pragma unroll
      for (int jj = 0; jj < Cfg::kRepN / 2; ++jj) {
        uint32_t r[4];
        if constexpr (kBK) {
          ldmatrix_x4(r, sb + b_off[ks] + jj * 16 * TileB::kRowBytes);
        } else if constexpr (sizeof(TB) == 2) {
          ldmatrix_x4_trans(r, sb + b_off[jj] + ks * 16 * TileB::kRowBytes);
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int n = wcol + jj * 16 + (j >> 1) * 8 + g;
            int offs[4 / sizeof(TB)];
#pragma unroll
            for (int e = 0; e < 4 / kEB; ++e) {
              const int k = ks * kKStep + ((j & 1) * 16 + t * 4) / kEB + e;
              offs[e] = TileB::elem_offset(k, n);
            }
            r[j] = lds_word<TB>(sbase + TileA::kBytes, offs);
          }
        }
        bfr[buf][2 * jj].r[0] = prep<TB>(r[0]);
        bfr[buf][2 * jj].r[1] = prep<TB>(r[1]);
        bfr[buf][2 * jj + 1].r[0] = prep<TB>(r[2]);
        bfr[buf][2 * jj + 1].r[1] = prep<TB>(r[3]);
      }
    };

    COp acc[Cfg::kRepM][Cfg::kRepN];
    COp tot[kBlock ? Cfg::kRepM : 1][kBlock ? Cfg::kRepN : 1];
#pragma unroll
    for (int i = 0; i < Cfg::kRepM; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::kRepN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          acc[i][j].r[e] = 0;
          if constexpr (kBlock) tot[i][j].r[e] = 0;
        }
    auto fold_block = [&](int kt) {
      if constexpr (kBlock) {
        constexpr int kTilesPerBlock = kFoldK / Cfg::kTileK;
        if ((kt + 1) % kTilesPerBlock == 0 || kt + 1 == nk) {
          if constexpr (kMx) fold_mx_scales(tot, acc, bias, kt / kTilesPerBlock, m0 + wrow, n0 + wcol, M, N, g, t);
          else fold_block_scales(tot, acc, bias, kt / kTilesPerBlock, m0 + wrow, n0 + wcol, M, N, g, t);
        }
      }
    };

    // ---- prologue: tiles 0 .. kStages-2 in flight
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < nk) load_stage(s, s);
      cp_async_commit();
    }

    auto mma_step = [&](int buf) {
#pragma unroll
      for (int i = 0; i < Cfg::kRepM; ++i) {
#pragma unroll
        for (int j0 = 0; j0 < Cfg::kRepN; ++j0) {
          const int j = (i & 1) ? Cfg::kRepN - 1 - j0 : j0;  // serpentine: reuse B registers
          acc[i][j] = MmaOf<TA>::mma(af[buf][i], bfr[buf][j], acc[i][j]);
        }
      }
    };

    int read_stage = 0;
    int write_stage = kStages - 1;
    if constexpr (kKSteps % 2 == 0) {
      // Fragments double-buffered across k steps, also across the tile boundary.
      if (nk > 0) {
        cp_async_wait<kStages - 2>();
        barrier();
        load_frags(0, 0, 0);
      }
      for (int kt = 0; kt < nk; ++kt) {
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) {
          if (ks == kKSteps - 1) {
            // tile kt + 1 must have landed, and every warp must be done with tile kt - 1's stage
            cp_async_wait<kStages - 2>();
            barrier();
            read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
          }
          // fragments of the next k step (the next tile's first step after the barrier)
          if (ks + 1 < kKSteps || kt + 1 < nk) load_frags(read_stage, (ks + 1) % kKSteps, (ks + 1) & 1);
          if (ks == 0) {
            const int next = kt + kStages - 1;
            if (next < nk) load_stage(next, write_stage);
            cp_async_commit();
            write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
          }
          mma_step(ks & 1);
        }
        fold_block(kt);
      }
    } else {
      // Odd number of k steps per tile: fragments loaded right before use.
      for (int kt = 0; kt < nk; ++kt) {
        cp_async_wait<kStages - 2>();
        barrier();  // tile kt landed; every warp is done with tile kt - 1's stage (written next)
        const int next = kt + kStages - 1;
        if (next < nk) load_stage(next, write_stage);
        cp_async_commit();
        write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) {
          load_frags(read_stage, ks, 0);
          mma_step(0);
        }
        fold_block(kt);
        read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
      }
    }
    cp_async_wait<0>();
    if constexpr (kBlock) {
#pragma unroll
      for (int i = 0; i < Cfg::kRepM; ++i)
#pragma unroll
        for (int j = 0; j < Cfg::kRepN; ++j) acc[i][j] = tot[i][j];
    }

    if constexpr (kStagedEpilogue) {
      barrier();  // every warp is done with the pipeline's shared memory: it becomes the epilogue's staging space
      Epi::template store_c_staged<Cfg::kRepM, Cfg::kRepN, kOutRepN>(acc, wrow, wcol, m0, n0, C, bias, M, N, ldc,
                                                                    lane, ckgen_smem + warp * kStagingBytes);
    } else {
      Epi::template store_c<Cfg::kRepM, Cfg::kRepN>(acc, wrow, wcol, m0, n0, C, bias, M, N, ldc, g, t);
    }
  }

  // Block scales: tot += acc * scale_a(row, kb) * scale_b(col / 128, kb) over the warp's fragments (first row
  // r0, first column c0 of C; register e of fragment (i, j): row r0 + 16 i + g + 8 (e / 2), column c0 + 8 j + 2 t +
  // e % 2), then acc = 0. Rows / columns past M / N read the last in-range scale (their outputs are never stored).
  static CKGEN_DEVICE void fold_block_scales(COp (&tot)[Cfg::kRepM][Cfg::kRepN], COp (&acc)[Cfg::kRepM][Cfg::kRepN],
                                             const Operand& op, int kb, int r0, int c0, int M, int N, int g, int t) {
    float fb[Cfg::kRepN];
#pragma unroll
    for (int j = 0; j < Cfg::kRepN; ++j) {
      const int col = c0 + 8 * j + 2 * t;
      fb[j] = gload(op.scale_b + static_cast<long long>((col < N ? col : N - 1) / epi::kScaleBlockK) * op.ld_b + kb);
    }
#pragma unroll
    for (int i = 0; i < Cfg::kRepM; ++i) {
      float fa[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = r0 + 16 * i + g + 8 * h;
        fa[h] = gload(op.scale_a + static_cast<long long>(row < M ? row : M - 1) * op.ld_a + kb);
      }
#pragma unroll
      for (int j = 0; j < Cfg::kRepN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          tot[i][j].r[e] += acc[i][j].r[e] * (fa[e >> 1] * fb[j]);
          acc[i][j].r[e] = 0;
        }
    }
  }

  // The value 2^(e - 127) of an E8M0 byte (0 gives the subnormal 2^-127, 0xFF NaN), built from its bits.
  static CKGEN_DEVICE float e8m0(unsigned e) {
    return bit_cast<float>(e == 0 ? 0x00400000u : e == 0xFFu ? 0x7FC00000u : e << 23);
  }

  // MX scales: tot += acc * 2^(sa(row, kb) - 127) * 2^(sb(col, kb) - 127) over the warp's fragments (register e of
  // fragment (i, j): row r0 + 16 i + g + 8 (e / 2), column c0 + 8 j + 2 t + e % 2), then acc = 0; scale_a is
  // M x kb, scale_b N x kb. Rows / columns past M / N read the last in-range scale (never stored).
  static CKGEN_DEVICE void fold_mx_scales(COp (&tot)[Cfg::kRepM][Cfg::kRepN], COp (&acc)[Cfg::kRepM][Cfg::kRepN],
                                          const Operand& op, int kb, int r0, int c0, int M, int N, int g, int t) {
    float fb[Cfg::kRepN][2];
#pragma unroll
    for (int j = 0; j < Cfg::kRepN; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int col = c0 + 8 * j + 2 * t + h;
        fb[j][h] = e8m0(gload(op.scale_b + static_cast<long long>(col < N ? col : N - 1) * op.ld_b + kb));
      }
#pragma unroll
    for (int i = 0; i < Cfg::kRepM; ++i) {
      float fa[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = r0 + 16 * i + g + 8 * h;
        fa[h] = e8m0(gload(op.scale_a + static_cast<long long>(row < M ? row : M - 1) * op.ld_a + kb));
      }
#pragma unroll
      for (int j = 0; j < Cfg::kRepN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          tot[i][j].r[e] += acc[i][j].r[e] * (fa[e >> 1] * fb[j][e & 1]);
          acc[i][j].r[e] = 0;
        }
    }
  }

  // the staged epilogue (Epi::store_c_staged) when C is row-major and every warp's buffer fits in the pipeline's
  // shared memory, which it reuses after the main loop
  static constexpr int kOutRepN = Epi::template kOutRN<Cfg::kRepN>;  // fragments of a warp's row of outputs
  static constexpr int kStagingBytes = Epi::template kStagingBytesOf<kOutRepN>;
  static constexpr bool kStagedEpilogue = Cfg::kCRowMajor && !AddStoresOf<Cfg>::value &&
                                          (kOutRepN * 8 * sizeof(TC)) % 16 == 0 &&
                                          kWarps * kStagingBytes <= kSmemBytes;
};

// The kernel's entry on NVIDIA (kernel.hip.j2 calls it with the arguments of its ABI): every form of gemm_forms.h,
// each on Sm90Gemm<Cfg>::run.
struct MmaBody {
  template <class Cfg>
  static CKGEN_DEVICE void run(const typename Cfg::TA* A, const typename Cfg::TB* B, typename Cfg::TC* C,
                               epi::Operand<Cfg> bias, int M, int N, int K, long long lda, long long ldb,
                               long long ldc) {
    Sm90Gemm<Cfg>::run(A, B, C, bias, M, N, K, lda, ldb, ldc);
  }
};
template <class Cfg, class... Args>
CKGEN_DEVICE void gemm_mma(Args... args) {
  GemmForms<MmaBody>::template entry<Cfg>(args...);
}

// Dynamic shared memory (bytes) the body needs; the launcher passes it (Cfg::kLdsBytes >= this).
template <class Cfg>
constexpr int smem_bytes() {
  return Sm90Gemm<Cfg>::kSmemBytes;
}

}  // namespace nv
}  // namespace ckgen

// The Hopper body (TMA + wgmma, warp-specialized) of the Cfgs planned with a TMA variant, with its host side.
#include "gemm_sm90_tma_launch.h"
