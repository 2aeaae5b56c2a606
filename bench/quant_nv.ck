/* bench/quant.py's kernels (sm_90): the quantizing row ops and element-wise op, fp8 (OCP e4m3fn) with per-token
   and per-1x128-group f32 scales, at the widths the benchmark times (max_cols: the planner's single pass). */
target sm_90
kernel q_add_rms_row_4096   { op = rmsnorm x = bf16 residual = true y = e4m3fn eps = 1e-6 max_cols = 4096 }
kernel q_add_rms_group_4096 { op = rmsnorm x = bf16 residual = true y = e4m3fn quant = group(128) eps = 1e-6 max_cols = 4096 }
kernel q_rms_row_8192       { op = rmsnorm x = bf16 y = e4m3fn eps = 1e-6 max_cols = 8192 }
kernel q_rms_group_7168     { op = rmsnorm x = bf16 y = e4m3fn quant = group(128) eps = 1e-6 max_cols = 7168 }
kernel q_quant_row_4096     { op = quantize x = bf16 y = e4m3fn max_cols = 4096 }
kernel q_quant_group_4096   { op = quantize x = bf16 y = e4m3fn quant = group(128) max_cols = 4096 }
kernel q_quant_row_14336    { op = quantize x = bf16 y = e4m3fn max_cols = 14336 }
kernel q_swiglu_group       { op = elementwise a = bf16 b = bf16 y = e4m3fn quant = group(128) expr = silu(a) -> mul(b) }
