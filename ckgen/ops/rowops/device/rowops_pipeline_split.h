// rowops_pipeline_split.h (ckgen/ops/rowops/device): split rows (Cfg::kSplit > 0): a row longer than one
// workgroup holds in registers is cut into S = ceil(cols / kTileCols) slices (S <= kSplit) of one tile at most
// (balanced, slice_of, in the cluster path and on the emulator; one whole tile each but the last in the ticket
// path elsewhere: kBalancedTickets), each slice held in the registers of one workgroup for the whole op, so that x
// is read from global memory once:
//   1. the workgroup loads its slice (x, + residual -> s, written to s_out) and folds it into the kind's per-row
//      state (RowKind::fold, the looped pipeline's: softmax (m, d), layer norm (n, mean, M2), RMS norm sum v^2),
//      all-reduced over its threads (RowReduce::state);
//   2. the S partial states of the row are exchanged (SplitExchange): each workgroup publishes its own and
//      combines all S in rank order 0 .. S-1 (State::combine), the same sequence in every workgroup, so that
//      every slice gets bitwise the same row scalars whatever order the workgroups ran in;
//   3. y of the slice, from the registers (RowGroup::tile_y); rstd (Cfg::kRstd) by slice 0's workgroup; with
//      kWriteY false no y.
// int8 y (the amax pass would need a second exchange), row caches and staged rings are not split.
//
// ---------------------------------------------------------------- the exchange through a global workspace
// Every platform (AMD, the emulator; NVIDIA without thread-block clusters). Workspace (bytes, zero on entry and
// left zero by every launch; the planner's launch.workspace says the same: split.py workspace_expr):
//   [0, kSplitHeadBytes)        the ticket queue: one 64-bit counter
//   [kSplitHeadBytes, + 4 rows) one int arrival counter per row, padded to 16 bytes
//   then                        rows * kSplit * State::kN floats: the partial state of slice r of row i at
//                               (i * kSplit + r) * kN
// Tickets: a workgroup takes tickets t = 0, 1, ... from the queue (atomic_add) until t >= rows * S; ticket t is
// slice t % S of row t / S. Roles go by arrival, not by workgroup index: every ticket below t was taken by a
// workgroup that runs (or ran), so the row a workgroup waits for is the newest one, whose other slices go to the
// next workgroups to arrive. No deadlock as long as S workgroups can run at once (S <= 16; the emulator runs
// kCoResident = kSplit workgroups at once: emu::launch_coresident), whatever the grid and dispatch order.
// Per slice, thread 0: store the partial, fence, add 1 to the row's counter, spin (spin_pause) until it reaches S,
// fence, read the S partials (atomic_load: device-coherent), combine, fence, add 1 again; the workgroup that makes
// it 2S zeroes the row's partials and counter (everyone has read them). Each workgroup takes exactly one ticket
// >= rows * S, so the one that takes rows * S + grid - 1 is the last to touch the queue and zeroes it.
//
// Grid: any >= 1 (the planner's min(rows * S, kSplitGridCap)); one row per workgroup (kRowsPerBlock == 1).
//
// ---------------------------------------------------------------- the exchange in a thread-block cluster (sm_90)
// Where the host entry launches the kernel in clusters of S CTAs (launch_split_clusters: an sm_90 device, 2 <= S
// <= 16, a cluster of S fits, CKGEN_ROWOPS_CLUSTERS is not 0; S = cluster_size_for(cols): ceil(cols / kTileCols),
// or 8 or 16 above it where the slices stay long), on a persistent grid (at most as many clusters as fit on the
// device at once), cluster c takes rows c, c + clusters, ...; CTA r of it holds balanced slice r. Its slices
// come through a ring in dynamic shared memory filled by cp.async (rowops::split_stage_bytes<Cfg>(), which the host
// gives where the cluster still fits with it: run_split_ring), pipelined by one row (row i + 1's partial is sent
// before row i's state is awaited and its y written); without the ring, each row waits for its own exchange and
// the next row's slice is asked into L2 (prefetch_next). Either way the DRAM reads of the next rows overlap this
// row's reductions, exchange and stores. Per row, thread 0 of each CTA stores its partial state into a slot of
// every CTA of the cluster (distributed shared memory, st.async), each store completing its bytes on that CTA's
// mbarrier (kSets slot sets and mbarriers: ClusterRowExchange); every thread waits on its own CTA's mbarrier and
// combines the S partials in rank order: no workspace, no atomics, no spinning, and no cluster-wide barrier per
// row (whose release would also wait for the previous row's y stores). A cluster barrier after the mbarriers'
// initialization (every CTA runs before anyone stores into it) and one before exit.
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"
#include "rowops_default_policy.h"
#include "rowops_pipeline_one_pass.h"
#include "rowops_problem.h"
#include "rowops_row.h"
#if defined(CKGEN_PLATFORM_CUDA)
#include <stdlib.h>
#include <string.h>

