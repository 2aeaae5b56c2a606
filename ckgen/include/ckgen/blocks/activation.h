// ckgen/blocks/activation.h: the activation functions every op shares (GEMM epilogues, the element-wise op), on f32.
//
//   act::relu(x)       max(x, 0)
//   act::sigmoid(x)    1 / (1 + exp(-x))
//   act::silu(x)       x * sigmoid(x) = x / (1 + exp(-x)); exp overflowing to inf gives -0 for very negative x
//   act::gelu_tanh(x)  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//   tanh_f32(x)        from exp only, where the platform has no tanh instruction (CKGEN_HAS_TANH_F32)
#pragma once

#include "ckgen/platform.h"

namespace ckgen {

#if !defined(CKGEN_HAS_TANH_F32)  // (a platform with a tanh instruction defines its own)
// tanh(y) = sign(y) * (1 - e) / (1 + e), e = exp(-2|y|) in (0, 1]: no overflow for any |y| (e -> 0 gives +-1),
// NaN propagates.
CKGEN_DEVICE float tanh_f32(float y) {
  float a = y < 0.0f ? -y : y;
  float e = exp_f32(-2.0f * a);
  float t = (1.0f - e) / (1.0f + e);
  return y < 0.0f ? -t : t;
}
#endif

namespace act {

CKGEN_DEVICE float relu(float x) { return x > 0.0f ? x : 0.0f; }

CKGEN_DEVICE float sigmoid(float x) { return 1.0f / (1.0f + exp_f32(-x)); }

CKGEN_DEVICE float silu(float x) { return x / (1.0f + exp_f32(-x)); }

CKGEN_DEVICE float gelu_tanh(float x) {
  const float k0 = 0.7978845608028654f;  // sqrt(2/pi)
  const float k1 = 0.044715f;
  return 0.5f * x * (1.0f + tanh_f32(k0 * (x + k1 * x * x * x)));
}

}  // namespace act
}  // namespace ckgen
