// Test case for ckgen/build: two v_mfma_f32_32x32x8_bf16 (bf16_1k) per iteration of the main loop and
// one more after it, so the report must pick the loop and count 2 there. Written against the platform API.
#include "ckgen/platform.h"

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(128) void case_mfma_bf16(const ckgen::short4_t* a, const ckgen::short4_t* b,
                                                         float* c, int k_steps) {
  const int t = ckgen::thread_id();
  ckgen::float16_t acc0 = {};
  ckgen::float16_t acc1 = {};
  for (int s = 0; s < k_steps; ++s) {
    ckgen::short4_t av = ckgen::gload(a + s * 128 + t);
    ckgen::short4_t bv = ckgen::gload(b + s * 128 + t);
    acc0 = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(av, bv, acc0, 0, 0, 0);
    acc1 = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(bv, av, acc1, 0, 0, 0);
  }
  acc0 = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(ckgen::gload(a + t), ckgen::gload(b + t), acc0, 0, 0, 0);
  for (int i = 0; i < 16; ++i) ckgen::gstore(c + 16 * (ckgen::block_id(0) * 128 + t) + i, acc0[i] + acc1[i]);
}
