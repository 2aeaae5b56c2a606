// ckgen/blocks/tile_loader.h: global -> registers -> LDS copies of a 2-D operand tile (AMD and emu bodies).
//
// TileLoader<T, kRows, kTK, kV, kKContig, kThreads, Lds, kMnLanes, kMnPiece> moves one kRows x kTK tile into an LDS
// tile laid out by Lds (K contiguous: Lds::offset(r, k) is the element offset of (r, k); Lds::kGranule
// elements along K are contiguous), with vectors of kV elements along the matrix's contiguous dimension.
// load() issues the global reads into registers (zero fill outside the matrix), store() writes them to LDS.
//
// Work units, thread t = tid + p * kThreads taking unit t:
//   K-contiguous (row-major A, column-major B): a unit is one vector of kV elements along K at
//     (r, k) = (t / (kTK / kV), (t % (kTK / kV)) * kV); it is stored as pieces of min(kV, kGranule)
//     elements, each one LDS vector write (granules are contiguous in LDS, their neighbours need not be).
//   MN-contiguous (column-major A, row-major B): a unit is a block of kV rows x kMnPiece k's (kMnPiece
//     divides the granule): kMnPiece vector loads (kV elements along M/N each, at k, k+1, ...) transposed in
//     registers into kV pieces of kMnPiece elements along K, one LDS vector write each. Units are numbered
//     with kMnLanes consecutive threads along M/N, then along K: i_lo = t % kMnLanes,
//     kp = (t / kMnLanes) % (kTK / kMnPiece), i_hi = t / (kMnLanes * (kTK / kMnPiece));
//     rows r = (i_hi * kMnLanes + i_lo) * kV, k = kp * kMnPiece.
// Rows of the tile (its M / N lines) map to the matrix through a row map (load()'s last argument): Rows<kRows> (the
// default) takes rows 0 .. kRows-1 of `base`; a map has kExtent (the lines a whole tile covers), logical(r) (what
// is checked against rows_left: in bounds when < rows_left) and phys(r) (the line's index from `base`). Each
// MN-contiguous unit's kV rows r .. r+kV-1 must be consecutive in both (GatedRows: runs of a multiple of kV).
// is_aligned(p, ld, v): whether vectors of v elements are aligned at p and at every line start.
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {
namespace blk {

// A scheduling fence on AMD (nothing elsewhere): code after it is not moved above it.
CKGEN_DEVICE void edge_fence() {
#if defined(__AMDGCN__)
  __builtin_amdgcn_sched_barrier(0);
#endif
}

// The identity row map: tile row r is line r of the matrix from the tile's origin.
template <int kRows>
struct Rows {
  static constexpr int kExtent = kRows;
  CKGEN_DEVICE int logical(int r) const { return r; }
  CKGEN_DEVICE long long phys(int r) const { return r; }
};

// The B tile of a gated GEMM (swiglu / geglu: ckgen/blocks/epilogue.h): each wave's kWaveN lines hold kWaveN / 2
// gate columns, then the matching up columns, of the output columns o0 + w * kWaveN / 2 + i (wave w). logical(r)
// is that output column from o0 (checked against N - o0); phys(r) the column of B (2 N columns): halves
// (kBlock 0) gate o, up N + o; interleaved(kBlock) gate (o / kBlock) * 2 kBlock + o % kBlock, up + kBlock.
// `base` is B's column 0.
template <int kRows, int kWaveN, int kBlock>
struct GatedRows {
  static constexpr int kHalf = kWaveN / 2;
  static constexpr int kExtent = kRows / 2;
  int o0;  // the tile's first output column
  int n;   // N: the output columns (B has 2 N)
  CKGEN_DEVICE int logical(int r) const { return (r / kWaveN) * kHalf + r % kHalf; }
  CKGEN_DEVICE long long phys(int r) const {
    const int o = o0 + logical(r);
    const long long gate = kBlock ? static_cast<long long>(o / kBlock) * (2 * kBlock) + o % kBlock : o;
    return gate + ((r / kHalf) % 2 ? (kBlock ? kBlock : n) : 0);
  }
};

template <class T, int kRows, int kTK, int kV, bool kKContig, int kThreads, class Lds, int kMnLanes = 1,
          int kMnPiece = 1>
struct TileLoader {
  static constexpr int kG = Lds::kGranule;
  static constexpr int kPiece = kV < kG ? kV : kG;             // K-contiguous: elements per LDS write
  static constexpr int kLoads = kKContig ? 1 : kMnPiece;       // global vector loads per unit
  static constexpr int kUnits = kKContig ? kRows * kTK / kV : (kRows / kV) * (kTK / kMnPiece);
  static constexpr int kPer = (kUnits + kThreads - 1) / kThreads;
  static constexpr bool kExact = kUnits % kThreads == 0;
  using V = vec<T, kV>;
  // Registers hold raw dwords whenever a vector is a whole number of them: element arrays of 8/16-bit
  // types get split into one register per element by the compiler (seen for i8: 4x the VGPRs).
  static constexpr int kBytes = kV * static_cast<int>(sizeof(T));
  static constexpr int kPieceBytes = kPiece * static_cast<int>(sizeof(T));
  static constexpr bool kRaw = kBytes % 4 == 0 && kPieceBytes % 4 == 0;
  using Reg = typename Select<kRaw, vec<unsigned, kRaw ? kBytes / 4 : 1>, V>::type;
  using Piece = typename Select<kRaw, vec<unsigned, kRaw ? kPieceBytes / 4 : 1>, vec<T, kPiece>>::type;
  struct Pieces {
    Piece p[kV / kPiece];
  };

  static_assert(kV >= 1 && kG >= 1, "vector width and granule must be >= 1");
  static_assert(!kKContig || kTK % kV == 0, "kTileK must be a multiple of the K-contiguous vector width");
  static_assert(!kKContig || kV % kPiece == 0, "the K-contiguous vector width must be a multiple of the granule");
  static_assert(kKContig || kRows % (kV * kMnLanes) == 0,
                "the tile's M (N) extent must be a multiple of the vector width x kLdsAMnLanes (kLdsBMnLanes)");
  static_assert(kKContig || (kG % kMnPiece == 0 && kTK % kMnPiece == 0),
                "kLdsAMnPiece (kLdsBMnPiece) must divide the LDS granule and kTileK");

  Reg regs[kPer][kLoads];

  // Line coordinate (r, k) inside the tile of unit t.
  static CKGEN_DEVICE void coords(int t, int& r, int& k) {
    if constexpr (kKContig) {
      r = t / (kTK / kV);
      k = (t % (kTK / kV)) * kV;
    } else {
      constexpr int kPs = kTK / kMnPiece;
      const int i_lo = t % kMnLanes;
      const int kp = (t / kMnLanes) % kPs;
      const int i_hi = t / (kMnLanes * kPs);
      r = (i_hi * kMnLanes + i_lo) * kV;
      k = kp * kMnPiece;
    }
  }

  static CKGEN_DEVICE long long offset(long long r, int k, long long ld) {
    return kKContig ? r * ld + k : static_cast<long long>(k) * ld + r;
  }

  // base points at the tile origin (r0, k0) of the matrix; rows_left = rows - r0, k_left = K - k0.
  // Interior tiles (whole tile in bounds, matrix aligned for kV: a uniform test) take unconditional
  // vector loads; edge tiles check each vector and fall back to per-element loads with zero fill.
  template <class Map = Rows<kRows>>
  CKGEN_DEVICE void load(const T* base, long long ld, int rows_left, int k_left, bool aligned, int tid,
                         const Map& map = Map{}) {
    if (aligned && rows_left >= Map::kExtent && k_left >= kTK) {
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        const int t = tid + p * kThreads;
        if (kExact || t < kUnits) {
          int r, k;
          coords(t, r, k);
#pragma unroll
          for (int w = 0; w < kLoads; ++w)
            regs[p][w] = bit_cast<Reg>(gload(reinterpret_cast<const V*>(base + offset(map.phys(r), k + w, ld))));
        }
      }
    } else {
      load_edge(base, ld, rows_left, k_left, aligned, tid, map);
    }
  }

  // Edge tiles: every element either loads (inside the matrix) or is zero. The bounds enter through opaque()
  // so the compiler does not hoist one 64-bit lane mask per element out of the K loop (SGPR spills on
  // small-K tiles and i8 tiles).
  template <class Map>
  CKGEN_DEVICE void load_edge(const T* base, long long ld, int rows_left, int k_left, bool aligned, int tid,
                              const Map& map) {
    rows_left = opaque(rows_left);
    k_left = opaque(k_left);
#pragma unroll
    for (int p = 0; p < kPer; ++p) {
      const int t = tid + p * kThreads;
      if (kExact || t < kUnits) {
        int r, k;
        coords(t, r, k);
        const int lr = map.logical(r);  // (the bounds are on logical lines; the address on physical ones)
#pragma unroll
        for (int w = 0; w < kLoads; ++w) {
          const int kw = k + w;
          const T* src = base + offset(map.phys(r), kw, ld);
          const bool full = kKContig ? (lr < rows_left && kw + kV <= k_left) : (kw < k_left && lr + kV <= rows_left);
          if (aligned && full) {
            regs[p][w] = bit_cast<Reg>(gload(reinterpret_cast<const V*>(src)));
          } else {
            V e;
#pragma unroll
            for (int v = 0; v < kV; ++v) {
              const bool in = kKContig ? (lr < rows_left && kw + v < k_left) : (kw < k_left && lr + v < rows_left);
              e.v[v] = in ? gload(src + v) : zero<T>();
            }
            regs[p][w] = bit_cast<Reg>(e);
            // Keep the scheduler from hoisting every element load of every vector above the packing (one
            // register per element in flight): edge tiles are rare, register pressure is not.
            edge_fence();
          }
        }
      }
    }
  }

  CKGEN_DEVICE void store(T* lds, int tid) const {
#pragma unroll
    for (int p = 0; p < kPer; ++p) {
      const int t = tid + p * kThreads;
      if (kExact || t < kUnits) {
        int r, k;
        coords(t, r, k);
        if constexpr (kKContig) {
          // the vector as kV / kPiece pieces: a register-level reinterpretation, no element moves
          const Pieces pieces = bit_cast<Pieces>(regs[p][0]);
#pragma unroll
          for (int j = 0; j < kV / kPiece; ++j)
            lds_store(reinterpret_cast<Piece*>(lds + Lds::offset(r, k + j * kPiece)), pieces.p[j]);
        } else {
          V col[kLoads];  // element view for the transpose (real data movement)
#pragma unroll
          for (int w = 0; w < kLoads; ++w) col[w] = bit_cast<V>(regs[p][w]);
#pragma unroll
          for (int v = 0; v < kV; ++v) {
            vec<T, kMnPiece> piece;
#pragma unroll
            for (int w = 0; w < kMnPiece; ++w) piece.v[w] = col[w].v[v];
            lds_store(reinterpret_cast<vec<T, kMnPiece>*>(lds + Lds::offset(r + v, k)), piece);
          }
        }
      }
    }
  }
};

template <class T>
CKGEN_DEVICE bool is_aligned(const T* p, long long ld, int v) {
  return v == 1 || ((reinterpret_cast<unsigned long long>(p) % (static_cast<unsigned long long>(v) * sizeof(T))) == 0 &&
                    ld % v == 0);
}

}  // namespace blk
}  // namespace ckgen
