// ckgen/blocks/epilogue.h: element-wise epilogue operations applied to alpha*acc (+ beta*C) before the cast.
//
// Each op:  template <class Cfg> static CKGEN_DEVICE float apply(float v, int row, int col,
//                                                             const typename Cfg::TBias* bias);
// and `static constexpr bool kReads`: whether apply reads memory (a bias). row/col are global C coordinates, in
// bounds (row < M, col < N) whenever the chain reads memory; a chain that reads none may also be evaluated past
// M / N on values the caller then discards (an epilogue whose store clips, e.g. TMA).
// Chain<Ops...> applies Ops left to right; Chain<> is the identity.
#pragma once

#include "ckgen/blocks/fp8.h"
#include "ckgen/platform.h"

namespace ckgen {
namespace epi {

// bias[row]: one value per row of C (length M).
struct BiasRow {
  static constexpr bool kReads = true;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float v, int row, int /*col*/, const typename Cfg::TBias* bias) {
    return v + to_float(gload(bias + row));
  }
};

// bias[col]: one value per column of C (length N).
struct BiasCol {
  static constexpr bool kReads = true;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float v, int /*row*/, int col, const typename Cfg::TBias* bias) {
    return v + to_float(gload(bias + col));
  }
};

struct Relu {
  static constexpr bool kReads = false;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float v, int, int, const typename Cfg::TBias*) {
    return v > 0.0f ? v : 0.0f;
  }
};

#if !defined(CKGEN_HAS_TANH_F32)  // (a platform with a tanh instruction defines its own)
// tanh from exp only: tanh(y) = sign(y) * (1 - e) / (1 + e), e = exp(-2|y|) in (0, 1]; no overflow
// for any |y| (e -> 0 gives +-1), NaN propagates.
CKGEN_DEVICE float tanh_f32(float y) {
  float a = y < 0.0f ? -y : y;
  float e = exp_f32(-2.0f * a);
  float t = (1.0f - e) / (1.0f + e);
  return y < 0.0f ? -t : t;
}
#endif

// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct Gelu {
  static constexpr bool kReads = false;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float x, int, int, const typename Cfg::TBias*) {
    const float k0 = 0.7978845608028654f;  // sqrt(2/pi)
    const float k1 = 0.044715f;
    return 0.5f * x * (1.0f + tanh_f32(k0 * (x + k1 * x * x * x)));
  }
};

// SiLU: x * sigmoid(x) = x / (1 + exp(-x)); exp overflow to inf gives -0 for very negative x.
struct Silu {
  static constexpr bool kReads = false;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float x, int, int, const typename Cfg::TBias*) {
    return x / (1.0f + exp_f32(-x));
  }
};

template <class... Ops>
struct Chain;

template <>
struct Chain<> {
  static constexpr bool kEmpty = true;
  static constexpr bool kReads = false;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float v, int, int, const typename Cfg::TBias*) {
    return v;
  }
};

template <class Op, class... Rest>
struct Chain<Op, Rest...> {
  static constexpr bool kEmpty = false;
  static constexpr bool kReads = Op::kReads || Chain<Rest...>::kReads;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float v, int row, int col, const typename Cfg::TBias* bias) {
    return Chain<Rest...>::template apply<Cfg>(Op::template apply<Cfg>(v, row, col, bias), row, col, bias);
  }
};

template <class T>
struct IsInt {
  static constexpr bool value = false;
};
template <>
struct IsInt< ::int8_t> {
  static constexpr bool value = true;
};
template <>
struct IsInt< ::int32_t> {
  static constexpr bool value = true;
};

// Whether the epilogue of Cfg reads memory: beta * C, or a bias. When it does not, value() may run past M / N.
template <class Cfg>
constexpr bool reads_memory() {
  return Cfg::kBeta != 0.0f || Cfg::Epilogue::kReads;
}

// The value one accumulator gives C before the cast: alpha*acc, plus beta*C[off] when kBeta != 0 (C is read only
// then), then the chain.
template <class Cfg, class AccT>
CKGEN_DEVICE float value(AccT acc, int row, int col, const typename Cfg::TC* C, long long off,
                         const typename Cfg::TBias* bias) {
  float v = Cfg::kAlpha * static_cast<float>(acc);
  if constexpr (Cfg::kBeta != 0.0f) v += Cfg::kBeta * to_float(gload(C + off));
  return Cfg::Epilogue::template apply<Cfg>(v, row, col, bias);
}

// The value one accumulator writes to C (shared by every GEMM body): value(), then the cast to TC. An integer
// GEMM with kIntegerEpilogue, an empty chain and integral alpha/beta stays exact (64-bit, then saturated).
template <class Cfg, class AccT>
CKGEN_DEVICE typename Cfg::TC finish(AccT acc, int row, int col, const typename Cfg::TC* C, long long off,
                                     const typename Cfg::TBias* bias) {
  using TC = typename Cfg::TC;
  constexpr bool kIntExact = Cfg::kIntegerEpilogue && IsInt<TC>::value && Cfg::Epilogue::kEmpty &&
                             Cfg::kAlpha == static_cast<float>(static_cast<long long>(Cfg::kAlpha)) &&
                             Cfg::kBeta == static_cast<float>(static_cast<long long>(Cfg::kBeta));
  if constexpr (kIntExact) {
    long long v = static_cast<long long>(acc) * static_cast<long long>(Cfg::kAlpha);
    if constexpr (Cfg::kBeta != 0.0f) v += static_cast<long long>(Cfg::kBeta) * static_cast<long long>(gload(C + off));
    return saturate_int<TC>(v);
  } else {
    return from_float<TC>(value<Cfg>(acc, row, col, C, off, bias));
  }
}

}  // namespace epi
}  // namespace ckgen
