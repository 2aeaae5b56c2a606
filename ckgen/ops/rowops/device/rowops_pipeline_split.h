// rowops_pipeline_split.h (ckgen/ops/rowops/device): split rows (Cfg::kSplit > 0): a row longer than one
// workgroup holds in registers is cut into S = ceil(cols / kTileCols) slices of one tile each (S <= kSplit), each
// slice held in the registers of one workgroup for the whole op, so that x is read from global memory once:
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
// <= 16, a cluster of S fits, CKGEN_ROWOPS_CLUSTERS is not 0), on a persistent grid (at most as many clusters as
// fit on the device at once), cluster c takes rows c, c + clusters, ...; CTA r of it holds slice r. The CTA's
// slices of the cluster's next kSplitStages rows are in flight meanwhile: copied by cp.async into a ring in
// dynamic shared memory (rowops::split_stage_bytes<Cfg>(), which the host gives where the cluster still fits
// with it), or, without the ring, the next row's slice asked into L2 (prefetch_next). Either way the DRAM reads of
// the next rows overlap this row's reductions, exchange and stores. Per row, thread 0 of each CTA stores its
// partial state into a slot of every CTA of the cluster (distributed shared memory, st.async), each store
// completing its bytes on that CTA's mbarrier (two slots and mbarriers, by row parity: ClusterRowExchange); every
// thread waits on its own CTA's mbarrier and combines the S partials in rank order: no workspace, no atomics, no
// spinning, and no cluster-wide barrier per row (whose release would also wait for the previous row's y stores).
// A cluster barrier after the mbarriers' initialization (every CTA runs before anyone stores into it) and one
// before exit.
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

template <class P>
struct SplitPipeline {
  static_assert(P::kSingle && P::kRowsPerBlock == 1 && !P::kCached && P::kStages == 0 && !P::kQuantI8,
                "SplitPipeline: one single-pass tile per workgroup, one row per workgroup, no row cache, staged "
                "ring or int8 y");
  using State = typename P::State;

  // Slice `rank` of `row`: the workgroup's partial state, the row's by `exchange` (State(tid, partial): the row's
  // state in every thread), y of the slice. The slice comes from source(g) (GlobalSource, or the cluster path's
  // ring: SplitRingSource), refilled once its values are folded.
  template <class X, class MakeSource>
  CKGEN_DEVICE static void run(const RowArgs<P>& a, const RowEnv<P>& e, RowReduce<P>& red, long long row, int rank,
                               const X& exchange, const MakeSource& source) {
    RowGroup<P> g(a, e, row);
    auto src = source(g);
    TileWeights<P> wts;
    src.first(g, rank);
    State st = State::init();
    const typename RowGroup<P>::Stats ts{g.buf, g.k};
    if (g.k.full) P::Kind::fold(ts, BoolConst<false>{}, e.c, st);
    else P::Kind::fold(ts, BoolConst<true>{}, e.c, st);
    src.refill();
    st = exchange(e.tid, red.state(st));
    const RowScalars rs = P::Kind::finish(st, a.cols, a.eps);
    if (rank == 0) g.write_rstd(rs);
    if constexpr (P::kWriteY) {
      g.fast = g.fast_tile();
      g.by_kind(wts, true, rank, [&](auto kM, auto kFast) { g.tile_y(kM, kFast, rank, rs, 1.0f, wts); });
    }
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
    SplitPipeline<P>::run(a, e, red, row, rank, GlobalRowExchange<P>{w, row, rank, nsplit, shared},
                          [](const RowGroup<P>& g) { return GlobalSource<P>(g); });
  }
}

#if defined(CKGEN_PLATFORM_CUDA)
// The row's state through the cluster's shared memory (above). `slots`: 2 x kMaxSplit x kN floats, slice r's
// partial of a row of parity p at (p * kMaxSplit + r) * kN in every CTA; `bars`: an mbarrier per parity (one
// arrival, thread 0's, and kN x 4 bytes from each slice). Thread 0 stores the CTA's partial into every CTA's slot
// (st.async, completing bytes on that CTA's mbarrier); every thread waits for its CTA's mbarrier and combines the S
// partials in rank order. No cluster barrier: the row's exchange waits for nothing but the S partials. A slot and
// its mbarrier are used again two rows later: a peer writes them (for row i + 2) only once it has this CTA's
// partial of row i + 1, which thread 0 sends after the workgroup barrier below, which every thread reaches after
// its reads of row i's slots; and a peer's phase of row i + 2 cannot complete before this CTA's of row i has.
template <class P>
struct ClusterRowExchange {
  using State = typename P::State;
  static constexpr int kMaxSplit = 16;
  float* slots;
  uint64_t* bars;
  int parity, rank, nsplit;
  unsigned phase;  // the phase of bars[parity] this row completes (its uses so far, mod 2)

