// Host driver that runs one hand-written case (tests/include/cases/<name>.hip) on the CPU emulator.
// Build: clang++ -x c++ -std=c++17 -DCKGEN_PLATFORM_EMU -DCASE_FILE='"<path>"' -DCASE=<name> -shared -fPIC -pthread
// Exports run_case(): launches the kernel over ceil(N/kTileN) x ceil(M/kTileM) workgroups.
#include CASE_FILE

#define CKGEN_CAT2(a, b) a##b
#define CKGEN_CAT(a, b) CKGEN_CAT2(a, b)
#ifdef CASE_CFG
using CaseCfg = CASE_CFG;  // e.g. ckgen_gen::<kernel>_cfg in a `ckgen emit` output
#else
using CaseCfg = CKGEN_CAT(CASE, _cfg);
#endif

extern "C" __attribute__((visibility("default"))) int run_case(const void* A, const void* B, void* C,
                                                                const void* bias, int M, int N, int K,
                                                                long long lda, long long ldb, long long ldc) {
  const unsigned gx = static_cast<unsigned>((N + CaseCfg::kTileN - 1) / CaseCfg::kTileN);
  const unsigned gy = static_cast<unsigned>((M + CaseCfg::kTileM - 1) / CaseCfg::kTileM);
  return CKGEN_LAUNCH(CASE, gx, gy, 1, CaseCfg::kThreads, 0, nullptr,
                      static_cast<const CaseCfg::TA*>(A), static_cast<const CaseCfg::TB*>(B),
                      static_cast<CaseCfg::TC*>(C), static_cast<const CaseCfg::TBias*>(bias), M, N, K, lda, ldb,
                      ldc);
}
