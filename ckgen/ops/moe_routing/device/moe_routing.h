// moe_routing.h (ckgen/ops/moe_routing/device): the mixture-of-experts routing stages, one entry each, on every
// platform (AMD, NVIDIA, the emulator). ckgen/ops/moe_routing/plan.py states the ABI; its docstring the layouts.
//
// Cfg members: kExperts, kTopK, kThreads; topk: TLogit, kSigmoid, kRenormalize, kGroups, kTopGroups,
// kCorrection; permute / unpermute: TX.
//
//   topk:      one thread per token. Scores: softmax over the experts (max and sum in a first pass) or sigmoid.
//              Experts are chosen by score + correction (without one: by logit, the same order), best first,
//              ties to the lower id (a sorted insertion with compile-time indices: the k best stay in registers).
//              Grouped top-k (kTopGroups < kGroups): each group's score is the sum of score + correction of its
//              (up to) two best experts; only the kTopGroups best groups' experts are eligible. Weights: the chosen
//              experts' scores, divided by their sum when kRenormalize, times scale.
//   sort:      one workgroup, a counting sort that is stable and deterministic. Thread i takes a contiguous chunk
//              of the tokens * kTopK entries; (1) counts its chunk's entries per expert into row i of the workspace
//              (kThreads x kExperts ints); (2) per expert, the rows become exclusive prefix sums over threads and
//              the expert's total goes to LDS; (3) a scan of the totals (runs of experts per thread, a scan of
//              the runs' sums in LDS) gives each expert's base row and offsets (cumulative ends); (4) every thread places its entries: row = base[e] + its running
//              count of e; (5) sorted_token past the last row is -1; (6) each thread zeroes its workspace row.
//              Ids outside 0..kExperts-1 are dropped (position -1).
//   permute:   one workgroup per sorted row (grid tokens x kTopK, grid-stride in x): the row of its token, or
//              nothing for -1; 16-byte vectors when the rows allow.
//   unpermute: one workgroup per token (grid-stride): y = sum over j = 0..kTopK-1, in order, of weights[j] times
//              the expert row at position[j] (skipped when -1), accumulated in f32; 16-byte vectors of columns
//              when the rows allow.
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {
namespace moe {

constexpr float kNegInf = -__builtin_huge_valf();

// Insert (v, id) into best / ids (descending; an empty slot has id -1; ties keep the earlier entry). Once (v, id)
// takes a slot, the entries from there on shift down one slot each, unconditionally: comparing a displaced entry
// with the next one would move it past entries of its own value that came after it.
template <int K>
CKGEN_DEVICE void insert(float (&best)[K], int (&ids)[K], float v, int id) {
  bool shifting = false;
#pragma unroll
  for (int j = 0; j < K; ++j) {
    if (shifting || ids[j] < 0 || v > best[j]) {
      shifting = true;
      const float tv = best[j];
      const int ti = ids[j];
      best[j] = v;
      ids[j] = id;
      v = tv;
      id = ti;
      if (id < 0) break;
    }
  }
}

template <int K>
CKGEN_DEVICE void clear(float (&best)[K], int (&ids)[K]) {
#pragma unroll
  for (int j = 0; j < K; ++j) {
    best[j] = kNegInf;
    ids[j] = -1;
  }
}

// One token's router row: its scores and choice values.
template <class Cfg>
struct RouterRow {
  const typename Cfg::TLogit* row;
  const float* correction;
  float mx = 0.0f, inv_sum = 1.0f;

  CKGEN_DEVICE float logit(int e) const { return to_float(gload(row + e)); }
  CKGEN_DEVICE float score(int e) const {
    const float l = logit(e);
    return Cfg::kSigmoid ? 1.0f / (1.0f + exp_f32(-l)) : exp_f32(l - mx) * inv_sum;
  }
  // what the choice compares, and what a group's score sums
  CKGEN_DEVICE float choice(int e) const { return Cfg::kCorrection ? score(e) + gload(correction + e) : logit(e); }
  CKGEN_DEVICE float group_term(int e) const {
    return Cfg::kCorrection ? score(e) + gload(correction + e) : score(e);
  }

  CKGEN_DEVICE void softmax_stats() {
    float m = kNegInf;
    for (int e = 0; e < Cfg::kExperts; ++e) m = max_f32(m, logit(e));
    float s = 0.0f;
    for (int e = 0; e < Cfg::kExperts; ++e) s += exp_f32(logit(e) - m);
    mx = m;
    inv_sum = 1.0f / s;
  }
};

// The groups a token's experts may come from, as a bit mask (all when kTopGroups == kGroups).
template <class Cfg>
CKGEN_DEVICE unsigned long long eligible_groups(const RouterRow<Cfg>& r) {
  if constexpr (Cfg::kTopGroups >= Cfg::kGroups) {
    return ~0ull;
  } else {
    constexpr int kPer = Cfg::kExperts / Cfg::kGroups;
    constexpr int kTwo = kPer < 2 ? kPer : 2;
    float gbest[Cfg::kTopGroups];
    int gids[Cfg::kTopGroups];
    clear(gbest, gids);
    for (int g = 0; g < Cfg::kGroups; ++g) {
      float b[kTwo];
      int i[kTwo];
      clear(b, i);
      for (int e = g * kPer; e < (g + 1) * kPer; ++e) insert(b, i, r.choice(e), e);
      float s = 0.0f;
#pragma unroll
      for (int j = 0; j < kTwo; ++j) s += r.group_term(i[j]);
      insert(gbest, gids, s, g);
    }
    unsigned long long keep = 0;
#pragma unroll
    for (int j = 0; j < Cfg::kTopGroups; ++j) keep |= 1ull << gids[j];
    return keep;
  }
}

template <class Cfg>
CKGEN_DEVICE void topk_row(const typename Cfg::TLogit* row, const float* correction, int* ids_out, float* w_out,
                           float scale) {
  RouterRow<Cfg> r{row, correction};
  if (!Cfg::kSigmoid) r.softmax_stats();
  const unsigned long long keep = eligible_groups<Cfg>(r);
  constexpr int kPer = Cfg::kExperts / Cfg::kGroups;
  float best[Cfg::kTopK];
  int ids[Cfg::kTopK];
  clear(best, ids);
  for (int e = 0; e < Cfg::kExperts; ++e)
    if ((keep >> (e / kPer)) & 1ull) insert(best, ids, r.choice(e), e);
  float w[Cfg::kTopK];
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < Cfg::kTopK; ++j) {
    w[j] = r.score(ids[j]);
    sum += w[j];
  }
  const float f = Cfg::kRenormalize ? scale / sum : scale;
#pragma unroll
  for (int j = 0; j < Cfg::kTopK; ++j) {
    gstore(ids_out + j, ids[j]);
    gstore(w_out + j, w[j] * f);
  }
}

// stage topk: ABI logits, correction, ids, weights, tokens, ld_logits, ld_ids, ld_weights, scale.
template <class Cfg>
CKGEN_DEVICE void topk(const typename Cfg::TLogit* logits, const float* correction, int* ids, float* weights,
                       int tokens, long long ld_logits, long long ld_ids, long long ld_weights, float scale) {
  const int step = grid_dim(0) * Cfg::kThreads;
  for (int t = block_id(0) * Cfg::kThreads + thread_id(); t < tokens; t += step) {
    const long long tl = t;
    topk_row<Cfg>(logits + tl * ld_logits, correction, ids + tl * ld_ids, weights + tl * ld_weights, scale);
  }
}

// Element p of a tokens x kTopK index array of row stride ld.
template <class Cfg>
CKGEN_DEVICE long long at(long long p, long long ld) {
  return (p / Cfg::kTopK) * ld + p % Cfg::kTopK;
}

// stage sort: ABI ids, offsets, sorted_token, position, tokens, ld_ids, ld_sorted, ld_position, workspace.
template <class Cfg>
CKGEN_DEVICE void sort(const int* ids, int* offsets, int* sorted_token, int* position, int tokens, long long ld_ids,
                       long long ld_sorted, long long ld_position, void* workspace) {
  constexpr int E = Cfg::kExperts;
  CKGEN_LDS(int, base, E + 1);
  const int tid = thread_id();
  const long long n = static_cast<long long>(tokens) * Cfg::kTopK;
  const long long chunk = (n + Cfg::kThreads - 1) / Cfg::kThreads;
  const long long lo = tid * chunk < n ? tid * chunk : n;
  const long long hi = lo + chunk < n ? lo + chunk : n;
  int* ws = static_cast<int*>(workspace);
  int* mine = ws + static_cast<long long>(tid) * E;
  // (1) counts of this thread's chunk
  for (long long i = lo; i < hi; ++i) {
    const int e = gload(ids + at<Cfg>(i, ld_ids));
    if (e >= 0 && e < E) gstore(mine + e, gload(mine + e) + 1);
  }
  fence_device();
  barrier();
  fence_device();
  // (2) per expert: exclusive prefix over the threads' counts (read 8 rows at a time: the loads are in flight
  // together); the total to LDS
  static_assert(Cfg::kThreads % 8 == 0, "sort: kThreads a multiple of 8");
  for (int e = tid; e < E; e += Cfg::kThreads) {
    int run = 0;
    for (int i0 = 0; i0 < Cfg::kThreads; i0 += 8) {
      int v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] = gload(ws + static_cast<long long>(i0 + u) * E + e);
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        gstore(ws + static_cast<long long>(i0 + u) * E + e, run);
        run += v[u];
      }
    }
    lds_store(base + e, run);
  }
  fence_device();
  barrier();
  fence_device();
  // (3) each expert's first row (an exclusive scan of the totals: each thread sums a run of experts, a scan over
  // the threads' sums in LDS, then each thread its run); offsets are the cumulative ends
  CKGEN_LDS(int, part, Cfg::kThreads);
  constexpr int kRun = (E + Cfg::kThreads - 1) / Cfg::kThreads;
  const int e0 = tid * kRun < E ? tid * kRun : E;
  const int e1 = e0 + kRun < E ? e0 + kRun : E;
  int mine_total = 0;
  for (int e = e0; e < e1; ++e) mine_total += lds_load(base + e);
  lds_store(part + tid, mine_total);
  barrier();
  for (int d = 1; d < Cfg::kThreads; d <<= 1) {
    const int v = tid >= d ? lds_load(part + tid - d) : 0;
    barrier();
    if (tid >= d) lds_store(part + tid, lds_load(part + tid) + v);
    barrier();
  }
  int acc = lds_load(part + tid) - mine_total;
  for (int e = e0; e < e1; ++e) {
    const int c = lds_load(base + e);
    lds_store(base + e, acc);
    acc += c;
    gstore(offsets + e, acc);
  }
  if (tid == Cfg::kThreads - 1) lds_store(base + E, lds_load(part + tid));
  barrier();
  // (4) place this thread's entries, in order
  for (long long i = lo; i < hi; ++i) {
    const int e = gload(ids + at<Cfg>(i, ld_ids));
    int row = -1;
    if (e >= 0 && e < E) {
      const int r = gload(mine + e);
      gstore(mine + e, r + 1);
      row = lds_load(base + e) + r;
      gstore(sorted_token + at<Cfg>(row, ld_sorted), static_cast<int>(i / Cfg::kTopK));
    }
    gstore(position + at<Cfg>(i, ld_position), row);
  }
  // (5) rows past the last offset; (6) the workspace back to zero
  for (long long p = lds_load(base + E) + tid; p < n; p += Cfg::kThreads) gstore(sorted_token + at<Cfg>(p, ld_sorted), -1);
  for (int e = 0; e < E; ++e) gstore(mine + e, 0);
}

