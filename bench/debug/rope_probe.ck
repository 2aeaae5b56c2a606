// bench/debug/rope_probe.py's kernels: the Llama-3-8B qkv projection's Hopper tile, plain and with the rotary
// epilogue
target sm_90
kernel rp_plain { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4 }
kernel rp_rope { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4
                 rope = gptj(128) }
