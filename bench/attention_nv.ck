// Attention forward kernels for bench/attention.py (sm_90, bf16): a few candidate configurations per head dim
// and mask; the benchmark checks each against float64 / SDPA and the fastest correct one counts per case.
// Names: bf16_d<D>_<mask>_m<queries>w<warps>n<keys per tile>s<cp.async stages><q: Q in shared memory | r: Q in
// registers>[_1b: one barrier per K/V tile] for the mma.sync body (body = mma_sync), bf16_d<D>_<mask>_wg<queries>x
// <keys per tile>s<stages>[p: persistent grid | t: a block per query tile, where that is not the planned grid] for the
// Hopper body (TMA + wgmma, attention_fwd_sm90.h; its host entry falls back to the planned mma.sync body only for
// operands it cannot take, which the benchmark's shapes are not).
// The first of each group is what the planner chooses when nothing is written (ckgen/ops/attention/configs.py):
// on sm_90 the Hopper body (WGMMA_TABLE), with the first mma.sync kernel of the group as its fallback.
target sm_90

// ---- the Hopper body
kernel bf16_d128_none_wg128x128s2 { op = attention  dtype = bf16  head_dim = 128  mask = none }
kernel bf16_d128_none_wg128x64s4 { op = attention  dtype = bf16  head_dim = 128  mask = none
  wgmma_tile = 128x64  wgmma_stages = 4 }
kernel bf16_d128_causal_wg128x128s2 { op = attention  dtype = bf16  head_dim = 128  mask = causal }
kernel bf16_d128_causal_wg128x64s4 { op = attention  dtype = bf16  head_dim = 128  mask = causal
  wgmma_tile = 128x64  wgmma_stages = 4 }
kernel bf16_d64_none_wg192x128s2 { op = attention  dtype = bf16  head_dim = 64  mask = none }
kernel bf16_d64_none_wg128x128s3 { op = attention  dtype = bf16  head_dim = 64  mask = none
  wgmma_tile = 128x128  wgmma_stages = 3 }
kernel bf16_d64_none_wg192x64s3 { op = attention  dtype = bf16  head_dim = 64  mask = none
  wgmma_tile = 192x64  wgmma_stages = 3 }
kernel bf16_d64_causal_wg192x128s2 { op = attention  dtype = bf16  head_dim = 64  mask = causal }
kernel bf16_d64_causal_wg128x128s3 { op = attention  dtype = bf16  head_dim = 64  mask = causal
  wgmma_tile = 128x128  wgmma_stages = 3 }
kernel bf16_d64_causal_wg192x64s3 { op = attention  dtype = bf16  head_dim = 64  mask = causal
  wgmma_tile = 192x64  wgmma_stages = 3 }
kernel bf16_d256_none_wg128x64s2 { op = attention  dtype = bf16  head_dim = 256  mask = none }
kernel bf16_d256_causal_wg128x64s2 { op = attention  dtype = bf16  head_dim = 256  mask = causal }
// the other grid of each head dim's planned Hopper kernels (wgmma_grid: persistent for d128 and d256, tiles for d64)
kernel bf16_d128_none_wg128x128s2t { op = attention  dtype = bf16  head_dim = 128  mask = none  wgmma_grid = tiles }
kernel bf16_d128_causal_wg128x128s2t { op = attention  dtype = bf16  head_dim = 128  mask = causal
  wgmma_grid = tiles }
kernel bf16_d64_none_wg192x128s2p { op = attention  dtype = bf16  head_dim = 64  mask = none
  wgmma_grid = persistent }
kernel bf16_d64_causal_wg192x128s2p { op = attention  dtype = bf16  head_dim = 64  mask = causal
  wgmma_grid = persistent }
kernel bf16_d64_causal_wg128x128s3p { op = attention  dtype = bf16  head_dim = 64  mask = causal
  wgmma_tile = 128x128  wgmma_stages = 3  wgmma_grid = persistent }
kernel bf16_d256_none_wg128x64s2t { op = attention  dtype = bf16  head_dim = 256  mask = none  wgmma_grid = tiles }
kernel bf16_d256_causal_wg128x64s2t { op = attention  dtype = bf16  head_dim = 256  mask = causal
  wgmma_grid = tiles }

// ---- the mma.sync body

