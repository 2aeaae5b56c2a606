// bench/gemm_cluster.py: the Hopper body with and without a cluster of two M-adjacent tiles that load their shared
// B tile once (TMA multicast: `cluster = 2`), on the tiles and epilogues of the dispatcher and the Llama layer
// (nn.Linear operands: A row-major, B = the weight, column-major). Each pair differs in `cluster` only.
target sm_90

kernel lin256_c1 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4  cluster = 1 }
kernel lin256_c2 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4  cluster = 2 }
kernel lin128_c1 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x128x64  waves = 2x4  lds_buffers = 4  cluster = 1 }
kernel lin128_c2 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x128x64  waves = 2x4  lds_buffers = 4  cluster = 2 }
kernel glu256_c1 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  epilogue = swiglu  gate = halves  cluster = 1 }
kernel glu256_c2 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  epilogue = swiglu  gate = halves  cluster = 2 }
kernel res256_c1 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  epilogue = residual  cluster = 1 }
kernel res256_c2 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  epilogue = residual  cluster = 2 }
