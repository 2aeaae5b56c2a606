// bench/debug/split_clusters.py --spec bench/debug/split_validate_nv.ck: split rows after the planner's wide slices
// (ckgen/ops/rowops/split.py WIDE_SLICES, fitted on bench/debug/split_tiles_nv.ck's widths). Set C: softmax widths
// measured nowhere before, each planned (softmax_w<cols>) beside the plan before WIDE_SLICES (512 x 4 vectors, ceil(n /
// 2048) slices, two workgroups per SM: _t512x4_s<slices>). Then the norms at Llama-3.1-405B's intermediate width
// (planned: 512 x 4 in 4 slices) with 512 x 5 / 512 x 6 tiles (WIDE_SLICES has no norm yet)
target sm_90

kernel softmax_w58000  { op = softmax x = bf16 scale = 0.7  max_cols = 58000 }
kernel softmax_w58000_t512x4_s4 { op = softmax x = bf16 scale = 0.7  max_cols = 58000  threads_per_row = 512  reg_vecs = 4  split = 4 }
kernel softmax_w71680  { op = softmax x = bf16 scale = 0.7  max_cols = 71680 }
kernel softmax_w71680_t512x4_s5 { op = softmax x = bf16 scale = 0.7  max_cols = 71680  threads_per_row = 512  reg_vecs = 4  split = 5 }
kernel softmax_w86016  { op = softmax x = bf16 scale = 0.7  max_cols = 86016 }
kernel softmax_w86016_t512x4_s6 { op = softmax x = bf16 scale = 0.7  max_cols = 86016  threads_per_row = 512  reg_vecs = 4  split = 6 }
kernel softmax_w119000 { op = softmax x = bf16 scale = 0.7  max_cols = 119000 }
kernel softmax_w119000_t512x4_s8 { op = softmax x = bf16 scale = 0.7  max_cols = 119000  threads_per_row = 512  reg_vecs = 4  split = 8 }
kernel softmax_w132000 { op = softmax x = bf16 scale = 0.7  max_cols = 132000 }
kernel softmax_w132000_t512x4_s9 { op = softmax x = bf16 scale = 0.7  max_cols = 132000  threads_per_row = 512  reg_vecs = 4  split = 9 }
kernel softmax_w145000 { op = softmax x = bf16 scale = 0.7  max_cols = 145000 }
kernel softmax_w145000_t512x4_s9 { op = softmax x = bf16 scale = 0.7  max_cols = 145000  threads_per_row = 512  reg_vecs = 4  split = 9 }
kernel softmax_w158000 { op = softmax x = bf16 scale = 0.7  max_cols = 158000 }
kernel softmax_w158000_t512x4_s10 { op = softmax x = bf16 scale = 0.7  max_cols = 158000  threads_per_row = 512  reg_vecs = 4  split = 10 }
kernel softmax_w186000 { op = softmax x = bf16 scale = 0.7  max_cols = 186000 }
kernel softmax_w186000_t512x4_s12 { op = softmax x = bf16 scale = 0.7  max_cols = 186000  threads_per_row = 512  reg_vecs = 4  split = 12 }

kernel rmsnorm_w53248_t512x5_s4 { op = rmsnorm x = bf16  max_cols = 53248  threads_per_row = 512  reg_vecs = 5  split = 4 }
kernel rmsnorm_w53248_t512x6_s4 { op = rmsnorm x = bf16  max_cols = 53248  threads_per_row = 512  reg_vecs = 6  split = 4 }
kernel addrmsnorm_w53248_t512x5_s4 { op = rmsnorm x = bf16 residual = true  max_cols = 53248  threads_per_row = 512  reg_vecs = 5  split = 4 }
kernel layernorm_w53248_t512x5_s4 { op = layernorm x = bf16  max_cols = 53248  threads_per_row = 512  reg_vecs = 5  split = 4 }
kernel layernorm_w53248_t512x6_s4 { op = layernorm x = bf16  max_cols = 53248  threads_per_row = 512  reg_vecs = 6  split = 4 }

// Set D, after WIDE_SLICES kept the narrow cut of 7 or 8 slices (fitted on the sets above): widths measured nowhere
// before, planned (softmax_w<cols>) beside the other form: wide slices (_t512x5_s16, ceil(cols / 20480) slices at one
// workgroup per SM) where the plan keeps the narrow cut (104000, 112000, 124000), narrow ones (_t512x4_s<slices>,
// two per SM) where it takes wide ones (60000, 84000, 96000, 136000, 190000)
kernel softmax_w104000 { op = softmax x = bf16 scale = 0.7  max_cols = 104000 }
kernel softmax_w104000_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 104000  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w112000 { op = softmax x = bf16 scale = 0.7  max_cols = 112000 }
kernel softmax_w112000_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 112000  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w124000 { op = softmax x = bf16 scale = 0.7  max_cols = 124000 }
kernel softmax_w124000_t512x5_s16 { op = softmax x = bf16 scale = 0.7  max_cols = 124000  threads_per_row = 512  reg_vecs = 5  split = 16 }
kernel softmax_w60000  { op = softmax x = bf16 scale = 0.7  max_cols = 60000 }
kernel softmax_w60000_t512x4_s4 { op = softmax x = bf16 scale = 0.7  max_cols = 60000  threads_per_row = 512  reg_vecs = 4  split = 4 }
kernel softmax_w84000  { op = softmax x = bf16 scale = 0.7  max_cols = 84000 }
kernel softmax_w84000_t512x4_s6 { op = softmax x = bf16 scale = 0.7  max_cols = 84000  threads_per_row = 512  reg_vecs = 4  split = 6 }
kernel softmax_w96000  { op = softmax x = bf16 scale = 0.7  max_cols = 96000 }
kernel softmax_w96000_t512x4_s6 { op = softmax x = bf16 scale = 0.7  max_cols = 96000  threads_per_row = 512  reg_vecs = 4  split = 6 }
kernel softmax_w136000 { op = softmax x = bf16 scale = 0.7  max_cols = 136000 }
kernel softmax_w136000_t512x4_s9 { op = softmax x = bf16 scale = 0.7  max_cols = 136000  threads_per_row = 512  reg_vecs = 4  split = 9 }
kernel softmax_w190000 { op = softmax x = bf16 scale = 0.7  max_cols = 190000 }
kernel softmax_w190000_t512x4_s12 { op = softmax x = bf16 scale = 0.7  max_cols = 190000  threads_per_row = 512  reg_vecs = 4  split = 12 }
