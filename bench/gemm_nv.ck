// NVIDIA benchmark kernels (bench/gemm.py) on sm_90. 'waves' are warps of 32 threads; lds_buffers is the
// pipeline depth. rr: A row, B row (torch's layout); rc: B col-major (K-contiguous). The 128x256x64 tiles with
// 8 warps also get the Hopper body (TMA + wgmma, warp-specialized, persistent: gemm_sm90_tma.h), which
// runs whenever the operands are 16-byte aligned; the 128x128x32 tiles are mma.sync only.
target sm_90

kernel bf16_rr_t128_128_32_w22_s4 {
  A = bf16 row
  B = bf16 row
  C = bf16 row
  acc = f32
  tile = 128x128x32
  waves = 2x2
  lds_buffers = 4
}

kernel bf16_rr_t128_128_32_w22_s3 {
  A = bf16 row
  B = bf16 row
  C = bf16 row
  acc = f32
  tile = 128x128x32
  waves = 2x2
  lds_buffers = 3
}

kernel bf16_rr_t128_256_64_w24_s4 {
  A = bf16 row
  B = bf16 row
  C = bf16 row
  acc = f32
  tile = 128x256x64
  waves = 2x4
  lds_buffers = 4
}

kernel bf16_rc_t128_256_64_w24_s4 {
  A = bf16 row
  B = bf16 col
  C = bf16 row
  acc = f32
  tile = 128x256x64
  waves = 2x4
  lds_buffers = 4
}

kernel bf16_rc_t128_128_32_w22_s4 {
  A = bf16 row
  B = bf16 col
  C = bf16 row
  acc = f32
  tile = 128x128x32
  waves = 2x2
  lds_buffers = 4
}

kernel f16_rr_t128_128_32_w22_s4 {
  A = f16 row
  B = f16 row
  C = f16 row
  acc = f32
  tile = 128x128x32
  waves = 2x2
  lds_buffers = 4
}

kernel f16_rr_t128_128_32_w22_s3 {
  A = f16 row
  B = f16 row
  C = f16 row
  acc = f32
  tile = 128x128x32
  waves = 2x2
  lds_buffers = 3
}

kernel f16_rr_t128_256_64_w24_s4 {
  A = f16 row
  B = f16 row
  C = f16 row
  acc = f32
  tile = 128x256x64
  waves = 2x4
  lds_buffers = 4
}

kernel f16_rc_t128_256_64_w24_s4 {
  A = f16 row
  B = f16 col
  C = f16 row
  acc = f32
  tile = 128x256x64
  waves = 2x4
  lds_buffers = 4
}

kernel f16_rc_t128_128_32_w22_s4 {
  A = f16 row
  B = f16 col
  C = f16 row
  acc = f32
  tile = 128x128x32
  waves = 2x2
  lds_buffers = 4
}

kernel bf16_rr_bias_gelu_t128_256_64_s4 {
  A = bf16 row
  B = bf16 row
  C = bf16 row
  acc = f32
  tile = 128x256x64
  waves = 2x4
  lds_buffers = 4
  epilogue = bias(col) -> gelu -> cast(bf16)
}

kernel bf16_rc_bias_gelu_t128_256_64_s4 {
  A = bf16 row
  B = bf16 col
  C = bf16 row
  acc = f32
  tile = 128x256x64
  waves = 2x4
  lds_buffers = 4
  epilogue = bias(col) -> gelu -> cast(bf16)
}

kernel f16_rr_bias_gelu_t128_256_64_s4 {
  A = f16 row
  B = f16 row
  C = f16 row
  acc = f32
  tile = 128x256x64
  waves = 2x4
  lds_buffers = 4
  epilogue = bias(col) -> gelu -> cast(f16)
}

kernel f16_rc_bias_gelu_t128_256_64_s4 {
  A = f16 row
  B = f16 col
  C = f16 row
  acc = f32
  tile = 128x256x64
  waves = 2x4
  lds_buffers = 4
  epilogue = bias(col) -> gelu -> cast(f16)
}
