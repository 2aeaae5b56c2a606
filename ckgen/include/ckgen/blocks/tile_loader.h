// ckgen/blocks/tile_loader.h: global -> registers -> LDS copies of a 2-D operand tile (AMD and emu bodies).
//
// TileLoader<T, kRows, kTK, kV, kStride, kKContig, kThreads> moves one kRows x kTK tile (K contiguous in
// LDS, kStride elements between rows) with vectors of kV elements along the matrix's contiguous dimension:
// load() issues the global reads into registers (zero fill outside the matrix), store() writes them to LDS.
// is_aligned(p, ld, v): whether vectors of v elements are aligned at p and at every line start.
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {
namespace blk {

// One operand tile of kRows (M for A, N for B) x kTK elements, K contiguous in LDS with kStride.
// kKContig: the global matrix is contiguous along K (row-major A, col-major B); element (r, k) sits
// at base[r * ld + k]; otherwise at base[k * ld + r]. Vectors of kV run along the contiguous dimension.
template <class T, int kRows, int kTK, int kV, int kStride, bool kKContig, int kThreads>
struct TileLoader {
  static constexpr int kVecsPerLine = kKContig ? kTK / kV : kRows / kV;
  static constexpr int kVecs = kRows * kTK / kV;
  static constexpr int kPer = (kVecs + kThreads - 1) / kThreads;
  static constexpr bool kExact = kVecs % kThreads == 0;
  using V = vec<T, kV>;

  static_assert(kV >= 1, "vector width must be >= 1");
  static_assert(!kKContig || kTK % kV == 0, "kTileK must be a multiple of the K-contiguous vector width");
  static_assert(kKContig || kRows % kV == 0, "the tile's M (N) extent must be a multiple of the vector width");
  static_assert(!kKContig || kStride % kV == 0,
                "LDS stride (kLdsAStride / kLdsBStride) must be a multiple of kVecA / kVecB for K-contiguous operands");

  V regs[kPer];

  // Line coordinate (r, k) inside the tile of the p-th vector of thread tid.
  static CKGEN_DEVICE void coords(int t, int& r, int& k) {
    if constexpr (kKContig) {
      r = t / kVecsPerLine;
      k = (t % kVecsPerLine) * kV;
    } else {
      k = t / kVecsPerLine;
      r = (t % kVecsPerLine) * kV;
    }
  }

  // base points at the tile origin (r0, k0) of the matrix; rows_left = rows - r0, k_left = K - k0.
  // Interior tiles (whole tile in bounds, matrix aligned for kV: a uniform test) take unconditional
  // vector loads; edge tiles check each vector and fall back to per-element loads with zero fill.
  CKGEN_DEVICE void load(const T* base, long long ld, int rows_left, int k_left, bool aligned, int tid) {
    if (aligned && rows_left >= kRows && k_left >= kTK) {
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        const int t = tid + p * kThreads;
        if (kExact || t < kVecs) {
          int r, k;
          coords(t, r, k);
          regs[p] = gload(reinterpret_cast<const V*>(base + offset(r, k, ld)));
        }
      }
    } else {
      load_edge(base, ld, rows_left, k_left, aligned, tid);
    }
  }

  static CKGEN_DEVICE long long offset(int r, int k, long long ld) {
    return kKContig ? static_cast<long long>(r) * ld + k : static_cast<long long>(k) * ld + r;
  }

  CKGEN_DEVICE void load_edge(const T* base, long long ld, int rows_left, int k_left, bool aligned, int tid) {
#pragma unroll
    for (int p = 0; p < kPer; ++p) {
      const int t = tid + p * kThreads;
      if (kExact || t < kVecs) {
        int r, k;
        coords(t, r, k);
        const T* src = base + offset(r, k, ld);
        const bool full = kKContig ? (r < rows_left && k + kV <= k_left) : (k < k_left && r + kV <= rows_left);
        if (aligned && full) {
          regs[p] = gload(reinterpret_cast<const V*>(src));
        } else {
#pragma unroll
          for (int v = 0; v < kV; ++v) {
            const bool in = kKContig ? (r < rows_left && k + v < k_left) : (k < k_left && r + v < rows_left);
            regs[p].v[v] = in ? gload(src + v) : zero<T>();
          }
        }
      }
    }
  }

  CKGEN_DEVICE void store(T* lds, int tid) const {
#pragma unroll
    for (int p = 0; p < kPer; ++p) {
      const int t = tid + p * kThreads;
      if (kExact || t < kVecs) {
        int r, k;
        coords(t, r, k);
        if constexpr (kKContig) {
          lds_store(reinterpret_cast<V*>(lds + r * kStride + k), regs[p]);
        } else {
#pragma unroll
          for (int v = 0; v < kV; ++v) lds_store(lds + (r + v) * kStride + k, regs[p].v[v]);
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
