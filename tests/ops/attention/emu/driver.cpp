// Host driver that runs one attention case (tests/ops/attention/cases/<name>) on the CPU emulator.
// Build: clang++ -x c++ -std=c++17 <ckgen.runtime.emu.compile_flags> -DCASE_FILE='"<path>"' -DCASE=<name> -shared
// Exports run_attn(): launches the case's kernel on the grid of attention_common.h:
// (ceil(seqlen_q / kBlockM), heads_q, batch) workgroups of kThreads threads.
#include CASE_FILE

#define CKGEN_CAT2(a, b) a##b
#define CKGEN_CAT(a, b) CKGEN_CAT2(a, b)
#define LAUNCH(kernel, ...) CKGEN_LAUNCH(kernel, __VA_ARGS__)  // expands CASE before CKGEN_LAUNCH names it
using CaseCfg = CKGEN_CAT(CASE, _cfg);
using T = CaseCfg::T;

// st: the 14 strides of the ABI in order (q b/s/h, k b/s/h, v b/s/h, o b/s/h, lse b/h).
extern "C" __attribute__((visibility("default"))) int run_attn(const void* Q, const void* K, const void* V, void* O,
                                                                float* LSE, const int* cu_q, const int* cu_k,
                                                                int batch, int heads_q, int heads_kv, int seqlen_q,
                                                                int seqlen_k, const long long* st, float scale,
                                                                int window_left, int window_right) {
  const unsigned gx = static_cast<unsigned>((seqlen_q + CaseCfg::kBlockM - 1) / CaseCfg::kBlockM);
  if (gx == 0 || heads_q == 0 || batch == 0) return 0;
  return LAUNCH(CASE, gx, heads_q, batch, CaseCfg::kThreads, 0, nullptr, static_cast<const T*>(Q),
                      static_cast<const T*>(K), static_cast<const T*>(V), static_cast<T*>(O), LSE, cu_q, cu_k, batch,
                      heads_q, heads_kv, seqlen_q, seqlen_k, st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7],
                      st[8], st[9], st[10], st[11], st[12], st[13], scale, window_left, window_right);
}