// Whether 16-byte vectors of T are aligned at p and at every row start (row stride ld) and divide hidden.
template <class T>
CKGEN_DEVICE bool vec16_ok(const T* p, long long ld, int hidden) {
  constexpr int kV = 16 / static_cast<int>(sizeof(T));
  return reinterpret_cast<unsigned long long>(p) % 16 == 0 && ld % kV == 0 && hidden % kV == 0;
}

// stage permute: ABI x, sorted_token, xs, tokens, hidden, ld_x, ld_sorted, stride_xs_token, stride_xs_choice.
// Rows move in 16-byte vectors when every row start is aligned, else element by element.
template <class Cfg>
CKGEN_DEVICE void permute(const typename Cfg::TX* x, const int* sorted_token, typename Cfg::TX* xs, int tokens,
                          int hidden, long long ld_x, long long ld_sorted, long long stride_xs_token,
                          long long stride_xs_choice) {
  using TX = typename Cfg::TX;
  constexpr int kV = 16 / static_cast<int>(sizeof(TX));
  const bool vectors = vec16_ok(x, ld_x, hidden) && vec16_ok(xs, stride_xs_token, hidden) &&
                   stride_xs_choice % kV == 0;
  for (long long q = block_id(0); q < tokens; q += grid_dim(0)) {
    const long long p = q * Cfg::kTopK + block_id(1);
    const int t = CKGEN_UNIFORM(gload(sorted_token + at<Cfg>(p, ld_sorted)));
    if (t < 0 || t >= tokens) continue;
    const TX* src = x + static_cast<long long>(t) * ld_x;
    TX* dst = xs + (p / Cfg::kTopK) * stride_xs_token + (p % Cfg::kTopK) * stride_xs_choice;
    if (vectors) {
      for (int c = thread_id() * kV; c < hidden; c += Cfg::kThreads * kV)
        gstore(reinterpret_cast<vec<TX, kV>*>(dst + c), gload(reinterpret_cast<const vec<TX, kV>*>(src + c)));
    } else {
      for (int c = thread_id(); c < hidden; c += Cfg::kThreads) gstore(dst + c, gload(src + c));
    }
  }
}

