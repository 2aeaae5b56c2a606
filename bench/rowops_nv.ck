// Row-op kernels for bench/rowops.py (sm_90, bf16): the candidates per op and shape. Single-pass kernels
// (max_cols: the row read once, held in registers) for the 1024, 4096 and 8192-column shapes and, for 32768
// columns, 512 x 8 ones with registers bounded for two workgroups per SM (c32768: the planner's
// BOUNDED_SINGLE_PASS), looped ones (any cols; rows longer than a tile are re-read once per extra tile, mostly
// from L2) for 32768 columns, and looped ones with the row kept in shared memory
// (row_in = shared, max_cols = 32768: 64 KiB of dynamic shared memory per row, the row read once; 2-3 workgroups
// per SM). Names: <op>_c<max_cols>_t<threads_per_row>x<reg_vecs>r<rows_per_workgroup>, <op>_l_t.. for looped
// kernels, <op>_s<max_cols>_t.. for looped kernels with the row in shared memory (none spills: `ckgen report
// bench/rowops_nv.ck --arch sm_90`; softmax_l_t512x2r1 is left out: ptxas caps it at 64 registers and spills).
// bench/nv_prebuild.py builds them.
target sm_90

// ---- softmax
kernel softmax_c1024_t32x4r8        { op = softmax x = bf16 scale = 0.7  threads_per_row = 32  reg_vecs = 4  rows_per_workgroup = 8  max_cols = 1024  looped = false }
kernel softmax_c1024_t64x2r4        { op = softmax x = bf16 scale = 0.7  threads_per_row = 64  reg_vecs = 2  rows_per_workgroup = 4  max_cols = 1024  looped = false }
kernel softmax_c4096_t128x4r2       { op = softmax x = bf16 scale = 0.7  threads_per_row = 128  reg_vecs = 4  rows_per_workgroup = 2  max_cols = 4096  looped = false }
kernel softmax_c4096_t256x2r1       { op = softmax x = bf16 scale = 0.7  threads_per_row = 256  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 4096  looped = false }
kernel softmax_c8192_t256x4r1       { op = softmax x = bf16 scale = 0.7  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 1  max_cols = 8192  looped = false }
kernel softmax_c8192_t512x2r1       { op = softmax x = bf16 scale = 0.7  threads_per_row = 512  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 8192  looped = false }
kernel softmax_l_t256x4r1           { op = softmax x = bf16 scale = 0.7  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 1  looped = true }
kernel softmax_l_t512x4r1           { op = softmax x = bf16 scale = 0.7  threads_per_row = 512  reg_vecs = 4  rows_per_workgroup = 1  looped = true }
kernel softmax_l_t1024x1r1          { op = softmax x = bf16 scale = 0.7  threads_per_row = 1024  reg_vecs = 1  rows_per_workgroup = 1  looped = true }
kernel softmax_s32768_t256x4r1     { op = softmax x = bf16 scale = 0.7  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel softmax_s32768_t256x2r1     { op = softmax x = bf16 scale = 0.7  threads_per_row = 256  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel softmax_c32768_t512x8r1     { op = softmax x = bf16 scale = 0.7  threads_per_row = 512  reg_vecs = 8  rows_per_workgroup = 1  max_cols = 32768  looped = false }
kernel softmax_s32768_t512x2r1     { op = softmax x = bf16 scale = 0.7  threads_per_row = 512  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel softmax_s32768_t512x1r1     { op = softmax x = bf16 scale = 0.7  threads_per_row = 512  reg_vecs = 1  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel softmax_s32768_t1024x1r1    { op = softmax x = bf16 scale = 0.7  threads_per_row = 1024  reg_vecs = 1  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }

// ---- layernorm
kernel layernorm_c1024_t32x4r8      { op = layernorm x = bf16  threads_per_row = 32  reg_vecs = 4  rows_per_workgroup = 8  max_cols = 1024  looped = false }
kernel layernorm_c1024_t64x2r4      { op = layernorm x = bf16  threads_per_row = 64  reg_vecs = 2  rows_per_workgroup = 4  max_cols = 1024  looped = false }
kernel layernorm_c4096_t128x4r2     { op = layernorm x = bf16  threads_per_row = 128  reg_vecs = 4  rows_per_workgroup = 2  max_cols = 4096  looped = false }
kernel layernorm_c4096_t256x2r1     { op = layernorm x = bf16  threads_per_row = 256  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 4096  looped = false }
kernel layernorm_c8192_t256x4r1     { op = layernorm x = bf16  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 1  max_cols = 8192  looped = false }
kernel layernorm_c8192_t512x2r1     { op = layernorm x = bf16  threads_per_row = 512  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 8192  looped = false }
kernel layernorm_l_t256x4r1         { op = layernorm x = bf16  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 1  looped = true }
kernel layernorm_l_t512x4r1         { op = layernorm x = bf16  threads_per_row = 512  reg_vecs = 4  rows_per_workgroup = 1  looped = true }
kernel layernorm_l_t512x2r1         { op = layernorm x = bf16  threads_per_row = 512  reg_vecs = 2  rows_per_workgroup = 1  looped = true }
kernel layernorm_l_t1024x1r1        { op = layernorm x = bf16  threads_per_row = 1024  reg_vecs = 1  rows_per_workgroup = 1  looped = true }
kernel layernorm_s32768_t256x4r1   { op = layernorm x = bf16  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel layernorm_s32768_t256x2r1   { op = layernorm x = bf16  threads_per_row = 256  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel layernorm_c32768_t512x8r1   { op = layernorm x = bf16 threads_per_row = 512  reg_vecs = 8  rows_per_workgroup = 1  max_cols = 32768  looped = false }
kernel layernorm_s32768_t512x2r1   { op = layernorm x = bf16  threads_per_row = 512  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel layernorm_s32768_t512x1r1   { op = layernorm x = bf16  threads_per_row = 512  reg_vecs = 1  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel layernorm_s32768_t1024x1r1  { op = layernorm x = bf16  threads_per_row = 1024  reg_vecs = 1  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel layernorm_s32768_t256x4r2   { op = layernorm x = bf16  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 2  max_cols = 32768  row_in = shared }
kernel layernorm_s32768_t256x2r3   { op = layernorm x = bf16  threads_per_row = 256  reg_vecs = 2  rows_per_workgroup = 3  max_cols = 32768  row_in = shared }
kernel layernorm_s32768_t256x2r2   { op = layernorm x = bf16  threads_per_row = 256  reg_vecs = 2  rows_per_workgroup = 2  max_cols = 32768  row_in = shared }
kernel layernorm_s32768_t512x4r1   { op = layernorm x = bf16  threads_per_row = 512  reg_vecs = 4  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }

// ---- rmsnorm
kernel rmsnorm_c1024_t32x4r8        { op = rmsnorm x = bf16  threads_per_row = 32  reg_vecs = 4  rows_per_workgroup = 8  max_cols = 1024  looped = false }
kernel rmsnorm_c1024_t64x2r4        { op = rmsnorm x = bf16  threads_per_row = 64  reg_vecs = 2  rows_per_workgroup = 4  max_cols = 1024  looped = false }
kernel rmsnorm_c4096_t128x4r2       { op = rmsnorm x = bf16  threads_per_row = 128  reg_vecs = 4  rows_per_workgroup = 2  max_cols = 4096  looped = false }
kernel rmsnorm_c4096_t256x2r1       { op = rmsnorm x = bf16  threads_per_row = 256  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 4096  looped = false }
kernel rmsnorm_c8192_t256x4r1       { op = rmsnorm x = bf16  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 1  max_cols = 8192  looped = false }
kernel rmsnorm_c8192_t512x2r1       { op = rmsnorm x = bf16  threads_per_row = 512  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 8192  looped = false }
kernel rmsnorm_c8192_t1024x1r1      { op = rmsnorm x = bf16  threads_per_row = 1024  reg_vecs = 1  rows_per_workgroup = 1  max_cols = 8192  looped = false }
kernel rmsnorm_c8192_t128x8r1       { op = rmsnorm x = bf16  threads_per_row = 128  reg_vecs = 8  rows_per_workgroup = 1  max_cols = 8192  looped = false }
kernel rmsnorm_c8192_t256x4r2       { op = rmsnorm x = bf16  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 2  max_cols = 8192  looped = false }
kernel rmsnorm_c8192_t512x2r2       { op = rmsnorm x = bf16  threads_per_row = 512  reg_vecs = 2  rows_per_workgroup = 2  max_cols = 8192  looped = false }
kernel rmsnorm_l_t256x4r1           { op = rmsnorm x = bf16  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 1  looped = true }
kernel rmsnorm_l_t512x4r1           { op = rmsnorm x = bf16  threads_per_row = 512  reg_vecs = 4  rows_per_workgroup = 1  looped = true }
kernel rmsnorm_l_t512x2r1           { op = rmsnorm x = bf16  threads_per_row = 512  reg_vecs = 2  rows_per_workgroup = 1  looped = true }
kernel rmsnorm_l_t1024x1r1          { op = rmsnorm x = bf16  threads_per_row = 1024  reg_vecs = 1  rows_per_workgroup = 1  looped = true }
kernel rmsnorm_s32768_t256x4r1     { op = rmsnorm x = bf16  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel rmsnorm_s32768_t256x2r1     { op = rmsnorm x = bf16  threads_per_row = 256  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel rmsnorm_c32768_t512x8r1     { op = rmsnorm x = bf16 threads_per_row = 512  reg_vecs = 8  rows_per_workgroup = 1  max_cols = 32768  looped = false }
kernel rmsnorm_s32768_t512x2r1     { op = rmsnorm x = bf16  threads_per_row = 512  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel rmsnorm_s32768_t512x1r1     { op = rmsnorm x = bf16  threads_per_row = 512  reg_vecs = 1  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel rmsnorm_s32768_t1024x1r1    { op = rmsnorm x = bf16  threads_per_row = 1024  reg_vecs = 1  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }

// ---- addrmsnorm
kernel addrmsnorm_c1024_t32x4r8     { op = rmsnorm x = bf16 residual = true  threads_per_row = 32  reg_vecs = 4  rows_per_workgroup = 8  max_cols = 1024  looped = false }
kernel addrmsnorm_c1024_t64x2r4     { op = rmsnorm x = bf16 residual = true  threads_per_row = 64  reg_vecs = 2  rows_per_workgroup = 4  max_cols = 1024  looped = false }
kernel addrmsnorm_c4096_t128x4r2    { op = rmsnorm x = bf16 residual = true  threads_per_row = 128  reg_vecs = 4  rows_per_workgroup = 2  max_cols = 4096  looped = false }
kernel addrmsnorm_c4096_t256x2r1    { op = rmsnorm x = bf16 residual = true  threads_per_row = 256  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 4096  looped = false }
kernel addrmsnorm_c8192_t256x4r1    { op = rmsnorm x = bf16 residual = true  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 1  max_cols = 8192  looped = false }
kernel addrmsnorm_c8192_t512x2r1    { op = rmsnorm x = bf16 residual = true  threads_per_row = 512  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 8192  looped = false }
kernel addrmsnorm_l_t256x4r1        { op = rmsnorm x = bf16 residual = true  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 1  looped = true }
kernel addrmsnorm_l_t512x4r1        { op = rmsnorm x = bf16 residual = true  threads_per_row = 512  reg_vecs = 4  rows_per_workgroup = 1  looped = true }
kernel addrmsnorm_l_t512x2r1        { op = rmsnorm x = bf16 residual = true  threads_per_row = 512  reg_vecs = 2  rows_per_workgroup = 1  looped = true }
kernel addrmsnorm_l_t1024x1r1       { op = rmsnorm x = bf16 residual = true  threads_per_row = 1024  reg_vecs = 1  rows_per_workgroup = 1  looped = true }
kernel addrmsnorm_s32768_t256x4r1  { op = rmsnorm x = bf16 residual = true  threads_per_row = 256  reg_vecs = 4  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel addrmsnorm_s32768_t256x2r1  { op = rmsnorm x = bf16 residual = true  threads_per_row = 256  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel addrmsnorm_s32768_t512x2r1  { op = rmsnorm x = bf16 residual = true  threads_per_row = 512  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel addrmsnorm_s32768_t512x1r1  { op = rmsnorm x = bf16 residual = true  threads_per_row = 512  reg_vecs = 1  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }
kernel addrmsnorm_s32768_t1024x1r1 { op = rmsnorm x = bf16 residual = true  threads_per_row = 1024  reg_vecs = 1  rows_per_workgroup = 1  max_cols = 32768  row_in = shared }

// ---- vocabulary rows (issue 23): softmax with the whole row in shared memory (up to 100352 bf16 columns, 209 KiB:
// one workgroup per SM), the row read once; the planner loops these rows (x read twice) beyond its 96 KiB cache
kernel softmax_s100352_t512x2r1  { op = softmax x = bf16 scale = 0.7  threads_per_row = 512  reg_vecs = 2  rows_per_workgroup = 1  max_cols = 100352  row_in = shared }
kernel softmax_s100352_t1024x1r1 { op = softmax x = bf16 scale = 0.7  threads_per_row = 1024  reg_vecs = 1  rows_per_workgroup = 1  max_cols = 100352  row_in = shared }

// ---- vocabulary rows split over workgroups (split rows: docs/dsl.md): each workgroup holds a slice of one tile in
// registers, the row read once; on sm_90 a row's slices run as one thread-block cluster where it fits (2..16),
// with CKGEN_ROWOPS_CLUSTERS=0 they exchange through the workspace instead. _v<max_cols>_t<threads>x<reg_vecs>;
// _split: the planner's default (512 x 4: 16384 columns a slice); _looped: split = 1 (the looped plan, x read twice)
kernel softmax_v256000_split    { op = softmax x = bf16 scale = 0.7  max_cols = 256000 }
kernel softmax_v256000_t256x4   { op = softmax x = bf16 scale = 0.7  threads_per_row = 256  reg_vecs = 4  max_cols = 256000  split = 32 }
kernel softmax_v256000_t256x8   { op = softmax x = bf16 scale = 0.7  threads_per_row = 256  reg_vecs = 8  max_cols = 256000  split = 16 }
kernel softmax_v256000_t128x8   { op = softmax x = bf16 scale = 0.7  threads_per_row = 128  reg_vecs = 8  max_cols = 256000  split = 32 }
kernel softmax_v256000_t1024x2  { op = softmax x = bf16 scale = 0.7  threads_per_row = 1024  reg_vecs = 2  max_cols = 256000  split = 16 }
kernel softmax_v256000_t512x6   { op = softmax x = bf16 scale = 0.7  threads_per_row = 512  reg_vecs = 6  max_cols = 256000  split = 11 }
kernel softmax_v256000_looped   { op = softmax x = bf16 scale = 0.7  max_cols = 256000  split = 1 }
