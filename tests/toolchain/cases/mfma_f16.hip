// Test case for ckgen/build (hand-written stand-in for generated code): one wave-collective
// v_mfma_f32_16x16x16_f16 per K step, with A staged through LDS. Written against the platform API.
#include "ckgen/platform.h"

CKGEN_GLOBAL CKGEN_LAUNCH_BOUNDS(256) void case_mfma_f16(const ckgen::half4_t* a, const ckgen::half4_t* b,
                                                        float* c, int k_steps) {
  CKGEN_LDS(ckgen::half4_t, sa, 256);
  const int t = ckgen::thread_id();
  ckgen::float4_t acc = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int s = 0; s < k_steps; ++s) {
    ckgen::lds_store(sa + t, ckgen::gload(a + s * 256 + t));
    ckgen::barrier();
    ckgen::half4_t av = ckgen::lds_load(sa + (t ^ 1));
    ckgen::half4_t bv = ckgen::gload(b + s * 256 + t);
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(av, bv, acc, 0, 0, 0);
    ckgen::barrier();
  }
  for (int i = 0; i < 4; ++i) ckgen::gstore(c + 4 * (ckgen::block_id(0) * 256 + t) + i, acc[i]);
}
