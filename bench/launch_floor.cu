// bench/launch_floor.cu: the host time of one kernel launch on this machine, in C++ (no Python): an empty kernel with
// ten arguments launched back to back with <<<>>> on a stream, in batches with a synchronize between them (outside
// the timed region), the median per launch; then the same through the driver API's cuLaunchKernel. The floor under any Python call that launches a kernel (issue 22's
// host-time target; bench/overhead_profile.py times the same launch through ckgen's packed entry from Python).
//
//   nvcc -O2 -o /tmp/launch_floor bench/launch_floor.cu -lcuda && /tmp/launch_floor
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

__global__ void empty10(const void* a, const void* b, void* c, long long m, long long n, long long k, long long lda,
                        long long ldb, long long ldc, float alpha) {}

// The median host time of launch() over batches of back-to-back calls (a synchronize between batches, untimed).
template <class Launch>
double median_us(cudaStream_t s, Launch launch) {
  const int batch = 200, batches = 200;
  std::vector<double> us;
  us.reserve(batch * batches);
  for (int w = 0; w < 1000; ++w) launch();
  cudaStreamSynchronize(s);
  for (int b = 0; b < batches; ++b) {
    for (int i = 0; i < batch; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      launch();
      const auto t1 = std::chrono::steady_clock::now();
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    cudaStreamSynchronize(s);
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

int main() {
  cudaStream_t s;
  cudaStreamCreate(&s);
  const double rt = median_us(s, [&] {
    empty10<<<132, 256, 0, s>>>(nullptr, nullptr, nullptr, 128, 128, 128, 128, 128, 128, 1.0f);
  });
  // the same kernel through the driver API (cuLaunchKernel, what the runtime's launch ends in)
  cudaFunction_t f;
  cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(empty10));
  const void* null = nullptr;
  long long sz = 128;
  float alpha = 1.0f;
  void* params[] = {&null, &null, &null, &sz, &sz, &sz, &sz, &sz, &sz, &alpha};
  const double drv = median_us(s, [&] {
    cuLaunchKernel(reinterpret_cast<CUfunction>(f), 132, 1, 1, 256, 1, 1, 0, reinterpret_cast<CUstream>(s), params,
                   nullptr);
  });
  std::printf("host time per launch (median of 40000): <<<>>> %.2f us, cuLaunchKernel %.2f us; last error: %s\n", rt,
              drv, cudaGetErrorString(cudaGetLastError()));
  return 0;
}
