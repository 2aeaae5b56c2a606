// Schedules for shapes that do not fill the GPU (docs/dsl.md, "Schedules"): split-K, stream-K, small-M tiles,
// and a family that `ckgen tune` times and `ckgen compile --tuning` turns into one entry point that picks its
// kernel by shape (docs/dispatch.md).
target gfx942, gfx90a

// Few, deep tiles (e.g. 64 x 4096 x 8192): each tile's K range split over 4 workgroups, the partial sums
// added in a fixed order through the workspace.
kernel splitk_bf16 {
  A = bf16 row
  B = bf16 col           // nn.Linear weights W[N, K] row-major are B = W^T column-major
  C = bf16 row
  tile = 128x128x32
  waves = 2x2
  schedule = splitk(4)
  epilogue = bias(col) -> gelu
}

// Stream-K: one wave of persistent workgroups shares every tile's K iterations evenly (no tail wave).
kernel streamk_bf16 {
  A = bf16 row
  B = bf16 col
  C = bf16 row
  tile = 128x128x32
  waves = 2x2
  schedule = streamk
}

// A family for decode and prefill shapes, dispatched by shape: a small-M tile (16 rows) whose split count is
// chosen per call, and a large tile.
family linear_bf16 {
  A = bf16 row
  B = bf16 col
  C = bf16 row
  tile in [16x64x64, 128x128x32]
  waves = 1x4
  schedule = auto        // split-K for the 16-row tile, one workgroup per tile for the other
}
