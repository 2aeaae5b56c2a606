/* Element-wise ops (docs/dsl.md, "Element-wise"): y = expr(a, b, c) element by element over a rows x cols matrix,
   for what does not fuse into a neighbouring kernel. Each input has a row stride (a view such as the two halves
   of a gate-up projection's output works as is); vectors of 16 bytes where the rows are aligned. */
target gfx942, gfx90a

kernel silu_mul_bf16 {          // SwiGLU's SiLU(gate) * up: a = gate, b = up
  op = elementwise
  a = bf16
  b = bf16
  expr = silu(a) -> mul(b)
}

kernel bias_gelu_f32_bf16 {     // y = gelu(a + bias), the bias one row broadcast over the rows, cast to bf16
  op = elementwise
  a = f32
  b = f32
  broadcast = b
  y = bf16
  expr = add(a, b) -> gelu
}

kernel residual_add_bf16 {      // y = a + b, e.g. the last residual add of a decoder layer (y may be a: in place)
  op = elementwise
  a = bf16
  b = bf16
  expr = add(a, b)
}
