// Group-quantizing row ops at widths and dtypes bench/quant_nv.ck does not have (bench/debug/nv_registers.py).
target sm_90
kernel u_quant_grp_7168  { op = quantize x = bf16 y = e4m3fn quant = group(128) max_cols = 7168 }
kernel u_quant_grp_2048  { op = quantize x = bf16 y = e4m3fn quant = group(128) max_cols = 2048 }
kernel u_rms_grp_5120    { op = rmsnorm x = bf16 y = e4m3fn quant = group(128) eps = 1e-6 max_cols = 5120 }
kernel u_addrms_grp_3584 { op = rmsnorm x = bf16 residual = true y = e4m3fn quant = group(128) eps = 1e-6 max_cols = 3584 }
kernel u_ln_grp_3000     { op = layernorm x = f16 y = e4m3fn quant = group(128) max_cols = 3000 }
kernel u_rms_i8_grp_700  { op = rmsnorm x = f16 residual = true y = i8 quant = group(128) max_cols = 700 }