#include "ckgen/blocks/nv_cluster.h"
#endif

namespace ckgen {
namespace rowops {
namespace detail {
CKGEN_CFG_OPTIONAL(SplitOf, kSplit, int, 0);
}  // namespace detail

constexpr long long kSplitHeadBytes = 256;

template <class Cfg>
constexpr int split_max() {
  return detail::SplitOf<Cfg>::value;
}

// The workspace of a split-row launch (above), as pointers.
template <class P>
struct SplitWorkspace {
  static constexpr int kN = P::State::kN;
  unsigned long long* queue;
  int* counters;
  float* partials;

  CKGEN_DEVICE SplitWorkspace(void* ws, int rows) {
    unsigned char* b = static_cast<unsigned char*>(ws);
    queue = reinterpret_cast<unsigned long long*>(b);
    counters = reinterpret_cast<int*>(b + kSplitHeadBytes);
    const long long cbytes = (static_cast<long long>(rows) * 4 + 15) / 16 * 16;
    partials = reinterpret_cast<float*>(b + kSplitHeadBytes + cbytes);
  }
  CKGEN_DEVICE float* slot(long long row, int rank) const {
    return partials + (row * split_max<typename P::Cfg>() + rank) * kN;
  }
};

// Thread 0 of each workgroup of a row: its partial in, the row's state (all S partials in rank order) out.
template <class P>
struct SplitExchange {
  using State = typename P::State;

  CKGEN_DEVICE static State run(const SplitWorkspace<P>& w, long long row, int rank, int nsplit, const State& mine) {
    float* own = w.slot(row, rank);
#pragma unroll
    for (int i = 0; i < State::kN; ++i) gstore(own + i, mine.v[i]);
    fence_device();
    int* count = w.counters + row;
    atomic_add(count, 1);
    while (atomic_load(count) < nsplit) spin_pause(count);
    fence_device();
    State acc = read(w, row, 0);
    for (int r = 1; r < nsplit; ++r) acc = State::combine(acc, read(w, row, r));
    fence_device();
    if (atomic_add(count, 1) == 2 * nsplit - 1) {  // the last to leave: the row's slots back to zero
      for (int r = 0; r < nsplit; ++r) {
#pragma unroll
        for (int i = 0; i < State::kN; ++i) gstore(w.slot(row, r) + i, 0.0f);
      }
      gstore(count, 0);
    }
    return acc;
  }
  CKGEN_DEVICE static State read(const SplitWorkspace<P>& w, long long row, int rank) {
    State s;
    const float* p = w.slot(row, rank);
#pragma unroll
    for (int i = 0; i < State::kN; ++i) s.v[i] = atomic_load(p + i);
    return s;
  }
};

// The row's state in every thread of the workgroup, through the workspace (thread 0 exchanges, LDS `shared` of kN
// floats brings it to the others).
template <class P>
struct GlobalRowExchange {
  using State = typename P::State;
  const SplitWorkspace<P>& w;
  long long row;
  int rank, nsplit;
  float* shared;

