// Fused-epilogue GEMMs for bench/gemm_fused.py (sm_90, bf16, B as nn.Linear weights: column-major). The layer's
// gate-up projection with SwiGLU fused (B: the merged gate_up weight, K x 2N, halves; and interleaved(64)), the
// plain GEMM of the same B (what an unfused gate-up runs before torch's silu * mul), and the down projection with
// the residual fused beside the plain one; and the gate-up with an RMSNorm's per-row 1/rms folded in (scale_a = row,
// gamma folded into B offline). Every tile gets the Hopper body (TMA + wgmma).
target sm_90

kernel fused_gate_up {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  epilogue = swiglu  gate = halves
}

kernel fused_gate_up_il64 {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  epilogue = swiglu  gate = interleaved(64)
}

kernel fused_gate_up_rs {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  epilogue = swiglu  gate = halves  scale_a = row
}

kernel plain_t128_256 {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile = 128x256x64  waves = 2x4  lds_buffers = 4
}

kernel fused_down_residual {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  epilogue = residual
}
