// Grouped GEMM kernels for bench/moe.py (sm_90, bf16, A row-major tokens sorted by expert, B per expert as
// nn.Linear weights: N x K, i.e. col-major K x N, as torch._grouped_mm takes them). One persistent launch each;
// the first three also get the Hopper body (TMA + wgmma, walking the groups), the 16-row decode tile the
// portable mma.sync body only.
target sm_90

kernel moe_g_t128_256_64_w24_s4 {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile = 128x256x64  waves = 2x4  lds_buffers = 4  mode = grouped
}

kernel moe_g_t128_128_64_w24_s4 {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile = 128x128x64  waves = 2x4  lds_buffers = 4  mode = grouped
}

kernel moe_g_t64_128_64_w22_s4 {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile = 64x128x64  waves = 2x2  lds_buffers = 4  mode = grouped
}

kernel moe_g_t16_128_64_w14_s6 {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile = 16x128x64  waves = 1x4  lds_buffers = 6  mode = grouped
}
