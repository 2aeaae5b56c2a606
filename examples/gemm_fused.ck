// A transformer MLP's two GEMMs with their epilogues fused: docs/dsl.md, "Residual and gated epilogues".
// gate_up: B is the merged gate_up weight (K x 2N: gate columns, then up), C = silu(A.B_gate) * (A.B_up) (SwiGLU);
// down_proj: C = A.B + R, R the residual stream (C's layout and leading dimension; C may be R itself).
target gfx942, gfx90a

kernel gate_up {
  A = bf16 row
  B = bf16 col      // the nn.Linear weight (2N x K), transposed
  C = bf16 row
  tile = 128x128x32
  waves = 2x2
  epilogue = swiglu
  gate = halves     // or interleaved(b): blocks of b gate and b up columns
}

kernel down_proj {
  A = bf16 row
  B = bf16 col
  C = bf16 row
  tile = 128x128x32
  waves = 2x2
  epilogue = residual
}
