// Kernels this package ships, generated and compiled when its wheel is built.
target gfx942, gfx90a

kernel mlp_up_f16 {
  A = f16 row
  B = f16 col
  C = f16 row
  acc = f32
  tile = 64x64x32
  waves = 2x2
  epilogue = bias(col) -> silu -> cast(f16)
}

kernel mlp_down_bf16 {
  A = bf16 row
  B = bf16 col
  C = bf16 row
  tile = 64x64x32
  waves = 2x2
}
