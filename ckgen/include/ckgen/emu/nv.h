// ckgen/emu/nv.h: the NVIDIA instructions of ckgen/blocks/nv_mma.h on the CPU emulator, so that the
// mma.sync bodies (attention_fwd_nv.h, the portable GEMM's blocks) run there as warps of 32 threads.
// Included by nv_mma.h when CKGEN_PLATFORM_EMU is defined; build with -DCKGEN_EMU_WAVE_SIZE=32 (and
// -DCKGEN_EMU_LDS_BYTES=232448 for sm_90's 227 KiB of shared memory).
//
//   smem_addr(p)            the 32-bit shared-memory address of p: its offset in the workgroup's LDS arena
//   cp_async16[_zfill]      per thread: the global read happens (bounds-checked) at the call; the 16 bytes
//                           land in shared memory at the cp_async_wait that completes their group. The
//                           destination is race-checked as a write both at the call and when it lands
//                           (hardware may write it any time in between)
//   cp_async_commit / wait  groups per thread, as PTX's cp.async.commit_group / wait_group N
//   ldmatrix_x4[_trans]     warp collective: lane l supplies the row address of matrix l / 8 (checked as
//                           its own 16-byte read); register i of lane l = row l/4, b16 elements 2(l%4),
//                           2(l%4)+1 of matrix i (.trans: column l/4, rows 2(l%4), 2(l%4)+1)
//   mma_m16n8k16_f32_f16/bf16, mma_m16n8k32_s32_s8, mma_m16n8k8_f32_tf32, mma_m16n8k32_f32_e4m3/e5m2 (OCP fp8)
//                           warp collective with the fragment layouts of nv_mma.h; products exact,
//                           accumulated in f32 (s32 with wrap-around) in k order starting from C
//   st_shared_v4, to_tf32   as in nv_mma.h
// Not modelled: timing, bank conflicts, the rounding of hardware tensor-core accumulation.
#pragma once

#if !defined(CKGEN_PLATFORM_EMU)
#error "ckgen/emu/nv.h is the emulator's version of ckgen/blocks/nv_mma.h"
#endif

#include <math.h>
#include <string.h>

#include <vector>

#include "ckgen/platform.h"
#include "ckgen/blocks/fp8.h"

