// rowops_forward.h (ckgen/ops/rowops/device): row-wise ops over the last dimension of a rows x cols matrix:
// softmax, log-softmax, layer norm, RMS norm, each with an optional fused residual add and an optional int8
// output with a per-row scale. One body for AMD (wave64), the emulator and NVIDIA (warp of 32).
//
// The Cfg this body takes, its checks and the sizes derived from it (grid, LDS, staged ring): rowops_config.h.
//
// ---------------------------------------------------------------- entry
//   template <class Cfg>
//   CKGEN_DEVICE void rowops_forward(const TIn* x, const TRes* residual, const TW* weight, const TW* bias,
//                                    TOut* y, TRes* s_out, float* y_scale, int rows, int cols,
//                                    long long stride_x, long long stride_res, long long stride_y,
//                                    long long stride_s, float scale, float eps);
//   called from a kernel with a 1-D workgroup of Cfg::kThreads threads:
//     CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(Cfg::kThreads) void k(<the same parameters>) { rowops_forward<Cfg>(...); }
//   Grid: 1-D, rowops::grid_blocks<Cfg>(rows) workgroups = min(ceil(rows / kRowsPerBlock), kMaxGridBlocks);
//   any grid >= 1 is correct (workgroups loop over row groups with a grid stride). rows <= 0 or cols <= 0:
//   launch nothing (the body returns at once for cols <= 0).
//   Staged configurations (kStages > 0, below) want a persistent grid: rowops::grid_blocks<Cfg>(rows, resident)
//   = min(row groups, resident), resident = the workgroups the device holds at once (CUDA: SM count x
//   cudaOccupancyMaxActiveBlocksPerMultiprocessor with rowops::stage_bytes<Cfg>() of dynamic shared memory),
//   and on CUDA the launch must give rowops::stage_bytes<Cfg>() bytes of DYNAMIC shared memory (raising
//   cudaFuncAttributeMaxDynamicSharedMemorySize above 48 KiB). A launch with less dynamic shared memory
//   (e.g. 0) is still correct: the body then loads from global memory directly (it reads %dynamic_smem_size).
//
//   Matrices are row-major with a row stride (elements, >= cols) per tensor: x, residual, y, s_out. weight and
//   bias are vectors of cols elements. Pointers that may be null: residual and s_out (both non-null exactly
//   when kResidual), weight (when !kHasWeight), bias (when !kHasBias), y_scale (when !kQuantI8); the body
//   never touches a pointer its Cfg does not use. y may alias x and s_out may alias x or residual (same
//   element type and stride: in-place); no other overlap.
//
// ---------------------------------------------------------------- numerics (f32 throughout)
//   v = x, or with kResidual: s = x + residual rounded to TRes (written to s_out) and v = s (as stored,
//   like torch's `h = x + r; norm(h)`). The op (rowops_math.h) is applied to v:
//     softmax y = exp(scale*v - m) / d, log-softmax y = scale*v - m - log d (m = max scale*v, d = sum exp;
//     evaluated in base 2: one exp2_f32 per element and pass, v_exp_f32 / ex2.approx),
//     layer norm y = (v - mean) * rstd [* weight] [+ bias], rms norm y = v * rstd [* weight] [+ bias],
//     rstd = 1/sqrt(var + eps), var = mean((v - mean)^2) (population) or mean(v^2).
//   Single pass (kLooped == false; the row is in registers): softmax takes m by one all-reduce (max) and d by
//   a second (sum of 2^(t - m)); layer norm the mean by one all-reduce and sum (v - mean)^2 by a second (the
//   exact two-pass variance: any offset). Looped: per tile, softmax's running (m, d) (online softmax) and
//   layer norm's exact (n, mean, M2) of the tile merged into the running moments (Chan et al.); one all-reduce
//   of the state at the end.
//   y is cast to TOut (round to nearest even). kQuantI8 (TOut = int8_t): amax = max |y| over the row
//   (softmax: 1/d, exactly the largest y), y_scale[row] = amax / 127 and q = rne(y * (127 / amax)) saturated
//   to [-127, 127] (the product by the row's reciprocal may differ from y / scale by one ulp before rounding).
//   An all-zero row (amax == 0) gets y_scale = 1 and q = 0 (dequantizes exactly; no division by zero).
//
// ---------------------------------------------------------------- data path
//   A row is owned by kRowThreads threads (kRowsPerBlock rows per workgroup). It is cut into tiles of
//   kTileCols = kRegVecs * kVec * kRowThreads columns; in a tile, thread t of the row holds kRegVecs vectors of
//   kVec elements, vector j at column j * kVec * kRowThreads + t * kVec (consecutive threads read
//   consecutive 16 bytes: coalesced), packed in 32-bit registers (rowops_frag.h). Vector accesses are used
//   when the tensor's base and row stride keep every vector aligned (checked per tensor at run time),
//   per-element accesses otherwise and for the vectors that straddle the end of the row (rowops_frag.h: load /
//   store, clamped indices on AMD, predicated under CUDA); nothing outside [0, cols) of a row is touched.
//   Full tiles of aligned tensors take one straight run of vector loads (all in flight at once); only partial
//   tiles pay for masks, and their vectors that lie wholly past the end of the row (for every thread of the
//   row: a row-uniform branch) are skipped (a tile much wider than the row costs little more than a fitting one).
//     pass 1 (forward over tiles): load the tile (x, residual; write s), the thread's statistics;
//     all-reduce them over the row's threads (ckgen/blocks/reduce.h: group_allreduce within a wave,
//       MultiWave through LDS when kWavesPerRow > 1);
//     [kQuantI8 and not softmax: pass 2, backward over tiles: amax of y, all-reduce Max]
//     pass 3 (opposite direction to the previous pass): y = op(v), store.
//   The tile that ends a pass is still in registers and starts the next one; other tiles are re-read from
//   global memory (s_out when kResidual, else x), or with kCacheTiles > 0 from the row cache in shared memory
//   (rowops_rowcache.h: pass 1 writes every tile there; on CUDA x arrives there by cp.async before pass 1).
//   kLooped == false: the body is compiled for one tile (cols <= kTileCols, checked: a trap), so the row is read
//   once and y written once. kLooped == true: any
//   cols; rows longer than one tile read v twice (three times with the int8 amax pass), minus one tile.
//   Global bytes per element (single pass): sizeof(TIn) + sizeof(TOut), plus 2 * sizeof(TRes) with
//   kResidual; weight and bias are one row for all rows (L2 / L1). bf16: 4 (8 with the residual).
//
//   Staged tiles (kStages > 0; single pass only; CUDA sm_80+ and the emulator's warp-32 model, ignored on AMD):
//   a private cp.async ring of each thread's next row groups in shared memory (rowops_stages.h, StageRing).
//
#pragma once

