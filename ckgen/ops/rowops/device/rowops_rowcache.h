// rowops_rowcache.h (ckgen/ops/rowops/device): the row cache of the looped row ops: a row kept in shared memory
// (LDS) between the passes, so that global memory is read once however long the row is (rowops_forward.h).
//
//   Cfg::kCacheTiles (optional, default 0)   tiles of a row the cache holds (0: no cache). Needs kLooped and no
//                                           kStages; cols <= kCacheTiles * kTileCols (checked: a trap).
//   cache_words<Cfg>()   32-bit words of one thread's vector of v (v as held: TRes with kResidual, else TIn)
//   cache_bytes<Cfg>()   kCacheTiles * kRegVecs * kThreads * cache_words * 4: the cache of the workgroup's rows
//
//   Layout: vector j of tile t of thread tid lives at words ((t * kRegVecs + j) * kThreads + tid) * kWords, so
//   consecutive threads touch consecutive slots (16-byte slots for 16-byte vectors: no bank conflicts). A thread
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

template <class C, class = void>
struct CacheTilesOf {
  static constexpr int value = 0;
};
template <class C>
struct CacheTilesOf<C, decltype((void)C::kCacheTiles, void())> {
  static constexpr int value = C::kCacheTiles;
};

// kWords words at p (p 4-byte aligned; 16-byte accesses where kWords allows and the slot is 16-byte aligned).
template <int kWords>
CKGEN_DEVICE void cache_store(uint32_t* p, const uint32_t* w) {
  if constexpr (kWords % 4 == 0) {
#pragma unroll
    for (int i = 0; i < kWords; i += 4) {
      vec<uint32_t, 4> v;
#pragma unroll
      for (int k = 0; k < 4; ++k) v.v[k] = w[i + k];
      lds_store(reinterpret_cast<vec<uint32_t, 4>*>(p + i), v);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kWords; ++i) lds_store(p + i, w[i]);
  }
}

template <int kWords>
CKGEN_DEVICE void cache_load(const uint32_t* p, uint32_t* w) {
  if constexpr (kWords % 4 == 0) {
#pragma unroll
    for (int i = 0; i < kWords; i += 4) {
      const vec<uint32_t, 4> v = lds_load(reinterpret_cast<const vec<uint32_t, 4>*>(p + i));
#pragma unroll
      for (int k = 0; k < 4; ++k) w[i + k] = v.v[k];
    }
  } else {
#pragma unroll
    for (int i = 0; i < kWords; ++i) w[i] = lds_load(p + i);
  }
}

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

}  // namespace rowops
}  // namespace ckgen
