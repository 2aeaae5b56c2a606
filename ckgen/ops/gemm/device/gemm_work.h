// gemm_work.h (ckgen/ops/gemm/device): the pieces of work of the split-K and stream-K schedules, their
// workspace, and the fix-up that finishes a tile several workgroups contributed to. Shared by the portable
// bodies' scheduled entry (gemm_schedule.h) and the Hopper body (gemm_sm90_tma.h).
//
// Cfg members read besides the GEMM contract (docs/design.md): kSchedule (kTile, kSplitK, kStreamK) and
// kAtomicSplitK (split-K partial sums added with atomics: one slot per tile, summation order not fixed).
//
// Work. The C tiles are numbered t = tm * tiles_n + tn; a tile has kt = max(1, ceil(K / kTileK)) K tiles.
//   split-K:  S splits per tile (S = grid z on the portable bodies, an argument of the Hopper body); split s
//             of tile t computes K tiles [s * kt / S, (s + 1) * kt / S).
//   stream-K: P workers (the persistent grid). The first D = (tiles / P) * P tiles are taken whole, as the tile
//             schedule takes them (worker w: tiles w, w + P, ...: the workers at work at once hold neighbouring
//             tiles at the same K, whose A and B panels L2 shares). The last R = tiles - D tiles (R < P) are split
//             along K into S = min(kt, P / R) equal parts, one per worker (worker w < R * S: tile D + w / S, part
//             w % S), so that the parts at work at once read the same K range of their tiles; when S would be 1
//             they are whole tiles too (StreamK::whole_tiles). (Sharing all
//             tiles' iterations evenly, each worker's contiguous range cut at tile boundaries, put every worker at
//             another K: on the H100 that read 6x the DRAM bytes of the tile schedule at 2048 x 4096 x 14336 and
//             ran at half its speed: bench/runs/2026-12-05_h100_streamk_probe.txt. Sharing only the last tiles'
//             iterations so, when fewer than two parts per tile fit, was tried on 2026-12-05 and lost as much on
//             the H100: the Llama-3-8B down projection at 2048 tokens 0.657 ms against the tile schedule's 0.354,
//             bench/runs/2026-12-05f_h100_model_streamk_ab.txt.)
// Each Seg is one tile's K range for one workgroup; `count` workgroups contribute to its tile.
//
// Workspace (bytes; the planner's launch.workspace says the same): [counters: tiles ints, padded to 256 bytes]
// [slots: kTileM * kTileN accumulators each]. Slots: split-K tiles * S (deterministic; slot t * S + s) or
// tiles (atomic; slot t); stream-K 2 per worker (slot 2w: its whole tiles', 2w + 1: its part of a split tile).
// Contract: the workspace is zero on entry, and every launch leaves it zero: the workgroup that finishes a
// tile resets its counter and zeroes the slots it read.
//
// Finishing a tile (finish_tile): every contributor stores its partial accumulators into its slot (the body's
// own epilogue code, run with PartialCfg: raw accumulators, no alpha / beta / bias / activation), fences and
// takes a ticket on the tile's counter; the last one to arrive fences again, sums the slots in k order (a
// fixed order: the result does not depend on which workgroup came last; atomic split-K has one slot and
// adds in arrival order instead), applies the real epilogue, stores C and zeroes what it read. No workgroup
// ever waits for another, so the schedules need no co-residency (and run on the emulator).
#pragma once

#include "ckgen/blocks/epilogue.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {
namespace gemm_sched {

enum : int { kTile = 0, kSplitK = 1, kStreamK = 2 };

// ---------------------------------------------------------------- optional Cfg members
template <class C, class = void>
struct ScheduleOf {
  static constexpr int value = kTile;
  static constexpr bool atomic = false;
};
template <class C>
struct ScheduleOf<C, decltype(void(C::kSchedule))> {
  static constexpr int value = C::kSchedule;
  static constexpr bool atomic = C::kAtomicSplitK;
};

// ---------------------------------------------------------------- atomic partial sums
// The element type of an atomic split-K slot: storing one adds it (the bodies' epilogue code stores through
// gstore, which these overloads, found by argument-dependent lookup, turn into atomic adds).
struct AddF32 {
  float v;
};
CKGEN_DEVICE void gstore(AddF32* p, AddF32 x) { atomic_add(&p->v, x.v); }
template <int N>
CKGEN_DEVICE void gstore(vec<AddF32, N>* p, vec<AddF32, N> x) {
#pragma unroll
  for (int i = 0; i < N; ++i) atomic_add(&p->v[i].v, x.v[i].v);
}
using ::ckgen::gstore;  // (the overloads above would hide the platform's inside this namespace)


}  // namespace gemm_sched

