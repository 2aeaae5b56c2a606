// Scaled fp8 grouped GEMM kernels for bench/moe.py --fp8 (sm_90): e4m3 A row-major (tokens sorted by expert),
// e4m3 B per expert as nn.Linear weights (N x K, col-major K x N), A scaled per token row and B per expert and
// column, as torch._scaled_grouped_mm takes them; bf16 out. The Hopper body's fp8 tiles (K = 128) beside the
// mma.sync body's (K = 64; the 16-row decode tile is the mma.sync body's only).
target sm_90

kernel moe_fp8_h128_256_128 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = row  scale_b = col
  tile = 128x256x128  waves = 2x4  lds_buffers = 4  mode = grouped
}

kernel moe_fp8_h128_128_128 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = row  scale_b = col
  tile = 128x128x128  waves = 2x4  lds_buffers = 4  mode = grouped
}

kernel moe_fp8_h64_128_128 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = row  scale_b = col
  tile = 64x128x128  waves = 1x4  lds_buffers = 4  mode = grouped
}

kernel moe_fp8_t128_128_64_w24_s4 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = row  scale_b = col
  tile = 128x128x64  waves = 2x4  lds_buffers = 4  mode = grouped
}

kernel moe_fp8_t64_128_64_w22_s4 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = row  scale_b = col
  tile = 64x128x64  waves = 2x2  lds_buffers = 4  mode = grouped
}

kernel moe_fp8_t16_128_64_w14_s6 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = row  scale_b = col
  tile = 16x128x64  waves = 1x4  lds_buffers = 6  mode = grouped
}
