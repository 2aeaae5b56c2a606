// ckgen/emu/mfma.h: the AMD MFMA builtins as wave-collective host functions.
//
// Every __builtin_amdgcn_mfma_* of the targets table (ckgen/targets/amd.py) is defined here with the
// clang builtin's name and operand types. Each lane deposits its A, B and C registers; the last lane of
// the wave computes D = A.B + C for every block and hands each lane its D registers.
//
// Register layout (the ISA's, as closed forms; wave64; item t of a lane is element t of its operand
// vector, i.e. registers in order, low half / low byte first):
//   ipa = m*k*blocks/64 items of A per lane, ipb = n*k*blocks/64 of B, ipc = m*n*blocks/64 of C/D.
//   A[i][k] of block b:  lane = i + m * (b + blocks * (k / ipa)),  item = k % ipa
//   B[k][j] of block b:  lane = j + n * (b + blocks * (k / ipb)),  item = k % ipb
//   C[i][j] of block b:  lane l = j + n * g (g = l / n, G = 64 / n lane groups), item t:
//     32-bit accumulators (f32, i32): p = g + G * (t / 4), i = 4 * (p % (m/4)) + t % 4, b = p / (m/4)
//     64-bit accumulators (f64):      p = g + G * t,       i = p / blocks,               b = p % blocks
// tests/runtime/test_emu_mfma.py checks these for every (arch, instruction) against AMD's calculator
// data (shared/reference/mfma_layouts.json).
//
// Arithmetic: f16/bf16/fp8/bf8 products are exact in f32 and are accumulated in f32, k in order,
// starting from C (one rounding per addition); f32 and f64 use fused multiply-add in k order; i8
// accumulates in i32 with wrap-around. xf32 inputs are first rounded to 10 explicit mantissa bits
// (a TF32-like model: an assumption, not checked against hardware). fp8/bf8 decode as FNUZ (e4m3fnuz /
// e5m2fnuz, gfx942) unless CKGEN_EMU_FP8_OCP is defined (e4m3fn / e5m2, gfx950).
// The cbsz/abid/blgp broadcast modifiers are not emulated: a non-zero value is a fault.
//
// Arch: with CKGEN_EMU_ARCH_RESTRICT defined, only builtins with CKGEN_EMU_HAS_<name minus
// __builtin_amdgcn_> defined exist, so a kernel using an instruction its arch lacks fails to compile,
// as it would for the real target. The emu backend passes these from the targets table.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ckgen/blocks/fp8.h"
#include "ckgen/blocks/mx_quant.h"
#include "ckgen/emu/runtime.h"

namespace ckgen {
namespace emu __attribute__((visibility("hidden"))) {
namespace mfma {

typedef float f32x2 __attribute__((ext_vector_type(2)));
typedef float f32x4 __attribute__((ext_vector_type(4)));
typedef float f32x16 __attribute__((ext_vector_type(16)));
typedef float f32x32 __attribute__((ext_vector_type(32)));
typedef double f64x4 __attribute__((ext_vector_type(4)));
typedef int i32x4 __attribute__((ext_vector_type(4)));
typedef int i32x16 __attribute__((ext_vector_type(16)));
typedef int i32x32 __attribute__((ext_vector_type(32)));
typedef short i16x2 __attribute__((ext_vector_type(2)));
typedef short i16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 f16x8 __attribute__((ext_vector_type(8)));
typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));


// Operand types by the names the definitions below use (T_<name>).
typedef float T_float;
typedef int T_int;
typedef long T_long;
typedef double T_double;
typedef f32x2 T_f32x2;
typedef f32x4 T_f32x4;
typedef f32x16 T_f32x16;
typedef f32x32 T_f32x32;
typedef f64x4 T_f64x4;
typedef i32x4 T_i32x4;
typedef i32x16 T_i32x16;
typedef i32x32 T_i32x32;
typedef i16x2 T_i16x2;
typedef i16x4 T_i16x4;
typedef f16x4 T_f16x4;
typedef f16x8 T_f16x8;
typedef bf16x8 T_bf16x8;

enum El { kF32, kXF32, kF16, kBF16, kI8, kF64, kFP8, kBF8 };

constexpr int el_bytes(int e) {
  return e == kF64 ? 8 : (e == kF32 || e == kXF32) ? 4 : (e == kF16 || e == kBF16) ? 2 : 1;
}

// The emulated chip's fp8 operands: the target's encoding (ckgen/blocks/fp8.h has the exact decode).
inline double fp8_decode(uint8_t v, bool bf8) {
#if defined(CKGEN_EMU_FP8_OCP)
  return bf8 ? fp8_to_float(fp8_from_bits<fp8_e5m2>(v)) : fp8_to_float(fp8_from_bits<fp8_e4m3fn>(v));
#else
  return bf8 ? fp8_to_float(fp8_from_bits<fp8_e5m2fnuz>(v)) : fp8_to_float(fp8_from_bits<fp8_e4m3fnuz>(v));
#endif
}

inline float xf32_round(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) {  // finite: round to nearest even at 10 mantissa bits
    u += 0xfffu + ((u >> 13) & 1u);
    u &= ~0x1fffu;
  }
  memcpy(&x, &u, 4);
  return x;
}

