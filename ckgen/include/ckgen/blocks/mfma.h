// ckgen/blocks/mfma.h: the register layout of AMD's single-block wave64 matrix instructions (MFMA), the
// block every MFMA-based op body (GEMM, attention) uses to map matrix elements to lanes and items.
#pragma once

#include "ckgen/types.h"

namespace ckgen {

// Register layout of one single-block wave64 matrix instruction kM x kN x kK (AMD CDNA1-4, dense).
// kG = 4 for 32-bit accumulators (f32, i32), 1 for f64 accumulators. Checked against AMD's matrix
// instruction calculator data (shared/reference/mfma_layouts.json) by tests/include/test_layouts.py.
//   A(i, k): lane i + kM * (k / kAItems), item k % kAItems            kAItems = kM * kK / 64
//   B(k, j): lane j + kN * (k / kBItems), item k % kBItems            kBItems = kN * kK / 64
//   C(i, j) = item r of lane l:  i = (r / kG) * kG * (64 / kN) + kG * (l / kN) + r % kG,  j = l % kN
template <int kM, int kN, int kK, int kG>
struct MfmaLayout {
  static constexpr int kAItems = kM * kK / 64;
  static constexpr int kBItems = kN * kK / 64;
  static constexpr int kCItems = kM * kN / 64;
  // forward maps: element -> lane / item
  static constexpr CKGEN_HD int a_lane(int i, int k) { return i + kM * (k / kAItems); }
  static constexpr CKGEN_HD int a_item(int, int k) { return k % kAItems; }
  static constexpr CKGEN_HD int b_lane(int k, int j) { return j + kN * (k / kBItems); }
  static constexpr CKGEN_HD int b_item(int k, int) { return k % kBItems; }
  // inverse maps: lane -> the row (col) and first k of its A (B) items (items run k0, k0+1, ...)
  static constexpr CKGEN_HD int a_row(int lane) { return lane % kM; }
  static constexpr CKGEN_HD int a_k0(int lane) { return (lane / kM) * kAItems; }
  static constexpr CKGEN_HD int b_col(int lane) { return lane % kN; }
  static constexpr CKGEN_HD int b_k0(int lane) { return (lane / kN) * kBItems; }
  // C/D item r of a lane
  static constexpr CKGEN_HD int c_row(int r, int lane) { return (r / kG) * kG * (64 / kN) + kG * (lane / kN) + r % kG; }
  static constexpr CKGEN_HD int c_col(int, int lane) { return lane % kN; }
};

// Keeps x in accumulation registers (AGPRs) at this point on AMD (elsewhere nothing): an empty asm whose
// operand must live in AGPRs. LLVM selects the VGPR form of the MFMA builtins unless the function uses AGPRs
// itself; when the accumulators and the rest of the body do not fit in the 256 arch VGPRs of a lane, its
// later rewrite to the AGPR form leaves copies and spills behind (gfx942, 2x2 waves of 32x32 instructions:
// 256x256 tiles, 256 accumulators, spilled 48 VGPRs with clang-22 and 402 with clang-19; 320x192 tiles, 240
// accumulators, 48 to 289 with clang-22). Pinning the accumulators before and after the K loop makes every
// MFMA of the loop take the AGPR form and the epilogue read them (v_accvgpr_read) as it stores them.
template <class T>
CKGEN_HD void pin_agpr(T& x) {
#if defined(__AMDGCN__)
  __asm__ volatile("" : "+a"(x));
#else
  (void)x;
#endif
}

}  // namespace ckgen