namespace ckgen {

// mma.sync operands per thread, as 32-bit registers (platform_cuda.h's types).
struct u32x1_t { uint32_t r[1]; };
struct u32x2_t { uint32_t r[2]; };
struct u32x4_t { uint32_t r[4]; };
struct f32x4_t { float r[4]; };
struct i32x4_t { int r[4]; };

namespace nv {

static_assert(CKGEN_EMU_WAVE_SIZE == 32, "the NVIDIA instructions are emulated on warps of 32 (CKGEN_EMU_WAVE_SIZE=32)");

namespace emu_detail {

struct Copy {
  uint32_t dst;
  int bytes;  // valid source bytes (the rest is zero)
  unsigned char data[16];
};
struct CpAsyncState {
  const void* worker = nullptr;
  uint32_t gen = 0;
  std::vector<Copy> pending;     // issued, not yet landed, in issue order
  std::vector<size_t> groups;    // number of pending copies at each commit (oldest first)
};

inline CpAsyncState& cp_state() {
  static thread_local std::vector<CpAsyncState> states;  // per OS thread (one workgroup at a time), per tid
  ::ckgen::emu::Worker& w = ::ckgen::emu::worker();
  const int tid = w.cur->tid;
  if (states.size() < w.threads.size()) states.resize(w.threads.size());
  CpAsyncState& s = states[tid];
  if (s.worker != &w || s.gen != w.gen) {  // a new workgroup
    s.worker = &w;
    s.gen = w.gen;
    s.pending.clear();
    s.groups.clear();
  }
  return s;
}

inline unsigned char* smem_ptr(uint32_t addr) { return ::ckgen::emu::worker().arena + addr; }

inline void land(CpAsyncState& s, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const Copy& c = s.pending[i];
    unsigned char* p = smem_ptr(c.dst);
    ::ckgen::emu::check_lds(p, 16, 16, true);
    memset(p, 0, 16);
    memcpy(p, c.data, static_cast<size_t>(c.bytes));
  }
  s.pending.erase(s.pending.begin(), s.pending.begin() + static_cast<long>(n));
  for (auto& gsz : s.groups) gsz -= n;
}

inline uint32_t get32(const unsigned char* p) {
  uint32_t u;
  memcpy(&u, p, 4);
  return u;
}

// Element k (of the instruction's K extent) of a fragment register, decoded.
// kF8: 0 (not fp8), 1 (OCP e4m3), 2 (OCP e5m2): the 8-bit float operands of the fp8 mma.sync.
template <int kEB, bool kBF16, bool kInt, int kF8 = 0>
inline double decode(uint32_t reg, int e) {
  if constexpr (kF8 != 0) {
    const uint32_t code = (reg >> (8 * e)) & 0xffu;
    return kF8 == 1 ? fp8_to_float(fp8_from_bits<fp8_e4m3fn>(code)) : fp8_to_float(fp8_from_bits<fp8_e5m2>(code));
  } else if constexpr (kEB == 1) {
    return static_cast<double>(static_cast<::int8_t>((reg >> (8 * e)) & 0xffu));
  } else if constexpr (kEB == 2) {
    const uint16_t h = static_cast<uint16_t>(reg >> (16 * e));
    if constexpr (kBF16) {
      const uint32_t u = static_cast<uint32_t>(h) << 16;
      float f;
      memcpy(&f, &u, 4);
      return f;
    } else {
      _Float16 x;
      memcpy(&x, &h, 2);
      return static_cast<double>(x);
    }
  } else {
    float f;
    memcpy(&f, &reg, 4);
    return f;
  }
}

// D = A.B + C for the warp (m16 n8, K = 32 bytes of elements). Lane slot: A (4 regs), B (2), C (4).
template <int kEB, bool kBF16, bool kInt, int kF8 = 0>
inline void mma_compute(::ckgen::emu::Wave& wv) {
  constexpr int kK = 32 / kEB;
  constexpr int kPer = 4 / kEB;  // elements per register
  double a[16][kK], b[kK][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    for (int j = 0; j < 4; ++j) {  // A reg j: row g + 8 (j & 1), bytes 16 (j >> 1) + 4t
      const uint32_t reg = get32(wv.in[l] + 4 * j);
      for (int e = 0; e < kPer; ++e) a[g + 8 * (j & 1)][(16 * (j >> 1) + 4 * t) / kEB + e] = decode<kEB, kBF16, kInt, kF8>(reg, e);
    }
    for (int j = 0; j < 2; ++j) {  // B reg j: column g, bytes 16 j + 4t of K
      const uint32_t reg = get32(wv.in[l] + 16 + 4 * j);
      for (int e = 0; e < kPer; ++e) b[(16 * j + 4 * t) / kEB + e][g] = decode<kEB, kBF16, kInt, kF8>(reg, e);
    }
  }
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    for (int r = 0; r < 4; ++r) {  // C reg r: row g + 8 (r >> 1), column 2t + (r & 1)
      const int i = g + 8 * (r >> 1), j = 2 * t + (r & 1);
      if constexpr (kInt) {
        ::int32_t acc;
        memcpy(&acc, wv.in[l] + 24 + 4 * r, 4);
        for (int k = 0; k < kK; ++k)
          acc = static_cast<::int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(static_cast<int>(a[i][k]) *
                                                                                      static_cast<int>(b[k][j])));
        memcpy(wv.out[l] + 4 * r, &acc, 4);
      } else {
        float acc;
        memcpy(&acc, wv.in[l] + 24 + 4 * r, 4);
        for (int k = 0; k < kK; ++k) acc = fmaf(static_cast<float>(a[i][k]), static_cast<float>(b[k][j]), acc);
        memcpy(wv.out[l] + 4 * r, &acc, 4);
      }
    }
  }
}

template <int kEB, bool kBF16, bool kInt, class C, int kF8 = 0>
inline C mma(const char* name, u32x4_t a, u32x2_t b, C c) {
  unsigned char in[40];
  memcpy(in, a.r, 16);
  memcpy(in + 16, b.r, 8);
  memcpy(in + 24, c.r, 16);
  C d;
  bool partial = false;
  ::ckgen::emu::wave_collective(name, in, sizeof in, d.r, sizeof d.r, [&](::ckgen::emu::Wave& wv, int lanes) {
    if (lanes != 32) {
      partial = true;
      return;
    }
    mma_compute<kEB, kBF16, kInt, kF8>(wv);
  });
  if (partial) ::ckgen::emu::fault("%s: issued by a partial warp; mma.sync needs all 32 lanes", name);
  return d;
}

