// Decode kernels for bench/decode.py (op = attention_decode, sm_90, bf16, one query token per sequence): a few
// candidate configurations per head dim and K/V layout; the benchmark checks each against float64 / SDPA and the
// fastest correct one counts per case. Names: dec_bf16_d<D>[_p<page>]_m<rows>w<warps>n<keys per tile>s<cp.async
// stages>[k: warp_split = keys, the warps share the rows and split each tile's keys]. The first of each group is
// what the planner chooses when nothing is written (ckgen/ops/attention/decode.py: 32 packed rows, 2 warps, 64-key
// tiles, 2 stages, Q in registers; d256: Q in shared memory, 32-key tiles).
target sm_90

// ---- contiguous K/V [batch, seqlen_k, heads_kv, d]
kernel dec_bf16_d128_m32w2n64s2 { op = attention_decode  dtype = bf16  head_dim = 128 }
kernel dec_bf16_d128_m16w1n64s2 { op = attention_decode  dtype = bf16  head_dim = 128  tile = 16x64  waves = 1 }
kernel dec_bf16_d128_m32w2n64s3 { op = attention_decode  dtype = bf16  head_dim = 128  lds_buffers = 3 }
kernel dec_bf16_d128_m64w4n64s2 { op = attention_decode  dtype = bf16  head_dim = 128  tile = 64x64  waves = 4 }
kernel dec_bf16_d128_m32w2n32s4 { op = attention_decode  dtype = bf16  head_dim = 128  tile = 32x32  waves = 2
  lds_buffers = 4 }
// warp_split = keys: the 4 warps share 16 rows, each 16 (n128: 32) keys of every tile (batch-1 GQA: 4 real rows)
kernel dec_bf16_d128_m16w4n64s2k { op = attention_decode  dtype = bf16  head_dim = 128  warp_split = keys }
kernel dec_bf16_d128_m16w4n64s3k { op = attention_decode  dtype = bf16  head_dim = 128  warp_split = keys
  lds_buffers = 3 }
kernel dec_bf16_d128_m16w4n128s2k { op = attention_decode  dtype = bf16  head_dim = 128  warp_split = keys
  tile = 16x128  waves = 4 }
// ... at 32 rows: every warp both m16 blocks against its 16 keys (MQA 32/1 or GQA 8 x 4 tokens: a KV head's 32
// packed rows read each K/V tile once; ptxas sm_90: 255 registers, no spill)
kernel dec_bf16_d128_m32w4n64s2k { op = attention_decode  dtype = bf16  head_dim = 128  warp_split = keys
  tile = 32x64  waves = 4 }
kernel dec_bf16_d64_m32w2n64s2 { op = attention_decode  dtype = bf16  head_dim = 64 }
kernel dec_bf16_d64_m32w2n64s4 { op = attention_decode  dtype = bf16  head_dim = 64  lds_buffers = 4 }
kernel dec_bf16_d256_m32w2n32s2 { op = attention_decode  dtype = bf16  head_dim = 256 }
kernel dec_bf16_d256_m16w1n32s3 { op = attention_decode  dtype = bf16  head_dim = 256  tile = 16x32  waves = 1
  lds_buffers = 3 }
kernel dec_bf16_d256_m16w2n32s2k { op = attention_decode  dtype = bf16  head_dim = 256  warp_split = keys }
// d64 with the key split (GQA's few rows per KV head: a 16-row tile, each warp 16 or 32 keys of every tile)
kernel dec_bf16_d64_m16w4n64s2k { op = attention_decode  dtype = bf16  head_dim = 64  warp_split = keys
  tile = 16x64  waves = 4 }
kernel dec_bf16_d64_m16w4n128s2k { op = attention_decode  dtype = bf16  head_dim = 64  warp_split = keys
  tile = 16x128  waves = 4 }

// ---- paged K/V [num_pages, 16, heads_kv, d] with a block table (64-key tiles over 4 pages)
kernel dec_bf16_d128_p16_m32w2n64s2 { op = attention_decode  dtype = bf16  head_dim = 128  page_size = 16 }
kernel dec_bf16_d128_p16_m16w1n64s2 { op = attention_decode  dtype = bf16  head_dim = 128  page_size = 16
  tile = 16x64  waves = 1 }
kernel dec_bf16_d128_p16_m32w2n64s3 { op = attention_decode  dtype = bf16  head_dim = 128  page_size = 16
  lds_buffers = 3 }
kernel dec_bf16_d128_p16_m16w4n64s2k { op = attention_decode  dtype = bf16  head_dim = 128  page_size = 16
  warp_split = keys }
kernel dec_bf16_d128_p16_m16w4n64s3k { op = attention_decode  dtype = bf16  head_dim = 128  page_size = 16
  warp_split = keys  lds_buffers = 3 }
// 32 rows over a paged cache: Q planned in shared memory (with it in registers ptxas spills 40/68 bytes; 253, none)
kernel dec_bf16_d128_p16_m32w4n64s2k { op = attention_decode  dtype = bf16  head_dim = 128  page_size = 16
  warp_split = keys  tile = 32x64  waves = 4 }
kernel dec_bf16_d64_p16_m32w2n64s2 { op = attention_decode  dtype = bf16  head_dim = 64  page_size = 16 }
kernel dec_bf16_d256_p16_m32w2n32s2 { op = attention_decode  dtype = bf16  head_dim = 256  page_size = 16 }
kernel dec_bf16_d64_p16_m16w4n64s2k { op = attention_decode  dtype = bf16  head_dim = 64  page_size = 16
  warp_split = keys  tile = 16x64  waves = 4 }
kernel dec_bf16_d256_p16_m16w2n32s2k { op = attention_decode  dtype = bf16  head_dim = 256  page_size = 16
  warp_split = keys }

// ---- chunked prefill (causal, bottom-right: a chunk of queries at the end of longer keys; --prefill)
kernel pre_bf16_d128_causal_m64w4n64s2 { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal
  tile = 64x64  waves = 4 }
kernel pre_bf16_d128_causal_m128w8n64s2 { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal
  tile = 128x64  waves = 8 }
// two m16 blocks per warp (each K / V fragment read from shared memory feeds both), Q re-read from shared memory:
// the shape of the attention op's mma.sync prefill tile (m128w4n64s2q); paged, 64-key tiles spill (44 bytes at
// pages of 16), 32-key ones do not (251 registers)
kernel pre_bf16_d128_causal_m128w4n64s2q { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal
  tile = 128x64  waves = 4  q_in_regs = false }
kernel pre_bf16_d128_causal_p16_m128w4n32s2q { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal
  page_size = 16  tile = 128x32  waves = 4  q_in_regs = false }
kernel pre_bf16_d128_causal_p16_m64w4n64s2 { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal
  page_size = 16  tile = 64x64  waves = 4 }
// the Hopper prefill entry (body = wgmma: the attention op's TMA + wgmma body on the cache, attention_decode_sm90.h),
// which the host entry runs for these chunks (one split, no seqlens_q); the decode body (64x64) for other calls
kernel pre_bf16_d128_causal_wg128x128 { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal
  tile = 64x64  waves = 4  body = wgmma }
kernel pre_bf16_d128_causal_p16_wg128x128 { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal
  page_size = 16  tile = 64x64  waves = 4  body = wgmma }
kernel pre_bf16_d128_causal_p16_wg128x64s4 { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal
  page_size = 16  tile = 64x64  waves = 4  body = wgmma  wgmma_tile = 128x64  wgmma_stages = 4 }