  CKGEN_DEVICE State operator()(int tid, State st) const {
    if (tid == 0) {
      st = SplitExchange<P>::run(w, row, rank, nsplit, st);
#pragma unroll
      for (int i = 0; i < State::kN; ++i) lds_store(shared + i, st.v[i]);
    }
    barrier();
#pragma unroll
    for (int i = 0; i < State::kN; ++i) st.v[i] = lds_load(shared + i);
    return st;
  }
};

// Which slices the ticket path (run_split) takes: slice_of's balanced ones on the emulator (where registers cost
// nothing: rung 2 checks slice_of against float64 there), slices of one whole tile each elsewhere (slice r from
// column r * kTileCols): moved per ticket, a slice's pointers spill (sm_90a softmax 512 x 4 at 64 registers: 8
// bytes; gfx942's residual layer norm: 10 SGPRs). The cluster path (sm_90) moves them once per workgroup and
// always takes balanced slices.
#if defined(CKGEN_PLATFORM_EMU)
constexpr bool kBalancedTickets = true;
#else
constexpr bool kBalancedTickets = false;
#endif

// Slice `rank` of `nsplit` of every row, as a row of its own: columns [rank * w, min((rank + 1) * w, cols)), w =
// ceil(ceil(cols / kVec) / nsplit) vectors (the slices of a row differ by at most one vector each; none is empty
// and w <= kTileCols for nsplit = ceil(cols / kTileCols), or any nsplit cluster_takes): the tensors' pointers moved
// to its first column (a whole number of vectors: aligned where the row is), cols its length. The row's length
// stays the caller's (the statistics' finish).
template <class P>
CKGEN_DEVICE RowArgs<P> slice_of(const RowArgs<P>& a, int rank, int nsplit) {
  const int vecs = (a.cols + P::kVec - 1) / P::kVec;
  const int w = (vecs + nsplit - 1) / nsplit * P::kVec;
  const int start = rank * w < a.cols ? rank * w : a.cols;
  RowArgs<P> s = a;
  s.cols = a.cols - start < w ? a.cols - start : w;
  s.x += start;
  if (s.residual != nullptr) s.residual += start;
  if (s.weight != nullptr) s.weight += start;
  if (s.bias != nullptr) s.bias += start;
  if (s.y != nullptr) s.y += start;
  if (s.s_out != nullptr) s.s_out += start;
  return s;
}

template <class P>
struct SplitPipeline {
  static_assert(P::kSingle && P::kRowsPerBlock == 1 && !P::kCached && P::kStages == 0 && !P::kQuantI8,
                "SplitPipeline: one single-pass tile per workgroup, one row per workgroup, no row cache, staged "
                "ring or int8 y");
  using State = typename P::State;

  // The workgroup's partial state of the slice in g.buf (all-reduced over its threads).
  CKGEN_ROWOPS_STEP static State partial(const RowGroup<P>& g, RowReduce<P>& red) {
    State st = State::init();
    const typename RowGroup<P>::Stats ts{g.buf, g.k};
    by_mask(g.k.full, g.e.vec_row, [&](auto m) CKGEN_ROWOPS_LAMBDA_FORCED { P::Kind::fold(ts, m, g.e.c, st); });
    return red.state(st);
  }
  // The slice's outputs from the row's state st (a row of `cols`) and the slice in g.buf (tile `tile` of g's
  // row): rstd (slice 0), y.
  CKGEN_ROWOPS_STEP static void output(RowGroup<P>& g, const State& st, int rank, int cols, int tile = 0) {
    const RowScalars rs = P::Kind::finish(st, cols, g.a.eps);
    if (rank == 0) g.write_rstd(rs);
    if constexpr (P::kWriteY) {
      TileWeights<P> wts;
      g.fast = g.fast_tile();
      g.by_kind(wts, true, tile, [&](auto kM, auto kFast) { g.tile_y(kM, kFast, tile, rs, 1.0f, wts); });
    }
  }

