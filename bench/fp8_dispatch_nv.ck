// The fp8 dispatchers of bench/fp8.py (issue 26: "through the dispatcher"): one family per scaling, e4m3 x e4m3 ->
// bf16, A row-major, B column-major (nn.Linear's weight as is). Untuned: the GEMM cost model picks the member per
// shape (ckgen/ops/gemm/cost_model.py), nothing here was timed to choose it. Members: the vector body (instr = none:
// B streamed once per 1 or 4 rows of A, the sums on the vector ALUs), the Hopper body's fp8 tiles (64x64 for few
// rows of A: twice the workgroups of 64x128; 128x192 where 192 columns fill whole waves, tile schedule only, not with
// block scales) with one workgroup per tile and, where the tiles do not fill the GPU, the K range split (split-K) or
// shared out (stream-K), and a 16-row mma.sync tile with split-K. The dispatcher takes the first of members the model rates
// alike (where reading B bounds them all), so they are listed by the rows of A a tile computes, fewest first: the
// vector body, then the 64-row tiles (64x128 before 64x64, which needs twice the workgroups for the same columns),
// then the 128-row ones. (On the nn.Linear list of the members run of
// bench/runs/2026-12-07c_h100_fp8_dispatch_members.json, 128x128 listed first took 1x / 16x14336x4096 at
// 1.15-1.20x the 64x128 tile's time; bench/debug/fp8_model_check.py.) Block scales fold per 128-K block (split-K
// pieces start on whole blocks).
target sm_90

family fp8d_tensor {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile in [1x4x2048, 4x8x1024]  waves = 1x4  instr = none
}
family fp8d_tensor {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile in [64x128x128]  waves = 1x4  lds_buffers = 4  schedule in [tile, splitk]
}
family fp8d_tensor {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile in [64x64x128]  waves = 1x4  lds_buffers = 4  schedule in [tile, splitk]
}
family fp8d_tensor {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile in [128x128x128]  waves = 2x4  lds_buffers = 4  schedule in [tile, splitk, streamk]
}
family fp8d_tensor {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile in [128x192x128]  waves = 2x4  lds_buffers = 4  schedule in [tile]
}
family fp8d_tensor {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile in [128x256x128]  waves = 2x4  lds_buffers = 4  schedule in [tile, splitk]
}
family fp8d_tensor {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile in [16x128x64]  waves = 1x4  lds_buffers = 6  schedule = splitk
}

family fp8d_rowwise {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = row  scale_b = col
  tile in [1x4x2048, 4x8x1024]  waves = 1x4  instr = none
}
family fp8d_rowwise {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = row  scale_b = col
  tile in [64x128x128]  waves = 1x4  lds_buffers = 4  schedule in [tile, splitk]
}
family fp8d_rowwise {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = row  scale_b = col
  tile in [64x64x128]  waves = 1x4  lds_buffers = 4  schedule in [tile, splitk]
}
family fp8d_rowwise {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = row  scale_b = col
  tile in [128x128x128]  waves = 2x4  lds_buffers = 4  schedule in [tile, splitk, streamk]
}
family fp8d_rowwise {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = row  scale_b = col
  tile in [128x192x128]  waves = 2x4  lds_buffers = 4  schedule in [tile]
}
family fp8d_rowwise {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = row  scale_b = col
  tile in [128x256x128]  waves = 2x4  lds_buffers = 4  schedule in [tile, splitk]
}
family fp8d_rowwise {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = row  scale_b = col
  tile in [16x128x64]  waves = 1x4  lds_buffers = 6  schedule = splitk
}

family fp8d_block {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = block(128)  scale_b = block(128)
  tile in [1x4x2048, 4x8x1024]  waves = 1x4  instr = none
}
family fp8d_block {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = block(128)  scale_b = block(128)
  tile in [64x128x128]  waves = 1x4  lds_buffers = 4  schedule in [tile, splitk]
}
family fp8d_block {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = block(128)  scale_b = block(128)
  tile in [64x64x128]  waves = 1x4  lds_buffers = 4  schedule in [tile, splitk]
}
family fp8d_block {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = block(128)  scale_b = block(128)
  tile in [128x128x128]  waves = 2x4  lds_buffers = 4  schedule in [tile, splitk]
}
