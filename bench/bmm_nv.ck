// Strided-batched GEMM kernels for bench/bmm.py (sm_90, bf16, A and B row-major as torch.bmm's operands).
// Every tile here also gets the Hopper body (TMA with 3-D tensor maps over the batch, persistent over
// batch x tiles, 4 warps per 64 rows of the tile): 128x256 and 128x128 (two consumer warpgroups), 64x256 and
// 64x128 (one); operands it cannot take run the portable mma.sync body with the batch on grid z.
target sm_90

kernel bmm_bf16_t128_256_64_w24_s4 {
  A = bf16 row  B = bf16 row  C = bf16 row
  tile = 128x256x64  waves = 2x4  lds_buffers = 4  batched = true
}

kernel bmm_bf16_t128_128_64_w24_s4 {
  A = bf16 row  B = bf16 row  C = bf16 row
  tile = 128x128x64  waves = 2x4  lds_buffers = 4  batched = true
}

kernel bmm_bf16_t64_256_64_w14_s4 {
  A = bf16 row  B = bf16 row  C = bf16 row
  tile = 64x256x64  waves = 1x4  lds_buffers = 4  prefetch = 0  batched = true
}

kernel bmm_bf16_t64_128_64_w22_s4 {
  A = bf16 row  B = bf16 row  C = bf16 row
  tile = 64x128x64  waves = 2x2  lds_buffers = 4  batched = true
}