  CKGEN_DEVICE State operator()(int tid, State st) const {
    float* mine = slots + parity * kMaxSplit * State::kN;
    uint64_t* bar = bars + parity;
    barrier();  // every thread's reads of the previous row's slots are done (above)
    if (tid == 0) {
      nv::peer_bar_expect(bar, static_cast<unsigned>(nsplit * State::kN * 4));
      for (int r = 0; r < nsplit; ++r) {
#pragma unroll
        for (int i = 0; i < State::kN; ++i) nv::store_peer_async(mine + rank * State::kN + i, st.v[i], bar, r);
      }
    }
    nv::peer_bar_wait(bar, phase);
    State acc = slot(mine, 0);
    for (int r = 1; r < nsplit; ++r) acc = State::combine(acc, slot(mine, r));
    return acc;
  }
  CKGEN_DEVICE static State slot(const float* s, int r) {
    State t;
#pragma unroll
    for (int i = 0; i < State::kN; ++i) t.v[i] = s[r * State::kN + i];
    return t;
  }
  // thread 0: the two mbarriers initialized; then every thread of every CTA: cluster_sync (the peers' barriers are
  // ready, and every CTA of the cluster runs, before anyone stores into a peer)
  CKGEN_DEVICE static void init(uint64_t* bars, int tid) {
    if (tid == 0) {
      nv::peer_bar_init(bars, 1);
      nv::peer_bar_init(bars + 1, 1);
    }
    nv::cluster_sync();
  }
};

// Ask for this thread's vectors of slice `rank` of `row` (x, and the residual) to be brought into L2 (nothing past
// the last row or the row's end): a hint, no value is read.
template <class P>
CKGEN_DEVICE void prefetch_next(const RowArgs<P>& a, const RowEnv<P>& e, long long row, int rank) {
  if (row >= a.rows) return;
  RowGroup<P> g(a, e, row);
  g.set_tile(rank);
#pragma unroll
  for (int j = 0; j < P::kR; ++j) {
    if (g.k.nv(j) <= 0) continue;
    const long long c = RowPolicy<P>::col0(rank, j);
    asm volatile("prefetch.global.L2 [%0];" ::"l"(g.xr + c));
    if constexpr (P::kResidual) asm volatile("prefetch.global.L2 [%0];" ::"l"(g.rr + c));
  }
}

// The cluster path's source of a slice: stage `stage` of the CTA's ring (StagedSource::first), which refill()
// gives to the slice of row `next` (kSplitStages rows of the cluster ahead) once its values are folded.
template <class P>
struct SplitRingSource : StagedSource<P> {
  long long next;
  int rank;

  CKGEN_DEVICE SplitRingSource(const RowGroup<P>& g, const typename P::Ring& r, int s, long long nx, int rk)
      : StagedSource<P>(g, r, s, nx), next(nx), rank(rk) {}
  CKGEN_ROWOPS_STEP void refill() {
    if (next < this->a.rows) StagedSource<P>::issue(this->ring, this->a, this->e, this->stage, next, rank);
    detail::cp_commit();
  }
};

template <class P>
CKGEN_DEVICE ClusterRowExchange<P> exchange(float* slots, uint64_t* bars, int it, int rank, int nsplit) {
  return ClusterRowExchange<P>{slots, bars, it & 1, rank, nsplit, static_cast<unsigned>((it >> 1) & 1)};
}

