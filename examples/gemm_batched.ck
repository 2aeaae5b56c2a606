// Strided-batched GEMMs (docs/dsl.md, "Strided-batched GEMM"): C[b] = A[b] . B[b] for b < batch, each operand
// item at its own batch stride (the entry takes batch, stride_a, stride_b, stride_c); a batch stride of 0
// broadcasts that operand to every item, e.g. one weight matrix B shared by a batch of activations A.
target gfx942, gfx90a

// torch.bmm's operands: bf16, A and B row-major, f32 accumulation.
kernel bmm_bf16 {
  A = bf16 row
  B = bf16 row
  C = bf16 row
  tile = 128x128x32
  waves = 2x2
  lds_buffers = 2
  batched = true         // workgroup z walks the batch
}

// Batched attention-style scores: B column-major (K^T of a row-major K), scaled by alpha, f16 out; a per-item
// bias row (stride_bias; 0 shares one row across the batch).
kernel bmm_f16_nt_bias {
  A = f16 row
  B = f16 col
  C = f16 row
  alpha = 0.125
  tile = 64x64x32
  waves = 2x2
  batched = true
  epilogue = bias(col)
}