  // Slice `rank` of `row`: tile `tile` of sa's row (slice_of's args and tile 0, or the row's and tile rank; cols:
  // the row's length): the workgroup's partial state, the row's by `exchange` (State(tid, partial): the row's state
  // in every thread), y of the slice. The slice comes from source(g) (GlobalSource, or the cluster path's ring:
  // SplitRingSource), refilled once its values are folded.
  template <class X, class MakeSource>
  CKGEN_DEVICE static void run(const RowArgs<P>& sa, int cols, const RowEnv<P>& e, RowReduce<P>& red, long long row,
                               int rank, int tile, const X& exchange, const MakeSource& source) {
    RowGroup<P> g(sa, e, row);
    auto src = source(g);
    src.first(g, tile);
    const State st = partial(g, red);
    src.refill();
    output(g, exchange(e.tid, st), rank, cols, tile);
  }
};

// The tickets of this workgroup (above): ticket and shared are LDS (one 64-bit word, kN floats).
template <class P>
CKGEN_DEVICE void run_split(const RowArgs<P>& a, const RowEnv<P>& e, RowReduce<P>& red, void* workspace,
                            unsigned long long* ticket, float* shared) {
  const SplitWorkspace<P> w(workspace, a.rows);
  const int nsplit = (a.cols - 1) / P::kTile + 1;
  const unsigned long long total = static_cast<unsigned long long>(a.rows) * static_cast<unsigned>(nsplit);
  for (;;) {
    if (e.tid == 0) lds_store(ticket, atomic_add(w.queue, 1ull));
    barrier();
    const unsigned long long t = lds_load(ticket);
    if (t >= total) {
      if (e.tid == 0 && t == total + static_cast<unsigned>(grid_dim(0)) - 1) gstore(w.queue, 0ull);
      return;
    }
    const long long row = static_cast<long long>(t / static_cast<unsigned>(nsplit));
    const int rank = static_cast<int>(t % static_cast<unsigned>(nsplit));
    const GlobalRowExchange<P> ex{w, row, rank, nsplit, shared};
    auto source = [](const RowGroup<P>& g) { return GlobalSource<P>(g); };
    if constexpr (kBalancedTickets)
      SplitPipeline<P>::run(slice_of(a, rank, nsplit), a.cols, e, red, row, rank, 0, ex, source);
    else
      SplitPipeline<P>::run(a, a.cols, e, red, row, rank, rank, ex, source);
  }
}

#if defined(CKGEN_PLATFORM_CUDA)
// The most CTAs of a row's cluster: 16, the non-portable cluster size H100 / H200 allow (ClusterRowExchange's slots).
constexpr int kClusterMaxSplit = 16;

// Whether a cluster of `nsplit` CTAs may take a row of `cols` (Cfg: the tile and vector): at least ceil(cols /
// kTileCols) (no slice longer than a tile), at most kClusterMaxSplit, and no slice empty (slice_of's last one starts
// inside the row).
template <class Cfg>
CKGEN_HD bool cluster_takes(int cols, int nsplit) {
  const int vecs = (cols + Cfg::kVec - 1) / Cfg::kVec;
  return cols > 0 && nsplit >= (cols - 1) / Cfg::kTileCols + 1 && nsplit <= kClusterMaxSplit &&
         (nsplit - 1) * ((vecs + nsplit - 1) / nsplit) < vecs;
}

// The cluster's size for a row of `cols` (0 for an empty row): S = ceil(cols / kTileCols), raised to 8 (from 5..7)
// or 16 (from 9..15) where the row's balanced slices still hold two thirds of a tile each. Measured on an H100
// (bench/debug/split_clusters.py, softmax, 1024 rows, 512 x 4 slices at two per SM): clusters of 8 and 16 ran
// well above those of 5-7 and 10-13 with slices of at least 1446 of the tile's 2048 vectors (100352 columns: 74%
// of copy at 7, 86% at 8), and below them with 1280 or fewer (151936: 69% at 10, 61% at 16). With the wide slices
// of split.py's WIDE_SLICES (one workgroup per SM) 7 -> 8 gained at four of six widths (140000: 87 -> 91%) and lost
// 1.6 and 3.4 points at two (170000, 132000; bench/runs/2026-12-06e_h100_split_tiles_wide.txt, ..._wide_slices.txt).
template <class Cfg>
CKGEN_HD int cluster_size_for(int cols) {
  if (cols <= 0) return 0;
  const int s = (cols - 1) / Cfg::kTileCols + 1, vecs = (cols + Cfg::kVec - 1) / Cfg::kVec;
  const int up = s > 4 && s < 8 ? 8 : (s > 8 && s < 16 ? 16 : s);
  const bool long_slices = 3 * ((vecs + up - 1) / up) >= 2 * (Cfg::kTileCols / Cfg::kVec);
  return up != s && long_slices && cluster_takes<Cfg>(cols, up) ? up : s;
}

// The row's state through the cluster's shared memory (above). `slots`: kSets x kMaxSplit x kN floats, slice r's
// partial of the cluster's it-th row at ((it % kSets) * kMaxSplit + r) * kN in every CTA; `bars`: an mbarrier per
// set (one arrival, thread 0's, and kN x 4 bytes from each slice). send: thread 0 stores the CTA's partial into
// every CTA's slot (st.async, completing bytes on that CTA's mbarrier); receive: every thread waits for its CTA's
// mbarrier and combines the S partials in rank order. No cluster barrier: a row's exchange waits for nothing but
// its S partials. A set is used again kSets rows later. Each CTA runs, per row i, send(i) then receive(i - d)
// (d = 0, or 1 in the pipelined path: run_split_cluster), and send(i) starts with a workgroup barrier, which every
// thread reaches after its reads of receive(i - 1 - d). A peer stores into set i % kSets (for row i + kSets) only
// after its receive(i + kSets - d), which needs this CTA's send(i + kSets - d), which follows this CTA's receive(i)
// as long as kSets - d >= 1 + d: kSets = 4 covers d <= 1 (and the mbarrier's phase of row i completes before any
// of row i + kSets starts, by the same chain).
template <class P>
struct ClusterRowExchange {
  using State = typename P::State;
  static constexpr int kMaxSplit = kClusterMaxSplit, kSets = 4;
  float* slots;
  uint64_t* bars;
  int set, rank, nsplit;
  unsigned phase;  // the phase of bars[set] this row completes (its uses so far, mod 2)

