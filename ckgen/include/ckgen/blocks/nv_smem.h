// ckgen/blocks/nv_smem.h: NVIDIA shared-memory tiles and tensor-core fragments (sm_80+), the blocks the
// mma.sync bodies of the ops are built from.
//
//   aligned16(p, ld, eb)      base and every line start 16-byte aligned (cp.async / TMA condition)
//   grouped_tile(t, ...)      tile t of a grouped (L2-friendly) rasterization -> its (tm, tn)
//   SmemTile<T, rows, cols>   a tile of lines, 16-byte chunks XOR-swizzled for conflict-free ldmatrix;
//                             its Loader copies global -> shared with cp.async (zero fill) or per element
//   lds_word<T>, prep<T>      per-element fragment registers; tf32 conversion of f32 operands
//   MmaOf<T>                  the mma.sync of an input element type
#pragma once

#include "ckgen/blocks/epilogue.h"
#include "ckgen/blocks/nv_mma.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {
namespace nv {

using epi::IsInt;

constexpr bool is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

// Whether a matrix's base and every line start (ld elements of eb bytes apart) are 16-byte aligned: the
// condition of 16-byte cp.async and of TMA (checked on the host).
CKGEN_HD bool aligned16(const void* p, long long ld, int eb) {
  return (reinterpret_cast<unsigned long long>(p) & 15u) == 0 && ((ld * eb) & 15) == 0;
}

// Tile t of the grouped order over tiles_m x tiles_n tiles -> its tile coordinates: consecutive t walk
// group_m M tiles before the next N tile, so that the blocks running together share A and B tiles in L2.
CKGEN_DEVICE void grouped_tile(int t, int tiles_m, int tiles_n, int group_m, int& tm, int& tn) {
  const int per_group = group_m * tiles_n;
  const int first_m = (t / per_group) * group_m;
  const int gsize = (tiles_m - first_m) < group_m ? (tiles_m - first_m) : group_m;
  tm = first_m + (t % per_group) % gsize;
  tn = (t % per_group) / gsize;
}

// ---------------------------------------------------------------- one operand tile in shared memory
// kRows lines of kCols elements, each line contiguous (kCols along the matrix's contiguous
// dimension). Line r, 16-byte chunk c sits at byte r * kRowBytes + (swizzle(r, c) * 16).
template <class T, int kRows, int kCols, int kThreads>
struct SmemTile {
  static constexpr int kEB = static_cast<int>(sizeof(T));
  static constexpr int kVE = 16 / kEB;                 // elements per 16-byte chunk
  static constexpr int kRowBytes = kCols * kEB;
  static constexpr int kCPR = kRowBytes / 16;          // chunks per line
  static constexpr int kBytes = kRows * kRowBytes;
  static constexpr int kChunks = kRows * kCPR;
  static constexpr int kIters = (kChunks + kThreads - 1) / kThreads;
  static constexpr bool kExact = kChunks % kThreads == 0;
  static_assert(kRowBytes % 16 == 0, "a shared-memory tile line must be a multiple of 16 bytes "
                                     "(kTileK, and kTileM/kTileN for MN-contiguous operands)");
  static_assert(is_pow2(kCPR), "tile lines must hold a power of two of 16-byte chunks");

  // XOR swizzle of 16-byte chunks: any 8 consecutive lines reading the same logical chunk hit 8
  // distinct 16-byte bank groups.
  static CKGEN_DEVICE int swz(int r, int c) {
    if constexpr (kCPR >= 8) {
      return c ^ (r & 7);
    } else {
      return c ^ ((r / (8 / kCPR)) & (kCPR - 1));
    }
  }
  static CKGEN_DEVICE int offset(int r, int c) { return r * kRowBytes + (swz(r, c) << 4); }

  // Byte offset of element (r, col) of the tile.
  static CKGEN_DEVICE int elem_offset(int r, int col) { return offset(r, col / kVE) + (col % kVE) * kEB; }

  // Global -> shared, one thread's share. Element (r, c) of the tile is global line line0 + r,
  // column col0 + c: g[(line0 + r) * ld + col0 + c], valid while line0 + r < lines_lim and
  // col0 + c < cols_lim, zero otherwise. kAdvLines: the K tile index moves the lines (MN-contiguous
  // operand) rather than the columns (K-contiguous operand). kVec: every line start is 16-byte aligned
  // (cp.async with zero fill); otherwise per-element loads. Thread tid copies chunks tid + it * kThreads.
  static constexpr bool kRegular = kThreads % kCPR == 0;      // a thread's chunks share one column
  static constexpr int kRowStep = kRegular ? kThreads / kCPR : 1;
  static constexpr bool kSameSwz = kRegular && kRowStep % 8 == 0;

