// bench/skinny_probe.cu: the kernels of bench/skinny_probe.py (built there with nvcc into a shared library and
// called through ctypes on torch's stream). An experiment before a ckgen body, not a benchmark of record.
//
// y[M, N] = x[M, K] . W[N, K]^T (nn.Linear: x row-major, W row-major = B column-major), f32 sums, bf16 y. Each
// warp owns ROWS rows of W and streams them over the whole K with 16-byte loads, UNROLL chunks of 32 x 16 bytes
// per row in flight, x read through L1 beside them; the lanes' partial sums meet by shuffles, one lane stores
// each value. No shared memory, no workspace, one launch. W is bf16 or e4m3 (then x is e4m3 too and one f32
// scale, the product of the per-tensor pair, is applied, as in a tensor-scaled fp8 GEMM).
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

using bf16 = __nv_bfloat16;
using e4m3 = __nv_fp8_e4m3;

// 16 bytes of T as floats (8 bf16 or 16 e4m3)
template <class T>
struct Vec;
template <>
struct Vec<bf16> {
  static constexpr int kN = 8;
  static __device__ void unpack(const uint4& v, float* f) {
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 p = __bfloat1622float2(h[i]);
      f[2 * i] = p.x;
      f[2 * i + 1] = p.y;
    }
  }
};
template <>
struct Vec<e4m3> {
  static constexpr int kN = 16;
  static __device__ void unpack(const uint4& v, float* f) {
    const __nv_fp8x2_storage_t* h = reinterpret_cast<const __nv_fp8x2_storage_t*>(&v);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(h[i], __NV_E4M3);
      const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&r));
      f[2 * i] = p.x;
      f[2 * i + 1] = p.y;
    }
  }
};

__device__ __forceinline__ uint4 ld_stream(const void* p) {  // W: read once, keep it out of L1
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// The skinny body: M tokens, ROWS rows of W per warp, UNROLL 16-byte chunks per row in flight per lane.
// K % (16 / sizeof(T)) == 0 and 16-byte aligned rows (the probe's shapes); a K tail past the last whole
// 32-lane step is taken one chunk per lane.
template <class T, int M, int ROWS, int UNROLL>
__global__ void __launch_bounds__(128) skinny(const T* __restrict__ x, const T* __restrict__ w, bf16* __restrict__ y,
                                              int N, int K, float scale) {
  constexpr int V = Vec<T>::kN;
  const int lane = threadIdx.x & 31;
  const int n0 = (blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5)) * ROWS;
  if (n0 >= N) return;
  float acc[ROWS][M];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int m = 0; m < M; ++m) acc[r][m] = 0.f;
  const T* wr[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) wr[r] = w + static_cast<long long>(min(n0 + r, N - 1)) * K;
  constexpr int kStep = 32 * V;
  int k = lane * V;
  auto chunk = [&](const uint4 (&wv)[ROWS], int kk) {
    float wf[ROWS][V];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) Vec<T>::unpack(wv[r], wf[r]);
#pragma unroll
    for (int m = 0; m < M; ++m) {
      float xf[V];
      Vec<T>::unpack(__ldg(reinterpret_cast<const uint4*>(x + static_cast<long long>(m) * K + kk)), xf);
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int i = 0; i < V; ++i) acc[r][m] = fmaf(wf[r][i], xf[i], acc[r][m]);
    }
  };
  for (; k + (UNROLL - 1) * kStep < K; k += UNROLL * kStep) {
    uint4 wv[UNROLL][ROWS];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int r = 0; r < ROWS; ++r) wv[u][r] = ld_stream(wr[r] + k + u * kStep);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) chunk(wv[u], k + u * kStep);
  }
  for (; k < K; k += kStep) {
    uint4 wv[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) wv[r] = ld_stream(wr[r] + k);
    chunk(wv, k);
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int m = 0; m < M; ++m) {
      float v = acc[r][m];
#pragma unroll
      for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      acc[r][m] = v;
    }
#pragma unroll
  for (int r = 0; r < ROWS; ++r)  // lane (r * M + m) % 32 stores value (r, m)
#pragma unroll
    for (int m = 0; m < M; ++m)
      if (lane == (r * M + m) % 32 && n0 + r < N) y[static_cast<long long>(m) * N + n0 + r] = __float2bfloat16(acc[r][m] * scale);
}

// The floor: every byte of W read once with the same 16-byte streaming loads, one word written per thread.
__global__ void read_floor(const uint4* __restrict__ w, long long n16, unsigned* out) {
  unsigned s = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n16;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const uint4 v = ld_stream(w + i);
    s ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (s == 0x12345678u) out[0] = s;  // (kept, never taken in practice)
}

extern "C" {
// variants: 0 r1u4, 1 r2u2, 2 r2u4, 3 r4u2 (ROWS, UNROLL); dtype 0 bf16, 1 e4m3; M in 1, 2, 4, 8, 16.
// Returns 0, or -1 for a combination not built, or the launch's cudaError_t.
const char* skinny_variants = "r1u4,r2u2,r2u4,r4u2";
int skinny_run(int dtype, int M, int variant, const void* x, const void* w, void* y, int N, int K, float scale,
               cudaStream_t s) {
  constexpr int kWarps = 4;
#define CASE(T, MM, R, U)                                                                                   \
  if (M == MM) {                                                                                            \
    skinny<T, MM, R, U><<<(N + kWarps * R - 1) / (kWarps * R), 32 * kWarps, 0, s>>>(                       \
        static_cast<const T*>(x), static_cast<const T*>(w), static_cast<bf16*>(y), N, K, scale);            \
    return static_cast<int>(cudaGetLastError());                                                            \
  }
#define VARIANTS(T, MM)                                \
  if (variant == 0) { CASE(T, MM, 1, 4) }              \
  if (variant == 1) { CASE(T, MM, 2, 2) }              \
  if (variant == 2) { CASE(T, MM, 2, 4) }              \
  if (variant == 3 && MM <= 8) { CASE(T, MM, 4, 2) }
#define EACH_M(T) VARIANTS(T, 1) VARIANTS(T, 2) VARIANTS(T, 4) VARIANTS(T, 8) VARIANTS(T, 16)
  if (dtype == 0) { EACH_M(bf16) }
  if (dtype == 1) { EACH_M(e4m3) }
  return -1;
}

int read_floor_run(const void* w, long long bytes, void* sink, cudaStream_t s) {
  read_floor<<<132 * 8, 512, 0, s>>>(static_cast<const uint4*>(w), bytes / 16, static_cast<unsigned*>(sink));
  return static_cast<int>(cudaGetLastError());
}
}