  CKGEN_DEVICE ClusterRowExchange(float* sl, uint64_t* b, int it, int rk, int ns)
      : slots(sl), bars(b), set(it % kSets), rank(rk), nsplit(ns), phase(static_cast<unsigned>((it / kSets) & 1)) {}

  CKGEN_DEVICE void send(int tid, const State& st) const {
    float* mine = slots + set * kMaxSplit * State::kN;
    barrier();  // every thread's reads of the rows received before are done (above)
    if (tid == 0) {
      nv::peer_bar_expect(bars + set, static_cast<unsigned>(nsplit * State::kN * 4));
      for (int r = 0; r < nsplit; ++r) {
#pragma unroll
        for (int i = 0; i < State::kN; ++i) nv::store_peer_async(mine + rank * State::kN + i, st.v[i], bars + set, r);
      }
    }
  }
  CKGEN_DEVICE State receive() const {
    const float* mine = slots + set * kMaxSplit * State::kN;
    nv::peer_bar_wait(bars + set, phase);
    State acc = slot(mine, 0);
    for (int r = 1; r < nsplit; ++r) acc = State::combine(acc, slot(mine, r));
    return acc;
  }
  CKGEN_DEVICE State operator()(int tid, const State& st) const {
    send(tid, st);
    return receive();
  }
  CKGEN_DEVICE static State slot(const float* s, int r) {
    State t;
#pragma unroll
    for (int i = 0; i < State::kN; ++i) t.v[i] = s[r * State::kN + i];
    return t;
  }
  // thread 0: the mbarriers initialized; then every thread of every CTA: cluster_sync (the peers' barriers are
  // ready, and every CTA of the cluster runs, before anyone stores into a peer)
  CKGEN_DEVICE static void init(uint64_t* bars, int tid) {
    if (tid == 0) {
      for (int i = 0; i < kSets; ++i) nv::peer_bar_init(bars + i, 1);
    }
    nv::cluster_sync();
  }
};

// Ask for this thread's vectors of the slice (sa: slice_of) of `row` (x, and the residual) to be brought into L2
// (nothing past the last row or the slice's end): a hint, no value is read.
template <class P>
CKGEN_DEVICE void prefetch_next(const RowArgs<P>& sa, const RowEnv<P>& e, long long row) {
  if (row >= sa.rows) return;
  RowGroup<P> g(sa, e, row);
  g.set_tile(0);
#pragma unroll
  for (int j = 0; j < P::kR; ++j) {
    if (g.k.nv(j) <= 0) continue;
    const long long c = RowPolicy<P>::col0(0, j);
    asm volatile("prefetch.global.L2 [%0];" ::"l"(g.xr + c));
    if constexpr (P::kResidual) asm volatile("prefetch.global.L2 [%0];" ::"l"(g.rr + c));
  }
}

// The cluster path's source of a slice (its RowArgs: slice_of): stage `stage` of the CTA's ring. first
// (StagedSource::first: v into g.buf, s stored with a residual), reread (v again from the stage: s recomputed, not
// stored), refill (the stage to the slice of row `next`, or an empty copy group past the last row: one group per
// call either way).
template <class P>
struct SplitRingSource : StagedSource<P> {
  long long next;