  template <bool kVec, bool kAdvLines>
  struct Loader {
    const T* p0;      // this thread's first chunk in K tile 0
    long long ld;
    int line_g0;      // global line of that chunk in K tile 0
    int col_g0;       // global column of that chunk in K tile 0
    uint32_t soff;    // offset(r0, ch)
    int r0, ch;

    CKGEN_DEVICE Loader(const T* g, long long ld_, int line0, int col0, int tid) : ld(ld_) {
      r0 = tid / kCPR;
      ch = tid % kCPR;
      soff = static_cast<uint32_t>(offset(r0, ch));
      line_g0 = line0 + r0;
      col_g0 = col0 + ch * kVE;
      p0 = g + static_cast<long long>(line_g0) * ld + col_g0;
    }

    // k0: first K index of the tile.
    CKGEN_DEVICE void load(uint32_t s_base, const T* g, int k0, int lines_lim, int cols_lim, int tid) const {
      if constexpr (kVec && kRegular) {
        const int line_g = line_g0 + (kAdvLines ? k0 : 0);
        const int col_g = col_g0 + (kAdvLines ? 0 : k0);
        int bytes = (cols_lim - col_g) * kEB;
        bytes = bytes < 0 ? 0 : (bytes > 16 ? 16 : bytes);
        const T* p = p0 + (kAdvLines ? static_cast<long long>(k0) * ld : static_cast<long long>(k0));
#pragma unroll
        for (int it = 0; it < kIters; ++it) {
          if (!kExact && r0 + it * kRowStep >= kRows) break;
          const uint32_t so = kSameSwz ? soff + it * kRowStep * kRowBytes
                                       : static_cast<uint32_t>(offset(r0 + it * kRowStep, ch));
          const T* src = p + static_cast<long long>(it * kRowStep) * ld;
          const int nb = line_g + it * kRowStep < lines_lim ? bytes : 0;
          cp_async16_zfill(s_base + so, nb > 0 ? src : g, nb);
        }
      } else {
        const int line0 = line_g0 - r0 + (kAdvLines ? k0 : 0);
        const int col0 = col_g0 - ch * kVE + (kAdvLines ? 0 : k0);
#pragma unroll 1
        for (int it = 0; it < kIters; ++it) {
          const int c = tid + it * kThreads;
          if (!kExact && c >= kChunks) break;
          const int r = c / kCPR;
          const int cc = c % kCPR;
          const uint32_t dst = s_base + offset(r, cc);
          const int gr = line0 + r;
          const int gc = col0 + cc * kVE;
          if constexpr (kVec) {
            const T* src = g + static_cast<long long>(gr) * ld + gc;
            int bytes = (cols_lim - gc) * kEB;
            bytes = bytes < 0 ? 0 : (bytes > 16 ? 16 : bytes);
            if (gr >= lines_lim) bytes = 0;
            cp_async16_zfill(dst, bytes > 0 ? src : g, bytes);
          } else {
            // Per element; synchronous (visible after the pipeline's barrier like cp.async data).
            uint32_t w[4] = {0u, 0u, 0u, 0u};
            unsigned char* wb = reinterpret_cast<unsigned char*>(w);
#pragma unroll
            for (int e = 0; e < kVE; ++e) {
              if (gr < lines_lim && gc + e < cols_lim) {
                const T v = gload(g + static_cast<long long>(gr) * ld + gc + e);
                __builtin_memcpy(wb + e * kEB, &v, kEB);
              }
            }
            st_shared_v4(dst, w[0], w[1], w[2], w[3]);
          }
        }
      }
    }

