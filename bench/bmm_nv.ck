// Strided-batched GEMM kernels for bench/bmm.py (sm_90, bf16, A and B row-major as torch.bmm's operands).
// The 128x256x64 tiles with 8 warps also get the Hopper body (TMA with 3-D tensor maps over the batch,
// persistent over batch x tiles); the others run the portable mma.sync body with the batch on grid z.
target sm_90

kernel bmm_bf16_t128_256_64_w24_s4 {
  A = bf16 row  B = bf16 row  C = bf16 row
  tile = 128x256x64  waves = 2x4  lds_buffers = 4  batched = true
}

kernel bmm_bf16_t128_128_64_w22_s3 {
  A = bf16 row  B = bf16 row  C = bf16 row
  tile = 128x128x64  waves = 2x2  lds_buffers = 3  batched = true
}

kernel bmm_bf16_t128_128_32_w22_s4 {
  A = bf16 row  B = bf16 row  C = bf16 row
  tile = 128x128x32  waves = 2x2  lds_buffers = 4  batched = true
}

kernel bmm_bf16_t64_128_64_w22_s3 {
  A = bf16 row  B = bf16 row  C = bf16 row
  tile = 64x128x64  waves = 2x2  lds_buffers = 3  batched = true
}
