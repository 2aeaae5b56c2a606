// ckgen/blocks/nv_cluster.h: thread-block clusters and distributed shared memory (NVIDIA sm_90), for op bodies
// whose workgroups of one cluster share partial results (nvcc only; include it under CKGEN_PLATFORM_CUDA).
//
// Device side (sm_90+: the functions exist in every pass, their PTX only where __CUDA_ARCH__ >= 900; elsewhere
// cluster_size() is 1 and the others must not be called):
//   cluster_size()          CTAs in this block's cluster (%cluster_nctarank; 1 when launched without clusters)
//   cluster_rank()          this CTA's rank in its cluster (%cluster_ctarank)
//   cluster_id(), clusters() this cluster's index along x and the clusters of the grid along x (%clusterid.x,
//                           %nclusterid.x)
//   cluster_sync()          every thread of every CTA of the cluster arrives and waits (barrier.cluster with
//                           release / acquire: shared-memory writes before it are seen by every CTA after it).
//                           Call it from every thread, converged (.aligned). A CTA whose shared memory peers read
//                           must not exit before they have read it: end with cluster_sync().
//   Peer barriers: an mbarrier (uint64_t in shared memory) whose phases complete on bytes peers store into this
//   CTA (sm_90, every compile pass; nv_wgmma.h's mbar_* are sm_90a's, for TMA):
//   peer_bar_init(bar, count) one thread: init with `count` arrivals, made visible to the cluster (then cluster_sync
//                           before any peer stores)
//   peer_bar_expect(bar, bytes) one arrival announcing `bytes` of stores the phase must also see complete
//   store_peer_async(p, v, bar, rank)  v into the float at p's offset in CTA `rank`, completing 4 bytes on the
//                           mbarrier at bar's offset there (st.async ... complete_tx: no fence, no barrier)
//   peer_bar_wait(bar, parity) returns once the phase of parity `parity` has completed, with cluster-scope acquire:
//                           what peers stored into this CTA by store_peer_async in that phase is visible after it
// Host side:
//   cluster_fits(kernel, cluster, threads, smem) -> bool: a cluster of that many blocks fits on the current device
//     (cudaOccupancyMaxActiveClusters); above 8 (the portable size) the kernel is allowed non-portable cluster
//     sizes first (H100 / H200 take 16). Host queries only: cache the answer.
//   launch_cluster(kernel, gx, cluster, threads, smem, stream, args...) -> cudaError_t: a 1-D grid of gx blocks
//     (a multiple of `cluster`) in clusters of `cluster` x 1 x 1 by cudaLaunchKernelEx (capturable in a graph).
//   launch_cluster_grid(kernel, &configured, &fit, units, cluster, threads, smem, stream, args...) -> ckgen status:
//     a persistent grid of min(units, the clusters that fit at once) clusters of `cluster` blocks (the shared-memory
//     limit raised as cuda_host::launch does; `fit` caches the occupancy query, one per call site); -1 and nothing
//     launched when no such cluster fits; 0 and nothing launched when units == 0.
#pragma once

#include "ckgen/blocks/nv_mma.h"     // smem_addr
#include "ckgen/blocks/nv_wgmma.h"  // sm90_device (host)
#include "ckgen/platform_cuda.h"

namespace ckgen {
namespace nv {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CKGEN_NV_CLUSTERS 1
#else
#define CKGEN_NV_CLUSTERS 0
#endif

__device__ __forceinline__ unsigned cluster_special(int which) {
  unsigned v = 1;
#if CKGEN_NV_CLUSTERS
  if (which == 0) asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(v));
  else if (which == 1) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(v));
  else if (which == 2) asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(v));
  else asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(v));
#else
  v = which == 1 || which == 2 ? 0u : 1u;
#endif
  return v;
}
__device__ __forceinline__ int cluster_size() { return static_cast<int>(cluster_special(0)); }
__device__ __forceinline__ int cluster_rank() { return static_cast<int>(cluster_special(1)); }
__device__ __forceinline__ int cluster_id() { return static_cast<int>(cluster_special(2)); }
__device__ __forceinline__ int clusters() { return static_cast<int>(cluster_special(3)); }