    // The tile through a row map over its N lines or columns (blk::GatedRows: a gated GEMM's B, `g` its column
    // 0): the map's lines are the tile's lines when kAdvLines is false (K-contiguous: lines are N), else its
    // columns (N-contiguous: lines are K). `n_lim` bounds the map's logical index, `k_lim` K; k0 the first K.
    // Chunks of kVE columns lie in one run of the map (the planner's vector rule). Per chunk, like the slow path.
    template <class Map>
    CKGEN_DEVICE void load_mapped(uint32_t s_base, const T* g, int k0, int n_lim, int k_lim, int tid,
                                  const Map& map) const {
#pragma unroll 1
      for (int it = 0; it < kIters; ++it) {
        const int c = tid + it * kThreads;
        if (!kExact && c >= kChunks) break;
        const int r = c / kCPR;
        const int cc = c % kCPR;
        const uint32_t dst = s_base + offset(r, cc);
        const int t = kAdvLines ? cc * kVE : r;  // the map's index: the tile's N position
        const int nl = n_lim - map.logical(t);   // N positions left from there
        const long long pn = map.phys(t);
        const long long gr = kAdvLines ? k0 + r : pn;      // global line
        const long long gc = kAdvLines ? pn : k0 + cc * kVE;  // global column
        const int cols_left = kAdvLines ? nl : k_lim - static_cast<int>(gc);
        const bool line_in = kAdvLines ? gr < k_lim : nl > 0;
        if constexpr (kVec) {
          int bytes = cols_left * kEB;
          bytes = !line_in || bytes < 0 ? 0 : (bytes > 16 ? 16 : bytes);
          cp_async16_zfill(dst, bytes > 0 ? g + gr * ld + gc : g, bytes);
        } else {
          uint32_t w[4] = {0u, 0u, 0u, 0u};
          unsigned char* wb = reinterpret_cast<unsigned char*>(w);
#pragma unroll
          for (int e = 0; e < kVE; ++e) {
            if (line_in && e < cols_left) {
              const T v = gload(g + gr * ld + gc + e);
              __builtin_memcpy(wb + e * kEB, &v, kEB);
            }
          }
          st_shared_v4(dst, w[0], w[1], w[2], w[3]);
        }
      }
    }
  };
};

// Per-element 32-bit fragment register from shared memory: kPer elements of `elems` starting at
// byte offsets off[e] (8- and 32-bit MN-contiguous operands).
template <class T>
CKGEN_DEVICE uint32_t lds_word(const unsigned char* base, const int* offs) {
  constexpr int kEB = static_cast<int>(sizeof(T));
  uint32_t w = 0;
#pragma unroll
  for (int e = 0; e < 4 / kEB; ++e) {
    T v = *reinterpret_cast<const T*>(base + offs[e]);
    uint32_t u = 0;
    __builtin_memcpy(&u, &v, kEB);
    w |= u << (8 * kEB * e);
  }
  return w;
}

template <class T>
CKGEN_DEVICE uint32_t prep(uint32_t w) {
  if constexpr (sizeof(T) == 4 && !IsInt<T>::value) {
    return to_tf32(w);  // f32 operands run through the tf32 instruction
  } else {
    return w;
  }
}

// The mma.sync of each input type (the targets table's instruction for it; Cfg::mma is not needed).
template <class T>
struct MmaOf;
template <>
struct MmaOf<f16> {
  static CKGEN_DEVICE f32x4_t mma(u32x4_t a, u32x2_t b, f32x4_t c) { return mma_m16n8k16_f32_f16(a, b, c); }
};
template <>
struct MmaOf<bf16> {
  static CKGEN_DEVICE f32x4_t mma(u32x4_t a, u32x2_t b, f32x4_t c) { return mma_m16n8k16_f32_bf16(a, b, c); }
};
template <>
struct MmaOf< ::int8_t> {
  static CKGEN_DEVICE i32x4_t mma(u32x4_t a, u32x2_t b, i32x4_t c) { return mma_m16n8k32_s32_s8(a, b, c); }
};
template <>
struct MmaOf<float> {
  static CKGEN_DEVICE f32x4_t mma(u32x4_t a, u32x2_t b, f32x4_t c) { return mma_m16n8k8_f32_tf32(a, b, c); }
};
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
template <>
struct MmaOf<fp8_e4m3fn> {
  static CKGEN_DEVICE f32x4_t mma(u32x4_t a, u32x2_t b, f32x4_t c) { return mma_m16n8k32_f32_e4m3(a, b, c); }
};
template <>
struct MmaOf<fp8_e5m2> {
  static CKGEN_DEVICE f32x4_t mma(u32x4_t a, u32x2_t b, f32x4_t c) { return mma_m16n8k32_f32_e5m2(a, b, c); }
};
#endif

}  // namespace nv
}  // namespace ckgen
