/* fp8 GEMMs with the scalings serving stacks use (docs/dsl.md, "8-bit floats (fp8)", "fp8 scalings", "MX
   scales", "MXFP4"): nn.Linear's layout, A the activations (row-major M x K), B the weight W [N, K] as it is
   stored (W^T: column-major K x N), C = (scale_a * scale_b) * (A . B) (+ bias) in bf16.

   The encoding is named, never inferred: gfx942's fp8 instructions take the FNUZ encoding (e4m3fnuz, e5m2fnuz),
   gfx950's and sm_90's the OCP one (e4m3fn, e5m2), and one tensor holds one of them, so each kernel names the
   arches its dtypes belong to (`arch = [...]`). From Python, torch callers pass torch.float8_* tensors of the
   kernel's encoding and f32 scales; numpy callers pass uint8 codes (fp8, fp4 pairs and E8M0 scale bytes).

   Scalings (one kernel each):
     tensor     scale_a: 1 element, scale_b: 1 element                  (per-tensor)
     row / col  scale_a: M elements, scale_b: N elements                (per-token x per-channel)
     block(128) scale_a: M x ceil(K/128), scale_b: ceil(N/128) x ceil(K/128)  (1x128 x 128x128, DeepSeek-V3)
     mx(32)     E8M0 bytes, scale_a: M x ceil(K/32), scale_b: N x ceil(K/32)  (OCP microscaling, gfx950)
   Scales are read on every launch (a captured graph replays with the values the tensors hold then). */
target gfx942, gfx950, sm_90

// ---------------------------------------------------------------- gfx942: FNUZ (v_mfma_f32_*_fp8_fp8)
kernel fp8_tensor_fnuz {          // torch._scaled_mm(a, b, scale_a, scale_b) with scalar scales
  arch = [gfx942]
  A = e4m3fnuz row  B = e4m3fnuz col  C = bf16 row
  scale_a = tensor  scale_b = tensor
  tile = 128x128x64  waves = 2x2
}

kernel fp8_rowwise_bias_fnuz {    // per-token x per-channel scales, then the layer's bias
  arch = [gfx942]
  A = e4m3fnuz row  B = e4m3fnuz col  C = bf16 row
  scale_a = row  scale_b = col  epilogue = bias(col)
  tile = 128x128x64  waves = 2x2
}

kernel fp8_block_fnuz {           // each 128-K block summed, then folded in f32 with its two scales
  arch = [gfx942]
  A = e4m3fnuz row  B = e4m3fnuz col  C = bf16 row
  scale_a = block(128)  scale_b = block(128)
  tile = 128x128x64  waves = 2x2
}

// ---------------------------------------------------------------- gfx950: OCP, MX (v_mfma_scale_f32_32x32x64_f8f6f4)
kernel fp8_rowwise_e4m3_e5m2 {    // A e4m3, B e5m2: the MFMA takes each operand's kind (v_mfma_f32_*_fp8_bf8)
  arch = [gfx950]
  A = e4m3fn row  B = e5m2 col  C = bf16 row
  scale_a = row  scale_b = col
  tile = 128x128x64  waves = 2x2
}

kernel mxfp8 {                    // one E8M0 exponent per 32 K of each row of A and each column of B
  arch = [gfx950]
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = mx(32)  scale_b = mx(32)
  tile = 128x128x64  waves = 2x2
}

kernel mxfp4 {                    // two FP4 (E2M1) values per byte along K: A is M x K/2 bytes, B K/2 x N
  arch = [gfx950]
  A = e2m1fn_x2 row  B = e2m1fn_x2 col  C = bf16 row
  scale_a = mx(32)  scale_b = mx(32)
  tile = 128x128x128  waves = 2x2
}

// ---------------------------------------------------------------- sm_90: OCP (TMA + wgmma .e4m3 where it can)
kernel fp8_tensor_hopper {        // the Hopper body: 128x256 tiles, K tiles of 128 fp8 elements
  arch = [sm_90]
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = tensor  scale_b = tensor
  tile = 128x256x128  waves = 2x4  lds_buffers = 4
}

kernel fp8_block_hopper {         // block scales on the Hopper body: tiles of 128 columns (one block of B's scales)
  arch = [sm_90]
  A = e4m3fn row  B = e4m3fn col  C = bf16 row
  scale_a = block(128)  scale_b = block(128)
  tile = 128x128x128  waves = 2x4  lds_buffers = 4
}