// One thread's kN columns from c of token t's unpermuted row: the weighted sum over its choices, in order.
template <class Cfg, int kN>
CKGEN_DEVICE void unpermute_cols(const typename Cfg::TX* ys, const int* pos, const float* w, typename Cfg::TX* yrow,
                                 int c, long long n, long long stride_ys_token, long long stride_ys_choice) {
  using TX = typename Cfg::TX;
  float acc[kN];
#pragma unroll
  for (int i = 0; i < kN; ++i) acc[i] = 0.0f;
#pragma unroll
  for (int j = 0; j < Cfg::kTopK; ++j) {
    const long long p = gload(pos + j);
    if (p < 0 || p >= n) continue;
    const float wj = gload(w + j);
    const TX* row = ys + (p / Cfg::kTopK) * stride_ys_token + (p % Cfg::kTopK) * stride_ys_choice + c;
    const vec<TX, kN> v = gload(reinterpret_cast<const vec<TX, kN>*>(row));
#pragma unroll
    for (int i = 0; i < kN; ++i) acc[i] += wj * to_float(v.v[i]);
  }
  vec<TX, kN> out;
#pragma unroll
  for (int i = 0; i < kN; ++i) out.v[i] = from_float<TX>(acc[i]);
  gstore(reinterpret_cast<vec<TX, kN>*>(yrow + c), out);
}

