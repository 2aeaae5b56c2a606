// A linear layer: C = relu(A.B + bias), f16 in, f32 accumulate, f16 out.
target gfx942, gfx90a

kernel linear_relu_f16 {
  A = f16 row
  B = f16 row
  C = f16 row
  acc = f32
  tile = 64x64x32
  waves = 2x2
  epilogue = bias(col) -> relu -> cast(f16)
}
