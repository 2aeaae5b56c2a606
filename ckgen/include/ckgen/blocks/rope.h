// ckgen/blocks/rope.h: the rotary position embedding (RoPE) of one pair of values, as the GEMM epilogue applies it
// (blocks/epilogue.h, epi::Rotary). The table is vLLM's cos_sin_cache layout (ckgen/ir/rope.py, ckgen.rope_table):
// f32 rows of rot / 2 cosines, then rot / 2 sines, one row per position.
//
//   row(cos_sin, stride, pos, positions)  the table row of position pos, or null when pos is outside
//                                         0..positions-1 (the caller then writes NaNs: no read outside the table)
//   rotate(x, y, c, s)                    (x, y) <- (x c - y s, y c + x s), in f32
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {
namespace rope {

CKGEN_DEVICE const float* row(const float* cos_sin, long long stride, long long pos, long long positions) {
  return pos >= 0 && pos < positions ? cos_sin + pos * stride : nullptr;
}

CKGEN_DEVICE void rotate(float& x, float& y, float c, float s) {
  const float x0 = x;
  x = x0 * c - y * s;
  y = y * c + x0 * s;
}

}  // namespace rope
}  // namespace ckgen
