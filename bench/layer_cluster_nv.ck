// The Llama layer's projections (examples/llama_layer.ck's sm_90 families) as 128x256 tile-schedule kernels with
// clusters of two (cluster = 2: M-adjacent tiles loading their common B tile once, by TMA multicast), for
// bench/model.py --cluster-ab, which times the layer with its projections replaced by these beside the layer the
// families' dispatchers give (cluster = auto takes none: 0.94-1.0x on an H100, measured one GEMM at a time).
target sm_90

kernel llama_qkv {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile = 128x256x64  waves = 2x4  lds_buffers = 4  cluster = 2
}
kernel llama_qkv_bias {
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = bias(col)
  tile = 128x256x64  waves = 2x4  lds_buffers = 4  cluster = 2
}
kernel llama_o_res {
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = residual
  tile = 128x256x64  waves = 2x4  lds_buffers = 4  cluster = 2
}
kernel llama_gate_up {
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = swiglu  gate = halves
  tile = 128x256x64  waves = 2x4  lds_buffers = 4  cluster = 2
}
kernel llama_down {
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = residual
  tile = 128x256x64  waves = 2x4  lds_buffers = 4  cluster = 2
}
kernel llama_qkv_rs {
  A = bf16 row  B = bf16 col  C = bf16 row  scale_a = row
  tile = 128x256x64  waves = 2x4  lds_buffers = 4  cluster = 2
}
kernel llama_qkv_bias_rs {
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = bias(col)  scale_a = row
  tile = 128x256x64  waves = 2x4  lds_buffers = 4  cluster = 2
}
kernel llama_gate_up_rs {
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = swiglu  gate = halves  scale_a = row
  tile = 128x256x64  waves = 2x4  lds_buffers = 4  cluster = 2
}
