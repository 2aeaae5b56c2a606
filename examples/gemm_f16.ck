// Half-precision GEMMs for MI300X (gfx942) and MI250X (gfx90a).
target gfx942, gfx90a

// The workhorse: f16 in, f32 accumulate, f16 out. B column-major ("NT" in BLAS terms).
kernel gemm_f16_nt {
  op = gemm
  A = f16 row
  B = f16 col
  C = f16 row
  acc = f32
  tile = 128x128x32
  waves = 2x2
  instr = 32x32x8        // v_mfma_f32_32x32x8f16
  lds_buffers = 2        // double-buffered LDS
  prefetch = 1           // global -> register prefetch of the next K step
}

// A fused MLP layer: GEMM + per-column bias + GELU (tanh form), instruction chosen by ckgen.
kernel mlp_f16_bias_gelu {
  A = f16 row
  B = f16 row
  C = f16 row
  tile = 128x64x32
  waves = 2x2
  epilogue = bias(col) -> gelu -> cast(f16)
}
