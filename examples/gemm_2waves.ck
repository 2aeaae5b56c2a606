// Two double-buffered 16-bit tiles that keep two waves on every SIMD of an MI300X (gfx942).
// The LDS tiles are unpadded and XOR-swizzled (docs/dsl.md, "LDS layout"), so a tile takes exactly
// buffers x (tile M + tile N) x tile K x 2 bytes.
target gfx942, gfx90a

// 32 KiB of LDS: two workgroups of 4 waves per CU -> 2 waves per SIMD.
kernel gemm_bf16_128x128 {
  A = bf16 row
  B = bf16 col
  C = bf16 row
  tile = 128x128x32
  waves = 2x2
  lds_buffers = 2
}

// 48 KiB of LDS: one workgroup of 8 waves per CU -> 2 waves per SIMD.
kernel gemm_f16_256x128 {
  A = f16 row
  B = f16 col
  C = f16 row
  tile = 256x128x32
  waves = 2x4
  lds_buffers = 2
  epilogue = bias(col) -> relu
}
