// bench/debug/split_clusters.py --spec bench/debug/split_heldout_nv.ck: softmax planned (max_cols = the width, nothing else given) at vocabulary
// widths on no list in the repository's benchmarks (bench/shapes/hidden_sizes.txt), to check a split-row rule
// judged on the public widths: gpt-oss's o200k (201088), Gemma-3 (262144), InternLM2 (92544), and three made-up
// widths (75000; 99999, not a whole number of vectors; 163840)
target sm_90

kernel softmax_w75000   { op = softmax x = bf16 scale = 0.7  max_cols = 75000 }
kernel softmax_w92544   { op = softmax x = bf16 scale = 0.7  max_cols = 92544 }
kernel softmax_w99999   { op = softmax x = bf16 scale = 0.7  max_cols = 99999 }
kernel softmax_w163840  { op = softmax x = bf16 scale = 0.7  max_cols = 163840 }
kernel softmax_w201088  { op = softmax x = bf16 scale = 0.7  max_cols = 201088 }
kernel softmax_w262144  { op = softmax x = bf16 scale = 0.7  max_cols = 262144 }

// Set B, added after cluster_size_for (rowops_pipeline_split.h) was fitted on the public widths and the six above
// (bench/runs/2026-12-06e_h100_split_clusters.txt): widths the rule raises to 8 (90112: 6 slices; 108000 and 114688:
// 7) or 16 (180224: 11; 230000: 15), and widths it leaves (80000: 5; 140000: 9; 170000: 11). Then a wider slice for
// Qwen / GLM vocabularies: 512 x 5 vectors, 8 slices of 151936 instead of 10 of 512 x 4
kernel softmax_w80000   { op = softmax x = bf16 scale = 0.7  max_cols = 80000 }
kernel softmax_w90112   { op = softmax x = bf16 scale = 0.7  max_cols = 90112 }
kernel softmax_w108000  { op = softmax x = bf16 scale = 0.7  max_cols = 108000 }
kernel softmax_w114688  { op = softmax x = bf16 scale = 0.7  max_cols = 114688 }
kernel softmax_w140000  { op = softmax x = bf16 scale = 0.7  max_cols = 140000 }
kernel softmax_w170000  { op = softmax x = bf16 scale = 0.7  max_cols = 170000 }
kernel softmax_w180224  { op = softmax x = bf16 scale = 0.7  max_cols = 180224 }
kernel softmax_w230000  { op = softmax x = bf16 scale = 0.7  max_cols = 230000 }
kernel softmax_w151936_t512x5  { op = softmax x = bf16 scale = 0.7  max_cols = 151936  threads_per_row = 512  reg_vecs = 5  split = 8 }
