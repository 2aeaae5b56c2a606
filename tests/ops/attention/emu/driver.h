// Host side of the attention cases on the CPU emulator. A test source includes case files
// (tests/ops/attention/cases/<name>.hip|.cu, each defining struct <name>_cfg and the kernel <name>), then
// this header, then ATTN_EMU_RUNNER(<name>) per case. Each runner, exported as run_<name>, launches the case
// on the grid of attention_common.h: (ceil(seqlen_q / kBlockM), heads_q, batch) workgroups of kThreads.
// st: the 14 strides of the ABI in order (q b/s/h, k b/s/h, v b/s/h, o b/s/h, lse b/h).
#pragma once

#define ATTN_EMU_LAUNCH(kernel, ...) CKGEN_LAUNCH(kernel, __VA_ARGS__)  // expands NAME before CKGEN_LAUNCH names it

#define ATTN_EMU_RUNNER(NAME)                                                                                      \
  extern "C" __attribute__((visibility("default"))) int run_##NAME(                                                 \
      const void* Q, const void* K, const void* V, void* O, float* LSE, const int* cu_q, const int* cu_k,          \
      int batch, int heads_q, int heads_kv, int seqlen_q, int seqlen_k, const long long* st, float scale,          \
      int window_left, int window_right) {                                                                         \
    using C = NAME##_cfg;                                                                                          \
    using T = C::T;                                                                                                \
    const unsigned gx = static_cast<unsigned>((seqlen_q + C::kBlockM - 1) / C::kBlockM);                          \
    if (gx == 0 || heads_q == 0 || batch == 0) return 0;                                                           \
    return ATTN_EMU_LAUNCH(NAME, gx, heads_q, batch, C::kThreads, 0, nullptr, static_cast<const T*>(Q),          \
                           static_cast<const T*>(K), static_cast<const T*>(V), static_cast<T*>(O), LSE, cu_q,     \
                           cu_k, batch, heads_q, heads_kv, seqlen_q, seqlen_k, st[0], st[1], st[2], st[3], st[4],  \
                           st[5], st[6], st[7], st[8], st[9], st[10], st[11], st[12], st[13], scale, window_left, \
                           window_right);                                                                          \
  }
