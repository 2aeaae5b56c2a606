// Emulator-only probe of the emulated cross-lane builtins (ckgen/emu/xlane.h) with run-time controls, so that
// tests/runtime/test_xlane.py can drive a table of controls through one build. Also exports the launchers of
// xlane_kernels.hip. Build: clang++ -std=c++17 -DCKGEN_PLATFORM_EMU -shared -fPIC -pthread -I<ckgen/include>.
#include "xlane_kernels.hip"

// Table entry i: {kind, a, b, c, d}; every lane reads src[i * W + lane], its "old" value is 1000 + lane.
//   kind 0: update_dpp(old, src, a, b, c, d)   1: mov_dpp(src, a, b, c, d)   2: ds_swizzle(src, a)
//   kind 3: readlane(src, a)                    4: update_dpp with dpp_ctrl a + (lane & 1) (not uniform)
//   kind 5: readlane(src, a + (lane & 1))       6: ds_swizzle(src, a + (lane & 1))
CKGEN_GLOBAL void xlane_probe(const int* table, int n, const int* src, int* out) {
  const int lane = ckgen::lane_id();
  constexpr int W = ckgen::kPlatformWaveSize;
  for (int i = 0; i < n; ++i) {
    const int* t = table + 5 * i;
    const int s = ckgen::gload(src + i * W + lane), old = 1000 + lane;
    const int kind = ckgen::gload(t), a = ckgen::gload(t + 1), b = ckgen::gload(t + 2), c = ckgen::gload(t + 3);
    const bool d = ckgen::gload(t + 4) != 0;
    int r = 0;
    switch (kind) {
      case 0: r = __builtin_amdgcn_update_dpp(old, s, a, b, c, d); break;
      case 1: r = __builtin_amdgcn_mov_dpp(s, a, b, c, d); break;
      case 2: r = __builtin_amdgcn_ds_swizzle(s, a); break;
      case 3: r = __builtin_amdgcn_readlane(s, a); break;
      case 4: r = __builtin_amdgcn_update_dpp(old, s, a + (lane & 1), b, c, d); break;
      case 5: r = __builtin_amdgcn_readlane(s, a + (lane & 1)); break;
      default: r = __builtin_amdgcn_ds_swizzle(s, a + (lane & 1)); break;
    }
    ckgen::gstore(out + i * W + lane, r);
  }
}

#define XLANE_EXPORT extern "C" __attribute__((visibility("default")))
XLANE_EXPORT int run_probe(const int* table, int n, const int* src, int* out, int threads) {
  return CKGEN_LAUNCH(xlane_probe, 1, 1, 1, threads, 0, nullptr, table, n, src, out);
}
XLANE_EXPORT int run_shfl(const float* in, float* out, int* out_i) {
  return CKGEN_LAUNCH(xlane_shfl, 1, 1, 1, ckgen::kPlatformWaveSize, 0, nullptr, in, out, out_i);
}
XLANE_EXPORT int run_reduce(const float* in, float* out) {
  return CKGEN_LAUNCH(xlane_reduce, 1, 1, 1, 4 * ckgen::kPlatformWaveSize, 0, nullptr, in, out);
}
