// bench/debug/small_m_ab.py's kernels: the dispatcher's members that serve M = 64-511 (bench/dispatch_nv.ck's
// configurations) beside the same tiles with clusters of two M-adjacent tiles sharing B by TMA multicast, for
// one question: at small M, is the loss to cuBLAS (0.73x at 200 x 3584 x 4096 on the H100) B's L2 -> SM traffic
// (a 64-row tile reads each B panel once per 64 rows of A), which multicast halves?
target sm_90

kernel t64 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 64x128x64  waves = 2x2  lds_buffers = 4 }
kernel t64_c2 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 64x128x64  waves = 2x2  lds_buffers = 4
  cluster = 2 }
kernel t64_sk { A = bf16 row  B = bf16 col  C = bf16 row  tile = 64x128x64  waves = 2x2  lds_buffers = 4
  schedule = splitk }
kernel t128 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x128x64  waves = 2x4  lds_buffers = 4 }
kernel t128_c2 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x128x64  waves = 2x4  lds_buffers = 4
  cluster = 2 }
kernel t128_sk { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x128x64  waves = 2x4  lds_buffers = 4
  schedule = splitk }
kernel t256_sk { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  schedule = splitk }
kernel t64x256 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 64x256x64  waves = 1x4  lds_buffers = 4
  prefetch = 0 }
kernel t64x256_c2 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 64x256x64  waves = 1x4  lds_buffers = 4
  prefetch = 0  cluster = 2 }
