// ckgen/blocks/lds_layout.h: LDS tile layouts for blk::TileLoader (ckgen/blocks/tile_loader.h): the
// XOR-swizzled, unpadded one of the AMD GEMM body, and plain rows padded to a stride.
//
// A layout is a class with kGranule (elements along K stored contiguously: the widest LDS write a loader may
// issue) and offset(r, k) (the element offset of (r, k) in one buffer).
//
// SwizzledTile<kRows, kTK, kGranule, kLowBits, kTable> stores a kRows x kTK tile (K contiguous) in exactly
// kRows * kTK elements. The planner (ckgen/lower/lds_banks.py) picks the parameters; ckgen/lower/lds.py holds
// the same map in Python (LdsOperandLayout.offset), and tests/include check that the two agree:
//   q   = r * (kTK / kGranule) + k / kGranule             logical granule index
//   q'  = q ^ mask(q >> kLowBits)                        mask: XOR of entry b of kTable for each set bit b
//   off = q' * kGranule + k % kGranule                    element offset in one buffer
// kTable packs 10 entries of 6 bits (entry b at bits [6b, 6b+6)), each < 2^kLowBits: the XOR permutes
// granules inside aligned blocks of 2^kLowBits granules, so the map is a bijection onto the tile and a
// granule's elements stay contiguous (one LDS vector access per granule).
#pragma once

#include "ckgen/types.h"

namespace ckgen {
namespace blk {

template <int kRows, int kTK, int kGranule_, int kLowBits, unsigned long long kTable>
struct SwizzledTile {
  static constexpr int kGranule = kGranule_;
  static constexpr int kRowGranules = kTK / kGranule;
  static constexpr int kElems = kRows * kTK;
  static constexpr int kFieldBits = 6;
  static constexpr int kEntries = 10;
  static_assert(kGranule > 0 && (kGranule & (kGranule - 1)) == 0 && kTK % kGranule == 0,
                "kLdsAGranule / kLdsBGranule: a power of two dividing kTileK");
  static_assert(kLowBits >= 0 && kLowBits <= kFieldBits, "kLdsASwizzleBits / kLdsBSwizzleBits: 0..6");
  static_assert((kRows * kRowGranules) % (1 << kLowBits) == 0,
                "the tile's granule count must be a multiple of 2^kLdsASwizzleBits (kLdsBSwizzleBits)");

  static constexpr CKGEN_HD int entry(int b) { return static_cast<int>((kTable >> (kFieldBits * b)) & 63u); }
  static constexpr CKGEN_HD bool valid_table() {
    for (int b = 0; b < kEntries; ++b)
      if (entry(b) >= (1 << kLowBits)) return false;
    return (kTable >> (kFieldBits * kEntries)) == 0;
  }
  static_assert(valid_table(), "kLdsASwizzle / kLdsBSwizzle: every entry must be < 2^kLowBits");

  static constexpr CKGEN_HD int mask(int hi) {
    int m = 0;
#pragma unroll
    for (int b = 0; b < kEntries; ++b)
      if (entry(b) != 0 && ((hi >> b) & 1)) m ^= entry(b);
    return m;
  }
  // Element offset of (r, k) inside one buffer.
  static constexpr CKGEN_HD int offset(int r, int k) {
    const int q = r * kRowGranules + k / kGranule;
    return (q ^ mask(q >> kLowBits)) * kGranule + k % kGranule;
  }
  // A displacement of dr rows and dk k's (dk a multiple of kGranule) as an XOR on element offsets:
  //   offset(r + dr, k + dk) == offset(r, k) ^ xor_step(dr, dk)
  // whenever the granule indices r*kRowGranules + k/kGranule and dr*kRowGranules + dk/kGranule share no set
  // bit (no carries: the mask is linear over GF(2)). Callers check that with pow2() conditions at compile
  // time; the fragment reads then cost one XOR on a per-lane base instead of one register per (row, k) step.
  static constexpr CKGEN_HD int xor_step(int dr, int dk) {
    const int q = dr * kRowGranules + dk / kGranule;
    return (q ^ mask(q >> kLowBits)) * kGranule;
  }
  static constexpr CKGEN_HD bool pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }
  // Whether fragments read at multiples of (dr rows, dk k's) from a lane's (row, k) may take xor_step: the steps
  // are powers of two (dk in whole granules) and a row is a power-of-two count of granules, so the displacement's
  // granule bits are disjoint from the lane's own (rows and k's of one instruction step). A caller whose lanes also
  // start at other multiples (a wave's row range) checks those too.
  static constexpr CKGEN_HD bool xor_steps(int dr, int dk) {
    return pow2(dr) && dk % kGranule == 0 && pow2(dk / kGranule) && pow2(kRowGranules);
  }
};

// Rows of kTK elements kStride apart (kStride >= kTK; the padding spreads rows over the banks). kGranule: the
// widest contiguous piece a loader writes (a divisor of kStride, so pieces stay aligned).
template <int kStride, int kGranule_>
struct PaddedTile {
  static constexpr int kGranule = kGranule_;
  static_assert(kGranule > 0 && kStride % kGranule == 0, "PaddedTile: the granule must divide the row stride");
  static constexpr CKGEN_HD int offset(int r, int k) { return r * kStride + k; }
};

}  // namespace blk
}  // namespace ckgen
