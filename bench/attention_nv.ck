// Attention forward kernels for bench/attention.py (sm_90, bf16): a few candidate configurations per head dim
// and mask; the benchmark checks each against float64 / SDPA and the fastest correct one counts per case.
// Names: bf16_d<D>_<mask>_m<queries>w<warps>n<keys per tile>s<cp.async stages><q: Q in shared memory | r: Q in
// registers>[_1b: one barrier per K/V tile].
// The first of each group is what the planner chooses when nothing is written (ckgen/ops/attention/configs.py).
target sm_90

kernel bf16_d128_none_m128w4n64s2q { op = attention  dtype = bf16  head_dim = 128  mask = none
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = false }
kernel bf16_d128_none_m128w8n128s2r { op = attention  dtype = bf16  head_dim = 128  mask = none
  tile = 128x128  waves = 8  lds_buffers = 2  q_in_regs = true }
kernel bf16_d128_none_m64w4n64s2r { op = attention  dtype = bf16  head_dim = 128  mask = none
  tile = 64x64  waves = 4  lds_buffers = 2  q_in_regs = true }

kernel bf16_d128_causal_m128w4n64s2q { op = attention  dtype = bf16  head_dim = 128  mask = causal
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = false }
kernel bf16_d128_causal_m128w8n128s2r { op = attention  dtype = bf16  head_dim = 128  mask = causal
  tile = 128x128  waves = 8  lds_buffers = 2  q_in_regs = true }
kernel bf16_d128_causal_m64w4n64s2r { op = attention  dtype = bf16  head_dim = 128  mask = causal
  tile = 64x64  waves = 4  lds_buffers = 2  q_in_regs = true }

kernel bf16_d64_none_m128w4n64s2r { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = true }
kernel bf16_d64_none_m64w4n128s2r { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 64x128  waves = 4  lds_buffers = 2  q_in_regs = true }
kernel bf16_d64_none_m128w4n64s2q { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = false }

kernel bf16_d64_causal_m128w4n64s2r { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = true }
kernel bf16_d64_causal_m64w4n128s2r { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 64x128  waves = 4  lds_buffers = 2  q_in_regs = true }
kernel bf16_d64_causal_m128w4n64s2q { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = false }

// One barrier per K/V tile (kv_barriers = 1) on the measured-best d64 shapes (the d128 one spills 120 bytes at
// 255 registers, so it is not offered)
kernel bf16_d64_none_m128w4n64s2r_1b { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = true  kv_barriers = 1 }
kernel bf16_d64_causal_m128w4n64s2r_1b { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 128x64  waves = 4  lds_buffers = 2  q_in_regs = true  kv_barriers = 1 }
kernel bf16_d64_none_m64w4n128s2r_1b { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 64x128  waves = 4  lds_buffers = 2  q_in_regs = true  kv_barriers = 1 }
kernel bf16_d64_causal_m64w4n128s2r_1b { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 64x128  waves = 4  lds_buffers = 2  q_in_regs = true  kv_barriers = 1 }

// d64 with three cp.async stages (64 KiB of shared memory: still two blocks per SM at 242 registers)
kernel bf16_d64_none_m128w4n64s3r { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 128x64  waves = 4  lds_buffers = 3  q_in_regs = true }
kernel bf16_d64_causal_m128w4n64s3r { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 128x64  waves = 4  lds_buffers = 3  q_in_regs = true }

// d64 with FlashAttention-2's d64 shape: 128 queries x 128 keys, 4 warps, Q in shared memory (255 registers)
kernel bf16_d64_none_m128w4n128s2q { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 128x128  waves = 4  lds_buffers = 2  q_in_regs = false }
kernel bf16_d64_causal_m128w4n128s2q { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 128x128  waves = 4  lds_buffers = 2  q_in_regs = false }
kernel bf16_d64_none_m128w4n128s2q_1b { op = attention  dtype = bf16  head_dim = 64  mask = none
  tile = 128x128  waves = 4  lds_buffers = 2  q_in_regs = false  kv_barriers = 1 }
kernel bf16_d64_causal_m128w4n128s2q_1b { op = attention  dtype = bf16  head_dim = 64  mask = causal
  tile = 128x128  waves = 4  lds_buffers = 2  q_in_regs = false  kv_barriers = 1 }