template <>
struct FromFloat<gemm_sched::AddF32> {
  static CKGEN_HD gemm_sched::AddF32 cvt(float f) { return gemm_sched::AddF32{f}; }
};

namespace gemm_sched {

// The epilogue operand of a piece's partial sums: none (they are not scaled: finish_tile scales their sum), except
// block scales, which the body folds per K block in its K loop: the piece, computed as a problem of its own at the
// tile's origin (m0, n0), keeps them from that origin and its first block kb0 on (the planner gives such kernels K
// tiles of one block, so a piece starts on a whole block, and tiles whose columns never straddle a 128-column
// block), and no bias.
template <class Cfg, bool kFolds = epi::IsBlockScaled<epi::Operand<Cfg>>::value>
struct PartialOperand {
  using type = const typename Cfg::TBias*;
  static CKGEN_DEVICE type make(const epi::Operand<Cfg>&, int, int, int) { return nullptr; }
};
template <class Cfg>
struct PartialOperand<Cfg, true> {
  using type = epi::Operand<Cfg>;
  static CKGEN_DEVICE type make(const type& op, int kb0, int m0, int n0) {
    return type{nullptr, op.scale_a + m0 * op.ld_a + kb0, op.scale_b + (n0 / epi::kScaleBlockK) * op.ld_b + kb0,
                op.tensor_scale, op.ld_a, op.ld_b};
  }
};

// A Cfg whose epilogue writes the raw accumulators (of type TOut) to a slot: kTileM x kTileN, row-major
// (ld kTileN) when kRow, else column-major (ld kTileM). A gated Cfg's piece applies no gate (epi::NoGate: not
// epi::gated) but reads B as gate and up columns still (kGatedLoads), writing both halves' sums.
template <class Cfg, class TOut, bool kRow>
struct PartialCfg : Cfg {
  using TC = TOut;
  using Gate = epi::NoGate;
  static constexpr bool kGatedLoads = epi::gated<Cfg>();
  static constexpr bool kAddStores = IsSame<TOut, AddF32>::value;  // atomic slots: every store through gstore
  static constexpr float kAlpha = 1.0f;
  static constexpr float kBeta = 0.0f;
  static constexpr bool kHasBias = false;
  static constexpr bool kCRowMajor = kRow;
  static constexpr bool kIntegerEpilogue = true;  // integer accumulators stay exact
  static constexpr int kVecC = 4;
  using Epilogue = epi::Chain<>;
  using EpiOperand = typename PartialOperand<Cfg>::type;
};

// ---------------------------------------------------------------- pieces of work
// The stream-K loop recomputes its segment from opaque() inputs (ckgen/types.h), so that no scalar state lives
// across the body it calls (which otherwise pushes the kernel past the SGPR budget).

struct Seg {
  int tile;        // t = tm * tiles_n + tn
  int kt0, kt1;    // K tiles [kt0, kt1) of the tile
  int count;       // workgroups contributing to the tile (1: this segment is the whole tile)
  int slot;        // this segment's slot
  int slot0;       // the slot of the tile's first contributor (k order) ...
  int slot_base;   // ... and of contributor i > 0: slot_base + i * slot_step
  int slot_step;
  int reads;       // slots the finishing workgroup sums (count; 1 for atomic split-K)

