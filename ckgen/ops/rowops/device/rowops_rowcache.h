// rowops_rowcache.h (ckgen/ops/rowops/device): the row cache of the looped row ops: a row kept in shared memory
// (LDS) between the passes, so that global memory is read once however long the row is (rowops_forward.h).
//
//   Cfg::kCacheTiles (optional, default 0)   tiles of a row the cache holds (0: no cache). Needs kLooped and no
//                                           kStages; cols <= kCacheTiles * kTileCols (checked: a trap).
//   cache_words<Cfg>()   32-bit words of one thread's vector of v (v as held: TRes with kResidual, else TIn)
//   cache_bytes<Cfg>()   kCacheTiles * kRegVecs * kThreads * cache_words * 4: the cache of the workgroup's rows
//
//   Layout: a slot of 16-byte chunks (kWords a multiple of 4) is spread chunk-major: chunk q of vector j of tile t
//   of thread tid at words (((t * kRegVecs + j) * kQ + q) * kThreads + tid) * 4 (kQ = kWords / 4); a smaller slot
//   lies whole at words ((t * kRegVecs + j) * kThreads + tid) * kWords. Consecutive threads touch consecutive
//   pieces: 16-byte accesses without bank conflicts. A thread
//   reads back only the slots it wrote itself (program order: no barrier), row group after row group.
//   Pass 1 (forward over tiles) writes each tile's v into the cache as it goes; the later passes read it back
//   from there instead of from global memory. Where the platform has cp.async (CUDA sm_80+, the emulator's
//   warp-32 model) and x is 16-byte aligned, every vector of x of the row is copied into its slot up front, all
//   in flight at once (vectors past the row zero-filled), and pass 1 reads x from the cache as well, each tile as
//   soon as its own copies have landed (one cp.async group per tile, kCacheTiles <= kCacheWaitTiles).
//
//   Memory: CUDA takes the MultiWave scratch and the cache from DYNAMIC shared memory (scratch first, then the
//   cache; lds_bytes<Cfg>() in all, the generated launcher passes Cfg::kLdsBytes and raises the limit above 48
//   KiB; the body traps when the launch gives less); AMD and the emulator declare both statically.
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"
#include "rowops_frag.h"

namespace ckgen {
namespace rowops {
namespace detail {

CKGEN_CFG_OPTIONAL(CacheTilesOf, kCacheTiles, int, 0);

// cp.async.wait_group n for a run-time n in 0 .. kMax (the instruction takes a constant): waits until at most n of
// this thread's copy groups are pending. n > kMax waits for kMax.
template <int kMax>
CKGEN_DEVICE void cp_wait_upto(int n) {
  if constexpr (kMax > 0) {
    if (n >= kMax) {
      cp_wait<kMax>();
      return;
    }
    cp_wait_upto<kMax - 1>(n);
  } else {
    (void)n;
    cp_wait<0>();
  }
}

}  // namespace detail

//   kCacheWaitTiles: the cp.async prologue commits one group per tile and pass 1 waits for each tile's group
//   only (tile t starts while later tiles are in flight) up to this many tiles; longer caches land in one group.
constexpr int kCacheWaitTiles = 16;

template <class Cfg>
constexpr int cache_tiles() {
  return detail::CacheTilesOf<Cfg>::value;
}

template <class Cfg>
constexpr int cache_words() {
  using TS = typename Select<Cfg::kResidual, typename Cfg::TRes, typename Cfg::TIn>::type;
  return (Cfg::kVec * static_cast<int>(sizeof(TS)) + 3) / 4;
}

template <class Cfg>
constexpr int cache_bytes() {
  return cache_tiles<Cfg>() * Cfg::kRegVecs * Cfg::kThreads * cache_words<Cfg>() * 4;
}

// One thread's view of the row cache: its slots, the cp.async prologue of x and the per-tile waits.
template <class Cfg>
struct RowCache {
  using TIn = typename Cfg::TIn;
  using TS = typename Select<Cfg::kResidual, typename Cfg::TRes, TIn>::type;
  static constexpr int kTiles = cache_tiles<Cfg>();
  static constexpr int kR = Cfg::kRegVecs;
  static constexpr int kVec = Cfg::kVec;
  static constexpr int kStep = kVec * Cfg::kRowThreads;  // columns between a thread's vectors
  static constexpr int kWords = cache_words<Cfg>();
  // the cp.async prologue: x's vectors are whole 16-byte chunks and fit v's slots
  static constexpr bool kAsync = kTiles > 0 && CKGEN_ROWOPS_ASYNC && (kVec * sizeof(TIn)) % 16 == 0 &&
                                 sizeof(TS) >= sizeof(TIn);
  static constexpr bool kGroupPerTile = kTiles <= kCacheWaitTiles;

  // A slot is kQ 16-byte chunks (kWords a multiple of 4), chunk-major over the threads, or one piece of kWords
  // < 4 words: either way consecutive threads touch consecutive 16 (or 4 * kWords) bytes.
  static constexpr bool kChunked = kWords % 4 == 0;
  static constexpr int kQ = kChunked ? kWords / 4 : 1;
  static constexpr int kPiece = kChunked ? 4 : kWords;  // words of one piece