template <int E>
inline double decode(const unsigned char* p) {
  if constexpr (E == kF32) {
    float f;
    memcpy(&f, p, 4);
    return f;
  } else if constexpr (E == kXF32) {
    float f;
    memcpy(&f, p, 4);
    return xf32_round(f);
  } else if constexpr (E == kF16) {
    _Float16 h;
    memcpy(&h, p, 2);
    return static_cast<double>(h);
  } else if constexpr (E == kBF16) {
    uint16_t b;
    memcpy(&b, p, 2);
    uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  } else if constexpr (E == kI8) {
    return static_cast<double>(static_cast<int8_t>(*p));
  } else if constexpr (E == kF64) {
    double d;
    memcpy(&d, p, 8);
    return d;
  } else {
    return fp8_decode(*p, E == kBF8);
  }
}

// Compute D for the whole wave from the deposited slots: lane l's slot holds A, B, C in that order.
template <int M, int N, int K, int B, int EA, int EB, class Acc, size_t SA, size_t SB, size_t SC>
inline void compute(Wave& wv) {
  constexpr int W = 64;
  constexpr int ipa = M * K * B / W, ipb = N * K * B / W, ipc = M * N * B / W;
  static_assert(ipa * W == M * K * B && ipb * W == N * K * B && ipc * W == M * N * B, "mfma: shape");
  static_assert(SA == static_cast<size_t>(ipa * el_bytes(EA)), "mfma: A operand size does not match the shape");
  static_assert(SB == static_cast<size_t>(ipb * el_bytes(EB)), "mfma: B operand size does not match the shape");
  static_assert(SC == ipc * sizeof(Acc), "mfma: C operand size does not match the shape");
  static_assert(ipa <= 16 && ipb <= 16, "mfma: workspace");
  double* a = wv.ws_a;
  double* b = wv.ws_b;
  for (int l = 0; l < W; ++l) {
    for (int t = 0; t < ipa; ++t) a[l * ipa + t] = decode<EA>(wv.in[l] + t * el_bytes(EA));
    for (int t = 0; t < ipb; ++t) b[l * ipb + t] = decode<EB>(wv.in[l] + SA + t * el_bytes(EB));
  }
  constexpr bool kF64Acc = sizeof(Acc) == 8;
  constexpr int G = W / N;
  for (int l = 0; l < W; ++l) {
    const int j = l % N, g = l / N;
    for (int t = 0; t < ipc; ++t) {
      int i, blk;
      if constexpr (kF64Acc) {
        const int p = g + G * t;
        i = p / B;
        blk = p % B;
      } else {
        const int p = g + G * (t / 4);
        i = 4 * (p % (M / 4)) + t % 4;
        blk = p / (M / 4);
      }
      Acc acc;
      memcpy(&acc, wv.in[l] + SA + SB + t * sizeof(Acc), sizeof(Acc));
      for (int k = 0; k < K; ++k) {
        const double av = a[(i + M * (blk + B * (k / ipa))) * ipa + k % ipa];
        const double bv = b[(j + N * (blk + B * (k / ipb))) * ipb + k % ipb];
        if constexpr (sizeof(Acc) == 8) {
          acc = fma(av, bv, acc);
        } else if constexpr (static_cast<Acc>(0.5) == 0) {  // integer accumulator: wrap around
          acc = static_cast<Acc>(static_cast<uint32_t>(acc) +
                                 static_cast<uint32_t>(static_cast<int>(av) * static_cast<int>(bv)));
        } else {
          acc = fmaf(static_cast<float>(av), static_cast<float>(bv), acc);
        }
      }
      memcpy(wv.out[l] + t * sizeof(Acc), &acc, sizeof(Acc));
    }
  }
}

