// The vector body's kernels (instr = none) timed by bench/skinny_probe.py beside the probe's hand-written variants:
// the same rows of W per warp and 16-byte vectors in flight per row (r<rows>u<unroll>), four warps per workgroup, one
// kernel per token count M (tile M = M). e4m3 kernels take per-tensor scales, as the probe's one f32 scale.
target sm_90

kernel skinny_bf16_m1_r1u4 { A = bf16 row  B = bf16 col  C = bf16 row
  tile = 1x4x1024  waves = 1x4  instr = none }
kernel skinny_bf16_m1_r2u2 { A = bf16 row  B = bf16 col  C = bf16 row
  tile = 1x8x512  waves = 1x4  instr = none }
kernel skinny_bf16_m1_r2u4 { A = bf16 row  B = bf16 col  C = bf16 row
  tile = 1x8x1024  waves = 1x4  instr = none }
kernel skinny_bf16_m1_r4u2 { A = bf16 row  B = bf16 col  C = bf16 row
  tile = 1x16x512  waves = 1x4  instr = none }
kernel skinny_bf16_m4_r1u4 { A = bf16 row  B = bf16 col  C = bf16 row
  tile = 4x4x1024  waves = 1x4  instr = none }
kernel skinny_bf16_m4_r2u2 { A = bf16 row  B = bf16 col  C = bf16 row
  tile = 4x8x512  waves = 1x4  instr = none }
kernel skinny_bf16_m4_r2u4 { A = bf16 row  B = bf16 col  C = bf16 row
  tile = 4x8x1024  waves = 1x4  instr = none }
kernel skinny_bf16_m4_r4u2 { A = bf16 row  B = bf16 col  C = bf16 row
  tile = 4x16x512  waves = 1x4  instr = none }
kernel skinny_bf16_m8_r1u4 { A = bf16 row  B = bf16 col  C = bf16 row
  tile = 8x4x1024  waves = 1x4  instr = none }
kernel skinny_bf16_m8_r2u2 { A = bf16 row  B = bf16 col  C = bf16 row
  tile = 8x8x512  waves = 1x4  instr = none }
kernel skinny_bf16_m8_r2u4 { A = bf16 row  B = bf16 col  C = bf16 row
  tile = 8x8x1024  waves = 1x4  instr = none }
kernel skinny_bf16_m8_r4u2 { A = bf16 row  B = bf16 col  C = bf16 row
  tile = 8x16x512  waves = 1x4  instr = none }
kernel skinny_e4m3_m1_r1u4 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile = 1x4x2048  waves = 1x4  instr = none }
kernel skinny_e4m3_m1_r2u2 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile = 1x8x1024  waves = 1x4  instr = none }
kernel skinny_e4m3_m1_r2u4 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile = 1x8x2048  waves = 1x4  instr = none }
kernel skinny_e4m3_m1_r4u2 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile = 1x16x1024  waves = 1x4  instr = none }
kernel skinny_e4m3_m4_r1u4 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile = 4x4x2048  waves = 1x4  instr = none }
kernel skinny_e4m3_m4_r2u2 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile = 4x8x1024  waves = 1x4  instr = none }
kernel skinny_e4m3_m4_r2u4 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile = 4x8x2048  waves = 1x4  instr = none }
kernel skinny_e4m3_m4_r4u2 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile = 4x16x1024  waves = 1x4  instr = none }
kernel skinny_e4m3_m8_r1u4 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile = 8x4x2048  waves = 1x4  instr = none }
kernel skinny_e4m3_m8_r2u2 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile = 8x8x1024  waves = 1x4  instr = none }
kernel skinny_e4m3_m8_r2u4 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile = 8x8x2048  waves = 1x4  instr = none }
kernel skinny_e4m3_m8_r4u2 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile = 8x16x1024  waves = 1x4  instr = none }
