// gemm_group_walk.h (ckgen/ops/gemm/device): the walk over every group's C tiles of a grouped or masked GEMM
// (mode = grouped | masked), shared by the portable bodies' entry (gemm_grouped.h) and the Hopper body
// (gemm_sm90_tma.h). Cfg members read: kTileM, kTileN (C's columns per tile: epi::out_tile_n).
//
// The tiles of all groups form one sequence: group by group; in a group, bands of 8 row tiles, and in a band N tile
// by N tile, row tiles in order (GroupCursor::at). Empty groups have none. A workgroup of a persistent grid of P takes tiles w, w + P, ...:
// GroupCursor walks the groups once, in order, keeping the count of tiles before its current group (O(groups + its
// tiles), no workspace). Groups are read through a policy: ByOffsets (cumulative end rows, torch._grouped_mm's
// offs; group g is rows [end[g-1], end[g]) of the matrices) or ByCounts (a fixed capacity of M rows per group, the
// first counts[g] of item g). Entries are clamped to 0..M as they are read (an end at least the previous one), so a
// malformed index tensor never moves an access outside the matrices.
#pragma once

#include "ckgen/blocks/epilogue.h"
#include "ckgen/platform.h"

namespace ckgen {
namespace gemm_grouped {

// Entry g of an index tensor (int32 or int64), clamped to lo..hi, the same in every lane.
template <class TI>
CKGEN_DEVICE int clamped(const TI* p, int g, int lo, int hi) {
  const long long v = static_cast<long long>(gload(p + g));
  return CKGEN_UNIFORM(static_cast<int>(v < lo ? lo : (v > hi ? hi : v)));
}

// Groups by cumulative end offsets: group g is rows [r0, r1) of the matrices, r0 = group g-1's end.
template <class TI>
struct ByOffsets {
  const TI* ends;
  int M;
  CKGEN_DEVICE void next(int g, int prev_end, int& r0, int& r1) const {
    r0 = prev_end;
    r1 = clamped(ends, g, prev_end, M);
  }
};

// Groups of a fixed capacity M with a count each: group g is rows [0, counts[g]) of its item.
template <class TI>
struct ByCounts {
  const TI* counts;
  int M;
  CKGEN_DEVICE void next(int g, int /*prev_end*/, int& r0, int& r1) const {
    r0 = 0;
    r1 = clamped(counts, g, 0, M);
  }
};

// One tile of the walk: its group, the group's first row and rows, the tile's origin in the group.
struct GroupTile {
  int g, row0, rows, m0, n0;
};

// Where a workgroup is in the sequence: group g, its rows [r0, r1) and its tiles [tile0, tile0 + tiles). seek(t)
// moves on (never back) to the group holding tile t, false past the last group; at(t) is then that tile. A
// workgroup of a persistent grid calls them for t = w, w + P, ... (the loop stays the caller's: on AMD a cursor
// that kept t and the step itself held more scalar registers across the tile body and spilled).
template <class Cfg, class Groups>
struct GroupCursor {
  Groups groups_of;
  int groups, tiles_n;
  int g = 0, tile0 = 0, tiles = 0, r0 = 0, r1 = 0;

  CKGEN_DEVICE GroupCursor(Groups groups_of_, int groups_, int N)
      : groups_of(groups_of_), groups(groups_), tiles_n((N + epi::out_tile_n<Cfg>() - 1) / epi::out_tile_n<Cfg>()) {
    if (groups > 0) {
      groups_of.next(0, 0, r0, r1);
      tiles = (r1 - r0 + Cfg::kTileM - 1) / Cfg::kTileM * tiles_n;
    }
  }

  CKGEN_DEVICE bool seek(int t) {
    while (t >= tile0 + tiles) {
      if (++g >= groups) return false;
      tile0 += tiles;
      groups_of.next(g, r1, r0, r1);
      tiles = (r1 - r0 + Cfg::kTileM - 1) / Cfg::kTileM * tiles_n;
    }
    return true;
  }

  // A group's tiles go in bands of kBand row tiles, N tile by N tile and, within one, row tile by row tile: the
  // workgroups running at once share a few B panels and A blocks (kept in the L2) instead of each reading its own
  // B panel (a large group read B once per row tile, row by row).
  static constexpr int kBand = 8;

  CKGEN_DEVICE GroupTile at(int t) const {
    const int local = t - tile0;
    const int tiles_m = tiles / tiles_n;
    const int band = local / (kBand * tiles_n);
    const int in_band = local - band * kBand * tiles_n;
    const int band_rows = tiles_m - band * kBand < kBand ? tiles_m - band * kBand : kBand;
    return GroupTile{g, r0, r1 - r0, (band * kBand + in_band % band_rows) * Cfg::kTileM,
                     (in_band / band_rows) * epi::out_tile_n<Cfg>()};
  }
};

}  // namespace gemm_grouped
}  // namespace ckgen
