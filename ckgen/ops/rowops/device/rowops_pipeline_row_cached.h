// rowops_pipeline_row_cached.h (ckgen/ops/rowops/device): the row-cached pipeline of the row ops (row_in = shared:
// Cfg::kCacheTiles > 0, kLooped): the looped pipeline (rowops_pipeline_looped.h) whose source keeps every tile of
// v in shared memory as pass 1 reads it (the row cache, rowops_rowcache.h), so that the later passes read it
// back from there and global memory is read once. Where the platform has cp.async and x is 16-byte aligned, x of
// the whole row is copied into the cache up front and pass 1 reads it from there too, each tile once its copies
// have landed.
//
//   CachedSource<P>            the source: first (pass 1, writing the cache), again (from the cache)
//   RowCachedPipeline<P, Wts>  one row group: LoopedStats and RowGroup::output over a CachedSource
#pragma once

#include "ckgen/platform.h"
#include "rowops_default_policy.h"
#include "rowops_pipeline_looped.h"
#include "rowops_problem.h"
#include "rowops_row.h"
#include "rowops_rowcache.h"

namespace ckgen {
namespace rowops {

template <class P>
struct CachedSource {
  using Cache = typename P::Cache;
  static_assert(P::kCached, "CachedSource: a row-cache configuration (kCacheTiles > 0)");

  const Cache cache;
  bool x_cached = false;  // pass 1 reads x from the cache (after cache.wait_tile)

  // the cache of this thread (memory: the workgroup's, cache_memory); with cp.async, x of the whole row first
  CKGEN_DEVICE CachedSource(const RowGroup<P>& g, uint32_t* memory) : cache(memory, g.e.tid) {
    if constexpr (Cache::kAsync) {
      x_cached = g.e.x_ok;
      if (g.e.x_ok) cache.issue_x(g.xr, g.ncols - g.e.rt * P::kVec, g.e.ntiles);
    }
  }

  // x of `tile` from the cache into out (its copies waited for)
  template <class F>
  CKGEN_DEVICE void cached_x(F (&out)[P::kR], const RowGroup<P>& g, int tile) const {
    cache.wait_tile(g.e.ntiles, tile);
#pragma unroll
    for (int j = 0; j < P::kR; ++j) cache.load(tile, j, out[j].w);
  }
  // Pass 1: x (+ residual -> s, stored) of `tile` into g.buf, then v into the cache unless it is there already
  // (x copied in, no residual).
  CKGEN_ROWOPS_STEP void first(RowGroup<P>& g, int tile) {
    g.set_tile(tile);
    if constexpr (P::kResidual) {
      typename P::FX xv[P::kR];
      typename P::FR rv[P::kR];
      if (x_cached) {
        cached_x(xv, g, tile);
        g.load_vecs(rv, g.rr, g.e.r_ok, tile);
      } else {
        g.load_vecs(xv, g.xr, g.e.x_ok, tile);
        g.load_vecs(rv, g.rr, g.e.r_ok, tile);
      }
      g.add_residual(xv, rv, tile);
    } else if (x_cached) {
      cached_x(g.buf, g, tile);
    } else {
      g.load_vecs(g.buf, g.xr, g.e.x_ok, tile);
    }
    if (P::kResidual || !x_cached) {
#pragma unroll
      for (int j = 0; j < P::kR; ++j) cache.store(tile, j, g.buf[j].w);
    }
  }
  // Later passes: v from the cache.
  CKGEN_ROWOPS_STEP void again(RowGroup<P>& g, int tile) {
    g.set_tile(tile);
#pragma unroll
    for (int j = 0; j < P::kR; ++j) cache.load(tile, j, g.buf[j].w);
  }
  CKGEN_DEVICE void refill() {}
};

template <class P, class Wts>
struct RowCachedPipeline {
  // one row group; memory: the workgroup's row cache (cache_memory)
  CKGEN_ROWOPS_STEP static void run(const RowArgs<P>& a, const RowEnv<P>& e, RowReduce<P>& red, long long grp,
                                    uint32_t* memory) {
    RowGroup<P> g(a, e, grp);
    CachedSource<P> src(g, memory);
    Wts wts;
    const RowScalars rs = LoopedStats<P>::run(g, src, red);
    g.output(rs, src, wts, red);
  }
};

}  // namespace rowops
}  // namespace ckgen
