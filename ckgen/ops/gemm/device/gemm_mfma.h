// gemm_mfma.h (ckgen/ops/gemm/device): the GEMM kernel body on AMD matrix cores (single-block MFMA, wave64).
//
//   C = Epilogue(alpha * A.B + beta * C) cast to TC,  A: M x K, B: K x N, C: M x N
//
// One workgroup (Cfg::kThreads threads, 1-D) computes the kTileM x kTileN tile of C at
// (block_id(1) * kTileM, block_id(0) * kTileN). It reads only the members of the Cfg contract in
// docs/design.md. Any M, N, K >= 0 is handled: global loads outside A/B read as zero, stores outside C
// are skipped, K tails are zero filled; no access leaves the matrices.
//
// Data path per K step of kTileK:
//   global --(vectors of kVecA/kVecB along each matrix's contiguous dimension, else per element)-->
//   registers (held across the compute of the previous step when kPrefetch == 1)
//   --> LDS, both tiles K-contiguous, unpadded and XOR-swizzled (ckgen/blocks/lds_layout.h): element (m, k)
//       of A at lds_a + LdsA::offset(m, k), (n, k) of B at lds_b + LdsB::offset(n, k), exactly
//       kTileM * kTileK (kTileN * kTileK) elements per buffer; kLdsBuffers copies (with 2 the next step is
//       written while the current one is read, one barrier per step). The planner chose each tile's granule
//       (kLdsAGranule, kLdsBGranule), XOR bits (kLdsASwizzleBits, ...) and table (kLdsASwizzle, ...) so that
//       the fragment reads below and the global->LDS writes are free of bank conflicts on the target.
//   --> per-lane MFMA fragments (one LDS vector read of kAItems / kBItems elements, inside one granule)
//       --> Cfg::mma --> accumulators (COperand registers).
//
// Lane layout of one single-block wave64 instruction m x n x k (ckgen::MfmaLayout in types.h, checked
// for every single-block dense entry of shared/reference/mfma_layouts.json by tests/include/test_layouts.py):
//   A(i, k): lane i + m * (k / kAItems), item k % kAItems           (kAItems = m * k / 64)
//   B(k, j): lane j + n * (k / kBItems), item k % kBItems           (kBItems = n * k / 64)
//   C(i, j): item r of lane l holds, with g = 4 for 32-bit accumulators and g = 1 for 64-bit ones,
//            row (r / g) * g * (64 / n) + g * (l / n) + r % g,  col l % n.
//   e.g. 32x32: row 8 * (r / 4) + 4 * (l / 32) + r % 4;  16x16: row 4 * (l / 16) + r.
// So a lane's A (B) items are consecutive in k: one LDS vector read of kAItems (kBItems) elements.
// MX-scaled kernels (epi::Scaled with kScaleMx) use the block-scaled MFMA instead, whose lane layout differs (two
// runs of 16 k per fragment; gemm_detail::mx_fragment) and which takes each lane's E8M0 scale bytes (compute_mx).
// fp4 kernels (Cfg::kPackK = 2: TA / TB hold two E2M1 values per byte along K) run in bytes along K: kTileK,
// kInstrK, kAItems and kBItems count bytes, K (the entry's) counts values and is a multiple of kPackK.
//
// Requirements checked at compile time (static_assert, with the member named): see check_cfg().
#pragma once

#include "ckgen/blocks/epilogue.h"
#include "ckgen/blocks/lds_layout.h"
#include "ckgen/blocks/mfma.h"
#include "ckgen/blocks/tile_loader.h"
#include "ckgen/platform.h"
#include "gemm_forms.h"
#include "ckgen/types.h"

