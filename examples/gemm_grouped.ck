// Grouped GEMM (mixture of experts): docs/dsl.md, "Grouped GEMM (mixture of experts)".
// mode = grouped: A holds every token's row, sorted by expert; offsets[g] is expert g's end row (as
// torch._grouped_mm takes them); B is experts x K x N. mode = masked: a fixed capacity of rows per expert
// and a count each, for decode under CUDA graphs.
target gfx942, gfx90a

// the gate/up projection with the expert's bias and SiLU fused
kernel moe_up_bf16 {
  A = bf16 row
  B = bf16 row
  C = bf16 row
  tile = 128x128x32
  waves = 2x2
  mode = grouped
  epilogue = bias(col) -> silu
}

// the down projection, int64 offsets, B stored N x K (as nn.Linear weights)
kernel moe_down_bf16 {
  A = bf16 row
  B = bf16 col
  C = bf16 row
  tile = 128x128x32
  waves = 2x2
  mode = grouped
  index = i64
}

// decode: at most M tokens per expert, counts on the device
kernel moe_decode_f16 {
  A = f16 row
  B = f16 col
  C = f16 row
  tile = 32x64x64
  waves = 1x2
  mode = masked
}
