// Test case for ckgen/toolchain: a hand-written host launcher (stand-in for the generated one) for the two
// case kernels. Plain C++; reaches the GPU only through ckgen/host_runtime.h.
#include <stdint.h>

#include "ckgen/host_runtime.h"

static int launch_case(const char* kernel, unsigned threads, const void* a, const void* b, void* c,
                       int k_steps, int blocks, void* stream) {
  if (a == nullptr || b == nullptr || c == nullptr || k_steps < 0 || blocks <= 0) {
    return CKGEN_ERROR_INVALID_VALUE;
  }
  unsigned grid[3] = {static_cast<unsigned>(blocks), 1, 1};
  unsigned block[3] = {threads, 1, 1};
  void* args[] = {const_cast<void**>(&a), const_cast<void**>(&b), &c, &k_steps};
  return ckgen_rt_launch(kernel, grid, block, 0, stream, args);
}

CKGEN_API int ckgen_case_mfma_f16(const void* a, const void* b, void* c, int k_steps, int blocks, void* stream) {
  return launch_case("case_mfma_f16", 256, a, b, c, k_steps, blocks, stream);
}

CKGEN_API int ckgen_case_mfma_bf16(const void* a, const void* b, void* c, int k_steps, int blocks, void* stream) {
  return launch_case("case_mfma_bf16", 128, a, b, c, k_steps, blocks, stream);
}

CKGEN_API int ckgen_case_status(void) { return ckgen_rt_status(); }