// The rows of this cluster: S = the cluster's size = ceil(cols / kTile) (checked: a trap). With `ring` (the
// launch gave split_stage_bytes of dynamic shared memory) and aligned x (and residual): each CTA's slices of the
// cluster's next kSplitStages rows are in flight in its ring by cp.async while a row is reduced, exchanged and
// written; else direct loads, the next row's slice asked into L2 (prefetch_next).
template <class P>
CKGEN_DEVICE void run_split_cluster(const RowArgs<P>& a, const RowEnv<P>& e, RowReduce<P>& red, float* slots,
                                    uint64_t* bars, unsigned char* ring_mem) {
  const int nsplit = nv::cluster_size();
  if (nsplit != (a.cols - 1) / P::kTile + 1) trap("rowops: a cluster of other than ceil(cols / kTileCols) CTAs");
  const int rank = nv::cluster_rank();
  ClusterRowExchange<P>::init(bars, e.tid);
  int it = 0;  // rows of this cluster so far: parity it % 2, phase (it / 2) % 2
  const int stride = nv::clusters();
  const long long first = nv::cluster_id();
  if constexpr (split_stage_bytes<typename P::Cfg>() > 0) {
    if (ring_mem != nullptr && e.x_ok && (!P::kResidual || e.r_ok)) {
      const typename P::Ring ring(ring_mem, e.tid);
#pragma unroll 1
      for (int s = 0; s < kSplitStages; ++s) {  // prologue: the first kSplitStages rows in flight
        if (first + s * stride < a.rows) StagedSource<P>::issue(ring, a, e, s, first + s * stride, rank);
        detail::cp_commit();
      }
      int stage = 0;
      for (long long row = first; row < a.rows; row += stride) {
        detail::cp_wait<kSplitStages - 1>();  // this row's copies (the oldest pending group) have landed
        const long long next = row + static_cast<long long>(kSplitStages) * stride;
        SplitPipeline<P>::run(a, e, red, row, rank, exchange<P>(slots, bars, it++, rank, nsplit),
                              [&](const RowGroup<P>& g) { return SplitRingSource<P>(g, ring, stage, next, rank); });
        stage = stage + 1 == kSplitStages ? 0 : stage + 1;
      }
      detail::cp_wait<0>();
      nv::cluster_sync();  // no CTA of the cluster exits while another may still store into it
      return;
    }
  }
  for (long long row = first; row < a.rows; row += stride) {
    prefetch_next(a, e, row + stride, rank);
    SplitPipeline<P>::run(a, e, red, row, rank, exchange<P>(slots, bars, it++, rank, nsplit),
                          [](const RowGroup<P>& g) { return GlobalSource<P>(g); });
  }
  nv::cluster_sync();  // no CTA of the cluster exits while another may still store into it
}

// Host: launch `kernel` in clusters of S = ceil(cols / Cfg::kTileCols) CTAs on a persistent grid (`grid` / S
// clusters, at least one, at most as many as fit on the device at once), or return -1 with nothing launched where
// the cluster path does not apply (not an sm_90 device, S outside 2..16, CKGEN_ROWOPS_CLUSTERS=0 in the
// environment, no cluster of S fits: asked once per device and S, or the launch failed). The per-call cost: a
// getenv and a cudaGetDevice.
template <class Cfg, class... KArgs, class... Args>
inline int launch_split_clusters(void (*kernel)(KArgs...), long long grid, int cols, unsigned threads, void* stream,
                                 Args... args) {
  const char* env = getenv("CKGEN_ROWOPS_CLUSTERS");  // (read per call: a process may switch paths)
  const bool enabled = env == nullptr || strcmp(env, "0") != 0;
  const int nsplit = cols > 0 ? (cols - 1) / Cfg::kTileCols + 1 : 0;
  if (!enabled || nsplit < 2 || nsplit > 16 || !nv::sm90_device()) return -1;
  // how many clusters of nsplit fit at once, per device (the last one asked, per host thread): 0 unknown, -1 none
  thread_local int dev_cached = -1;
  thread_local int fits[17] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  if (dev != dev_cached) {
    for (int& f : fits) f = 0;
    dev_cached = dev;
  }
  thread_local int smem[17] = {};  // the ring's bytes the launch gives (0 where a cluster fits only without it)
  if (fits[nsplit] == 0) {
    const void* f = reinterpret_cast<const void*>(kernel);
    int n = 0;
    if (nv::cluster_fits(kernel, static_cast<unsigned>(nsplit), threads, 0)) {
      int configured = 0;  // (the attribute is the kernel's, per device: set again for every device asked)
      smem[nsplit] = cuda_host::configure_smem(f, &configured, split_stage_bytes<Cfg>()) == 0
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
