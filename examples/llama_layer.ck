/* The kernels of a Llama-style decoder layer (examples/llama_layer.py): every step of the layer is one of these.

     x -> llama_norm -> llama_qkv (+ bias: llama_qkv_bias) -> llama_kv_append (k and q rotated, v: the cache)
       -> llama_attention (causal, GQA) -> llama_o_res (s = x + o . Wo^T: the residual fused) -> llama_norm
       -> llama_gate_up (SwiGLU fused) -> llama_down (out = s + down: the residual fused)
   Rotating Q in attention instead (rope_at = "attention"):
     x -> llama_norm -> llama_qkv -> llama_kv_append_k (k rotated, v: the cache) -> llama_attention_rope
       (Q rotated as each tile is loaded) -> ... as above
   Rotating in the qkv GEMM's epilogue instead (rope_at = "qkv"):
     x -> llama_norm -> llama_qkv_rope (+ bias: llama_qkv_bias_rope) -> llama_attention (q, k, v read from qkv)
       -> ... as above
   With the norms folded into the GEMMs (examples/llama_layer.py, Weights.folded):
     x -> llama_norm_rstd -> llama_qkv_rs (rows scaled by rstd) -> llama_kv_append -> llama_attention
       -> llama_o_res (s = x + o . Wo^T) -> llama_norm_rstd -> llama_gate_up_rs -> llama_down

   The row ops and attention are planned per target. The four projections are families
   (the dispatcher picks a member by shape): one block per arch, large Hopper tiles on sm_90, a small MFMA tile on
   gfx942 (the emulator runs that one). B is the nn.Linear weight W [N, K] as is: W^T, column-major. */
target gfx942, sm_90

kernel llama_norm {             // y = rmsnorm(x) * weight
  op = rmsnorm
  x = bf16
  max_cols = 8192
}

kernel llama_kv_append {        // K rotated (RoPE) and V written into the sequence's cache (contiguous here);
  op = attention_kv_append      // Q rotated in place by the same launch (attention then runs without rope)
  dtype = bf16
  head_dim = 128
  rope = neox
  rotate_q = true
}

kernel llama_attention {        // causal self-attention of the rotated Q; K / V heads shared by
  op = attention                // heads / heads_kv query heads
  dtype = bf16
  head_dim = 128
  mask = causal
}

kernel llama_kv_append_k {      // K rotated and V written into the cache; Q left as it is (rope_at = "attention":
  op = attention_kv_append      // llama_attention_rope rotates each Q tile once it is loaded)
  dtype = bf16
  head_dim = 128
  rope = neox
}

kernel llama_attention_rope {   // as llama_attention, Q rotated on load at the run-time positions
  op = attention
  dtype = bf16
  head_dim = 128
  mask = causal
  rope = neox
}

kernel llama_norm_rstd {        // the norms folded into the next GEMM: rstd = 1 / rms(x) per row only (gamma is
  op = rmsnorm                  // folded into that GEMM's weight, rstd scales its rows: scale_a = row)
  x = bf16
  y = none
  rstd = true
  weight = none
  max_cols = 8192
}

// ---------------------------------------------------------------- the projections, sm_90
family llama_qkv {
  arch = [sm_90]
  A = bf16 row  B = bf16 col  C = bf16 row
  tile in [128x256x64, 128x192x64, 128x128x64]  waves = 2x4  lds_buffers = 4
  schedule in [tile, streamk]
}
family llama_qkv_bias {         // Qwen2-style q / k / v biases
  arch = [sm_90]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = bias(col)
  tile in [128x256x64, 128x192x64, 128x128x64]  waves = 2x4  lds_buffers = 4
  schedule in [tile, streamk]
}
family llama_qkv_rope {         // q and k rotated (RoPE) in the epilogue: the q / k weight rows in pair order
  arch = [sm_90]                // (ckgen.rope_interleave), columns [0, rope_cols) rotated, v passes
  A = bf16 row  B = bf16 col  C = bf16 row  rope = gptj(128)
  tile in [128x256x64, 128x128x64]  waves = 2x4  lds_buffers = 4
}
family llama_qkv_bias_rope {
  arch = [sm_90]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = bias(col)  rope = gptj(128)
  tile in [128x256x64, 128x128x64]  waves = 2x4  lds_buffers = 4
}
family llama_o_res {            // s = x + o . Wo^T: the residual stream written once
  arch = [sm_90]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = residual
  tile in [128x256x64, 128x192x64, 128x128x64]  waves = 2x4  lds_buffers = 4
  schedule in [tile, streamk]
}
family llama_gate_up {          // SwiGLU fused: B is the merged gate_up weight (gate rows, then up rows)
  arch = [sm_90]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = swiglu  gate = halves
  tile in [128x256x64, 128x128x64]  waves = 2x4  lds_buffers = 4
  schedule in [tile, streamk]
}
family llama_down {             // out = m . Wd^T + s: the residual stream in the same pass
  arch = [sm_90]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = residual
  tile in [128x256x64, 128x192x64, 128x128x64]  waves = 2x4  lds_buffers = 4
  schedule in [tile, streamk]
}

// the folded-norm layer's: A is the un-normalized x (or s), its rows scaled by rstd (scale_a = row)
family llama_qkv_rs {
  arch = [sm_90]
  A = bf16 row  B = bf16 col  C = bf16 row  scale_a = row
  tile in [128x256x64, 128x192x64, 128x128x64]  waves = 2x4  lds_buffers = 4
  schedule in [tile, streamk]
}
family llama_qkv_bias_rs {
  arch = [sm_90]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = bias(col)  scale_a = row
  tile in [128x256x64, 128x192x64, 128x128x64]  waves = 2x4  lds_buffers = 4
  schedule in [tile, streamk]
}
family llama_gate_up_rs {
  arch = [sm_90]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = swiglu  gate = halves  scale_a = row
  tile in [128x256x64, 128x128x64]  waves = 2x4  lds_buffers = 4
  schedule in [tile, streamk]
}

// ---------------------------------------------------------------- the projections, gfx942 (and the emulator)
family llama_qkv {
  arch = [gfx942]
  A = bf16 row  B = bf16 col  C = bf16 row
  tile = 64x64x32  waves = 2x2
}
family llama_qkv_bias {
  arch = [gfx942]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = bias(col)
  tile = 64x64x32  waves = 2x2
}
family llama_qkv_rope {
  arch = [gfx942]
  A = bf16 row  B = bf16 col  C = bf16 row  rope = gptj(128)
  tile = 64x64x32  waves = 2x2
}
family llama_qkv_bias_rope {
  arch = [gfx942]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = bias(col)  rope = gptj(128)
  tile = 64x64x32  waves = 2x2
}
family llama_o_res {
  arch = [gfx942]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = residual
  tile = 64x64x32  waves = 2x2
}
family llama_gate_up {
  arch = [gfx942]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = swiglu  gate = halves
  tile = 64x64x32  waves = 2x2
}
family llama_down {
  arch = [gfx942]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = residual
  tile = 64x64x32  waves = 2x2
}
family llama_qkv_rs {
  arch = [gfx942]
  A = bf16 row  B = bf16 col  C = bf16 row  scale_a = row
  tile = 64x64x32  waves = 2x2
}
family llama_qkv_bias_rs {
  arch = [gfx942]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = bias(col)  scale_a = row
  tile = 64x64x32  waves = 2x2
}
family llama_gate_up_rs {
  arch = [gfx942]
  A = bf16 row  B = bf16 col  C = bf16 row  epilogue = swiglu  gate = halves  scale_a = row
  tile = 64x64x32  waves = 2x2
}
