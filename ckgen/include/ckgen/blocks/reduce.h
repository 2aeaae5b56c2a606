// ckgen/blocks/reduce.h: all-reductions of f32 values across lanes, waves and workgroups, for every op body.
//
// Contract
//   Ops: red::Sum (identity 0) and red::Max (identity -inf; max_f32, i.e. v_max_f32 / fmaxf / FMNMX). A
//   multi-value state S (e.g. softmax's running (max, sum), Welford's (n, mean, M2)) may be reduced too: S has
//   `static constexpr int kN`, `float v[kN]` and `static S combine(const S& a, const S& b)`.
//   Results are bitwise identical in every lane that gets them when combine is commutative (Sum, Max and the
//   states of the row ops are): partners combine (own, other) and (other, own).
//
//   group_allreduce<kWidth, Op>(v)     groups of kWidth consecutive lanes (kWidth a power of two, 1 .. wave
//   group_allreduce_state<kWidth>(s)   size; group g = lanes [g*kWidth, (g+1)*kWidth)): every lane of the group
//                                       gets the reduction of the group's values. log2(kWidth) butterfly steps
//                                       of reduce_swap (platform API): AMD DPP quad_perm, row_half_mirror,
//                                       row_mirror, ds_swizzle, v_readlane; NVIDIA shfl.xor. No LDS, no barrier.
//   wave_allreduce<Op>(v), wave_allreduce_state(s): kWidth = the wave size (64 AMD, 32 NVIDIA).
//
//   MultiWave<kWaves, kGroupWaves, kMaxN>: across the waves of a workgroup of kWaves full waves, in groups of
//     kGroupWaves consecutive waves (a divisor of kWaves; kGroupWaves == kWaves: the whole workgroup, a block
//     all-reduce). Every thread of a group gets the group's reduction.
//       LDS scratch: kLdsFloats = 2 * kWaves * kMaxN floats (kLdsBytes bytes), given by the caller (CKGEN_LDS),
//         kMaxN the largest state size reduced through it.
//       kGroupWaves is a power of two (at most the wave size).
//       Per call: the wave all-reduce, lane 0 of each wave writes its value to half `phase` of the scratch,
//         ONE barrier(), then for groups of up to kDirectWaves (8) waves every lane reads all the group's values
//         and combines them in wave order (the same sequence in every lane: the same result everywhere); for
//         larger groups lane l reads the value of wave (l mod kGroupWaves) of its group and the lanes
//         all-reduce those with group_allreduce_state<kGroupWaves> (same inputs in the same lane positions in
//         every wave of the group: the same result everywhere). `phase` flips, so the next call writes the
//         other half: a write of call k+2 comes after call k+1's barrier, which every thread passes only after
//         its reads of call k. Hence consecutive calls need no other barrier; code that touches the scratch
//         otherwise must barrier() first.
//       Every thread of the workgroup must make every call (barrier), with full waves (wave-level exchanges).
//
// Cost per value reduced over a wave64: 6 exchanges (4 DPP, folded into the combining VALU op where LLVM can,
// 1 ds_swizzle, 2 v_readlane); over a warp: 5 shfl.sync.bfly.
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {
namespace red {

struct Sum {
  static CKGEN_DEVICE float identity() { return 0.0f; }
  static CKGEN_DEVICE float combine(float a, float b) { return a + b; }
};

struct Max {
  static CKGEN_DEVICE float identity() { return -__builtin_huge_valf(); }
  static CKGEN_DEVICE float combine(float a, float b) { return max_f32(a, b); }
};

namespace detail {
template <int kWidth>
constexpr bool valid_width() {
  return kWidth >= 1 && kWidth <= kPlatformWaveSize && (kWidth & (kWidth - 1)) == 0;
}
// One float under Op, as a state.
template <class Op>
struct One {
  static constexpr int kN = 1;
  float v[1];
  static CKGEN_DEVICE One combine(const One& a, const One& b) { return One{{Op::combine(a.v[0], b.v[0])}}; }
};

// One butterfly exchange: reduce_swap<kHalf> (platform API). The emulator models DPP and ds_swizzle for wave64
// only, so its warp-32 builds (the NVIDIA bodies' model) exchange through ds_bpermute (shfl_xor) instead.
template <int kHalf>
CKGEN_DEVICE float swap(float v) {
#if defined(CKGEN_PLATFORM_EMU) && CKGEN_EMU_WAVE_SIZE != 64
  return shfl_xor(v, kHalf);
#else
  return reduce_swap<kHalf>(v);
#endif
}
}  // namespace detail

template <int kWidth, class Op, int kHalf = 1>
CKGEN_DEVICE float group_allreduce(float v) {
  static_assert(detail::valid_width<kWidth>(), "group_allreduce<kWidth>: a power of two from 1 to the wave size");
  if constexpr (kHalf >= kWidth) {
    return v;
  } else {
    v = Op::combine(v, detail::swap<kHalf>(v));
    return group_allreduce<kWidth, Op, kHalf * 2>(v);
  }
}

template <int kWidth, class S, int kHalf = 1>
CKGEN_DEVICE S group_allreduce_state(S s) {
  static_assert(detail::valid_width<kWidth>(), "group_allreduce_state<kWidth>: a power of two from 1 to the wave size");
  if constexpr (kHalf >= kWidth) {
    return s;
  } else {
    S o;
#pragma unroll
    for (int i = 0; i < S::kN; ++i) o.v[i] = detail::swap<kHalf>(s.v[i]);
    return group_allreduce_state<kWidth, S, kHalf * 2>(S::combine(s, o));
  }
}

template <class Op>
CKGEN_DEVICE float wave_allreduce(float v) {
  return group_allreduce<kPlatformWaveSize, Op>(v);
}

template <class S>
CKGEN_DEVICE S wave_allreduce_state(S s) {
  return group_allreduce_state<kPlatformWaveSize, S>(s);
}

template <int kWaves, int kGroupWaves, int kMaxN = 1>
struct MultiWave {
  static_assert(kWaves >= 1 && kGroupWaves >= 1 && kWaves % kGroupWaves == 0,
                "MultiWave: kGroupWaves must divide kWaves");
  static_assert((kGroupWaves & (kGroupWaves - 1)) == 0 && kGroupWaves <= kPlatformWaveSize,
                "MultiWave: kGroupWaves must be a power of two, at most the wave size");
  static_assert(kMaxN >= 1, "MultiWave: kMaxN >= 1");
  static constexpr int kLdsFloats = 2 * kWaves * kMaxN;
  static constexpr int kDirectWaves = 8;  // groups up to this many waves combine the partials read from LDS directly
  static constexpr int kLdsBytes = kLdsFloats * static_cast<int>(sizeof(float));

  float* lds;     // kLdsFloats floats of LDS
  int phase = 0;  // which half the next call writes (uniform)

  CKGEN_DEVICE explicit MultiWave(float* scratch) : lds(scratch) {}

  template <class S>
  CKGEN_DEVICE S allreduce_state(S s) {
    static_assert(S::kN <= kMaxN, "MultiWave: state larger than kMaxN floats");
    s = wave_allreduce_state(s);
    const int wave = wave_id();
    float* half = lds + phase * (kWaves * kMaxN);
    if (lane_id() == 0) {
#pragma unroll
      for (int i = 0; i < S::kN; ++i) lds_store(half + wave * kMaxN + i, s.v[i]);
    }
    barrier();
    phase ^= 1;
    const int first = (wave / kGroupWaves) * kGroupWaves;
    if constexpr (kGroupWaves <= kDirectWaves) {
      // Small groups: every lane reads the group's kGroupWaves partials (the same addresses in every lane:
      // broadcast reads, issued together) and combines them in wave order, the same sequence in every lane:
      // kGroupWaves * kN reads and no second exchange chain (each butterfly step is a shuffle's latency).
      S r;
#pragma unroll
      for (int i = 0; i < S::kN; ++i) r.v[i] = lds_load(half + first * kMaxN + i);
#pragma unroll
      for (int w = 1; w < kGroupWaves; ++w) {
        S o;
#pragma unroll
        for (int i = 0; i < S::kN; ++i) o.v[i] = lds_load(half + (first + w) * kMaxN + i);
        r = S::combine(r, o);
      }
      return r;
    } else {
      // Lane l reads the partial of wave (l mod kGroupWaves) of its group, and the lanes reduce them with a
      // second butterfly: kN LDS reads and log2(kGroupWaves) exchange steps per lane, instead of
      // kGroupWaves * kN reads that the compiler would hoist into as many registers.
      const int src = first + lane_id() % kGroupWaves;
      S r;
#pragma unroll
      for (int i = 0; i < S::kN; ++i) r.v[i] = lds_load(half + src * kMaxN + i);
      return group_allreduce_state<kGroupWaves>(r);
    }
  }

  template <class Op>
  CKGEN_DEVICE float allreduce(float v) {
    return allreduce_state(detail::One<Op>{{v}}).v[0];
  }
};

}  // namespace red
}  // namespace ckgen