  CKGEN_DEVICE int slot_of(int i) const { return i == 0 ? slot0 : slot_base + i * slot_step; }
};

struct Problem {
  int tiles_m, tiles_n, tiles, kt;
  CKGEN_DEVICE Problem(int M, int N, int K, int tm, int tn, int tk) {
    tiles_m = (M + tm - 1) / tm;
    tiles_n = (N + tn - 1) / tn;
    tiles = tiles_m * tiles_n;
    kt = K > 0 ? (K + tk - 1) / tk : 1;
  }
};

// An even partition of n items over p parts (n >= p >= 1), in 32-bit arithmetic: part i gets q + 1 items
// when i < r, else q (q = n / p, r = n % p).
struct Even {
  int q, r;
  CKGEN_DEVICE Even(int n, int p) : q(n / p), r(n % p) {}
  CKGEN_DEVICE int start(int i) const { return i * q + (i < r ? i : r); }
};

// Split s of S of tile t (S <= kt: no split is empty).
CKGEN_DEVICE Seg splitk_seg(int t, int s, int S, int kt, bool atomic) {
  const Even ev(kt, S);
  Seg g;
  g.tile = t;
  g.kt0 = ev.start(s);
  g.kt1 = ev.start(s + 1);
  g.count = S;
  g.slot = atomic ? t : t * S + s;
  g.slot0 = g.slot_base = atomic ? t : t * S;
  g.slot_step = atomic ? 0 : 1;
  g.reads = atomic ? 1 : S;
  return g;
}

// The segments of stream-K worker w of P (P <= tiles * kt): seg(j) is its j-th (false past the last): its whole
// tiles first (the data-parallel waves, see the top of the file), then its part of one of the last R tiles (none
// when w >= R * S). Nothing is carried from one segment to the next (the persistent loop keeps few registers live).
struct StreamK {
  int tiles, kt, P, w;

  CKGEN_DEVICE StreamK(int w_, int P_, int tiles_, int kt_) : tiles(tiles_), kt(kt_), P(P_), w(w_) {}

  // Every field of the segment is wave-uniform; on AMD they are recomputed from opaque values and made
  // scalar again (CKGEN_UNIFORM) per call.
  CKGEN_DEVICE bool seg(int j, Seg& g) const {
    const bool ok = seg_raw(opaque(j), opaque(tiles), opaque(kt), opaque(P), opaque(w), g);
    g.tile = CKGEN_UNIFORM(g.tile);
    g.kt0 = CKGEN_UNIFORM(g.kt0);
    g.kt1 = CKGEN_UNIFORM(g.kt1);
    g.count = CKGEN_UNIFORM(g.count);
    g.slot = CKGEN_UNIFORM(g.slot);
    g.slot0 = CKGEN_UNIFORM(g.slot0);
    g.slot_base = CKGEN_UNIFORM(g.slot_base);
    g.slot_step = 2;
    g.reads = g.count;
    return CKGEN_UNIFORM(ok ? 1 : 0) != 0;
  }

  // Parts per last tile when rest (0 < rest < P) tiles remain past the full waves: S = min(kt, P / rest).
  static CKGEN_DEVICE int parts(int rest, int kt, int P) { return P / rest < kt ? P / rest : kt; }
  // The tiles taken whole (worker w: tiles w, w + P, ... below it): the full waves, and the last tiles too when they
  // would not split (one part each), so that those are whole tiles as the tile schedule's.
  static CKGEN_DEVICE int whole_tiles(int tiles, int kt, int P) {
    const int rest = tiles % P;
    return rest == 0 || parts(rest, kt, P) == 1 ? tiles : tiles - rest;
  }

  static CKGEN_DEVICE bool seg_raw(int j, int tiles, int kt, int P, int w, Seg& g) {
    if (w + j * P < whole_tiles(tiles, kt, P)) {  // a whole tile
      g.tile = w + j * P;
      g.kt0 = 0;
      g.kt1 = kt;
      g.count = 1;
      g.slot = g.slot0 = g.slot_base = 2 * w;  // (Hopper: straight to C; portable: through slot 2w, finished at once)
      g.slot_step = 2;
      g.reads = 1;
      return true;
    }
    const int whole = tiles / P;           // the worker's tiles of the full waves
    const int rest = tiles - whole * P;  // the split tiles whole * P .. tiles - 1
    if (j != whole || whole_tiles(tiles, kt, P) == tiles) return false;
    const int S = parts(rest, kt, P);  // (>= 2)
    if (w >= rest * S) return false;
    const int part = w % S;
    g = splitk_seg(whole * P + w / S, part, S, kt, false);  // (a deterministic split-K unit, but for its slots)
    g.slot = 2 * w + 1;
    g.slot0 = g.slot_base = g.slot - 2 * part;  // part i of the tile: worker w - part + i, slot 2 (w - part + i) + 1
    g.slot_step = 2;
    return true;
  }
};

// ---------------------------------------------------------------- workspace
template <class TAcc>
struct Workspace {
  int* counters;
  TAcc* slots;
  static_assert(sizeof(TAcc) == 4, "split-K / stream-K slots hold 32-bit accumulators");

