// bench/debug/norm_fit.py: the Llama layer's RMS norms (examples/llama_layer.ck: planned for max_cols = 8192) against
// the same op planned for the widths the layers run (4096, 3584) and for 8184 (the 8192 tile with whole vectors)
target sm_90

kernel nf_norm_8192 { op = rmsnorm  x = bf16  max_cols = 8192 }
kernel nf_norm_8184 { op = rmsnorm  x = bf16  max_cols = 8184 }
kernel nf_norm_4096 { op = rmsnorm  x = bf16  max_cols = 4096 }
kernel nf_rstd_8192 { op = rmsnorm  x = bf16  y = none  rstd = true  weight = none  max_cols = 8192 }
kernel nf_rstd_8184 { op = rmsnorm  x = bf16  y = none  rstd = true  weight = none  max_cols = 8184 }
kernel nf_rstd_4096 { op = rmsnorm  x = bf16  y = none  rstd = true  weight = none  max_cols = 4096 }
