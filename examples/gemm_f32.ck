/* Single precision, with explicit vector widths and a single LDS buffer. */
target gfx942, gfx90a

kernel sgemm_nn {
  A = f32 row
  B = f32 row
  C = f32 row
  tile = 64x64x16
  waves = 2x2
  instr = 16x16x4        // v_mfma_f32_16x16x4f32
  lds_buffers = 1
  prefetch = 0
  vec_a = 4
  vec_b = 4
}