__device__ __forceinline__ void cluster_sync() {
#if CKGEN_NV_CLUSTERS
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
  __syncthreads();
#endif
}

__device__ __forceinline__ void peer_bar_init(uint64_t* bar, unsigned count) {
#if CKGEN_NV_CLUSTERS
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#else
  (void)bar; (void)count;
#endif
}

__device__ __forceinline__ void peer_bar_expect(uint64_t* bar, unsigned bytes) {
#if CKGEN_NV_CLUSTERS
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
#else
  (void)bar; (void)bytes;
#endif
}

__device__ __forceinline__ void store_peer_async(const float* p, float v, uint64_t* bar, int rank) {
#if CKGEN_NV_CLUSTERS
  unsigned remote, rbar;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(p)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(smem_addr(bar)), "r"(rank));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];" ::"r"(remote), "f"(v),
               "r"(rbar)
               : "memory");
#else
  (void)p; (void)v; (void)bar; (void)rank;
#endif
}

__device__ __forceinline__ void peer_bar_wait(uint64_t* bar, unsigned parity) {
#if CKGEN_NV_CLUSTERS
  unsigned done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
  } while (!done);
#else
  (void)bar; (void)parity;
#endif
}

// The launch configuration of a 1-D grid of gx blocks in clusters of `cluster` x 1 x 1 (attr: its one attribute).
inline cudaLaunchConfig_t cluster_config(cudaLaunchAttribute* attr, unsigned gx, unsigned cluster, unsigned threads,
                                         size_t smem, void* stream) {
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(gx, 1, 1);
  cfg.blockDim = dim3(threads, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = static_cast<cudaStream_t>(stream);
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

// Whether at least one cluster of `cluster` blocks of `kernel` fits on the current device at once (non-portable
// sizes above 8 allowed for the kernel first). Host API calls only (no stream work): callers cache the answer.
// (max_active_clusters: how many such clusters fit at once, 0 when none or the query fails.)
inline int max_active_clusters(const void* f, unsigned cluster, unsigned threads, size_t smem) {
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = cluster_config(attr, cluster, cluster, threads, smem, nullptr);
  int fits = 0;
  if (cudaOccupancyMaxActiveClusters(&fits, f, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return fits;
}

template <class... KArgs>
inline bool cluster_fits(void (*kernel)(KArgs...), unsigned cluster, unsigned threads, size_t smem) {
  const void* f = reinterpret_cast<const void*>(kernel);
  if (cluster > 8 && cudaFuncSetAttribute(f, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return max_active_clusters(f, cluster, threads, smem) >= 1;
}

// Launch `kernel` on gx blocks (a multiple of `cluster`) in clusters of `cluster` (cluster_fits first).
template <class... KArgs, class... Args>
inline cudaError_t launch_cluster(void (*kernel)(KArgs...), unsigned gx, unsigned cluster, unsigned threads,
                                  size_t smem, void* stream, Args... args) {
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = cluster_config(attr, gx, cluster, threads, smem, stream);
  return cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...);
}

template <class... KArgs, class... Args>
inline int launch_cluster_grid(void (*kernel)(KArgs...), int* configured, int* fit, long long units, unsigned cluster,
                               unsigned threads, int smem, void* stream, Args... args) {
  if (units <= 0) return 0;
  const void* f = reinterpret_cast<const void*>(kernel);
  if (const int st = cuda_host::configure_smem(f, configured, smem)) return st;
  if (*fit == 0) {  // the clusters that fit on the device at once (-1: none, or the query failed)
    const int n = max_active_clusters(f, cluster, threads, static_cast<size_t>(smem));
    *fit = n > 0 ? n : -1;
  }
  if (*fit < 0) return -1;
  const long long clusters_ = units < *fit ? units : *fit;
  (void)cudaGetLastError();  // (an error left by someone else is not reported as ours)
  return cuda_host::status_of(launch_cluster(kernel, static_cast<unsigned>(clusters_ * cluster), cluster, threads,
                                             static_cast<size_t>(smem), stream, args...));
}

}  // namespace nv
}  // namespace ckgen
