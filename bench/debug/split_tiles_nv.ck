// bench/debug/split_clusters.py --spec bench/debug/split_tiles_nv.ck: split softmax rows (bf16, 1024 rows) as the
// planner cuts them (softmax_w<cols>: slices of 512 x 4 vectors at two workgroups per SM, ceil(n / 2048) of them)
// beside slices of other tiles whose count is a power of two (softmax_w<cols>_t<threads>x<vectors>_s<slices>):
// wider slices at one workgroup per SM (512 x 5..6), or 1024 threads. Public widths and held-out ones alike: this
// file decides whether the planner should cut rows that way, and the figure of record stays bench/rowops.py's
target sm_90

kernel softmax_w50304  { op = softmax x = bf16 scale = 0.7  max_cols = 50304 }
kernel softmax_w50304_t1024x2_s4 { op = softmax x = bf16 scale = 0.7  max_cols = 50304  threads_per_row = 1024  reg_vecs = 2  split = 4 }
kernel softmax_w65024  { op = softmax x = bf16 scale = 0.7  max_cols = 65024 }
kernel softmax_w65024_t1024x2_s4 { op = softmax x = bf16 scale = 0.7  max_cols = 65024  threads_per_row = 1024  reg_vecs = 2  split = 4 }
kernel softmax_w75000  { op = softmax x = bf16 scale = 0.7  max_cols = 75000 }
kernel softmax_w75000_t512x5_s4 { op = softmax x = bf16 scale = 0.7  max_cols = 75000  threads_per_row = 512  reg_vecs = 5  split = 4 }
kernel softmax_w92544  { op = softmax x = bf16 scale = 0.7  max_cols = 92544 }
kernel softmax_w92544_t512x6_s4 { op = softmax x = bf16 scale = 0.7  max_cols = 92544  threads_per_row = 512  reg_vecs = 6  split = 4 }
kernel softmax_w92544_t512x3_s8 { op = softmax x = bf16 scale = 0.7  max_cols = 92544  threads_per_row = 512  reg_vecs = 3  split = 8 }
kernel softmax_w100352 { op = softmax x = bf16 scale = 0.7  max_cols = 100352 }
kernel softmax_w100352_t1024x2_s8 { op = softmax x = bf16 scale = 0.7  max_cols = 100352  threads_per_row = 1024  reg_vecs = 2  split = 8 }
kernel softmax_w128256 { op = softmax x = bf16 scale = 0.7  max_cols = 128256 }
kernel softmax_w128256_t1024x2_s8 { op = softmax x = bf16 scale = 0.7  max_cols = 128256  threads_per_row = 1024  reg_vecs = 2  split = 8 }
kernel softmax_w140000 { op = softmax x = bf16 scale = 0.7  max_cols = 140000 }
kernel softmax_w140000_t512x5_s8 { op = softmax x = bf16 scale = 0.7  max_cols = 140000  threads_per_row = 512  reg_vecs = 5  split = 8 }
kernel softmax_w151936 { op = softmax x = bf16 scale = 0.7  max_cols = 151936 }
kernel softmax_w151936_t512x5_s8 { op = softmax x = bf16 scale = 0.7  max_cols = 151936  threads_per_row = 512  reg_vecs = 5  split = 8 }
kernel softmax_w163840 { op = softmax x = bf16 scale = 0.7  max_cols = 163840 }
kernel softmax_w163840_t512x5_s8 { op = softmax x = bf16 scale = 0.7  max_cols = 163840  threads_per_row = 512  reg_vecs = 5  split = 8 }
kernel softmax_w170000 { op = softmax x = bf16 scale = 0.7  max_cols = 170000 }
kernel softmax_w170000_t512x6_s8 { op = softmax x = bf16 scale = 0.7  max_cols = 170000  threads_per_row = 512  reg_vecs = 6  split = 8 }
kernel softmax_w201088 { op = softmax x = bf16 scale = 0.7  max_cols = 201088 }
kernel softmax_w201088_t1024x2_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 201088  threads_per_row = 1024  reg_vecs = 2  split = 16 }
kernel softmax_w256000 { op = softmax x = bf16 scale = 0.7  max_cols = 256000 }
kernel softmax_w256000_t1024x2_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 256000  threads_per_row = 1024  reg_vecs = 2  split = 16 }

// Then every width with a 512 x 5 and a 512 x 6 tile (one workgroup per SM: about 127 registers), split = 16 so
// that any slice count the width takes can be asked for (CKGEN_ROWOPS_CLUSTERS=S: --slices 4,5,6,7,8,16)
kernel softmax_w50304_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 50304  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w50304_t512x6_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 50304  threads_per_row = 512  reg_vecs = 6  split = 16 }
kernel softmax_w65024_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 65024  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w65024_t512x6_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 65024  threads_per_row = 512  reg_vecs = 6  split = 16 }
kernel softmax_w75000_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 75000  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w75000_t512x6_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 75000  threads_per_row = 512  reg_vecs = 6  split = 16 }
kernel softmax_w92544_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 92544  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w92544_t512x6_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 92544  threads_per_row = 512  reg_vecs = 6  split = 16 }
kernel softmax_w100352_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 100352  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w100352_t512x6_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 100352  threads_per_row = 512  reg_vecs = 6  split = 16 }
kernel softmax_w128256_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 128256  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w128256_t512x6_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 128256  threads_per_row = 512  reg_vecs = 6  split = 16 }
kernel softmax_w140000_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 140000  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w140000_t512x6_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 140000  threads_per_row = 512  reg_vecs = 6  split = 16 }
kernel softmax_w151936_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 151936  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w151936_t512x6_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 151936  threads_per_row = 512  reg_vecs = 6  split = 16 }
kernel softmax_w163840_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 163840  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w163840_t512x6_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 163840  threads_per_row = 512  reg_vecs = 6  split = 16 }
kernel softmax_w170000_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 170000  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w170000_t512x6_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 170000  threads_per_row = 512  reg_vecs = 6  split = 16 }
kernel softmax_w201088_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 201088  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w201088_t512x6_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 201088  threads_per_row = 512  reg_vecs = 6  split = 16 }
kernel softmax_w256000_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 256000  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w256000_t512x6_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 256000  threads_per_row = 512  reg_vecs = 6  split = 16 }