  CKGEN_DEVICE SplitRingSource(const RowGroup<P>& g, const typename P::Ring& r, int s, long long nx)
      : StagedSource<P>(g, r, s, nx), next(nx) {}
  CKGEN_ROWOPS_STEP void reread(RowGroup<P>& g) const {
    g.set_tile(0);
    if constexpr (P::kResidual) {
      typename P::FX xv[P::kR];
      typename P::FR rv[P::kR];
#pragma unroll
      for (int j = 0; j < P::kR; ++j) {
        xv[j] = this->ring.read_x(this->stage, j, g.k.nv(j));
        rv[j] = this->ring.read_r(this->stage, j, g.k.nv(j));
      }
      g.sum_residual(xv, rv);
    } else {
#pragma unroll
      for (int j = 0; j < P::kR; ++j) g.buf[j] = this->ring.read_x(this->stage, j, g.k.nv(j));
    }
  }
  CKGEN_ROWOPS_STEP void refill() {
    if (next < this->a.rows) StagedSource<P>::issue(this->ring, this->a, this->e, this->stage, next);
    detail::cp_commit();
  }
};

// The ring path of run_split_cluster, pipelined by one row: per row i of the cluster, (A) slice i + 1 from its
// stage, its partial state sent to the peers; (B) row i's state received, slice i read again from its stage, y
// written, and the stage refilled with row i + kSplitStages. The exchange of row i + 1 is in flight while row i's
// y is computed and stored, and the stage of row i stays in the ring until then: kSplitStages = 3 holds rows i,
// i + 1 and the copies of row i + 2.
template <class P>
CKGEN_DEVICE void run_split_ring(const RowArgs<P>& a, int cols, const RowEnv<P>& e, RowReduce<P>& red, float* slots,
                                 uint64_t* bars, const typename P::Ring& ring, int rank, int nsplit) {
  static_assert(kSplitStages == 3, "run_split_ring: rows i and i + 1 in the ring, row i + 2 in flight");
  const int stride = nv::clusters();
  const long long first = nv::cluster_id();
#pragma unroll 1
  for (int s = 0; s < kSplitStages; ++s) {  // prologue: the first kSplitStages rows in flight, a group each
    if (first + s * stride < a.rows) StagedSource<P>::issue(ring, a, e, s, first + s * stride);
    detail::cp_commit();
  }
  auto source = [&](const RowGroup<P>& g, long long row, int it) {
    return SplitRingSource<P>(g, ring, it % kSplitStages, row + static_cast<long long>(kSplitStages) * stride);
  };
  auto send = [&](long long row, int it) {  // (A) the partial of the it-th row
    RowGroup<P> g(a, e, row);
    source(g, row, it).first(g, 0);
    ClusterRowExchange<P>(slots, bars, it, rank, nsplit).send(e.tid, SplitPipeline<P>::partial(g, red));
  };
  if (first < a.rows) {
    detail::cp_wait<kSplitStages - 1>();  // row 0's group (of the prologue's three)
    send(first, 0);
  }
  int it = 0;
  for (long long row = first; row < a.rows; row += stride, ++it) {
    if (row + stride < a.rows) {
      detail::cp_wait<kSplitStages - 2>();  // row i + 1's group landed (pending: it and row i + 2's)
      send(row + stride, it + 1);
    }
    RowGroup<P> g(a, e, row);  // (B) row i
    auto src = source(g, row, it);
    const typename P::State st = ClusterRowExchange<P>(slots, bars, it, rank, nsplit).receive();
    src.reread(g);
    SplitPipeline<P>::output(g, st, rank, cols);
    src.refill();
  }
  detail::cp_wait<0>();
}

// The rows of this cluster: S = the cluster's size (cluster_size_for, or as the environment says; cluster_takes
// checked: a trap). With `ring` (the launch gave split_stage_bytes of dynamic shared memory) and aligned x (and
// residual): run_split_ring; else direct loads, each row's exchange waited for before its y, the next row's slice
// asked into L2 (prefetch_next).
template <class P>
CKGEN_DEVICE void run_split_cluster(const RowArgs<P>& a, const RowEnv<P>& e, RowReduce<P>& red, float* slots,
                                    uint64_t* bars, unsigned char* ring_mem) {
  const int nsplit = nv::cluster_size();
  if (!cluster_takes<typename P::Cfg>(a.cols, nsplit)) trap("rowops: a cluster whose slices do not fit the row");
  const int rank = nv::cluster_rank();
  const RowArgs<P> sa = slice_of(a, rank, nsplit);
  ClusterRowExchange<P>::init(bars, e.tid);
  bool done = false;
  if constexpr (split_stage_bytes<typename P::Cfg>() > 0) {
    if (ring_mem != nullptr && e.x_ok && (!P::kResidual || e.r_ok)) {
      run_split_ring(sa, a.cols, e, red, slots, bars, typename P::Ring(ring_mem, e.tid), rank, nsplit);
      done = true;
    }
  }
  if (!done) {
    const int stride = nv::clusters();
    int it = 0;
    for (long long row = nv::cluster_id(); row < a.rows; row += stride) {
      prefetch_next(sa, e, row + stride);
      SplitPipeline<P>::run(sa, a.cols, e, red, row, rank, 0, ClusterRowExchange<P>(slots, bars, it++, rank, nsplit),
                            [](const RowGroup<P>& g) { return GlobalSource<P>(g); });
    }
  }
  nv::cluster_sync();  // no CTA of the cluster exits while another may still store into it
}

// Host: launch `kernel` in clusters of S = cluster_size_for(cols) CTAs (CKGEN_ROWOPS_CLUSTERS=N in the
// environment: N, where cluster_takes says the row takes it) on a persistent grid (`grid` / S clusters, at least
// one, at most as many as fit on the device at once), or return -1 with nothing launched where the cluster path
// does not apply (not an sm_90 device, S outside 2..16, CKGEN_ROWOPS_CLUSTERS=0, no cluster of S fits: asked once
// per device and S, or the launch failed). The per-call cost: a getenv and a cudaGetDevice.
template <class Cfg, class... KArgs, class... Args>
inline int launch_split_clusters(void (*kernel)(KArgs...), long long grid, int cols, unsigned threads, void* stream,
                                 Args... args) {
  const char* env = getenv("CKGEN_ROWOPS_CLUSTERS");  // (read per call: a process may switch paths)
  const bool enabled = env == nullptr || strcmp(env, "0") != 0;
  const int want = env != nullptr ? atoi(env) : 0;  // N >= 2: clusters of N CTAs where they take the row
  const int nsplit = want >= 2 && cluster_takes<Cfg>(cols, want) ? want : cluster_size_for<Cfg>(cols);
  if (!enabled || nsplit < 2 || nsplit > kClusterMaxSplit || !nv::sm90_device()) return -1;
  // how many clusters of nsplit fit at once, per device (the last one asked, per host thread): 0 unknown, -1 none
  thread_local int dev_cached = -1;
  thread_local int fits[kClusterMaxSplit + 1] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  if (dev != dev_cached) {
    for (int& f : fits) f = 0;
    dev_cached = dev;
  }
  thread_local int smem[kClusterMaxSplit + 1] = {};  // the ring's bytes the launch gives (0 where a cluster fits only without it)
  if (fits[nsplit] == 0) {
    const void* f = reinterpret_cast<const void*>(kernel);
    int n = 0;
    if (nv::cluster_fits(kernel, static_cast<unsigned>(nsplit), threads, 0)) {
      // the ring where the device's opt-in limit holds it beside the kernel's static shared memory (the attribute
      // is the kernel's, per device: set again for every device asked)
      int optin = 0, configured = 0;
      cudaFuncAttributes fa;
      const size_t ring = static_cast<size_t>(split_stage_bytes<Cfg>());
      const bool room = ring > 0 &&
                        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) == cudaSuccess &&
                        cudaFuncGetAttributes(&fa, f) == cudaSuccess &&
                        fa.sharedSizeBytes + ring <= static_cast<size_t>(optin);
      (void)cudaGetLastError();
      smem[nsplit] = room && cuda_host::configure_smem(f, &configured, split_stage_bytes<Cfg>()) == 0
                         ? split_stage_bytes<Cfg>() : 0;
      n = nv::max_active_clusters(f, static_cast<unsigned>(nsplit), threads, static_cast<size_t>(smem[nsplit]));
      if (n <= 0 && smem[nsplit] > 0) {
        smem[nsplit] = 0;
        n = nv::max_active_clusters(f, static_cast<unsigned>(nsplit), threads, 0);
      }
    }
    fits[nsplit] = n > 0 ? n : -1;
  }
  if (fits[nsplit] < 0) return -1;
  const long long clusters = grid / nsplit < fits[nsplit] ? grid / nsplit : fits[nsplit];
  const long long gx = (clusters > 0 ? clusters : 1) * nsplit;
  (void)cudaGetLastError();
  const cudaError_t e = nv::launch_cluster(kernel, static_cast<unsigned>(gx), static_cast<unsigned>(nsplit), threads,
                                           static_cast<size_t>(smem[nsplit]), stream, args...);
  if (e == cudaSuccess) return 0;
  (void)cudaGetLastError();
  return -1;
}
#endif

}  // namespace rowops
}  // namespace ckgen
