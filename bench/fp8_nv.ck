// fp8 GEMM kernels of bench/fp8.py (sm_90, OCP e4m3 x e4m3 -> bf16): per-tensor scales (fp8_tensor_*) and per-row
// of A / per-column of B scales (fp8_rowwise_*). A is M x K row-major, B is K x N column-major (K-major, as
// torch._scaled_mm takes it). These run the portable mma.sync body (m16n8k32 .e4m3); the Hopper wgmma body does
// not take fp8 yet. Tiles whose registers fit without spills (ckgen report --arch sm_90: 128x256 tiles spill).
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