template <int M, int N, int K, int B, int EA, int EB, class Acc, class AT, class BT, class CT>
inline CT run(const char* name, AT a, BT b, CT c, int cbsz, int abid, int blgp) {
  static_assert(sizeof(AT) + sizeof(BT) + sizeof(CT) <= kSlotIn && sizeof(CT) <= kSlotOut, "mfma: slot size");
  if (cbsz != 0 || abid != 0 || blgp != 0)
    fault("%s: cbsz=%d abid=%d blgp=%d: broadcast modifiers are not emulated (use 0, 0, 0)", name, cbsz, abid, blgp);
  unsigned char in[sizeof(AT) + sizeof(BT) + sizeof(CT)];
  memcpy(in, &a, sizeof(AT));
  memcpy(in + sizeof(AT), &b, sizeof(BT));
  memcpy(in + sizeof(AT) + sizeof(BT), &c, sizeof(CT));
  CT d;
  bool partial = false;
  wave_collective(name, in, sizeof in, &d, sizeof d, [&](Wave& wv, int lanes) {
    if (lanes != 64) {
      partial = true;
      return;
    }
    compute<M, N, K, B, EA, EB, Acc, sizeof(AT), sizeof(BT), sizeof(CT)>(wv);
  });
  if (partial) fault("%s: issued by a partial wave; MFMA needs all 64 lanes", name);
  return d;
}

}  // namespace mfma
}  // namespace emu
}  // namespace ckgen

