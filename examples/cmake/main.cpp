// Calls a ckgen-generated kernel through its generated C header.
//
// C (M x N, f16) = relu(A (M x K, f16) . B (K x N, f16) + bias (N, f16)), all row-major.
// Prints the status and returns it as the exit status: 0 on success, 2 (CKGEN_ERROR_NO_DEVICE) on a
// machine without an AMD GPU.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "linear.h"  // generated from kernels/linear.ck

#if defined(EXAMPLE_HAVE_HIP)
#include <hip/hip_runtime_api.h>
#endif

int main() {
  const int64_t M = 256, N = 128, K = 96;
  const size_t a_bytes = M * K * 2, b_bytes = K * N * 2, c_bytes = M * N * 2, bias_bytes = N * 2;
  void *A = nullptr, *B = nullptr, *C = nullptr, *bias = nullptr;
  std::vector<unsigned char> host(a_bytes + b_bytes + c_bytes + bias_bytes);
  bool on_device = false;
#if defined(EXAMPLE_HAVE_HIP)
  on_device = hipMalloc(&A, a_bytes) == hipSuccess && hipMalloc(&B, b_bytes) == hipSuccess &&
              hipMalloc(&C, c_bytes) == hipSuccess && hipMalloc(&bias, bias_bytes) == hipSuccess;
  if (on_device) {  // a real run would upload data here (hipMemcpy); zero-filled keeps the example short
    (void)hipMemset(A, 0, a_bytes);
    (void)hipMemset(B, 0, b_bytes);
    (void)hipMemset(bias, 0, bias_bytes);
  }
#endif
  if (!on_device) {  // no GPU: placeholders; the library checks its runtime before touching memory
    A = host.data();
    B = host.data() + a_bytes;
    C = host.data() + a_bytes + b_bytes;
    bias = host.data() + a_bytes + b_bytes + c_bytes;
  }
  int status = ckgen_linear_relu_f16(A, B, C, bias, M, N, K, /*lda=*/K, /*ldb=*/N, /*ldc=*/N, /*stream=*/nullptr);
#if defined(EXAMPLE_HAVE_HIP)
  if (on_device && status == CKGEN_SUCCESS) status = hipDeviceSynchronize() == hipSuccess ? 0 : CKGEN_ERROR_LAUNCH_FAILED;
#endif
  std::printf("ckgen_linear_relu_f16: %d (%s)\n", status, ckgen_status_string(status));
  return status;
}
