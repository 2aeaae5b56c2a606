/* bench/elementwise.py's kernels (sm_90). */
target sm_90
kernel ew_silu_mul  { op = elementwise a = bf16 b = bf16 expr = silu(a) -> mul(b) }
kernel ew_add       { op = elementwise a = bf16 b = bf16 expr = add(a, b) }
kernel ew_bias_gelu { op = elementwise a = f32 b = f32 broadcast = b y = bf16 expr = add(a, b) -> gelu }