#define CKGEN_EMU_MFMA(NAME, M, N, K, B, EA, EB, AT, BT, CT, ACC)                                         \
  inline ::ckgen::emu::mfma::T_##CT __builtin_amdgcn_##NAME(::ckgen::emu::mfma::T_##AT a,                   \
                                                            ::ckgen::emu::mfma::T_##BT b,                   \
                                                            ::ckgen::emu::mfma::T_##CT c, int cbsz, int abid, \
                                                            int blgp) {                                     \
    return ::ckgen::emu::mfma::run<M, N, K, B, ::ckgen::emu::mfma::EA, ::ckgen::emu::mfma::EB, ACC>(          \
        "__builtin_amdgcn_" #NAME, a, b, c, cbsz, abid, blgp);                                              \
  }

// clang-format off
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x1f32)
CKGEN_EMU_MFMA(mfma_f32_32x32x1f32, 32, 32, 1, 2, kF32, kF32, float, float, f32x32, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x1f32)
CKGEN_EMU_MFMA(mfma_f32_16x16x1f32, 16, 16, 1, 4, kF32, kF32, float, float, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_4x4x1f32)
CKGEN_EMU_MFMA(mfma_f32_4x4x1f32, 4, 4, 1, 16, kF32, kF32, float, float, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x2f32)
CKGEN_EMU_MFMA(mfma_f32_32x32x2f32, 32, 32, 2, 1, kF32, kF32, float, float, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x4f32)
CKGEN_EMU_MFMA(mfma_f32_16x16x4f32, 16, 16, 4, 1, kF32, kF32, float, float, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x4f16)
CKGEN_EMU_MFMA(mfma_f32_32x32x4f16, 32, 32, 4, 2, kF16, kF16, f16x4, f16x4, f32x32, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x4f16)
CKGEN_EMU_MFMA(mfma_f32_16x16x4f16, 16, 16, 4, 4, kF16, kF16, f16x4, f16x4, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_4x4x4f16)
CKGEN_EMU_MFMA(mfma_f32_4x4x4f16, 4, 4, 4, 16, kF16, kF16, f16x4, f16x4, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x8f16)
CKGEN_EMU_MFMA(mfma_f32_32x32x8f16, 32, 32, 8, 1, kF16, kF16, f16x4, f16x4, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x16f16)
CKGEN_EMU_MFMA(mfma_f32_16x16x16f16, 16, 16, 16, 1, kF16, kF16, f16x4, f16x4, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x16_f16)
CKGEN_EMU_MFMA(mfma_f32_32x32x16_f16, 32, 32, 16, 1, kF16, kF16, f16x8, f16x8, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x32_f16)
CKGEN_EMU_MFMA(mfma_f32_16x16x32_f16, 16, 16, 32, 1, kF16, kF16, f16x8, f16x8, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_i32_32x32x4i8)
CKGEN_EMU_MFMA(mfma_i32_32x32x4i8, 32, 32, 4, 2, kI8, kI8, int, int, i32x32, int)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_i32_16x16x4i8)
CKGEN_EMU_MFMA(mfma_i32_16x16x4i8, 16, 16, 4, 4, kI8, kI8, int, int, i32x16, int)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_i32_4x4x4i8)
CKGEN_EMU_MFMA(mfma_i32_4x4x4i8, 4, 4, 4, 16, kI8, kI8, int, int, i32x4, int)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_i32_32x32x8i8)
CKGEN_EMU_MFMA(mfma_i32_32x32x8i8, 32, 32, 8, 1, kI8, kI8, int, int, i32x16, int)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_i32_16x16x16i8)
CKGEN_EMU_MFMA(mfma_i32_16x16x16i8, 16, 16, 16, 1, kI8, kI8, int, int, i32x4, int)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_i32_32x32x16_i8)
CKGEN_EMU_MFMA(mfma_i32_32x32x16_i8, 32, 32, 16, 1, kI8, kI8, long, long, i32x16, int)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_i32_16x16x32_i8)
CKGEN_EMU_MFMA(mfma_i32_16x16x32_i8, 16, 16, 32, 1, kI8, kI8, long, long, i32x4, int)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_i32_32x32x32_i8)
CKGEN_EMU_MFMA(mfma_i32_32x32x32_i8, 32, 32, 32, 1, kI8, kI8, i32x4, i32x4, i32x16, int)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_i32_16x16x64_i8)
CKGEN_EMU_MFMA(mfma_i32_16x16x64_i8, 16, 16, 64, 1, kI8, kI8, i32x4, i32x4, i32x4, int)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x2bf16)
CKGEN_EMU_MFMA(mfma_f32_32x32x2bf16, 32, 32, 2, 2, kBF16, kBF16, i16x2, i16x2, f32x32, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x2bf16)
CKGEN_EMU_MFMA(mfma_f32_16x16x2bf16, 16, 16, 2, 4, kBF16, kBF16, i16x2, i16x2, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_4x4x2bf16)
CKGEN_EMU_MFMA(mfma_f32_4x4x2bf16, 4, 4, 2, 16, kBF16, kBF16, i16x2, i16x2, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x4bf16)
CKGEN_EMU_MFMA(mfma_f32_32x32x4bf16, 32, 32, 4, 1, kBF16, kBF16, i16x2, i16x2, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x8bf16)
CKGEN_EMU_MFMA(mfma_f32_16x16x8bf16, 16, 16, 8, 1, kBF16, kBF16, i16x2, i16x2, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x4bf16_1k)
CKGEN_EMU_MFMA(mfma_f32_32x32x4bf16_1k, 32, 32, 4, 2, kBF16, kBF16, i16x4, i16x4, f32x32, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x4bf16_1k)
CKGEN_EMU_MFMA(mfma_f32_16x16x4bf16_1k, 16, 16, 4, 4, kBF16, kBF16, i16x4, i16x4, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_4x4x4bf16_1k)
CKGEN_EMU_MFMA(mfma_f32_4x4x4bf16_1k, 4, 4, 4, 16, kBF16, kBF16, i16x4, i16x4, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x8bf16_1k)
CKGEN_EMU_MFMA(mfma_f32_32x32x8bf16_1k, 32, 32, 8, 1, kBF16, kBF16, i16x4, i16x4, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x16bf16_1k)
CKGEN_EMU_MFMA(mfma_f32_16x16x16bf16_1k, 16, 16, 16, 1, kBF16, kBF16, i16x4, i16x4, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x16_bf16)
CKGEN_EMU_MFMA(mfma_f32_32x32x16_bf16, 32, 32, 16, 1, kBF16, kBF16, bf16x8, bf16x8, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x32_bf16)
CKGEN_EMU_MFMA(mfma_f32_16x16x32_bf16, 16, 16, 32, 1, kBF16, kBF16, bf16x8, bf16x8, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f64_16x16x4f64)
CKGEN_EMU_MFMA(mfma_f64_16x16x4f64, 16, 16, 4, 1, kF64, kF64, double, double, f64x4, double)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f64_4x4x4f64)
CKGEN_EMU_MFMA(mfma_f64_4x4x4f64, 4, 4, 4, 4, kF64, kF64, double, double, double, double)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x4_xf32)
CKGEN_EMU_MFMA(mfma_f32_32x32x4_xf32, 32, 32, 4, 1, kXF32, kXF32, f32x2, f32x2, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x8_xf32)
CKGEN_EMU_MFMA(mfma_f32_16x16x8_xf32, 16, 16, 8, 1, kXF32, kXF32, f32x2, f32x2, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x16_fp8_fp8)
CKGEN_EMU_MFMA(mfma_f32_32x32x16_fp8_fp8, 32, 32, 16, 1, kFP8, kFP8, long, long, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x32_fp8_fp8)
CKGEN_EMU_MFMA(mfma_f32_16x16x32_fp8_fp8, 16, 16, 32, 1, kFP8, kFP8, long, long, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x16_fp8_bf8)
CKGEN_EMU_MFMA(mfma_f32_32x32x16_fp8_bf8, 32, 32, 16, 1, kFP8, kBF8, long, long, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x32_fp8_bf8)
CKGEN_EMU_MFMA(mfma_f32_16x16x32_fp8_bf8, 16, 16, 32, 1, kFP8, kBF8, long, long, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x16_bf8_fp8)
CKGEN_EMU_MFMA(mfma_f32_32x32x16_bf8_fp8, 32, 32, 16, 1, kBF8, kFP8, long, long, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x32_bf8_fp8)
CKGEN_EMU_MFMA(mfma_f32_16x16x32_bf8_fp8, 16, 16, 32, 1, kBF8, kFP8, long, long, f32x4, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_32x32x16_bf8_bf8)
CKGEN_EMU_MFMA(mfma_f32_32x32x16_bf8_bf8, 32, 32, 16, 1, kBF8, kBF8, long, long, f32x16, float)
#endif
#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_f32_16x16x32_bf8_bf8)
CKGEN_EMU_MFMA(mfma_f32_16x16x32_bf8_bf8, 16, 16, 32, 1, kBF8, kBF8, long, long, f32x4, float)
#endif
// clang-format on

