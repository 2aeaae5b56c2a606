// Fused attention forward: O = softmax(scale * Q.K^T + mask) . V and the per-row log-sum-exp (docs/dsl.md).
// Q, K, V, O are [batch, seq, heads, head_dim] (BSHD memory, or BHSD through its transpose: strides are
// arguments); K and V may have fewer heads than Q (GQA / MQA: heads is a multiple of heads_kv, a runtime size).
// Everything the kernels leave out (tile, waves, LDS buffers, instruction) is planned per target.
target gfx942, gfx90a

// d128, causal (aligned bottom-right when seqlen_q != seqlen_k), bf16: the LLM prefill shape (GQA is a
// runtime choice: heads_kv). The tiling is written out here as the planner would choose it for gfx942 / gfx90a.
kernel attn_d128_causal {
  op = attention
  dtype = bf16
  head_dim = 128
  mask = causal
  tile = 128x32          // 128 queries per workgroup x 32 keys per K/V tile
  waves = 4              // each wave owns 32 queries
  lds_buffers = 2        // K/V tiles double-buffered in LDS
  instr = auto           // 32x32x8 on gfx90a / gfx942
}

// d64, causal, bf16
kernel attn_d64_causal {
  op = attention
  dtype = bf16
  head_dim = 64
  mask = causal
}

// d64, sliding window of 256 keys before and none after the diagonal (runtime window_left / window_right
// override these defaults), variable-length sequences packed by cumulative lengths
kernel attn_d64_window_varlen {
  op = attention
  dtype = f16
  head_dim = 64
  mask = window
  window = [256, 0]
  varlen = true
}
