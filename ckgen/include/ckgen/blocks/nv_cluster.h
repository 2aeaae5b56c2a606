// ckgen/blocks/nv_cluster.h: thread-block clusters of Hopper bodies (sm_90a): TMA multicast, remote mbarrier
// arrives, cluster barriers, and the host-side count of co-resident clusters.
//
// Device side (defined when CKGEN_NV_WGMMA is, as nv_wgmma.h's primitives):
//   cluster_rank()                   this block's rank in its cluster (%cluster_ctarank)
//   cluster_arrive() / cluster_wait()   barrier.cluster (release / acquire, not .aligned: callable from diverged
//                                    code); cluster_sync() both. A wait returns once every thread of every block
//                                    of the cluster has arrived: every thread of the kernel must call them as
//                                    often (the bodies keep all threads alive until their final sync).
//   mbar_arrive_remote(bar, rank)    arrives on the mbarrier at the shared::cta address `bar` of block `rank` of
//                                    the cluster (mapa + mbarrier.arrive.release.cluster.shared::cluster): it
//                                    releases this thread's earlier reads and writes to a waiter there.
//   mbar_wait_cluster(bar, parity)   mbar_wait with acquire at cluster scope: for barriers that collect arrives
//                                    of other blocks of the cluster.
//   tma_load_3d_mcast(dst, map, c0, c1, c2, bar, mask)   one box of a 3-D tensor map into the shared memory
//                                    of every block whose bit is set in `mask`, at the same shared::cta offset
//                                    `dst` in each, completing `box bytes` of transactions on the mbarrier at
//                                    offset `bar` of each of those blocks (out-of-range elements arrive as
//                                    zeros and count as bytes, as with tma_load_3d).
// Contract for multicast into a block: its mbarriers were initialized and made visible to the cluster
// (mbar_init_fence, then cluster_sync) before any block of the cluster issues a copy or arrives remotely, and it
// does not exit while another block may still write into its shared memory or arrive on its barriers (a
// final cluster_sync).
//
// Host side: max_active_clusters(kernel, threads, smem, size, fallback): how many clusters of `size` blocks of
// `kernel` can be resident at once (cudaOccupancyMaxActiveClusters; the GPCs' SM counts, not SMs / size, bound
// it), or `fallback` when the query fails. It raises the kernel's dynamic shared-memory limit to `smem` first.
#pragma once

#include <cuda_runtime.h>

#include "ckgen/blocks/nv_wgmma.h"

#if defined(CKGEN_NV_WGMMA)
namespace ckgen {
namespace nv {

CKGEN_DEVICE uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
CKGEN_DEVICE void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;\n" ::: "memory"); }
CKGEN_DEVICE void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }
CKGEN_DEVICE void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

CKGEN_DEVICE void mbar_arrive_remote(uint32_t bar, uint32_t rank) {
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}

CKGEN_DEVICE void mbar_wait_cluster(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

CKGEN_DEVICE void tma_load_3d_mcast(uint32_t dst, const TensorMap* map, int c0, int c1, int c2, uint32_t bar,
                                    uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask)
      : "memory");
}

}  // namespace nv
}  // namespace ckgen
#endif

namespace ckgen {
namespace nv {

template <class Kernel>
inline int max_active_clusters(Kernel kernel, int threads, int smem_bytes, int size, int fallback) {
  const void* f = reinterpret_cast<const void*>(kernel);
  if (cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return fallback;
  }
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(size);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(size), 1, 1);
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  cfg.dynamicSmemBytes = static_cast<size_t>(smem_bytes);
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, f, &cfg) != cudaSuccess || n < 1) {
    (void)cudaGetLastError();
    return fallback;
  }
  return n;
}

}  // namespace nv
}  // namespace ckgen
