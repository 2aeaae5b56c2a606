// elementwise_expr.h: the element-wise op's expression as a type (ckgen/ops/elementwise/fns.py is the table).
//
//   Expr<Step<fn, lhs, rhs, bits>...>::eval(in)   the steps left to right on f32 values; in[0..2] are the element's
//                                                 inputs a, b, c (0 where the kernel has none)
//
// A step applies function `fn` (Fn) to two operands (Src): the value so far (kRun), an input, or its constant (kConst,
// an f32 given by its bits). Unary functions read only lhs. Everything is a template argument: the compiler folds
// the expression into straight-line code.
#pragma once

#include "ckgen/blocks/activation.h"
#include "ckgen/platform.h"

namespace ckgen {
namespace ew {

// Functions (the codes of fns.py's FNS table).
enum Fn : int { kAdd = 0, kSub = 1, kMul = 2, kDiv = 3, kMax = 4, kMin = 5,
                kSilu = 6, kGelu = 7, kRelu = 8, kSigmoid = 9, kTanh = 10, kNeg = 11, kExp = 12, kCopy = 13 };
// Operands.
enum Src : int { kRun = 0, kInA = 1, kInB = 2, kInC = 3, kConst = 4 };

template <int kFn>
CKGEN_DEVICE float fn(float x, float y) {
  if constexpr (kFn == kAdd) return x + y;
  else if constexpr (kFn == kSub) return x - y;
  else if constexpr (kFn == kMul) return x * y;
  else if constexpr (kFn == kDiv) return x / y;
  else if constexpr (kFn == kMax) return max_f32(x, y);
  else if constexpr (kFn == kMin) return -max_f32(-x, -y);
  else if constexpr (kFn == kSilu) return act::silu(x);
  else if constexpr (kFn == kGelu) return act::gelu_tanh(x);
  else if constexpr (kFn == kRelu) return act::relu(x);
  else if constexpr (kFn == kSigmoid) return act::sigmoid(x);
  else if constexpr (kFn == kTanh) return tanh_f32(x);
  else if constexpr (kFn == kNeg) return -x;
  else if constexpr (kFn == kExp) return exp_f32(x);
  else {
    static_assert(kFn == kCopy, "unknown element-wise function");
    return x;
  }
}

template <int kSrc, unsigned kBits>
CKGEN_DEVICE float operand(float run, const float* in) {
  if constexpr (kSrc == kRun) return run;
  else if constexpr (kSrc == kConst) return bit_cast<float>(kBits);
  else {
    return in[kSrc - kInA];
  }
}

template <int kFn, int kLhs, int kRhs, unsigned kBits>
struct Step {
  static CKGEN_DEVICE float apply(float run, const float* in) {
    return fn<kFn>(operand<kLhs, kBits>(run, in), operand<kRhs, kBits>(run, in));
  }
};

template <class... Steps>
struct Expr;

template <>
struct Expr<> {
  static CKGEN_DEVICE float run(float v, const float*) { return v; }
};

template <class S, class... Rest>
struct Expr<S, Rest...> {
  static CKGEN_DEVICE float run(float v, const float* in) { return Expr<Rest...>::run(S::apply(v, in), in); }
  static CKGEN_DEVICE float eval(const float* in) { return run(0.0f, in); }
};

}  // namespace ew
}  // namespace ckgen
