// ckgen/blocks/rope.h: the rotary position embedding (RoPE) of one pair, shared by every op that rotates (the GEMM
// epilogue, blocks/epilogue.h; attention, the K/V append and decode, ops/attention/device/attention_rope.h). The
// table is vLLM's cos_sin_cache layout (ckgen/ir/rope.py): f32 rows of rot / 2 cosines, then rot / 2 sines.
//
//   rope_rotate(x, y, c, s)   (x, y) <- (x c - y s, y c + x s), in f32 (every body's rotation: the same bits)
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {

CKGEN_DEVICE void rope_rotate(float& x, float& y, float c, float s) {
  const float x0 = x;
  x = x0 * c - y * s;
  y = y * c + x0 * s;
}

}  // namespace ckgen
