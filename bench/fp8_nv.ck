// fp8 GEMM kernels of bench/fp8.py (sm_90, OCP e4m3 x e4m3 -> bf16): per-tensor scales (fp8_tensor_*) and per-row
// of A / per-column of B scales (fp8_rowwise_*). A is M x K row-major, B is K x N column-major (K-major, as
// torch._scaled_mm takes it). The *_t* kernels run the portable mma.sync body only (m16n8k32 .e4m3; tiles whose
// registers fit without spills: ckgen report --arch sm_90); the *_h* kernels (K tile 128, 4 warps per 64 rows) also
// get the Hopper body (TMA + wgmma m64nNk32.e4m3, warp-specialized, persistent), which their host entry launches on
// the H200 for these aligned operands. fp8_block_h*: block(128) scales (DeepSeek-V3 style: A 1 x 128, B 128 x 128),
// folded per 128-K block in registers.
target sm_90

kernel fp8_tensor_t128x128_w24 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = tensor  scale_b = tensor
  tile = 128x128x64  waves = 2x4  lds_buffers = 3
}

kernel fp8_tensor_t128x128_w44 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = tensor  scale_b = tensor
  tile = 128x128x64  waves = 4x4  lds_buffers = 3
}

kernel fp8_tensor_t64x128_w44 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = tensor  scale_b = tensor
  tile = 64x128x64  waves = 4x4  lds_buffers = 3
}

kernel fp8_tensor_t64x64_w22 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = tensor  scale_b = tensor
  tile = 64x64x64  waves = 2x2  lds_buffers = 3
}

kernel fp8_rowwise_t128x128_w24 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = row  scale_b = col
  tile = 128x128x64  waves = 2x4  lds_buffers = 3
}

kernel fp8_rowwise_t128x128_w44 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = row  scale_b = col
  tile = 128x128x64  waves = 4x4  lds_buffers = 3
}

kernel fp8_rowwise_t64x128_w44 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = row  scale_b = col
  tile = 64x128x64  waves = 4x4  lds_buffers = 3
}

kernel fp8_rowwise_t64x64_w22 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = row  scale_b = col
  tile = 64x64x64  waves = 2x2  lds_buffers = 3
}

kernel fp8_tensor_h128x256 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = tensor  scale_b = tensor
  tile = 128x256x128  waves = 2x4  lds_buffers = 4
}

kernel fp8_tensor_h128x128 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = tensor  scale_b = tensor
  tile = 128x128x128  waves = 2x4  lds_buffers = 4
}

kernel fp8_tensor_h64x128 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = tensor  scale_b = tensor
  tile = 64x128x128  waves = 1x4  lds_buffers = 4
}

kernel fp8_tensor_h64x256 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = tensor  scale_b = tensor
  tile = 64x256x128  waves = 1x4  lds_buffers = 4  prefetch = 0
}

kernel fp8_rowwise_h128x256 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = row  scale_b = col
  tile = 128x256x128  waves = 2x4  lds_buffers = 4
}

kernel fp8_rowwise_h128x128 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = row  scale_b = col
  tile = 128x128x128  waves = 2x4  lds_buffers = 4
}

kernel fp8_rowwise_h64x128 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = row  scale_b = col
  tile = 64x128x128  waves = 1x4  lds_buffers = 4
}

kernel fp8_rowwise_h64x256 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = row  scale_b = col
  tile = 64x256x128  waves = 1x4  lds_buffers = 4  prefetch = 0
}

kernel fp8_block_h128x128 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = block(128)  scale_b = block(128)
  tile = 128x128x128  waves = 2x4  lds_buffers = 4
}

kernel fp8_block_h64x128 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = block(128)  scale_b = block(128)
  tile = 64x128x128  waves = 1x4  lds_buffers = 4
}
