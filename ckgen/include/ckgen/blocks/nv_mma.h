// ckgen/blocks/nv_mma.h: thin wrappers over the PTX instructions of ckgen's NVIDIA bodies (sm_80 and later).
//
//   cp_async16(dst, src, src_bytes)  cp.async.cg 16 bytes global -> shared; bytes past src_bytes are
//                                    zero-filled (src_bytes = 0 reads nothing), commit / wait_group
//   ldmatrix_x4(_trans)              four 8x8 b16 matrices from shared memory, one row address per lane
//   mma_m16n8k16_f32_f16 / _bf16     mma.sync.aligned.m16n8k16.row.col, f32 accumulators
//   mma_m16n8k32_s32_s8              mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32
//   mma_m16n8k8_f32_tf32             mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
//   mma_m16n8k32_f32_e4m3 / _e5m2    mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 (OCP fp8, sm_89+)
//
// Register layout shared by all four instructions (PTX ISA, "Matrix Fragments for mma.m16n8k*"),
// with g = lane / 4 and t = lane % 4 and every operand viewed as bytes: the instruction's K extent is
// 32 bytes (16 f16/bf16, 32 i8, 8 tf32).
//   A (16 x 32 bytes): reg 0: row g,   bytes 4t..4t+3;   reg 1: row g+8, same bytes;
//                      reg 2: row g,   bytes 16+4t..;    reg 3: row g+8, bytes 16+4t..
//   B (32 bytes x 8):  reg 0: col g,   bytes 4t..4t+3 of K; reg 1: col g, bytes 16+4t.. of K
//   C (16 x 8, 32-bit): reg 0,1: row g, cols 2t, 2t+1;  reg 2,3: row g+8, cols 2t, 2t+1
// So one ldmatrix.x4 of a K-contiguous A tile (16 rows x 32 bytes) yields the A fragment for every
// element width, and ldmatrix .trans does the same for 16-bit MN-contiguous tiles.
//
// On the CPU emulator (CKGEN_PLATFORM_EMU, warps of 32: CKGEN_EMU_WAVE_SIZE=32) the same names come from
// ckgen/emu/nv.h, so that the mma.sync bodies run there too.
#pragma once

#if defined(CKGEN_PLATFORM_EMU)
#include "ckgen/emu/nv.h"
#else
#include "ckgen/platform_cuda.h"

namespace ckgen {
namespace nv {

CKGEN_DEVICE uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

CKGEN_DEVICE void cp_async16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
// 4 bytes (cp.async.ca: the L1 keeps the line for a neighbour's copy).
CKGEN_DEVICE void cp_async4(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src));
}
// Copies src_bytes (0..16) and zero-fills the rest of the 16 bytes.
CKGEN_DEVICE void cp_async16_zfill(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
CKGEN_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
CKGEN_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

CKGEN_DEVICE void st_shared_v4(uint32_t dst, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(a), "r"(b), "r"(c), "r"(d));
}

CKGEN_DEVICE void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
CKGEN_DEVICE void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// Round an f32 to tf32 (nearest, ties away), as the tf32 mma expects its operands.
CKGEN_DEVICE uint32_t to_tf32(uint32_t f32_bits) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(f32_bits)));
  return r;
}

// One mma.sync wrapper: d = a.b + c with 4 A, 2 B and 4 C/D registers (the layout above). PTX: the
// instruction after "mma.sync.aligned."; DC: the asm constraint of the C/D registers ("f" f32, "r" s32).
#define CKGEN_NV_MMA_SYNC(NAME, CD, PTX, DC)                                                                   \
  CKGEN_DEVICE CD NAME(u32x4_t a, u32x2_t b, CD c) {                                                         \
    CD d;                                                                                                    \
    asm("mma.sync.aligned." PTX " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"                \
        : "=" DC(d.r[0]), "=" DC(d.r[1]), "=" DC(d.r[2]), "=" DC(d.r[3])                                     \
        : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]), DC(c.r[0]), DC(c.r[1]), \
          DC(c.r[2]), DC(c.r[3]));                                                                           \
    return d;                                                                                                \
  }

CKGEN_NV_MMA_SYNC(mma_m16n8k16_f32_f16, f32x4_t, "m16n8k16.row.col.f32.f16.f16.f32", "f")
CKGEN_NV_MMA_SYNC(mma_m16n8k16_f32_bf16, f32x4_t, "m16n8k16.row.col.f32.bf16.bf16.f32", "f")
CKGEN_NV_MMA_SYNC(mma_m16n8k32_s32_s8, i32x4_t, "m16n8k32.row.col.s32.s8.s8.s32", "r")
CKGEN_NV_MMA_SYNC(mma_m16n8k8_f32_tf32, f32x4_t, "m16n8k8.row.col.f32.tf32.tf32.f32", "f")
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
CKGEN_NV_MMA_SYNC(mma_m16n8k32_f32_e4m3, f32x4_t, "m16n8k32.row.col.f32.e4m3.e4m3.f32", "f")
CKGEN_NV_MMA_SYNC(mma_m16n8k32_f32_e5m2, f32x4_t, "m16n8k32.row.col.f32.e5m2.e5m2.f32", "f")
#endif
#undef CKGEN_NV_MMA_SYNC

}  // namespace nv
}  // namespace ckgen
#endif  // CKGEN_PLATFORM_EMU
