/* The ckgen kernels of a Llama-style decoder layer for bench/layer.py (sm_90): the two RMS norms (the second
   with the residual add fused) and causal GQA attention. The four linear layers use the family `lin` of
   bench/dispatch_nv.ck (the tuned dispatcher). What a kernel does not say is planned per target. */
target sm_90

kernel layer_rmsnorm {
  op = rmsnorm
  x = bf16
  max_cols = 8192
}

kernel layer_add_rmsnorm {      // s = x + residual, y = rmsnorm(s) * weight
  op = rmsnorm
  x = bf16
  residual = true
  max_cols = 8192
}

kernel layer_attention {
  op = attention
  dtype = bf16
  head_dim = 128
  mask = causal
}
