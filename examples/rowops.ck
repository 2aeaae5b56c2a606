/* Row ops (docs/dsl.md, "Row ops"): softmax, layer norm and RMS norm over the last dimension of a rows x cols
   matrix, with a fused residual add and an int8 output with a per-row scale. What a kernel does not say (threads
   per row, rows per workgroup, registers, looped or not) is planned per target. */
target gfx942, gfx90a

kernel softmax_bf16 {           // y = softmax(scale * x); rows of at most 4096 columns, read once
  op = softmax
  x = bf16
  scale = 0.125                 // the default of the runtime scalar `scale`
  max_cols = 4096
}

kernel log_softmax_f32 {        // any number of columns (looped over tiles)
  op = softmax
  log = true
  x = f32
}

kernel layernorm_bf16 {         // y = (x - mean) / sqrt(var + eps) * weight + bias
  op = layernorm
  x = bf16
  eps = 1e-5
}

kernel add_rmsnorm_bf16 {       // s = x + residual (written to s_out), y = rmsnorm(s) * weight
  op = rmsnorm
  x = bf16
  residual = true
  max_cols = 8192
}

kernel add_rmsnorm_bf16_i8 {    // the same, y quantized to int8 with y_scale[row] = max|y| / 127
  op = rmsnorm
  x = bf16
  residual = true
  y = i8
  threads_per_row = 128
}

kernel layernorm_bf16_long {    // rows of up to 24576 columns kept in LDS between the passes: read from memory once
  op = layernorm
  x = bf16
  max_cols = 24576
  row_in = shared
}
