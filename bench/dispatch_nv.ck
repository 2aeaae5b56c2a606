// The dispatch family of bench/dispatch.py (issue 13): bf16 nn.Linear layers on sm_90. A (activations) is
// row-major M x K; B is the layer's weight W [N, K] row-major, i.e. B = W^T column-major (K-contiguous); C is
// row-major. One family written as three blocks; `ckgen tune` times every member on the shape list and
// `ckgen compile --tuning` builds one entry point, ckgen_lin, that picks the member by shape.
target sm_90

// The Hopper body (TMA + wgmma, persistent): large M; split-K and stream-K when the tiles do not fill the GPU.
family lin {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  schedule in [tile, splitk, splitk(atomic), streamk]
}

// Narrower Hopper tiles (two consumer warpgroups of m64n128; one of m64n256): more tiles for M = 64-512.
family lin {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile in [128x128x64]  waves = 2x4  lds_buffers = 4
  schedule in [tile, splitk, streamk]
}
// 128x192x64: two consumer warpgroups of m64n192, for widths that 192 columns fill in whole waves (4608 = 24 x 192).
// The tile schedule only: its stream-K member, which splits the last tiles after whole waves, ran 0.83-0.93x the
// tile schedule at K = 3584 (bench/runs/2026-12-07f_h100_streamk_tail.txt), and before the cost model charged that
// tail (STREAMK_TAIL_S) the dispatcher took it at 1000x3584x3584 at 0.50x cuBLAS (2026-12-07f_h100_dispatch_192.txt);
// the family with it has not been measured since. (`schedule in [tile]` names the member as the tuning databases
// do: lin_tile128x192x64_scheduletile.)
family lin {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile in [128x192x64]  waves = 2x4  lds_buffers = 4  schedule in [tile]
}
family lin {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile in [64x256x64]  waves = 1x4  lds_buffers = 4  prefetch = 0
  schedule in [tile, splitk]
}

// 64x128x64 with 4 warps: the Hopper body with one consumer warpgroup of m64n128 (8 stages); 128x128x32 keeps
// the mma.sync body (every shape whose operands the Hopper body cannot take).
family lin {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile in [128x128x32, 64x128x64]  waves = 2x2  lds_buffers = 4
  schedule in [tile, splitk]
}

// The narrow Hopper tile (one consumer warpgroup of m64n64): twice the tiles of 64x128 over the same columns, for
// M = 8-64 where 64x128 leaves SMs without one.
family lin {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile in [64x64x64]  waves = 1x4  lds_buffers = 4
  schedule in [tile, splitk]
}

// Small-M tiles for decode shapes (M <= 64): 16 rows, B streamed through 6 cp.async stages of 16 KiB by
// 4 warps, the K range split over enough blocks to keep every SM reading B.
family lin {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile in [16x128x64]  waves = 1x4  lds_buffers = 6
  schedule in [splitk, splitk(atomic)]
}

// The vector body (instr = none) for decode shapes: no matrix instruction, B streamed once per 1 or 4 rows of A with
// 16-byte loads, the sums on the vector ALUs (docs/dsl.md, "The vector body").
family lin {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile in [1x4x1024, 4x8x512]  waves = 1x4  instr = none
}