#undef CKGEN_EMU_MFMA

// ---- gfx950's block-scaled MFMA with fp8 or fp4 operands: __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4 ----
// builtin(a, b, c, a_format, b_format, opsel_a, scale_a, opsel_b, scale_b); format 0 = e4m3fn, 1 = e5m2 (OCP fp8),
// 4 = e2m1 (OCP fp4). Both operands fp8 / bf8 or both fp4 are emulated; fp6 / bf6 (2, 3) and fp4 mixed with an
// 8-bit format (no published lane layout) fault. Layout (tests/data/mfma_scale_layouts.json, from AMD's ROCm blog
// and triton; tests/runtime/test_emu_mfma_scale.py checks this emulation against it):
//   fp8 (a lane's 32 bytes: two runs of 16 k):
//     A(i, k): lane i + 32 * ((k % 32) / 16), byte 16 * (k / 32) + k % 16
//     B(k, j): lane j + 32 * ((k % 32) / 16), byte 16 * (k / 32) + k % 16
//   fp4 (a lane's low 16 bytes hold 32 consecutive k, two per byte; its upper 16 bytes are ignored):
//     A(i, k): lane i + 32 * (k / 32), byte (k % 32) / 2, low nibble for even k, high nibble for odd k
//     B(k, j): lane j + 32 * (k / 32), byte (k % 32) / 2, the same nibble rule
//   C(i, j): as the 32x32 single-block instructions above (item r of lane l: row 8 * (r / 4) + 4 * (l / 32) + r % 4)
//   the scale of A's row i for K block kb = k / 32: byte opsel_a of lane (i + 32 * kb)'s scale_a; of B's column j:
//   byte opsel_b of lane (j + 32 * kb)'s scale_b. E8M0: 2^(e - 127); 0xFF is NaN.
// Arithmetic (a model; the hardware's internal rounding is not verified): per K block the 32 products are summed
// exactly, multiplied by both scales and added to the f32 accumulator with one rounding, block 0 then block 1.
namespace ckgen {
namespace emu __attribute__((visibility("hidden"))) {
namespace mfma {

typedef int i32x8 __attribute__((ext_vector_type(8)));

// The builtin's operand format codes that are emulated.
enum MxFormat { kMxE4M3 = 0, kMxE5M2 = 1, kMxE2M1 = 4 };

inline double mx_fp8_decode(uint8_t v, int format) {
  return format == kMxE5M2 ? fp8_to_float(fp8_from_bits<fp8_e5m2>(v)) : fp8_to_float(fp8_from_bits<fp8_e4m3fn>(v));
}

// Element k (0..63) of A's row / B's column rc (0..31) of an operand in format fmt whose 32 bytes start at byte
// `off` of each lane's slot (layout: the comment above).
inline double mx_operand(const Wave& wv, int off, int rc, int k, int fmt) {
  if (fmt == kMxE2M1) {
    const uint8_t byte = wv.in[rc + 32 * (k / 32)][off + (k % 32) / 2];
    return fp4_value(k % 2 ? byte >> 4 : byte & 0xFu);  // (ckgen/blocks/mx_quant.h)
  }
  return mx_fp8_decode(wv.in[rc + 32 * ((k % 32) / 16)][off + 16 * (k / 32) + k % 16], fmt);
}

inline double e8m0(uint8_t e) { return e == 0xFF ? NAN : ldexp(1.0, static_cast<int>(e) - 127); }

// Lane l's slot: A (32 bytes), B (32 bytes), C (16 floats), scale_a, scale_b (4 bytes each).
inline void compute_scaled_32x32x64(Wave& wv, int fa, int fb, int sel_a, int sel_b) {
  constexpr int W = 64, kC = 64, kScales = 32 + 32 + kC;
  for (int l = 0; l < W; ++l) {
    const int j = l % 32, g = l / 32;
    for (int t = 0; t < 16; ++t) {
      const int i = 8 * (t / 4) + 4 * g + t % 4;
      float acc;
      memcpy(&acc, wv.in[l] + 64 + t * 4, 4);
      for (int kb = 0; kb < 2; ++kb) {
        double dot = 0;
        for (int k = 32 * kb; k < 32 * kb + 32; ++k) dot += mx_operand(wv, 0, i, k, fa) * mx_operand(wv, 32, j, k, fb);
        const double sa = e8m0(wv.in[i + 32 * kb][kScales + sel_a]);
        const double sb = e8m0(wv.in[j + 32 * kb][kScales + 4 + sel_b]);
        acc = static_cast<float>(static_cast<double>(acc) + dot * sa * sb);
      }
      memcpy(wv.out[l] + t * 4, &acc, 4);
    }
  }
}

}  // namespace mfma
}  // namespace emu
}  // namespace ckgen

