// Harness for tests/runtime/test_emu_mfma_scale.py: one emulator launch of one wave running gfx950's
// __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4. Lane l's operands are read from a[l] (8 ints), b[l] (8 ints),
// c[l] (16 floats), sa[l], sb[l] (one 32-bit scale word each); its D registers are written to d[l].
#include <string.h>

#include "ckgen/platform.h"

static void scale_case(const int* a, const int* b, const float* c, const int* sa, const int* sb, float* d, int fa,
                       int fb, int sel_a, int sel_b) {
  const int lane = ckgen::lane_id();
  ckgen::i32x8_t av, bv;
  ckgen::float16_t cv;
  for (int t = 0; t < 8; ++t) av[t] = ckgen::gload(a + lane * 8 + t), bv[t] = ckgen::gload(b + lane * 8 + t);
  for (int t = 0; t < 16; ++t) cv[t] = ckgen::gload(c + lane * 16 + t);
  const int s_a = ckgen::gload(sa + lane), s_b = ckgen::gload(sb + lane);
  ckgen::float16_t dv;
  // The real builtin takes the formats and byte selectors as constants; the emulator's takes any int.
  dv = __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(av, bv, cv, fa, fb, sel_a, s_a, sel_b, s_b);
  for (int t = 0; t < 16; ++t) ckgen::gstore(d + lane * 16 + t, static_cast<float>(dv[t]));
}

extern "C" __attribute__((visibility("default"))) int run_scaled(const int* a, const int* b, const float* c,
                                                                 const int* sa, const int* sb, float* d, int fa,
                                                                 int fb, int sel_a, int sel_b) {
  return ckgen::emu::launch("mfma_scale_32x32x64", &scale_case, ckgen::emu::Dim3{1, 1, 1}, 64, 0, a, b, c, sa, sb, d,
                            fa, fb, sel_a, sel_b);
}