namespace ckgen {
namespace gemm_detail {

template <class Cfg>
struct Derived {
  using TA = typename Cfg::TA;
  using TB = typename Cfg::TB;
  using TC = typename Cfg::TC;
  static constexpr int kCGroup = sizeof(typename Cfg::TAcc) == 8 ? 1 : 4;
  using Layout = MfmaLayout<Cfg::kInstrM, Cfg::kInstrN, Cfg::kInstrK, kCGroup>;
  using LdsA = blk::SwizzledTile<Cfg::kTileM, Cfg::kTileK, Cfg::kLdsAGranule, Cfg::kLdsASwizzleBits, Cfg::kLdsASwizzle>;
  using LdsB = blk::SwizzledTile<Cfg::kTileN, Cfg::kTileK, Cfg::kLdsBGranule, Cfg::kLdsBSwizzleBits, Cfg::kLdsBSwizzle>;
  using LoadA = blk::TileLoader<TA, Cfg::kTileM, Cfg::kTileK, Cfg::kVecA, Cfg::kARowMajor, Cfg::kThreads, LdsA,
                                Cfg::kLdsAMnLanes, Cfg::kLdsAMnPiece>;
  using LoadB = blk::TileLoader<TB, Cfg::kTileN, Cfg::kTileK, Cfg::kVecB, !Cfg::kBRowMajor, Cfg::kThreads, LdsB,
                                Cfg::kLdsBMnLanes, Cfg::kLdsBMnPiece>;
  // Gated epilogues (swiglu, geglu): B's tile holds, per wave, gate columns then the matching up columns
  // (blk::GatedRows); fragment j < kRepN / 2 is a gate, j + kRepN / 2 its up; the tile writes kTileN / 2 columns.
  static constexpr bool kGated = epi::gated<Cfg>();
  static constexpr bool kGatedB = epi::gated_loads<Cfg>();  // B read as gate / up columns (a gated Cfg, or its piece)
  using GateRows = blk::GatedRows<Cfg::kTileN, Cfg::kWaveTileN, epi::GateBlockOf<Cfg>::value>;
  static constexpr int kOutRepN = kGated ? Cfg::kRepN / 2 : Cfg::kRepN;       // fragments written per row
  static constexpr int kOutWaveN = kGated ? Cfg::kWaveTileN / 2 : Cfg::kWaveTileN;
  static constexpr bool kRope = epi::rotary<Cfg>();  // rope = gptj(...): finished values rotated in pairs
  // Accumulator registers per lane; more than half the 256 arch VGPRs are pinned in AGPRs (pin_agpr,
  // ckgen/blocks/mfma.h): with the body's other registers (about 90 to 150) they would not fit beside them.
  static constexpr int kAccRegs = Cfg::kRepM * Cfg::kRepN * static_cast<int>(sizeof(typename Cfg::COperand) / 4);
  static constexpr bool kPinAcc = kAccRegs > 128;
  static constexpr int kLdsAElems = LdsA::kElems;  // one buffer
  static constexpr int kLdsBElems = LdsB::kElems;
  // Fragment displacements (i * kInstrM rows, kk * kInstrK k's) are bit-disjoint from every lane's own
  // granule index: power-of-two instruction steps, rows and wave tiles (SwizzledTile::xor_step).
  static constexpr bool kAXor = LdsA::xor_steps(Cfg::kInstrM, Cfg::kInstrK) &&
                                (Cfg::kWavesM == 1 || LdsA::pow2(Cfg::kWaveTileM));
  static constexpr bool kBXor = LdsB::xor_steps(Cfg::kInstrN, Cfg::kInstrK) &&
                                (Cfg::kWavesN == 1 || LdsB::pow2(Cfg::kWaveTileN));
};

// Values per element of A and B along K: Cfg::kPackK where the Cfg has it (fp4 pairs: 2), else 1.
CKGEN_CFG_OPTIONAL(PackK, kPackK, int, 1);
// Runs of a lane's A / B fragment along K, each one LDS read inside one granule: Cfg::kFragRuns where the Cfg has it
// (the block-scaled MFMA with fp8 operands: 2, mx_fragment), else 1 (one read of kAItems / kBItems).
CKGEN_CFG_OPTIONAL(FragRuns, kFragRuns, int, 1);

template <class Cfg>
constexpr bool check_cfg() {
  static_assert(Cfg::kWaveSize == 64, "kWaveSize: the MFMA kernel is written for wave64");
  static_assert(Cfg::kThreads == Cfg::kWavesM * Cfg::kWavesN * Cfg::kWaveSize, "kThreads != kWavesM*kWavesN*kWaveSize");
  static_assert(Cfg::kWaveTileM * Cfg::kWavesM == Cfg::kTileM, "kWaveTileM * kWavesM != kTileM");
  static_assert(Cfg::kWaveTileN * Cfg::kWavesN == Cfg::kTileN, "kWaveTileN * kWavesN != kTileN");
  static_assert(Cfg::kRepM * Cfg::kInstrM == Cfg::kWaveTileM, "kRepM * kInstrM != kWaveTileM");
  static_assert(Cfg::kRepN * Cfg::kInstrN == Cfg::kWaveTileN, "kRepN * kInstrN != kWaveTileN");
  static_assert(Cfg::kTileK % Cfg::kInstrK == 0, "kTileK must be a multiple of kInstrK");
  static_assert(Cfg::kAItems * 64 == Cfg::kInstrM * Cfg::kInstrK, "kAItems != kInstrM*kInstrK/64 (single-block)");
  static_assert(Cfg::kBItems * 64 == Cfg::kInstrN * Cfg::kInstrK, "kBItems != kInstrN*kInstrK/64 (single-block)");
  static_assert(Cfg::kCItems * 64 == Cfg::kInstrM * Cfg::kInstrN, "kCItems != kInstrM*kInstrN/64 (single-block)");
  // (fp4 pairs: the block-scaled MFMA's operand is padded to twice the fragment, its upper half unused)
  static_assert(sizeof(typename Cfg::AOperand) == Cfg::kAItems * sizeof(typename Cfg::TA) * PackK<Cfg>::value,
                "AOperand size != kAItems elements of TA (times kPackK)");
  static_assert(sizeof(typename Cfg::BOperand) == Cfg::kBItems * sizeof(typename Cfg::TB) * PackK<Cfg>::value,
                "BOperand size != kBItems elements of TB (times kPackK)");
  static_assert(sizeof(typename Cfg::COperand) == Cfg::kCItems * sizeof(typename Cfg::TAcc), "COperand size != kCItems of TAcc");
  static_assert(Cfg::kLdsAGranule % (Cfg::kAItems / FragRuns<Cfg>::value) == 0,
                "kLdsAGranule must be a multiple of kAItems / kFragRuns (a fragment run is one read)");
  static_assert(Cfg::kLdsBGranule % (Cfg::kBItems / FragRuns<Cfg>::value) == 0,
                "kLdsBGranule must be a multiple of kBItems / kFragRuns (a fragment run is one read)");
  static_assert(Cfg::kLdsBuffers == 1 || Cfg::kLdsBuffers == 2, "kLdsBuffers must be 1 or 2");
  static_assert(Cfg::kPrefetch == 0 || Cfg::kPrefetch == 1, "kPrefetch must be 0 or 1");
  static_assert(Cfg::kLdsABytes == Cfg::kTileM * Cfg::kTileK * (int)sizeof(typename Cfg::TA), "kLdsABytes != kTileM*kTileK*sizeof(TA)");
  static_assert(Cfg::kLdsBBytes == Cfg::kTileN * Cfg::kTileK * (int)sizeof(typename Cfg::TB), "kLdsBBytes != kTileN*kTileK*sizeof(TB)");
  static_assert(Cfg::kLdsBytes == Cfg::kLdsBuffers * (Cfg::kLdsABytes + Cfg::kLdsBBytes),
                "kLdsBytes != kLdsBuffers * (kLdsABytes + kLdsBBytes): the LDS the kernel declares");
  static_assert(Cfg::kVecC >= 1, "kVecC must be >= 1");
  static_assert(!epi::gated<Cfg>() || Cfg::kRepN % 2 == 0, "gated: kRepN must be even (gate and up fragments)");
  return true;
}

// Block scales: tot += acc * scale_a(row, kb) * scale_b(col / 128, kb) for every accumulator item of the wave
// (wave tile at row0, col0), then acc = 0. Rows / columns past M / N read the last in-range scale (never stored).
template <class Cfg, class L, class COp, class Op>
CKGEN_DEVICE void fold_block_scales(COp (&tot)[Cfg::kRepM][Cfg::kRepN], COp (&acc)[Cfg::kRepM][Cfg::kRepN],
                                    const Op& scales, int kb, int row0, int col0, int M, int N, int lane) {
#pragma unroll
  for (int j = 0; j < Cfg::kRepN; ++j) {
    const int c = col0 + j * Cfg::kInstrN + L::c_col(0, lane);
    const int col = c < N ? c : N - 1;
#pragma unroll
    for (int i = 0; i < Cfg::kRepM; ++i) {
#pragma unroll
      for (int r = 0; r < Cfg::kCItems; ++r) {
        const int row = row0 + i * Cfg::kInstrM + L::c_row(r, lane);
        tot[i][j][r] += acc[i][j][r] * scales.block(row < M ? row : M - 1, col, kb);
      }
      acc[i][j] = COp{};
    }
  }
}

// MX scales (epi::Scaled with kScaleMx: the block-scaled MFMA, Cfg::mma_mx, 32x32x64). With fp8 operands a lane's
// 32 operand bytes are two runs of 16 K's, at k0 and k0 + 32 of the instruction's 64 (k0 = 16 * (lane / 32)); with
// fp4 pairs (kPack = 2) its 32 K's are one run of 16 bytes, K's 32 * (lane / 32) onwards (byte k0 of the
// instruction's 32), and the operand's upper 16 bytes are zero. Rows (columns) lane % 32; the scale word's low byte
// is the E8M0 exponent of row (column) lane % 32 and the 32-K block lane / 32 of the instruction. Layouts:
// ckgen/emu/mfma.h, tests/data/mfma_scale_layouts.json (AMD's ROCm blog, triton's scale layout). Each run lies in
// one LDS granule (granules are multiples of 16 elements, kFragRuns = 2 for fp8, and runs start at multiples of 16).
template <class Lds, class T, class Op, int kPack>
CKGEN_DEVICE Op mx_fragment(const T* s, int row, int k) {
  static_assert(Lds::kGranule % 16 == 0, "an MX fragment run (16 elements) must lie in one LDS granule");
  struct Runs {
    vec<T, 16> lo, hi;
  } r{lds_load(reinterpret_cast<const vec<T, 16>*>(s + Lds::offset(row, k))), zero<vec<T, 16>>()};
  if constexpr (kPack == 1) r.hi = lds_load(reinterpret_cast<const vec<T, 16>*>(s + Lds::offset(row, k + 32)));
  return bit_cast<Op>(r);
}

// The E8M0 byte of (row, kb) of an MX scale tensor (rows x kbs, leading dimension ld); 127 (a scale of 1) outside
// it, where A and B were zero filled.
CKGEN_DEVICE int mx_scale(const uint8_t* s, long long ld, int row, int rows, int kb, int kbs) {
  return row < rows && kb < kbs ? static_cast<int>(gload(s + row * ld + kb)) : 127;
}

}  // namespace gemm_detail

// The kTileM x kTileN tile of C whose first row and column are m0, n0 (gemm_mfma below: the workgroup's;
// the split-K / stream-K schedules of gemm_schedule.h call it once per piece of work). A gated Cfg's tile is
// kTileM x kTileN / 2 of C (n0 and N count C's columns; B has 2 N). B read as gate / up columns (kGatedB) comes
// from the output columns gn0.. of gN (B has 2 gN): n0, N but for a gated Cfg's pieces, which write the raw tile.
template <class Cfg>
CKGEN_DEVICE void gemm_mfma_tile(const typename Cfg::TA* A, const typename Cfg::TB* B, typename Cfg::TC* C,
                                 epi::Operand<Cfg> bias, int M, int N, int K, long long lda, long long ldb,
                                 long long ldc, int m0, int n0, int gn0, int gN) {
  static_assert(gemm_detail::check_cfg<Cfg>(), "Cfg");
  using D = gemm_detail::Derived<Cfg>;
  constexpr int kPack = gemm_detail::PackK<Cfg>::value;
  const int KS = K / kPack;  // K in elements of A and B (fp4 pairs: bytes; K is a multiple of kPack, checked)
  using TA = typename Cfg::TA;
  using TB = typename Cfg::TB;
  using TC = typename Cfg::TC;
  using AOp = typename Cfg::AOperand;
  using BOp = typename Cfg::BOperand;
  using COp = typename Cfg::COperand;
  using L = typename D::Layout;
  static_assert(L::kAItems == Cfg::kAItems && L::kBItems == Cfg::kBItems && L::kCItems == Cfg::kCItems,
                "kAItems/kBItems/kCItems disagree with the instruction shape");
  constexpr int kAI = Cfg::kAItems;
  constexpr int kBI = Cfg::kBItems;

  CKGEN_LDS(TA, lds_a, Cfg::kLdsBuffers * D::kLdsAElems);
  CKGEN_LDS(TB, lds_b, Cfg::kLdsBuffers * D::kLdsBElems);

  const int tid = thread_id();
  const int lane = lane_id();
  const int wave = wave_id();
  const int wave_m = wave / Cfg::kWavesN;
  const int wave_n = wave % Cfg::kWavesN;

  // Tile origins in global memory (64-bit offsets).
  const TA* a_tile = Cfg::kARowMajor ? A + static_cast<long long>(m0) * lda : A + m0;
  const TB* b_tile = D::kGatedB ? B : Cfg::kBRowMajor ? B + n0 : B + static_cast<long long>(n0) * ldb;
  const bool a_aligned = blk::is_aligned(A, lda, Cfg::kVecA);
  // (gated halves with row-major B: the up columns start at N, aligned for kVecB only when N is)
  const bool b_aligned = blk::is_aligned(B, ldb, Cfg::kVecB) &&
                         (!D::kGatedB || !Cfg::kBRowMajor || epi::GateBlockOf<Cfg>::value || gN % Cfg::kVecB == 0);
  const int m_left = M - m0;
  const int n_left = D::kGatedB ? gN - gn0 : N - n0;

  typename D::LoadA la;
  typename D::LoadB lb;
  auto gload_tiles = [&](int kt) {
    const int k0 = kt * Cfg::kTileK;
    const TA* pa = Cfg::kARowMajor ? a_tile + k0 : a_tile + static_cast<long long>(k0) * lda;
    const TB* pb = Cfg::kBRowMajor ? b_tile + static_cast<long long>(k0) * ldb : b_tile + k0;
    la.load(pa, lda, m_left, KS - k0, a_aligned, tid);
    if constexpr (D::kGatedB) lb.load(pb, ldb, n_left, KS - k0, b_aligned, tid, typename D::GateRows{gn0, gN});
    else lb.load(pb, ldb, n_left, KS - k0, b_aligned, tid);
  };
  auto lds_store_tiles = [&](int buf) {
    la.store(lds_a + buf * D::kLdsAElems, tid);
    lb.store(lds_b + buf * D::kLdsBElems, tid);
  };

  COp acc[Cfg::kRepM][Cfg::kRepN];
#pragma unroll
  for (int i = 0; i < Cfg::kRepM; ++i)
#pragma unroll
    for (int j = 0; j < Cfg::kRepN; ++j) {
      acc[i][j] = COp{};
      if constexpr (D::kPinAcc) pin_agpr(acc[i][j]);
    }

  // This lane's fragment rows (cols) and first k inside one LDS buffer, and its element offset there.
  // A fragment (i, kk) sits at offset(row + i * kInstrM, kk * kInstrK + k0); when every displacement is a
  // power-of-two step disjoint from the lane's own bits (D::kAXor / kBXor) that is the lane's offset XOR a
  // compile-time constant (SwizzledTile::xor_step). The offsets pass an empty asm at each K step so the
  // compiler recomputes the XORs (one VALU op per read) rather than holding one register per fragment.
  const int a_row = wave_m * Cfg::kWaveTileM + L::a_row(lane);
  const int b_col = wave_n * Cfg::kWaveTileN + L::b_col(lane);
  const int a_k0 = L::a_k0(lane);
  const int b_k0 = L::b_k0(lane);
  const int a_off0 = D::LdsA::offset(a_row, a_k0);
  const int b_off0 = D::LdsB::offset(b_col, b_k0);

  // MX scales (gemm_detail::mx_fragment has the lane layout): per instruction step kk, fragments of two 16-K runs
  // (fp8) or one 16-byte run (fp4 pairs) and each lane's scale bytes for its row of A / column of B and K block
  // (blocks of 32 values: kScaleMxK / kPack elements).
  auto compute_mx = [&](const TA* sa, const TB* sb, int kt) {
    if constexpr (epi::IsMxScaled<epi::Operand<Cfg>>::value) {
      const int mx_k0 = 16 * (lane / 32);
      const int kbs = (K + epi::kScaleMxK - 1) / epi::kScaleMxK;
      const int row0 = m0 + wave_m * Cfg::kWaveTileM + lane % 32;
      const int col0 = n0 + wave_n * Cfg::kWaveTileN + lane % 32;
#pragma unroll
      for (int kk = 0; kk < Cfg::kTileK / Cfg::kInstrK; ++kk) {
        const int k = kk * Cfg::kInstrK + mx_k0;
        const int kb = (kt * Cfg::kTileK + kk * Cfg::kInstrK) * kPack / epi::kScaleMxK + lane / 32;
        AOp a[Cfg::kRepM];
        BOp b[Cfg::kRepN];
        int s_a[Cfg::kRepM], s_b[Cfg::kRepN];
#pragma unroll
        for (int i = 0; i < Cfg::kRepM; ++i) {
          a[i] = gemm_detail::mx_fragment<typename D::LdsA, TA, AOp, kPack>(sa, a_row + i * Cfg::kInstrM, k);
          s_a[i] = gemm_detail::mx_scale(bias.scale_a, bias.ld_a, row0 + i * Cfg::kInstrM, M, kb, kbs);
        }
#pragma unroll
        for (int j = 0; j < Cfg::kRepN; ++j) {
          b[j] = gemm_detail::mx_fragment<typename D::LdsB, TB, BOp, kPack>(sb, b_col + j * Cfg::kInstrN, k);
          s_b[j] = gemm_detail::mx_scale(bias.scale_b, bias.ld_b, col0 + j * Cfg::kInstrN, N, kb, kbs);
        }
#pragma unroll
        for (int i = 0; i < Cfg::kRepM; ++i)
#pragma unroll
          for (int j = 0; j < Cfg::kRepN; ++j) acc[i][j] = Cfg::mma_mx(a[i], b[j], acc[i][j], s_a[i], s_b[j]);
      }
    }
  };

  constexpr bool kMx = epi::IsMxScaled<epi::Operand<Cfg>>::value;
  static_assert(gemm_detail::FragRuns<Cfg>::value == (kMx && kPack == 1 ? 2 : 1),
                "kFragRuns: 2 for the block-scaled MFMA's fp8 fragments (mx_fragment), else 1");
  auto compute = [&](int buf, int kt) {
    const TA* sa = lds_a + buf * D::kLdsAElems;
    const TB* sb = lds_b + buf * D::kLdsBElems;
    if constexpr (kMx) {
      compute_mx(sa, sb, kt);
    } else {
      const int a_base = opaque(a_off0);
      const int b_base = opaque(b_off0);
#pragma unroll
      for (int kk = 0; kk < Cfg::kTileK / Cfg::kInstrK; ++kk) {
        AOp a[Cfg::kRepM];
        BOp b[Cfg::kRepN];
#pragma unroll
        for (int i = 0; i < Cfg::kRepM; ++i) {
          const int off = D::kAXor ? a_base ^ D::LdsA::xor_step(i * Cfg::kInstrM, kk * Cfg::kInstrK)
                                   : D::LdsA::offset(a_row + i * Cfg::kInstrM, kk * Cfg::kInstrK + a_k0);
          a[i] = bit_cast<AOp>(lds_load(reinterpret_cast<const vec<TA, kAI>*>(sa + off)));
        }
#pragma unroll
        for (int j = 0; j < Cfg::kRepN; ++j) {
          const int off = D::kBXor ? b_base ^ D::LdsB::xor_step(j * Cfg::kInstrN, kk * Cfg::kInstrK)
                                   : D::LdsB::offset(b_col + j * Cfg::kInstrN, kk * Cfg::kInstrK + b_k0);
          b[j] = bit_cast<BOp>(lds_load(reinterpret_cast<const vec<TB, kBI>*>(sb + off)));
        }
#pragma unroll
        for (int i = 0; i < Cfg::kRepM; ++i)
#pragma unroll
          for (int j = 0; j < Cfg::kRepN; ++j) acc[i][j] = Cfg::mma(a[i], b[j], acc[i][j]);
      }
    }
  };

  const int nk = KS > 0 ? (KS + Cfg::kTileK - 1) / Cfg::kTileK : 0;

  // Block scales (epi::Scaled with kScaleBlock): acc holds the current 128-K block's sums; at the block's last K
  // tile (or the last one) they are scaled by scale_a(row, kb) * scale_b(col / 128, kb) into tot and restart.
  // Rows / columns past M / N read the last in-range scale (their values are never stored).
  constexpr bool kBlock = epi::IsBlockScaled<epi::Operand<Cfg>>::value;
  COp tot[kBlock ? Cfg::kRepM : 1][kBlock ? Cfg::kRepN : 1];
  if constexpr (kBlock) {
    static_assert(epi::kScaleBlockK % Cfg::kTileK == 0, "block scales: kTileK must divide the 128-block");
#pragma unroll
    for (int i = 0; i < Cfg::kRepM; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::kRepN; ++j) tot[i][j] = COp{};
  }
  auto fold_block = [&](int kt) {
    if constexpr (kBlock) {
      constexpr int kTilesPerBlock = epi::kScaleBlockK / Cfg::kTileK;
      if ((kt + 1) % kTilesPerBlock == 0 || kt + 1 == nk)
        gemm_detail::fold_block_scales<Cfg, L>(tot, acc, bias, kt / kTilesPerBlock,
                                               m0 + wave_m * Cfg::kWaveTileM, n0 + wave_n * Cfg::kWaveTileN, M, N,
                                               lane);
    }
  };

  if constexpr (Cfg::kLdsBuffers == 2) {
    if (nk > 0) {
      gload_tiles(0);
      lds_store_tiles(0);
    }
    barrier();
    for (int kt = 0; kt < nk; ++kt) {
      const int cur = kt & 1;
      const bool more = kt + 1 < nk;
      if (Cfg::kPrefetch == 1 && more) gload_tiles(kt + 1);
      compute(cur, kt);
      fold_block(kt);
      if (more) {
        if (Cfg::kPrefetch == 0) gload_tiles(kt + 1);
        lds_store_tiles(cur ^ 1);
      }
      barrier();  // buffer cur^1 is complete; every wave is done reading buffer cur
    }
  } else {
    if (Cfg::kPrefetch == 1 && nk > 0) gload_tiles(0);
    for (int kt = 0; kt < nk; ++kt) {
      if (Cfg::kPrefetch == 0) gload_tiles(kt);
      lds_store_tiles(0);
      barrier();
      if (Cfg::kPrefetch == 1 && kt + 1 < nk) gload_tiles(kt + 1);
      compute(0, kt);
      fold_block(kt);
      barrier();
    }
  }

  // ---------------------------------------------------------------- epilogue
  if constexpr (kBlock) {
#pragma unroll
    for (int i = 0; i < Cfg::kRepM; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::kRepN; ++j) acc[i][j] = tot[i][j];
  }
  if constexpr (D::kPinAcc) {
#pragma unroll
    for (int i = 0; i < Cfg::kRepM; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::kRepN; ++j) pin_agpr(acc[i][j]);
  }
  // Rotary Cfg (rope = gptj(...)): every accumulator finished in place (value()), then rotated with its partner,
  // column col ^ 1 of the same rows in lane ^ 1 (MfmaLayout: lane % kInstrN is the column); every lane of the wave
  // takes part in the exchange (values past M / N are 0 and not rotated). Row-major C (the planner's rule).
  if constexpr (D::kRope) {
    static_assert(Cfg::kCRowMajor && Cfg::kInstrN % 2 == 0, "rotary epilogue: row-major C, pairs in lanes l, l ^ 1");
#pragma unroll
    for (int i = 0; i < Cfg::kRepM; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::kRepN; ++j)
#pragma unroll
        for (int r = 0; r < Cfg::kCItems; ++r) {
          const int row = m0 + wave_m * Cfg::kWaveTileM + i * Cfg::kInstrM + L::c_row(r, lane);
          const int col = n0 + wave_n * Cfg::kWaveTileN + j * Cfg::kInstrN + L::c_col(0, lane);
          const bool in = row < M && col < N;
          const float v = in ? epi::value<Cfg>(acc[i][j][r], row, col, C, static_cast<long long>(row) * ldc + col,
                                               bias)
                             : 0.0f;
          const float p = shfl_xor<1>(v);
          acc[i][j][r] = epi::rope_lane<Cfg>(v, p, row, col, in && (col ^ 1) < N, bias);
        }
  }
  // item r of fragment (i, j) at (row, col): one accumulator, a gated pair (j and j + kRepN / 2), or a rotated value
  auto finish = [&](int i, int j, int r, int row, int col, long long off) -> TC {
    if constexpr (D::kRope)
      return from_float<TC>(acc[i][j][r]);
    else if constexpr (D::kGated)
      return epi::finish_gated<Cfg>(acc[i][j][r], acc[i][j + Cfg::kRepN / 2][r], row, col, N, C, off, bias);
    else
      return epi::finish<Cfg>(acc[i][j][r], row, col, C, off, bias);
  };

  // A lane's C items come in runs of kCGroup consecutive rows of one column: contiguous only in
  // col-major C. There, stores use vectors of kVC = the largest of 4, 2, 1 that is <= kVecC and divides
  // kCGroup; row-major C (and kVecC == 1) stores per element (consecutive lanes, consecutive columns).
  constexpr int kVC = (Cfg::kVecC >= 4 && D::kCGroup % 4 == 0) ? 4 : (Cfg::kVecC >= 2 && D::kCGroup % 2 == 0) ? 2 : 1;
  constexpr bool kVecStore = !Cfg::kCRowMajor && kVC > 1;
  const bool c_aligned = kVecStore && blk::is_aligned(C, ldc, kVC);
  const int col_in = L::c_col(0, lane);
#pragma unroll
  for (int i = 0; i < Cfg::kRepM; ++i) {
#pragma unroll
    for (int j = 0; j < D::kOutRepN; ++j) {
      const int row_base = m0 + wave_m * Cfg::kWaveTileM + i * Cfg::kInstrM;
      const int col = n0 + wave_n * D::kOutWaveN + j * Cfg::kInstrN + col_in;
      constexpr int kStep = kVecStore ? kVC : 1;
#pragma unroll
      for (int r0 = 0; r0 < Cfg::kCItems; r0 += kStep) {
        const int row0 = row_base + L::c_row(r0, lane);
        if constexpr (kVecStore) {
          // Items r0 .. r0+kVecC-1 are consecutive rows of one column: contiguous in col-major C.
          const long long off = static_cast<long long>(col) * ldc + row0;
          if (c_aligned && col < N && row0 + kVC <= M) {
            vec<TC, kVC> out;
#pragma unroll
            for (int v = 0; v < kVC; ++v) out.v[v] = finish(i, j, r0 + v, row0 + v, col, off + v);
            gstore(reinterpret_cast<vec<TC, kVC>*>(C + off), out);
          } else {
#pragma unroll
            for (int v = 0; v < kVC; ++v)
              if (col < N && row0 + v < M) gstore(C + off + v, finish(i, j, r0 + v, row0 + v, col, off + v));
          }
        } else {
          if (row0 < M && col < N) {
            const long long off = Cfg::kCRowMajor ? static_cast<long long>(row0) * ldc + col
                                                  : static_cast<long long>(col) * ldc + row0;
            gstore(C + off, finish(i, j, r0, row0, col, off));
          }
        }
      }
    }
  }
}

namespace gemm_detail {
// The body on one matrix (gemm_forms.h's Body): workgroup (x, y) computes the tile of C at (y, x).
struct MfmaBody {
  template <class Cfg>
  static CKGEN_DEVICE void run(const typename Cfg::TA* A, const typename Cfg::TB* B, typename Cfg::TC* C,
                               epi::Operand<Cfg> bias, int M, int N, int K, long long lda, long long ldb,
                               long long ldc) {
    const int n0 = block_id(0) * epi::out_tile_n<Cfg>();
    gemm_mfma_tile<Cfg>(A, B, C, bias, M, N, K, lda, ldb, ldc, block_id(1) * Cfg::kTileM, n0, n0, N);
  }
};
}  // namespace gemm_detail

// The kernel's entry (kernel.hip.j2 calls it with the arguments of its ABI): every form of gemm_forms.h.
template <class Cfg, class... Args>
CKGEN_DEVICE void gemm_mfma(Args... args) {
  GemmForms<gemm_detail::MfmaBody>::template entry<Cfg>(args...);
}

}  // namespace ckgen