kernel bf16_d256_none_m128w8n32s1q { op = attention  dtype = bf16  head_dim = 256  mask = none  body = mma_sync }
kernel bf16_d256_causal_m128w8n32s1q { op = attention  dtype = bf16  head_dim = 256  mask = causal  body = mma_sync }

kernel bf16_d128_none_m128w4n64s2q { op = attention  dtype = bf16  head_dim = 128  mask = none
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = false  body = mma_sync }
kernel bf16_d128_none_m128w8n128s2r { op = attention  dtype = bf16  head_dim = 128  mask = none
  tile = 128x128  waves = 8  lds_buffers = 2  q_in_regs = true  body = mma_sync }
kernel bf16_d128_none_m64w4n64s2r { op = attention  dtype = bf16  head_dim = 128  mask = none
  tile = 64x64  waves = 4  lds_buffers = 2  q_in_regs = true  body = mma_sync }

kernel bf16_d128_causal_m128w4n64s2q { op = attention  dtype = bf16  head_dim = 128  mask = causal
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = false  body = mma_sync }
kernel bf16_d128_causal_m128w8n128s2r { op = attention  dtype = bf16  head_dim = 128  mask = causal
  tile = 128x128  waves = 8  lds_buffers = 2  q_in_regs = true  body = mma_sync }
kernel bf16_d128_causal_m64w4n64s2r { op = attention  dtype = bf16  head_dim = 128  mask = causal
  tile = 64x64  waves = 4  lds_buffers = 2  q_in_regs = true  body = mma_sync }

kernel bf16_d64_none_m128w4n64s2r { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = true  body = mma_sync }
kernel bf16_d64_none_m64w4n128s2r { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 64x128  waves = 4  lds_buffers = 2  q_in_regs = true  body = mma_sync }
kernel bf16_d64_none_m128w4n64s2q { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = false  body = mma_sync }

kernel bf16_d64_causal_m128w4n64s2r { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = true  body = mma_sync }
kernel bf16_d64_causal_m64w4n128s2r { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 64x128  waves = 4  lds_buffers = 2  q_in_regs = true  body = mma_sync }
kernel bf16_d64_causal_m128w4n64s2q { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = false  body = mma_sync }

// One barrier per K/V tile (kv_barriers = 1) on the measured-best d64 shapes (the d128 one spills 120 bytes at
// 255 registers, so it is not offered)
kernel bf16_d64_none_m128w4n64s2r_1b { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = true  kv_barriers = 1  body = mma_sync }
kernel bf16_d64_causal_m128w4n64s2r_1b { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = true  kv_barriers = 1  body = mma_sync }
kernel bf16_d64_none_m64w4n128s2r_1b { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 64x128  waves = 4  lds_buffers = 2  q_in_regs = true  kv_barriers = 1  body = mma_sync }
kernel bf16_d64_causal_m64w4n128s2r_1b { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 64x128  waves = 4  lds_buffers = 2  q_in_regs = true  kv_barriers = 1  body = mma_sync }

// d64 with three cp.async stages (64 KiB of shared memory: still two blocks per SM at 242 registers)
kernel bf16_d64_none_m128w4n64s3r { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 128x64  waves = 4  lds_buffers = 3  q_in_regs = true  body = mma_sync }
kernel bf16_d64_causal_m128w4n64s3r { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 128x64  waves = 4  lds_buffers = 3  q_in_regs = true  body = mma_sync }

// d64 with FlashAttention-2's d64 shape: 128 queries x 128 keys, 4 warps, Q in shared memory (255 registers)
kernel bf16_d64_none_m128w4n128s2q { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 128x128  waves = 4  lds_buffers = 2  q_in_regs = false  body = mma_sync }
kernel bf16_d64_causal_m128w4n128s2q { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 128x128  waves = 4  lds_buffers = 2  q_in_regs = false  body = mma_sync }
kernel bf16_d64_none_m128w4n128s2q_1b { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 128x128  waves = 4  lds_buffers = 2  q_in_regs = false  kv_barriers = 1  body = mma_sync }
kernel bf16_d64_causal_m128w4n128s2q_1b { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 128x128  waves = 4  lds_buffers = 2  q_in_regs = false  kv_barriers = 1  body = mma_sync }