  CKGEN_DEVICE Workspace(void* ws, int tiles)
      : counters(static_cast<int*>(ws)),
        slots(reinterpret_cast<TAcc*>(static_cast<unsigned char*>(ws) + ((tiles * 4LL + 255) / 256) * 256)) {}
};

// A slot value written by another workgroup (after the acquiring fence; CUDA: not from the L1 cache).
template <class T>
CKGEN_DEVICE T load_slot(const T* p) {
#if defined(CKGEN_PLATFORM_CUDA)
  if constexpr (sizeof(T) == 16) {
    return bit_cast<T>(__ldcg(reinterpret_cast<const float4*>(p)));
  } else {
    static_assert(sizeof(T) == 4, "slot values are 4 or 16 bytes");
    return bit_cast<T>(__ldcg(reinterpret_cast<const float*>(p)));
  }
#else
  return gload(p);
#endif
}

// Vectors of 4 accumulators a thread of finish_tile sums at once: the slots' loads of that many go out together.
// One at a time, the last contributor of a 64 x 128 tile on the Hopper body (128 consumer threads, 16 vectors
// each) waited for 16 x `reads` round trips to L2 in turn (the reading of split-K at M = 64 being slower than at
// M = 16, whose rows past M are skipped: bench/runs/2026-12-03_tune_mistral7b_sm90_cold_l2.jsonl); 8: 2 x reads.
// AMD: 2 (with 4, the scalar addresses of the unrolled loads took gfx90a's stream-K kernel of 128 x 128 tiles
// from 80 to 100 SGPRs, 14 spilled).
#if defined(CKGEN_PLATFORM_CUDA)
constexpr int kFinishBatch = 8;
#else
constexpr int kFinishBatch = 2;
#endif

// Zeroes the first n (0..4) accumulators of a slot's vector of 4 (the workspace's zero-on-exit contract).
template <class TAcc>
CKGEN_DEVICE void zero_slot(TAcc* p, int n) {
  if (n == 4) {
    vec<TAcc, 4> z;
#pragma unroll
    for (int j = 0; j < 4; ++j) z.v[j] = TAcc(0);
    gstore(reinterpret_cast<vec<TAcc, 4>*>(p), z);
  } else {
    for (int j = 0; j < n; ++j) gstore(p + j, TAcc(0));
  }
}

// The barrier of a group that is the whole workgroup.
struct BlockSync {
  static CKGEN_DEVICE void sync() { barrier(); }
};

// Stores 4 outputs of a line (the first lim in range) through Cfg's epilogue into C at (row, col) and along the
// line: fin(j, row, col, off) gives output j's value; one vector store where C's contiguous dimension is the line's
// (c_aligned) and all 4 are in range.
template <class Cfg, bool kSlotRow, class Fin>
CKGEN_DEVICE void store_four(Fin fin, int lim, int row, int col, typename Cfg::TC* C, long long ldc, bool c_aligned) {
  using TC = typename Cfg::TC;
  auto off_of = [&](int j) -> long long {
    const int rr = kSlotRow ? row : row + j;
    const int cc = kSlotRow ? col + j : col;
    return Cfg::kCRowMajor ? static_cast<long long>(rr) * ldc + cc : static_cast<long long>(cc) * ldc + rr;
  };
  if (c_aligned && lim == 4) {
    vec<TC, 4> out;
#pragma unroll
    for (int j = 0; j < 4; ++j) out.v[j] = fin(j, kSlotRow ? row : row + j, kSlotRow ? col + j : col, off_of(j));
    gstore(reinterpret_cast<vec<TC, 4>*>(C + off_of(0)), out);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (j < lim) gstore(C + off_of(j), fin(j, kSlotRow ? row : row + j, kSlotRow ? col + j : col, off_of(j)));
  }
}

// Output j of a vector of sums (the sum, or with kGated the gate and up sums) through Cfg's epilogue.
template <class Cfg, bool kGated, class TAcc, int kP>
CKGEN_DEVICE typename Cfg::TC finish_sums(const TAcc (&su)[kP][4], int j, int row, int col, int N,
                                          const typename Cfg::TC* C, long long off, epi::Operand<Cfg> bias) {
  if constexpr (kGated)
    return epi::finish_gated<Cfg>(su[0][j], su[1][j], row, col, N, C, off, bias);
  else
    return epi::finish<Cfg>(su[0][j], row, col, C, off, bias);
}

// ---------------------------------------------------------------- finishing a tile
// Called by every thread of the group that computed segment g (tid in 0..kGroupThreads-1) after it stored its
// partial into its slot. Sync::sync() is the group's barrier; ticket is a group-shared int. The last
// contributor sums the slots (kTileM x kTileN, row-major when kSlotRow), applies Cfg's epilogue, writes the
// tile of C at (m0, n0) (mr x nr elements in range) and zeroes the slots and the counter.
// A gated Cfg (kGateWave > 0): the slots hold the raw sums of all kTileN columns of B's tile, in runs of kGateWave
// columns whose first half are gates and second half the matching ups (blk::GatedRows: the body's warp / wave N
// extent); output column o (of the tile's kTileN / 2) pairs slot columns gate(o) and gate(o) + kGateWave / 2. Its
// contributors write every column of their rows in range, so the finisher zeroes the columns of outputs past nr too.
// N: C's columns (a gated epilogue finds an output's bias / scale columns of B from it).
template <class Cfg, bool kSlotRow, class Sync, int kGroupThreads, int kGateWave = 0>
CKGEN_DEVICE void finish_tile(const Seg& g, Workspace<typename Cfg::TAcc> ws, typename Cfg::TC* C,
                              epi::Operand<Cfg> bias, long long ldc, int m0, int n0, int mr, int nr, int tid,
                              int* ticket, int N = 0) {
  using TAcc = typename Cfg::TAcc;
  using TC = typename Cfg::TC;
  constexpr bool kGated = kGateWave > 0;
  static_assert(kGated == epi::gated<Cfg>(), "finish_tile: kGateWave is the gated Cfg's slot run width");
  constexpr int kTM = Cfg::kTileM;
  constexpr int kTN = Cfg::kTileN;
  constexpr int kOutN = kGated ? kTN / 2 : kTN;  // the tile's columns of C
  constexpr int kHalfW = kGated ? kGateWave / 2 : 1;
  static_assert(!kGated || (kTN % (2 * kHalfW) == 0 && kHalfW % 4 == 0), "gate / up runs of whole vectors of 4");
  constexpr int kSlot = kTM * kTN;
  constexpr int kOut = kTM * kOutN;            // outputs of the tile
  constexpr int kLine = kSlotRow ? kOutN : kTM;  // outputs along the slot's contiguous dimension
  static_assert(kLine % 4 == 0, "slot lines hold a multiple of 4 accumulators");
  fence_device();  // release this thread's partial stores at device scope
  Sync::sync();
  if (g.count > 1) {
    if (tid == 0) lds_store(ticket, atomic_add(ws.counters + g.tile, 1));
    Sync::sync();
    const int arrived = lds_load(ticket);
    if (arrived != g.count - 1) return;  // another workgroup finishes this tile
    if (tid == 0) gstore(ws.counters + g.tile, 0);
    fence_device();  // acquire the other contributors' partials
  }
  // C's contiguous dimension is the slot's: 4 results go as one vector store when aligned and in range.
  constexpr bool kSameDir = Cfg::kCRowMajor == kSlotRow;
  const bool c_aligned = kSameDir && (reinterpret_cast<unsigned long long>(C) % (4 * sizeof(TC))) == 0 && ldc % 4 == 0;
  // Output element e's row and column in the tile, and the slot elements its sums sit at (gated: gate, then up).
  auto row_of = [](int e) { return kSlotRow ? e / kLine : e % kLine; };
  auto col_of = [](int e) { return kSlotRow ? e % kLine : e / kLine; };
  auto gate_of = [](int c) { return kGated ? (c / kHalfW) * kGateWave + c % kHalfW : c; };
  auto at = [](int r, int c) { return kSlotRow ? r * kTN + c : c * kTM + r; };
  constexpr int kParts = kGated ? 2 : 1;  // slot vectors per output vector: the sum, or the gate and up sums
  // A thread sums kFinishBatch vectors of 4 at once (q, q + kGroupThreads, ...): the loads of one slot's vectors go
  // out together, so the sum takes `reads` round trips to L2 per kFinishBatch vectors instead of per vector. (A
  // gated output reads two: half as many outputs at once, the same registers.)
  constexpr int kBatch = kFinishBatch / kParts > 0 ? kFinishBatch / kParts : 1;
  for (int q0 = tid; q0 < kOut / 4; q0 += kBatch * kGroupThreads) {
    int lim[kBatch];  // elements of vector u in range: 0..4
    int pos[kBatch][kParts];
    TAcc sum[kBatch][kParts][4];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e0 = (q0 + u * kGroupThreads) * 4;
      const int r0 = row_of(e0), c0 = col_of(e0);
      const int left = kSlotRow ? nr - c0 : mr - r0;
      lim[u] = e0 >= kOut || r0 >= mr || c0 >= nr ? 0 : (left < 4 ? left : 4);
#pragma unroll
      for (int h = 0; h < kParts; ++h) {
        pos[u][h] = at(r0, gate_of(c0) + h * kHalfW);
#pragma unroll
        for (int j = 0; j < 4; ++j) sum[u][h][j] = TAcc(0);
      }
    }
    // The slots' loads and sums, in k order, with no store among them (the zeroing stores come after): nvcc issues
    // two slots' loads at once (unroll 2), where one slot per L2 round trip took the finisher of a 128 x 256 tile in
    // 5 parts (Qwen2.5-7B's qkv at 2048 tokens on stream-K) 20 round trips. With the stores out of the loop the
    // scheduled sm_90 kernels also take fewer registers (nvcc 13: 128 x 128 split-K on mma.sync 196 -> 174, the
    // SwiGLU stream-K 240 -> 188; unroll 4 put the 128 x 256 mma.sync stream-K back at 280 bytes of spills).
#if defined(CKGEN_PLATFORM_CUDA)
#pragma unroll 2
#endif
    for (int i = 0; i < g.reads; ++i) {
      const TAcc* slot = ws.slots + static_cast<long long>(g.slot_of(i)) * kSlot;
      vec<TAcc, 4> v[kBatch][kParts];
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
#pragma unroll
        for (int h = 0; h < kParts; ++h) {
          const TAcc* p = slot + pos[u][h];
          if (lim[u] == 4) {
            v[u][h] = load_slot(reinterpret_cast<const vec<TAcc, 4>*>(p));
          } else {
#pragma unroll
            for (int j = 0; j < 4; ++j) v[u][h].v[j] = j < lim[u] ? load_slot(p + j) : TAcc(0);
          }
        }
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
#pragma unroll
        for (int h = 0; h < kParts; ++h)
#pragma unroll
          for (int j = 0; j < 4; ++j) sum[u][h][j] += v[u][h].v[j];
    }
    for (int i = 0; i < g.reads; ++i) {
      TAcc* slot = ws.slots + static_cast<long long>(g.slot_of(i)) * kSlot;
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
#pragma unroll
        for (int h = 0; h < kParts; ++h) zero_slot(slot + pos[u][h], lim[u]);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const TAcc(&su)[kParts][4] = sum[u];
      auto fin = [&su, N, C, bias](int j, int row, int col, long long off) -> TC {
        return finish_sums<Cfg, kGated>(su, j, row, col, N, C, off, bias);
      };
      if (lim[u] > 0) {
        const int e0 = (q0 + u * kGroupThreads) * 4;
        store_four<Cfg, kSlotRow>(fin, lim[u], m0 + row_of(e0), n0 + col_of(e0), C, ldc, c_aligned);
      }
    }
  }
  if constexpr (kGated) {  // the columns of outputs past nr (the last tile of a row): zeroes, as the pieces wrote them
    if (nr < kOutN) {
      const int cols = 2 * (kOutN - nr);
      for (int i = 0; i < g.reads; ++i) {
        TAcc* slot = ws.slots + static_cast<long long>(g.slot_of(i)) * kSlot;
        for (int e = tid; e < mr * cols; e += kGroupThreads) {
          const int r = e / cols, c = nr + (e % cols) / 2;
          gstore(slot + at(r, gate_of(c) + (e % 2) * kHalfW), TAcc(0));
        }
      }
    }
  }
}

}  // namespace gemm_sched
}  // namespace ckgen