#include "ckgen/blocks/reduce.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"
#include "rowops_frag.h"
#include "rowops_math.h"
#include "rowops_config.h"
#include "rowops_rowcache.h"
#include "rowops_stages.h"

namespace ckgen {
namespace rowops {

namespace detail {

CKGEN_DEVICE float abs_f32(float v) { return v < 0.0f ? -v : v; }

}  // namespace detail

template <class Cfg>
CKGEN_DEVICE void rowops_forward_impl(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                      const typename Cfg::TW* weight, const typename Cfg::TW* bias,
                                      typename Cfg::TOut* y, typename Cfg::TRes* s_out, float* y_scale, int rows,
                                      int cols, long long stride_x, long long stride_res, long long stride_y,
                                      long long stride_s, float scale, float eps, float* lds,
                                      unsigned char* stage_mem, bool stage_ok, uint32_t* cache) {
  static_assert(check_cfg<Cfg>(), "Cfg");
  using TIn = typename Cfg::TIn;
  using TRes = typename Cfg::TRes;
  using TW = typename Cfg::TW;
  using TOut = typename Cfg::TOut;
  using TS = typename Select<Cfg::kResidual, TRes, TIn>::type;  // v as held: s (TRes) or x (TIn)
  using State = typename StateOf<Cfg::kOp>::type;
  constexpr int kVec = Cfg::kVec;
  using FS = detail::Frag<TS, kVec>;
  using FX = detail::Frag<TIn, kVec>;
  using FR = detail::Frag<TRes, kVec>;
  using FW = detail::Frag<TW, kVec>;
  using FO = detail::Frag<TOut, kVec>;
  constexpr int kR = Cfg::kRegVecs;
  constexpr int kStep = kVec * Cfg::kRowThreads;  // columns between a thread's vectors
  constexpr int kTile = Cfg::kTileCols;
  constexpr bool kSoft = Cfg::kOp == kSoftmax || Cfg::kOp == kLogSoftmax;
  constexpr bool kSingle = !Cfg::kLooped;
  constexpr bool kAmaxPass = Cfg::kQuantI8 && Cfg::kOp != kSoftmax;
  constexpr int kStages = stages<Cfg>();
  (void)residual; (void)weight; (void)bias; (void)s_out; (void)y_scale; (void)stride_res; (void)stride_s;
  (void)lds; (void)eps; (void)stage_mem; (void)stage_ok; (void)cache;
  constexpr int kWL1 = detail::WeightL1Of<Cfg>::value;  // the L1 policies of the weight and bias vector loads
  constexpr int kBL1 = detail::BiasL1Of<Cfg>::value;
  constexpr int kWB = detail::WeightBatchOf<Cfg>::value;  // weight and bias vectors in flight at once (fast path)
  static_assert(kWB >= 1 && kWB <= kR && kR % kWB == 0, "kWeightBatch: 1 .. kRegVecs, a divisor of it");
  using Cache = RowCache<Cfg>;
  constexpr int kCacheTiles = Cache::kTiles;
  constexpr bool kCached = kCacheTiles > 0;

  if (cols <= 0) return;
  if constexpr (kSingle) {
    if (cols > kTile) trap("rowops: cols > Cfg::kTileCols for a single-pass (kLooped == false) configuration");
  }
  if constexpr (kCached) {
    if (cols > kCacheTiles * kTile) trap("rowops: cols > Cfg::kCacheTiles * Cfg::kTileCols (the row cache)");
  }
  const int ntiles = kSingle ? 1 : (cols - 1) / kTile + 1;

  const int tid = thread_id();
  const int rt = tid % Cfg::kRowThreads;  // thread within the row
  const float c = scale * kLog2e;         // softmax works in base 2
  const bool x_ok = detail::vec_ok<TIn, kVec>(x, stride_x);
  const bool y_ok = detail::vec_ok<TOut, kVec>(y, stride_y);
  bool r_ok = false, s_ok = false, w_ok = false, b_ok = false;
  if constexpr (Cfg::kResidual) {
    r_ok = detail::vec_ok<TRes, kVec>(residual, stride_res);
    s_ok = detail::vec_ok<TRes, kVec>(s_out, stride_s);
  }
  if constexpr (Cfg::kHasWeight) w_ok = detail::vec_ok<TW, kVec>(weight, 0);
  if constexpr (Cfg::kHasBias) b_ok = detail::vec_ok<TW, kVec>(bias, 0);

  Reducer<Cfg> reducer(lds);
  auto allreduce = [&](State s) -> State {
    if constexpr (Cfg::kWavesPerRow > 1) return reducer.template allreduce_state<State>(s);
    else return red::group_allreduce_state<Cfg::kRowThreads>(s);
  };
  auto allmax = [&](float v) -> float {
    if constexpr (Cfg::kWavesPerRow > 1) return reducer.template allreduce<red::Max>(v);
    else return red::group_allreduce<Cfg::kRowThreads, red::Max>(v);
  };
  auto allsum = [&](float v) -> float {
    if constexpr (Cfg::kWavesPerRow > 1) return reducer.template allreduce<red::Sum>(v);
    else return red::group_allreduce<Cfg::kRowThreads, red::Sum>(v);
  };

  const long long ngroups = (static_cast<long long>(rows) + Cfg::kRowsPerBlock - 1) / Cfg::kRowsPerBlock;
  const int gstride = grid_dim(0);
  const float inv_cols = 1.0f / static_cast<float>(cols);

  // Where the row ends in this thread's vectors of a tile (rowops_frag.h).
  using Counts = detail::TileCounts<kVec, kStep>;
  auto counts = [&](int ncols, int tile) -> Counts {
    const int rem = ncols - tile * kTile;  // no overflow: tile * kTile < cols
    return Counts{rem - rt * kVec, rem, rem >= kTile};
  };
  auto col0 = [&](int tile, int j) -> long long {  // relative to the thread's first column
    return static_cast<long long>(tile) * kTile + j * kStep;
  };

  // ---------------------------------------------------------------- staged ring (kStages > 0)
  const StageRing<Cfg> ring(stage_mem, tid);
  // Issue the copies of row group g into stage s (this thread's vectors; nothing for rows past the end).
  auto issue = [&](int s, long long g) {
    if constexpr (kStages > 0) {
      const long long row = g * Cfg::kRowsPerBlock + tid / Cfg::kRowThreads;
      const Counts k = counts(row < rows ? cols : 0, 0);
      const long long tcol = static_cast<long long>(rt) * kVec;
      const TRes* rr = nullptr;
      if constexpr (Cfg::kResidual) rr = residual + (row * stride_res + tcol);
      ring.issue(s, x + (row * stride_x + tcol), rr, k);
    }
    (void)s; (void)g;
  };

  // ---------------------------------------------------------------- one row group
  // kStaged: tile 0 comes from stage `stage` (refilled with group g + kStages * gstride once read).
  auto run_group = [&](long long g, auto kStaged, int stage) {
    constexpr bool kSt = decltype(kStaged)::value;
    (void)stage;
    const long long row = g * Cfg::kRowsPerBlock + tid / Cfg::kRowThreads;
    const int ncols = row < rows ? cols : 0;  // a thread past the last row accesses nothing, joins the reductions
    // This thread's first column of each tensor, kept per lane (ckgen::per_lane: on AMD a VGPR pair), so that
    // the per-vector and per-tile offsets are added to it instead of becoming SGPR bases, one per tensor and
    // vector (which ran out of SGPRs).
    const long long tcol = static_cast<long long>(rt) * kVec;
    const TIn* xr = per_lane(x + (row * stride_x + tcol));
    TOut* yr = per_lane(y + (row * stride_y + tcol));
    const TRes* rr = nullptr;
    TRes* sr = nullptr;
    if constexpr (Cfg::kResidual) {
      rr = per_lane(residual + (row * stride_res + tcol));
      sr = per_lane(s_out + (row * stride_s + tcol));
    }
    const TW* wr = nullptr;
    const TW* br = nullptr;
    if constexpr (Cfg::kHasWeight) wr = per_lane(weight + tcol);
    if constexpr (Cfg::kHasBias) br = per_lane(bias + tcol);
    (void)xr; (void)rr; (void)sr; (void)wr; (void)br;

    FS buf[kR];  // the tile in registers (TIn, or s as TRes)
    Counts k{};

    // ---- the row cache (kCacheTiles > 0, rowops_rowcache.h); with cp.async, x of the whole row first
    const Cache cache_(cache, tid);
    bool x_cached = false;  // pass 1 reads x from the cache (after cache_.wait_tile)
    if constexpr (Cache::kAsync) {
      x_cached = x_ok;
      if (x_ok) cache_.issue_x(xr, ncols - rt * kVec, ntiles);
    }
    (void)cache_; (void)x_cached;
    // v of the tile (buf) into the cache, unless it is there already (x copied in, no residual)
    auto cache_tile = [&](int tile) {
      if constexpr (kCached) {
        if (Cfg::kResidual || !x_cached) {
#pragma unroll
          for (int j = 0; j < kR; ++j) cache_.store(tile, j, buf[j].w);
        }
      }
      (void)tile;
    };

    // The tile's kR vectors of a row (src: this thread's first column of it) from global memory (detail::load_tile).
    auto load_vecs = [&](auto& out, const auto* src, bool ok, int tile) {
      detail::load_tile<kStep>(out, src + col0(tile, 0), k, ok);
    };

    const TileStats<kR, kVec, kStep, FS, Counts> ts{buf, k};  // the statistics of the tile in buf (rowops_math.h)

    // Pass 1 load: x (+ residual -> s, stored), into buf.
    auto load_first = [&](int tile) {
      k = counts(ncols, tile);
      if constexpr (Cfg::kResidual) {
        FX xv[kR];
        FR rv[kR];
        if constexpr (kSt) {
#pragma unroll
          for (int j = 0; j < kR; ++j) {
            xv[j] = ring.read_x(stage, j, k.nv(j));
            rv[j] = ring.read_r(stage, j, k.nv(j));
          }
        } else if (x_cached) {
          cache_.wait_tile(ntiles, tile);
#pragma unroll
          for (int j = 0; j < kR; ++j) cache_.load(tile, j, xv[j].w);
          load_vecs(rv, rr, r_ok, tile);
        } else {
          load_vecs(xv, xr, x_ok, tile);
          load_vecs(rv, rr, r_ok, tile);
        }
#pragma unroll
        for (int j = 0; j < kR; ++j) {
          float sv[kVec];
#pragma unroll
          for (int e = 0; e < kVec; ++e) sv[e] = detail::elem(xv[j], e) + detail::elem(rv[j], e);
          buf[j] = detail::pack<TRes, kVec>(sv);
        }
#pragma unroll
        for (int j = 0; j < kR; ++j)
          if (k.full || j * kStep < k.rem) detail::store<TRes, kVec>(sr + col0(tile, j), k.nv(j), s_ok, buf[j]);
      } else {
        if constexpr (kSt) {
#pragma unroll
          for (int j = 0; j < kR; ++j) buf[j] = ring.read_x(stage, j, k.nv(j));
        } else if (x_cached) {
          cache_.wait_tile(ntiles, tile);
#pragma unroll
          for (int j = 0; j < kR; ++j) cache_.load(tile, j, buf[j].w);
        } else {
          load_vecs(buf, xr, x_ok, tile);
        }
      }
      cache_tile(tile);
    };
    // Later passes (looped): v again, from the row cache, or from s_out (kResidual: this thread wrote it in
    // pass 1) or x.
    auto load_again = [&](int tile) {
      k = counts(ncols, tile);
      if constexpr (kCached) {
#pragma unroll
        for (int j = 0; j < kR; ++j) cache_.load(tile, j, buf[j].w);
        return;
      }
      const TS* src;
      bool ok;
      if constexpr (Cfg::kResidual) {
        src = sr;
        ok = s_ok;
      } else {
        src = xr;
        ok = x_ok;
      }
      load_vecs(buf, src, ok, tile);
    };
    // The stage just read is free once its values are used: refill it with the group kStages ahead.
    auto refill = [&]() {
      if constexpr (kSt) {
        const long long gn = g + static_cast<long long>(kStages) * gstride;
        if (gn < ngroups) issue(stage, gn);
        detail::cp_commit();
      }
    };

    // max t = max(v * c) over the tile's valid elements = |c| * max(v * sign(c))
    const float abs_c = c < 0.0f ? -c : c;
    auto tile_tmax = [&](auto kM) -> float {
      const float mx = c < 0.0f ? ts.max(kM, BoolConst<true>{}) : ts.max(kM, BoolConst<false>{});
      return mx * abs_c;
    };

    // The aligned full tile: every access of the tile's vectors (y, weight, bias) is one vector instruction,
    // with no branch per vector, so that the weight and bias loads of all vectors are in flight together.
    auto fast_tile = [&]() -> bool {
      return k.full && y_ok && (!Cfg::kHasWeight || w_ok) && (!Cfg::kHasBias || b_ok);
    };
    // The fast path's weight and bias vectors: all kR of a tile loaded before it (in flight together), or with
    // Cfg::kWeightBatch < kRegVecs in batches of kWB as the tile's vectors are used (fewer registers).
    FW wt[kR], bt[kR];
    auto load_wb = [&](int tile, int j0, int n) {  // vectors j0 .. j0 + n - 1
#pragma unroll
      for (int j = j0; j < j0 + n; ++j) {
        if constexpr (Cfg::kHasWeight) wt[j] = detail::load_vector_l1<TW, kVec, kWL1>(wr + col0(tile, j));
        if constexpr (Cfg::kHasBias) bt[j] = detail::load_vector_l1<TW, kVec, kBL1>(br + col0(tile, j));
      }
    };
    auto fast_wb = [&](int tile, int j, FW& w, FW& b) {  // vector j of the tile (fast path)
      if constexpr (kWB < kR) {
        if (j % kWB == 0) load_wb(tile, j, kWB);
      }
      if constexpr (Cfg::kHasWeight) w = wt[j];
      if constexpr (Cfg::kHasBias) b = bt[j];
      (void)w; (void)b;
    };
    (void)wt; (void)bt; (void)load_wb; (void)fast_wb;
    bool fast = false;

    // ---------------------------------------------------------------- pass 1: statistics
    RowScalars rs;
    if constexpr (kSingle) {
      load_first(0);
      if constexpr (kSoft) {
        const float tm = k.full ? tile_tmax(BoolConst<false>{}) : tile_tmax(BoolConst<true>{});
        refill();
        fast = fast_tile();
        const float m = allmax(tm);
        const float dl = k.full ? ts.expsum(BoolConst<false>{}, c, m) : ts.expsum(BoolConst<true>{}, c, m);
        const float d = allsum(dl);
        SoftmaxState st{{m, d}};
        rs = finish<Cfg::kOp>(st, cols, eps);
      } else if constexpr (Cfg::kOp == kLayerNorm) {
        const float sl = k.full ? ts.sum(BoolConst<false>{}) : ts.sum(BoolConst<true>{});
        refill();
        fast = fast_tile();
        const float mean = allsum(sl) * inv_cols;
        const float ml = k.full ? ts.m2(BoolConst<false>{}, mean) : ts.m2(BoolConst<true>{}, mean);
        const float m2 = allsum(ml);
        rs = RowScalars{mean, rsqrt_f32(m2 * inv_cols + eps)};
      } else {
        const float sl = k.full ? ts.sumsq(BoolConst<false>{}) : ts.sumsq(BoolConst<true>{});
        refill();
        fast = fast_tile();
        const float ss = allsum(sl);
        rs = RowScalars{0.0f, rsqrt_f32(ss * inv_cols + eps)};
      }
    } else {
      State st = State::init();
      auto tile_stats = [&](auto kM) {
        if constexpr (kSoft) {
          const float m = max_f32(st.v[0], tile_tmax(kM));
          const float d = ts.expsum(kM, c, m);
          st.v[1] = st.v[1] * exp2_f32(st.v[0] - m) + d;
          st.v[0] = m;
        } else if constexpr (Cfg::kOp == kLayerNorm) {
          // the tile's exact two-pass moments, merged into the running ones (Chan et al.)
          const float n = ts.count(kM);
          const float inv = n > 0.0f ? rcp_f32(n) : 0.0f;
          const float mean = ts.sum(kM) * inv;
          st = MomentState::combine(st, MomentState{{n, mean, ts.m2(kM, mean)}});
        } else {
          st.v[0] += ts.sumsq(kM);
        }
      };
      for (int tile = 0; tile < ntiles; ++tile) {
        load_first(tile);
        if (k.full) tile_stats(BoolConst<false>{});
        else tile_stats(BoolConst<true>{});
      }
      st = allreduce(st);
      rs = finish<Cfg::kOp>(st, cols, eps);
    }

    auto weights = [&](int tile, int j, FW& w, FW& b) {
      if constexpr (Cfg::kHasWeight) w = k.full && w_ok ? detail::load_vector_l1<TW, kVec, kWL1>(wr + col0(tile, j))
                                                         : detail::load<TW, kVec>(wr + col0(tile, j), k.nv(j), w_ok);
      if constexpr (Cfg::kHasBias) b = k.full && b_ok ? detail::load_vector_l1<TW, kVec, kBL1>(br + col0(tile, j))
                                                       : detail::load<TW, kVec>(br + col0(tile, j), k.nv(j), b_ok);
      (void)w; (void)b;
    };
    // f(kM, kFast) for the current tile's kind: fast (full, weights in registers), full, or masked (partial)
    auto by_kind = [&](auto&& f) {
      if (fast) f(BoolConst<false>{}, BoolConst<true>{});
      else if (k.full) f(BoolConst<false>{}, BoolConst<false>{});
      else f(BoolConst<true>{}, BoolConst<false>{});
    };
    // y of element e of vector j (before the cast / quantization)
    auto y_of = [&](int j, int e, const FW& w, const FW& b) -> float {
      const float v = detail::elem(buf[j], e);
      float yv;
      if constexpr (Cfg::kOp == kSoftmax) {
        yv = exp2_f32(v * c - rs.a) * rs.b;
      } else if constexpr (Cfg::kOp == kLogSoftmax) {
        yv = (v * c - rs.a) * kLn2;
      } else {
        yv = (Cfg::kOp == kLayerNorm ? v - rs.a : v) * rs.b;
        if constexpr (Cfg::kHasWeight) yv *= detail::elem(w, e);
        if constexpr (Cfg::kHasBias) yv += detail::elem(b, e);
      }
      (void)w; (void)b;
      return yv;
    };

    // ---------------------------------------------------------------- pass 2 (int8 only): amax of y
    float qmul = 1.0f;  // y -> q multiplier (127 / amax)
    if constexpr (Cfg::kQuantI8) {
      float amax;
      if constexpr (kAmaxPass) {
        amax = 0.0f;
        for (int tile = ntiles - 1; tile >= 0; --tile) {
          if (tile != ntiles - 1) load_again(tile);
          if (!kSingle) fast = fast_tile();  // single pass: set in pass 1
          if (fast && kWB == kR) load_wb(tile, 0, kR);
          auto tile_amax = [&](auto kM, auto kFast) {
#pragma unroll
            for (int j = 0; j < kR; ++j) {
              if (!ts.live(kM, j)) continue;
              FW w, b;
              if constexpr (decltype(kFast)::value) fast_wb(tile, j, w, b);
              else weights(tile, j, w, b);
#pragma unroll
              for (int e = 0; e < kVec; ++e) {
                const float a = detail::abs_f32(y_of(j, e, w, b));
                amax = max_f32(amax, ts.valid(kM, j, e) ? a : 0.0f);
              }
            }
          };
          by_kind(tile_amax);
        }
        amax = allmax(amax);
      } else {
        amax = rs.b;  // softmax: the largest y is exp(0) / d
      }
      qmul = amax > 0.0f ? 127.0f / amax : 0.0f;
      if (rt == 0 && row < rows) gstore(y_scale + row, amax > 0.0f ? amax / 127.0f : 1.0f);
    }

    // ---------------------------------------------------------------- pass 3: y
    // Starts from the tile the previous pass ended with (still in buf).
    const bool forward = kAmaxPass;
    for (int i = 0; i < ntiles; ++i) {
      const int tile = forward ? i : ntiles - 1 - i;
      if (i != 0) load_again(tile);
      // (the amax pass ended with this tile: fast and wt / bt are its own)
      if (i != 0 || !kAmaxPass) {
        if (!kSingle) fast = fast_tile();  // single pass: set in pass 1
        if (fast && kWB == kR) load_wb(tile, 0, kR);
      }
      auto tile_y = [&](auto kM, auto kFast) {
#pragma unroll
        for (int j = 0; j < kR; ++j) {
          if (!ts.live(kM, j)) continue;
          FW w, b;
          if constexpr (decltype(kFast)::value) fast_wb(tile, j, w, b);
          else weights(tile, j, w, b);
          float o[kVec];
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            const float yv = y_of(j, e, w, b);
            o[e] = Cfg::kQuantI8 ? yv * qmul : yv;
          }
          const FO f = detail::pack<TOut, kVec>(o);
          if constexpr (decltype(kFast)::value) detail::store_vector<TOut, kVec>(yr + col0(tile, j), f);
          else if constexpr (decltype(kM)::value) detail::store<TOut, kVec>(yr + col0(tile, j), k.nv(j), y_ok, f);
          else detail::store<TOut, kVec>(yr + col0(tile, j), kVec, y_ok, f);
        }
      };
      by_kind(tile_y);
    }
  };

