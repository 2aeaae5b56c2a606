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
// <= 16, a cluster of S fits, CKGEN_ROWOPS_CLUSTERS is not 0), cluster c takes rows c, c + clusters, ...; CTA r of
// it holds slice r. Per row, thread 0 of each CTA writes its partial state into its own shared memory (two slots,
// by row parity), the cluster synchronizes (barrier.cluster, release / acquire), and thread 0 reads the S
// partials from the CTAs' shared memory (distributed shared memory, nv::load_peer) in rank order: no workspace,
// no atomics, no spinning. A slot is written again two rows later, after the next row's cluster barrier, which
// every CTA passes only once its reads of the slot are done; a last cluster barrier keeps every CTA's shared
// memory until its peers have read it. Otherwise (other devices, a cluster that does not fit) the host launches
// as usual and the workspace exchange runs (the body reads the cluster size it was launched with).
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"
#include "rowops_default_policy.h"
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
  // state in every thread), y of the slice.
  template <class X>
  CKGEN_DEVICE static void run(const RowArgs<P>& a, const RowEnv<P>& e, RowReduce<P>& red, long long row, int rank,
                               const X& exchange) {
    RowGroup<P> g(a, e, row);
    GlobalSource<P> src(g);
    TileWeights<P> wts;
    src.first(g, rank);
    State st = State::init();
    const typename RowGroup<P>::Stats ts{g.buf, g.k};
    if (g.k.full) P::Kind::fold(ts, BoolConst<false>{}, e.c, st);
    else P::Kind::fold(ts, BoolConst<true>{}, e.c, st);
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
    SplitPipeline<P>::run(a, e, red, row, rank, GlobalRowExchange<P>{w, row, rank, nsplit, shared});
  }
}

#if defined(CKGEN_PLATFORM_CUDA)
// The row's state through the cluster's shared memory (above): slots, 2 kN floats; shared, kN floats.
template <class P>
struct ClusterRowExchange {
  using State = typename P::State;
  float* slots;
  float* shared;
  int parity, nsplit;

  CKGEN_DEVICE State operator()(int tid, State st) const {
    float* mine = slots + parity * State::kN;
    if (tid == 0) {
#pragma unroll
      for (int i = 0; i < State::kN; ++i) mine[i] = st.v[i];
    }
    nv::cluster_sync();
    if (tid == 0) {
      State acc = peer(mine, 0);
      for (int r = 1; r < nsplit; ++r) acc = State::combine(acc, peer(mine, r));
#pragma unroll
      for (int i = 0; i < State::kN; ++i) shared[i] = acc.v[i];
    }
    barrier();
#pragma unroll
    for (int i = 0; i < State::kN; ++i) st.v[i] = shared[i];
    return st;
  }
  CKGEN_DEVICE static State peer(const float* slot, int rank) {
    State s;
#pragma unroll
    for (int i = 0; i < State::kN; ++i) s.v[i] = nv::load_peer(slot + i, rank);
    return s;
  }
};

// The rows of this cluster: S = the cluster's size = ceil(cols / kTile) (checked: a trap).
template <class P>
CKGEN_DEVICE void run_split_cluster(const RowArgs<P>& a, const RowEnv<P>& e, RowReduce<P>& red, float* slots,
                                    float* shared) {
  const int nsplit = nv::cluster_size();
  if (nsplit != (a.cols - 1) / P::kTile + 1) trap("rowops: a cluster of other than ceil(cols / kTileCols) CTAs");
  const int rank = nv::cluster_rank();
  int parity = 0;
  for (long long row = nv::cluster_id(); row < a.rows; row += nv::clusters()) {
    SplitPipeline<P>::run(a, e, red, row, rank, ClusterRowExchange<P>{slots, shared, parity, nsplit});
    parity ^= 1;
  }
  nv::cluster_sync();  // the peers' reads of this CTA's slots are done before it exits
}

// Host: launch `kernel` in clusters of S = ceil(cols / Cfg::kTileCols) CTAs (grid: `grid` rounded down to a
// multiple of S, at least S), or return -1 with nothing launched where the cluster path does not apply (not an
// sm_90 device, S outside 2..16, CKGEN_ROWOPS_CLUSTERS=0 in the environment, no cluster of S fits: asked once per
// device and S, or the launch failed). The per-call cost: a getenv and a cudaGetDevice.
template <class Cfg, class... KArgs, class... Args>
inline int launch_split_clusters(void (*kernel)(KArgs...), long long grid, int cols, unsigned threads, void* stream,
                                 Args... args) {
  const char* env = getenv("CKGEN_ROWOPS_CLUSTERS");  // (read per call: a process may switch paths)
  const bool enabled = env == nullptr || strcmp(env, "0") != 0;
  const int nsplit = cols > 0 ? (cols - 1) / Cfg::kTileCols + 1 : 0;
  if (!enabled || nsplit < 2 || nsplit > 16 || !nv::sm90_device()) return -1;
  // whether a cluster of nsplit fits, per device (the last one asked, per host thread): 0 unknown, 1 yes, -1 no
  thread_local int dev_cached = -1;
  thread_local signed char fits[17] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  if (dev != dev_cached) {
    for (signed char& f : fits) f = 0;
    dev_cached = dev;
  }
  if (fits[nsplit] == 0) fits[nsplit] = nv::cluster_fits(kernel, static_cast<unsigned>(nsplit), threads, 0) ? 1 : -1;
  if (fits[nsplit] < 0) return -1;
  const long long gx = grid / nsplit > 0 ? grid / nsplit * nsplit : nsplit;
  (void)cudaGetLastError();
  const cudaError_t e = nv::launch_cluster(kernel, static_cast<unsigned>(gx), static_cast<unsigned>(nsplit), threads,
                                           0, stream, args...);
  if (e == cudaSuccess) return 0;
  (void)cudaGetLastError();
  return -1;
}
#endif

}  // namespace rowops
}  // namespace ckgen
