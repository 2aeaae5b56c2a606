// Mixture-of-experts routing around the grouped GEMM (examples/gemm_grouped.ck): docs/dsl.md, "MoE routing".
// DeepSeek-V3-like: 256 experts in 8 groups, the 4 best groups, top-8 by sigmoid + correction, renormalized.
target gfx942, gfx90a

kernel moe_router_v3 {
  op = moe_routing
  stage = topk
  experts = 256
  top_k = 8
  score = sigmoid
  expert_groups = 8
  top_groups = 4
  correction = true
  renormalize = true
  logits = bf16
}

// Mixtral-like: 8 experts, top-2 of the softmax, renormalized
kernel moe_router_mixtral {
  op = moe_routing
  stage = topk
  experts = 8
  top_k = 2
  renormalize = true
}

kernel moe_sort_256 {
  op = moe_routing
  stage = sort
  experts = 256
  top_k = 8
}

kernel moe_permute_bf16 {
  op = moe_routing
  stage = permute
  top_k = 8
  x = bf16
}

kernel moe_unpermute_bf16 {
  op = moe_routing
  stage = unpermute
  top_k = 8
  x = bf16
}