#if !defined(CKGEN_EMU_ARCH_RESTRICT) || defined(CKGEN_EMU_HAS_mfma_scale_f32_32x32x64_f8f6f4)
inline ::ckgen::emu::mfma::f32x16 __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(
    ::ckgen::emu::mfma::i32x8 a, ::ckgen::emu::mfma::i32x8 b, ::ckgen::emu::mfma::f32x16 c, int a_format,
    int b_format, int opsel_a, int scale_a, int opsel_b, int scale_b) {
  constexpr const char* kName = "__builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4";
  using ::ckgen::emu::mfma::kMxE2M1;
  using ::ckgen::emu::mfma::kMxE4M3;
  using ::ckgen::emu::mfma::kMxE5M2;
  const auto emulated = [](int f) { return f == kMxE4M3 || f == kMxE5M2 || f == kMxE2M1; };
  if (!emulated(a_format) || !emulated(b_format))
    ::ckgen::emu::fault("%s: formats %d, %d: only fp8 (0 = e4m3, 1 = e5m2) and fp4 (4 = e2m1) are emulated", kName,
                        a_format, b_format);
  if ((a_format == kMxE2M1) != (b_format == kMxE2M1))
    ::ckgen::emu::fault("%s: formats %d, %d: fp4 mixed with fp8 / bf8 is not emulated (no published lane layout)",
                        kName, a_format, b_format);
  if (opsel_a < 0 || opsel_a > 3 || opsel_b < 0 || opsel_b > 3)
    ::ckgen::emu::fault("%s: op_sel %d, %d: a byte index 0..3", kName, opsel_a, opsel_b);
  unsigned char in[32 + 32 + 64 + 8];
  memcpy(in, &a, 32);
  memcpy(in + 32, &b, 32);
  memcpy(in + 64, &c, 64);
  memcpy(in + 128, &scale_a, 4);
  memcpy(in + 132, &scale_b, 4);
  ::ckgen::emu::mfma::f32x16 d;
  bool partial = false;
  ::ckgen::emu::wave_collective(kName, in, sizeof in, &d, sizeof d, [&](::ckgen::emu::Wave& wv, int lanes) {
    if (lanes != 64) {
      partial = true;
      return;
    }
    ::ckgen::emu::mfma::compute_scaled_32x32x64(wv, a_format, b_format, opsel_a, opsel_b);
  });
  if (partial) ::ckgen::emu::fault("%s: issued by a partial wave; MFMA needs all 64 lanes", kName);
  return d;
}
#endif
