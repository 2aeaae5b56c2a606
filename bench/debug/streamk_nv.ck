// Stream-K against the tile schedule on the Hopper body (bench/device_run.sh streamk-eff): the two schedules of
// bench/dispatch_nv.ck's three large tiles, tuned on the Mistral-7B shapes of two waves of tiles or more (or on
// bench/debug/streamk_tail_shapes.txt: shapes whose last tiles stream-K splits after whole waves), so that
// bench/debug/streamk_efficiency.py can re-measure SCHEDULE_EFFICIENCY (ckgen/ops/gemm/cost_model.py) without
// tuning the whole dispatch family.
target sm_90

family sk {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile in [128x256x64, 128x192x64, 128x128x64]  waves = 2x4  lds_buffers = 4
  schedule in [tile, streamk]
}