  uint32_t* mine;  // the cache + this thread's offset (tid * kPiece words)

  CKGEN_DEVICE RowCache(uint32_t* cache, int tid)
      : mine(kTiles > 0 ? cache + static_cast<long long>(tid) * kPiece : nullptr) {}

  // chunk q of this thread's vector j of tile `tile`
  CKGEN_DEVICE uint32_t* chunk(int tile, int j, int q) const {
    return mine + static_cast<long long>((tile * kR + j) * kQ + q) * Cfg::kThreads * kPiece;
  }
  // the first kW words of the slot (kW <= kWords: x's words before a residual of a wider dtype replaces them)
  template <int kW>
  CKGEN_DEVICE void load(int tile, int j, uint32_t (&w)[kW]) const {
    if constexpr (kChunked) {
#pragma unroll
      for (int q = 0; q < (kW + 3) / 4; ++q) {
        const vec<uint32_t, 4> v = lds_load(reinterpret_cast<const vec<uint32_t, 4>*>(chunk(tile, j, q)));
#pragma unroll
        for (int k = 0; k < 4; ++k)
          if (4 * q + k < kW) w[4 * q + k] = v.v[k];
      }
    } else {
#pragma unroll
      for (int i = 0; i < kW; ++i) w[i] = lds_load(chunk(tile, j, 0) + i);
    }
  }
  CKGEN_DEVICE void store(int tile, int j, const uint32_t (&w)[kWords]) const {
    if constexpr (kChunked) {
#pragma unroll
      for (int q = 0; q < kQ; ++q) {
        vec<uint32_t, 4> v;
#pragma unroll
        for (int k = 0; k < 4; ++k) v.v[k] = w[4 * q + k];
        lds_store(reinterpret_cast<vec<uint32_t, 4>*>(chunk(tile, j, q)), v);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kWords; ++i) lds_store(chunk(tile, j, 0) + i, w[i]);
    }
  }

  // cp.async of x's vectors of `ntiles` tiles into their slots: xr is this thread's first column of the row (16-byte
  // aligned), `left` the row's columns from it (cols - rt * kVec; <= 0 for a thread past the last row). Partial
  // vectors and vectors past the row are zero-filled (nothing read past the row). One group per tile
  // (kGroupPerTile, waited by wait_tile) or one group for all, landed here.
  CKGEN_DEVICE void issue_x(const TIn* xr, int left, int ntiles) const {
    if constexpr (kAsync) {
      constexpr int kEB = static_cast<int>(sizeof(TIn));
      constexpr int kXC = kVec * kEB / 16;  // 16-byte chunks per vector
      for (int tile = 0; tile < ntiles; ++tile) {
#pragma unroll
        for (int j = 0; j < kR; ++j) {
          const int col = tile * Cfg::kTileCols + j * kStep;
          const int n = left - col;
          const int nb = (n < 0 ? 0 : (n > kVec ? kVec : n)) * kEB;
#pragma unroll
          for (int cc = 0; cc < kXC; ++cc) {
            const int b = nb - 16 * cc;  // <= 0: zero-filled, nothing read (the pointer is the row's own)
            const TIn* src = b > 0 ? xr + col + 16 * cc / kEB : xr;
            detail::cp16(detail::smem_u32(chunk(tile, j, cc)), src, b < 0 ? 0 : (b > 16 ? 16 : b));
          }
        }
        if (kGroupPerTile) detail::cp_commit();
      }
      if (!kGroupPerTile) {
        detail::cp_commit();
        detail::cp_wait<0>();
      }
    }
    (void)xr; (void)left; (void)ntiles;
  }
  // x of `tile` has landed (pass 1 goes forward: the groups of the ntiles - 1 - tile later tiles may pend).
  CKGEN_DEVICE void wait_tile(int ntiles, int tile) const {
    if constexpr (kAsync && kGroupPerTile) detail::cp_wait_upto<kTiles - 1>(ntiles - 1 - tile);
    (void)ntiles; (void)tile;
  }
};

// The workgroup's row cache (kCacheBytes > 0). CUDA: dynamic shared memory, the cross-wave scratch (kScratch
// bytes, set into `scratch`) first, then the cache; traps when the launch gave less than kScratch + kCacheBytes.
// Elsewhere: a static allocation (the scratch is the caller's).
template <int kScratch, int kCacheBytes>
CKGEN_DEVICE uint32_t* cache_memory(float*& scratch) {
#if defined(CKGEN_PLATFORM_CUDA)
  unsigned char* mem = detail::dynamic_smem(kScratch + kCacheBytes);
  if (mem == nullptr) trap("rowops: the launch gives less dynamic shared memory than Cfg::kLdsBytes (the row cache)");
  scratch = kScratch > 0 ? reinterpret_cast<float*>(mem) : nullptr;
  return reinterpret_cast<uint32_t*>(mem + kScratch);
#else
  (void)scratch;
  using Chunk = vec<uint32_t, 4>;
  CKGEN_LDS(Chunk, rowops_row_cache, kCacheBytes / 16);
  return reinterpret_cast<uint32_t*>(rowops_row_cache);
#endif
}

}  // namespace rowops
}  // namespace ckgen