inline void ldmatrix(uint32_t (&r)[4], uint32_t addr, bool trans) {
  const unsigned char* p = smem_ptr(addr);
  ::ckgen::emu::check_lds(p, 16, 16, false);  // this lane's row
  unsigned char row[16];
  memcpy(row, p, 16);
  unsigned char out[16];
  ::ckgen::emu::wave_collective(trans ? "ldmatrix.x4.trans" : "ldmatrix.x4", row, 16, out, 16,
                                [trans](::ckgen::emu::Wave& wv, int lanes) {
    for (int l = 0; l < lanes; ++l) {
      const int t = l % 4, rr = l / 4;
      for (int i = 0; i < 4; ++i) {
        uint16_t lo, hi;
        if (!trans) {
          memcpy(&lo, wv.in[8 * i + rr] + 4 * t, 2);
          memcpy(&hi, wv.in[8 * i + rr] + 4 * t + 2, 2);
        } else {
          memcpy(&lo, wv.in[8 * i + 2 * t] + 2 * rr, 2);
          memcpy(&hi, wv.in[8 * i + 2 * t + 1] + 2 * rr, 2);
        }
        const uint32_t v = static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
        memcpy(wv.out[l] + 4 * i, &v, 4);
      }
    }
  });
  for (int i = 0; i < 4; ++i) memcpy(&r[i], out + 4 * i, 4);
}

}  // namespace emu_detail

inline uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(static_cast<const unsigned char*>(p) - ::ckgen::emu::worker().arena);
}

inline void cp_async16_zfill(uint32_t dst, const void* src, int src_bytes) {
  emu_detail::CpAsyncState& s = emu_detail::cp_state();
  emu_detail::Copy c;
  c.dst = dst;
  c.bytes = src_bytes < 0 ? 0 : (src_bytes > 16 ? 16 : src_bytes);
  if (c.bytes > 0) {
    ::ckgen::emu::check_global(src, static_cast<size_t>(c.bytes), 1, false);
    memcpy(c.data, src, static_cast<size_t>(c.bytes));
  }
  ::ckgen::emu::check_lds(emu_detail::smem_ptr(dst), 16, 16, true);
  s.pending.push_back(c);
}
inline void cp_async16(uint32_t dst, const void* src) { cp_async16_zfill(dst, src, 16); }
inline void cp_async_commit() {
  emu_detail::CpAsyncState& s = emu_detail::cp_state();
  s.groups.push_back(s.pending.size());
}
template <int kPending>
inline void cp_async_wait() {
  emu_detail::CpAsyncState& s = emu_detail::cp_state();
  // Land every group but the newest kPending; copies after the last commit belong to no group.
  const size_t ng = s.groups.size();
  if (ng > static_cast<size_t>(kPending)) {
    const size_t done = ng - static_cast<size_t>(kPending);
    const size_t n = s.groups[done - 1];
    emu_detail::land(s, n);
    s.groups.erase(s.groups.begin(), s.groups.begin() + static_cast<long>(done));
  }
}

inline void st_shared_v4(uint32_t dst, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  const uint32_t w[4] = {a, b, c, d};
  vec<uint32_t, 4> v;
  memcpy(v.v, w, 16);
  lds_store(reinterpret_cast<vec<uint32_t, 4>*>(emu_detail::smem_ptr(dst)), v);
}

inline void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) { emu_detail::ldmatrix(r, addr, false); }
inline void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) { emu_detail::ldmatrix(r, addr, true); }

// Round an f32 to tf32 (nearest, ties away), as cvt.rna.tf32.f32.
inline uint32_t to_tf32(uint32_t f32_bits) {
  if ((f32_bits & 0x7f800000u) == 0x7f800000u) return f32_bits;
  return (f32_bits + 0x1000u) & ~0x1fffu;
}

inline f32x4_t mma_m16n8k16_f32_f16(u32x4_t a, u32x2_t b, f32x4_t c) {
  return emu_detail::mma<2, false, false>("mma.m16n8k16.f32.f16", a, b, c);
}
inline f32x4_t mma_m16n8k16_f32_bf16(u32x4_t a, u32x2_t b, f32x4_t c) {
  return emu_detail::mma<2, true, false>("mma.m16n8k16.f32.bf16", a, b, c);
}
inline i32x4_t mma_m16n8k32_s32_s8(u32x4_t a, u32x2_t b, i32x4_t c) {
  return emu_detail::mma<1, false, true>("mma.m16n8k32.s32.s8", a, b, c);
}
inline f32x4_t mma_m16n8k8_f32_tf32(u32x4_t a, u32x2_t b, f32x4_t c) {
  return emu_detail::mma<4, false, false>("mma.m16n8k8.f32.tf32", a, b, c);
}
inline f32x4_t mma_m16n8k32_f32_e4m3(u32x4_t a, u32x2_t b, f32x4_t c) {
  return emu_detail::mma<1, false, false, f32x4_t, 1>("mma.m16n8k32.f32.e4m3", a, b, c);
}
inline f32x4_t mma_m16n8k32_f32_e5m2(u32x4_t a, u32x2_t b, f32x4_t c) {
  return emu_detail::mma<1, false, false, f32x4_t, 2>("mma.m16n8k32.f32.e5m2", a, b, c);
}

}  // namespace nv
}  // namespace ckgen
