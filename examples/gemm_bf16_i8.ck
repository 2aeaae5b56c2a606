// bf16 and int8 GEMMs, and a family of bf16 tiles for tuning.
target gfx942, gfx90a

kernel gemm_bf16_tn {
  A = bf16 col           // A stored column-major
  B = bf16 col
  C = bf16 row
  alpha = 1.0
  beta = 0.5             // C = A.B + 0.5 * C
  tile = 64x128x32
  waves = 1x2
  epilogue = silu
}

kernel gemm_i8 {
  A = i8 row
  B = i8 col
  C = i32 row            // exact integer accumulation
  tile = 128x128x64
  waves = 2x2
  lds_buffers = 2
}

// A family: the cross product of its alternatives, 2 x 2 = 4 kernels named
// bf16_sweep_tile128x128x32_waves2x2, bf16_sweep_tile128x128x32_waves1x4, ...
family bf16_sweep {
  A = bf16 row
  B = bf16 col
  C = f32 row
  tile in [128x128x32, 64x64x64]
  waves in [2x2, 1x4]
  epilogue = bias(row) -> relu
}
