// bench/cluster.py's kernels (sm_90, bf16, B as nn.Linear weights: column-major): the Hopper body's 128x256x64 tile
// without and with clusters of 2 (neighbouring M tiles sharing B's tile by TMA multicast), plain, with the residual
// (a down projection) and with SwiGLU over halves (a gate-up projection).
target sm_90

kernel plain_c1 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4 }
kernel plain_c2 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4  cluster = 2 }
kernel res_c1 {
  A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4  epilogue = residual
}
kernel res_c2 {
  A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4  epilogue = residual
  cluster = 2
}
kernel glu_c1 {
  A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4  epilogue = swiglu
}
kernel glu_c2 {
  A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4  epilogue = swiglu
  cluster = 2
}