  // ---------------------------------------------------------------- the row groups of this workgroup
  bool staged = false;
  if constexpr (kStages > 0) staged = stage_ok && x_ok && (!Cfg::kResidual || r_ok);
  if constexpr (kStages > 0) {
    if (staged) {
      long long g = block_id(0);
#pragma unroll 1
      for (int s = 0; s < kStages; ++s) {  // prologue: the first kStages groups in flight
        const long long gs = g + static_cast<long long>(s) * gstride;
        if (gs < ngroups) issue(s, gs);
        detail::cp_commit();
      }
      int stage = 0;
      for (; g < ngroups; g += gstride) {
        detail::cp_wait<kStages - 1>();  // this group's copies (the oldest pending group) have landed
        run_group(g, BoolConst<true>{}, stage);
        stage = stage + 1 == kStages ? 0 : stage + 1;
      }
      detail::cp_wait<0>();  // nothing left in flight (only empty groups remain)
      return;
    }
  }
  for (long long g = block_id(0); g < ngroups; g += gstride) run_group(g, BoolConst<false>{}, 0);
}

template <class Cfg>
CKGEN_DEVICE void rowops_forward(const typename Cfg::TIn* x, const typename Cfg::TRes* residual,
                                 const typename Cfg::TW* weight, const typename Cfg::TW* bias, typename Cfg::TOut* y,
                                 typename Cfg::TRes* s_out, float* y_scale, int rows, int cols, long long stride_x,
                                 long long stride_res, long long stride_y, long long stride_s, float scale,
                                 float eps) {
  float* lds = nullptr;
#if defined(CKGEN_PLATFORM_CUDA)
  constexpr bool kStaticScratch = scratch_bytes<Cfg>() > 0 && cache_bytes<Cfg>() == 0;
#else
  constexpr bool kStaticScratch = scratch_bytes<Cfg>() > 0;
#endif
  if constexpr (kStaticScratch) {
    CKGEN_LDS(float, rowops_scratch, scratch_bytes<Cfg>() / static_cast<int>(sizeof(float)));
    lds = rowops_scratch;
  }
  unsigned char* stage_mem = nullptr;
  bool stage_ok = false;
  if constexpr (stage_bytes<Cfg>() > 0) {
#if defined(CKGEN_PLATFORM_CUDA)
    extern __shared__ __align__(16) unsigned char rowops_dyn_smem[];
    stage_mem = rowops_dyn_smem;
    stage_ok = detail::dynamic_smem_bytes() >= static_cast<unsigned>(stage_bytes<Cfg>());
#else
    using Chunk = vec<uint32_t, 4>;
    CKGEN_LDS(Chunk, rowops_stages, stage_bytes<Cfg>() / 16);
    stage_mem = reinterpret_cast<unsigned char*>(rowops_stages);
    stage_ok = true;
#endif
  }
  uint32_t* cache = nullptr;
  if constexpr (cache_bytes<Cfg>() > 0) cache = cache_memory<scratch_bytes<Cfg>(), cache_bytes<Cfg>()>(lds);
  rowops_forward_impl<Cfg>(x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y,
                           stride_s, scale, eps, lds, stage_mem, stage_ok, cache);
}

}  // namespace rowops

using rowops::rowops_forward;

}  // namespace ckgen
