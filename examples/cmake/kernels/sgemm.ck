// Plain single-precision GEMM.
target gfx942, gfx90a

kernel sgemm_small {
  A = f32 row
  B = f32 col
  C = f32 row
  tile = 64x64x16
  waves = 2x2
}
