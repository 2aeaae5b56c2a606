// rowops_stages.h (ckgen/ops/rowops/device): the staged ring of the single-pass row ops (Cfg::kStages > 0,
// rowops_forward.h; its size: rowops::stage_bytes<Cfg>(), rowops_config.h).
//
//   Staged tiles (kStages > 0; single pass only; CUDA sm_80+ and the emulator's warp-32 model, ignored on AMD):
//   each thread streams its own vectors of x (and the residual) for the row groups it will process next into
//   a private ring of kStages tiles in shared memory with cp.async (16 bytes per copy, partial vectors
//   zero-filled, vectors wholly past the row not copied), kStages groups ahead: while a group is reduced and
//   written, the next kStages groups' loads are in flight, which registers alone cannot hold (a tile of
//   64 KiB per workgroup of 1024 threads fills the register budget of one SM). A thread reads back only what it
//   copied (cp.async.wait_group), so the ring needs no barrier. The stage just read is refilled as soon as its
//   values are used (kStages = 1 still overlaps the next group's load with this group's reductions and stores).
//   Used when x (and the residual) are 16-byte aligned (vec_ok) and the launch has stage_bytes<Cfg>() of
//   dynamic shared memory; otherwise the direct path runs.
//
//   Layout: chunk q of a thread in stage s at ((s * kQ + q) * kThreads + tid) * 16 bytes of the ring; x's vectors
//   first (chunks j * kXC + c), then the residual's (kR * kXC + j * kRC + c): consecutive threads touch consecutive
//   16 bytes.
#pragma once

#include "ckgen/platform.h"
#include "ckgen/types.h"
#include "rowops_frag.h"

namespace ckgen {
namespace rowops {

// One thread's view of the ring: the copies of its vectors of a row group into a stage, and their read-back.
template <class Cfg>
struct StageRing {
  using TIn = typename Cfg::TIn;
  using TRes = typename Cfg::TRes;
  using FX = detail::Frag<TIn, Cfg::kVec>;
  using FR = detail::Frag<TRes, Cfg::kVec>;
  static constexpr int kR = Cfg::kRegVecs;
  static constexpr int kStep = Cfg::kVec * Cfg::kRowThreads;  // columns between a thread's vectors
  static constexpr int kXC = FX::kBytes / 16;                 // 16-byte chunks of a vector of x, of the residual
  static constexpr int kRC = Cfg::kResidual ? FR::kBytes / 16 : 0;
  static constexpr int kQ = kR * (kXC + kRC);                 // chunks of a thread per stage

  unsigned char* mine;  // the ring + this thread's offset (tid * 16 bytes); null without a ring

  CKGEN_DEVICE StageRing(unsigned char* ring, int tid) : mine(ring ? ring + static_cast<long long>(tid) * 16 : ring) {}

  CKGEN_DEVICE unsigned char* chunk(int s, int q) const {
    return mine + static_cast<long long>(s * kQ + q) * Cfg::kThreads * 16;
  }

  // cp.async of this thread's vectors of one row into stage s: xr (rr) its first column of x (of the residual;
  // ignored without one), k.nv(j) the valid elements of vector j (0: not copied; a partial vector is zero-filled).
  template <class K>
  CKGEN_DEVICE void issue(int s, const TIn* xr, const TRes* rr, const K& k) const {
#pragma unroll
    for (int j = 0; j < kR; ++j) {
      const int nv = k.nv(j);
      if (nv > 0) {
        const int nb = nv * static_cast<int>(sizeof(TIn));
#pragma unroll
        for (int cc = 0; cc < kXC; ++cc) {
          const int b = nb - 16 * cc;
          detail::cp16(detail::smem_u32(chunk(s, j * kXC + cc)),
                       xr + j * kStep + (b > 0 ? 16 * cc / static_cast<int>(sizeof(TIn)) : 0),
                       b < 0 ? 0 : (b > 16 ? 16 : b));
        }
        if constexpr (Cfg::kResidual) {
          const int nr = nv * static_cast<int>(sizeof(TRes));
#pragma unroll
          for (int cc = 0; cc < kRC; ++cc) {
            const int b = nr - 16 * cc;
            detail::cp16(detail::smem_u32(chunk(s, kR * kXC + j * kRC + cc)),
                         rr + j * kStep + (b > 0 ? 16 * cc / static_cast<int>(sizeof(TRes)) : 0),
                         b < 0 ? 0 : (b > 16 ? 16 : b));
          }
        }
      }
    }
    (void)rr;
  }

  // This thread's vector j of x (of the residual) in stage s: n > 0 copied (zero-filled past the row), n == 0 zeros.
  CKGEN_DEVICE FX read_x(int s, int j, int n) const {
    FX f;
#pragma unroll
    for (int cc = 0; cc < kXC; ++cc) {
      vec<uint32_t, 4> v{};
      if (n > 0) v = lds_load(reinterpret_cast<const vec<uint32_t, 4>*>(chunk(s, j * kXC + cc)));
#pragma unroll
      for (int i = 0; i < 4; ++i) f.w[4 * cc + i] = v.v[i];
    }
    return f;
  }
  CKGEN_DEVICE FR read_r(int s, int j, int n) const {
    FR f;
#pragma unroll
    for (int cc = 0; cc < (kRC > 0 ? kRC : 1); ++cc) {
      vec<uint32_t, 4> v{};
      if (kRC > 0 && n > 0) v = lds_load(reinterpret_cast<const vec<uint32_t, 4>*>(chunk(s, kR * kXC + j * kRC + cc)));
#pragma unroll
      for (int i = 0; i < 4; ++i)
        if (4 * cc + i < FR::kWords) f.w[4 * cc + i] = v.v[i];
    }
    return f;
  }
};

}  // namespace rowops
}  // namespace ckgen
