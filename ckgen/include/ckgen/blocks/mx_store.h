// ckgen/blocks/mx_store.h: the store of MX fp4 outputs (ckgen/blocks/mx_quant.h's codes) shared by the op bodies
// that write them (element-wise, row ops).
//
// Contract:
//   fp4_store<N>(p, n, whole, v, mul)   v[0..N) * mul as the N / 2 bytes of fp4 pairs fp4_pack makes, at p (the
//                         first byte of the vector: its column / 2): one vector store when whole (p then aligned
//                         for N / 2 bytes), else only the bytes of the first n values (n even, or past N: a row of
//                         fp4 pairs has an even number of columns)
#pragma once

#include "ckgen/blocks/mx_quant.h"
#include "ckgen/platform.h"
#include "ckgen/types.h"

namespace ckgen {

template <int N>
CKGEN_DEVICE void fp4_store(uint8_t* p, long long n, bool whole, const float (&v)[N], float mul) {
  constexpr int kBytes = N / 2;
  const vec<uint8_t, kBytes> w = fp4_pack<N>(v, mul);
  if (whole) {
    gstore(reinterpret_cast<vec<uint8_t, kBytes>*>(p), w);
  } else {
#pragma unroll
    for (int i = 0; i < kBytes; ++i)
      if (2 * i < n) gstore(p + i, w.v[i]);
  }
}

}  // namespace ckgen