// stage unpermute: ABI ys, position, weights, y, tokens, hidden, stride_ys_token, stride_ys_choice, ld_position,
// ld_weights, ld_y. 16-byte vectors of columns when every row start is aligned, else one column per step.
template <class Cfg>
CKGEN_DEVICE void unpermute(const typename Cfg::TX* ys, const int* position, const float* weights,
                            typename Cfg::TX* y, int tokens, int hidden, long long stride_ys_token,
                            long long stride_ys_choice, long long ld_position, long long ld_weights, long long ld_y) {
  using TX = typename Cfg::TX;
  constexpr int kV = 16 / static_cast<int>(sizeof(TX));
  const long long n = static_cast<long long>(tokens) * Cfg::kTopK;
  const bool vectors = vec16_ok(ys, stride_ys_token, hidden) && stride_ys_choice % kV == 0 && vec16_ok(y, ld_y, hidden);
  for (int t = block_id(0); t < tokens; t += grid_dim(0)) {
    const long long tl = t;
    const int* pos = position + tl * ld_position;
    const float* w = weights + tl * ld_weights;
    TX* yrow = y + tl * ld_y;
    if (vectors) {
      for (int c = thread_id() * kV; c < hidden; c += Cfg::kThreads * kV)
        unpermute_cols<Cfg, kV>(ys, pos, w, yrow, c, n, stride_ys_token, stride_ys_choice);
    } else {
      for (int c = thread_id(); c < hidden; c += Cfg::kThreads)
        unpermute_cols<Cfg, 1>(ys, pos, w, yrow, c, n, stride_ys_token, stride_ys_choice);
    }
  }
}

}  // namespace moe
}  // namespace ckgen
