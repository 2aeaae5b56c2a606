// ckgen/xlane_amd.h: cross-lane exchanges of a wave64 on AMD gfx9 (platform API, docs/design.md), written
// with the amdgcn builtins only. Included by platform_amd.h (the real code object) and by platform_emu.h,
// which defines the same builtins as wave collectives (ckgen/emu/xlane.h): the emulator runs this source.
// The CUDA platform (platform_cuda.h) defines the same names with __shfl_*_sync.
//
// Every function is a wave-level operation: all lanes of the wave must call it together (uniform control
// flow, full wave). Values are 32-bit (int or float).
//
//   shfl_xor<kMask>(v)    the v of lane (lane ^ kMask), 1 <= kMask < 64 (exact butterfly exchange):
//                           kMask 1, 2, 3  DPP quad_perm            (v_mov_b32_dpp, usually folded into the
//                           kMask 7        DPP row_half_mirror        consuming VALU op: v_add_f32_dpp ...)
//                           kMask 15       DPP row_mirror
//                           other < 32     ds_swizzle_b32, bit mode (and 0x1F, xor kMask)
//                           >= 32          ds_bpermute_b32
//   shfl_xor(v, mask)     the same with a run-time mask (ds_bpermute_b32); mask & 63 is used.
//   reduce_swap<kHalf>(v) for butterfly reductions: the v of SOME lane in the other half of this lane's
//                         aligned group of 2*kHalf lanes. Equal to shfl_xor<kHalf> whenever each half of the
//                         group holds one value (which is the case after the previous reduction steps), and
//                         cheaper: kHalf 1, 2 quad_perm; 4 row_half_mirror; 8 row_mirror; 16 ds_swizzle;
//                         32 two v_readlane_b32 (lanes 0 and 32) and a select.
//   readlane(v, lane)     the v of `lane` in every lane; `lane` must be wave-uniform (a v_readlane_b32).
#pragma once

namespace ckgen {
namespace xlane_detail {

constexpr int quad_perm(int a, int b, int c, int d) { return a | (b << 2) | (c << 4) | (d << 6); }
constexpr int kRowMirror = 0x140;
constexpr int kRowHalfMirror = 0x141;
constexpr int swizzle_xor(int mask) { return 0x1f | (mask << 10); }  // bit mode: and 0x1F, or 0, xor mask

// A full-wave DPP move: every lane written, every source valid for the controls used here.
template <int kCtrl>
CKGEN_DEVICE int dpp(int v) {
  return __builtin_amdgcn_update_dpp(0, v, kCtrl, 0xf, 0xf, true);
}

template <int kMask>
CKGEN_DEVICE int xor_int(int v) {
  static_assert(kMask >= 1 && kMask < 64, "shfl_xor<kMask>: 1 <= kMask < 64 (wave64)");
  if constexpr (kMask == 1) return dpp<quad_perm(1, 0, 3, 2)>(v);
  else if constexpr (kMask == 2) return dpp<quad_perm(2, 3, 0, 1)>(v);
  else if constexpr (kMask == 3) return dpp<quad_perm(3, 2, 1, 0)>(v);
  else if constexpr (kMask == 7) return dpp<kRowHalfMirror>(v);
  else if constexpr (kMask == 15) return dpp<kRowMirror>(v);
  else if constexpr (kMask < 32) return __builtin_amdgcn_ds_swizzle(v, swizzle_xor(kMask));
  else return __builtin_amdgcn_ds_bpermute((lane_id() ^ kMask) << 2, v);
}

template <int kHalf>
CKGEN_DEVICE int swap_int(int v) {
  static_assert(kHalf == 1 || kHalf == 2 || kHalf == 4 || kHalf == 8 || kHalf == 16 || kHalf == 32,
                "reduce_swap<kHalf>: kHalf is a power of two below the wave size (64)");
  if constexpr (kHalf == 4) return dpp<kRowHalfMirror>(v);
  else if constexpr (kHalf == 8) return dpp<kRowMirror>(v);
  else if constexpr (kHalf == 32) {
    const int lo = __builtin_amdgcn_readlane(v, 0), hi = __builtin_amdgcn_readlane(v, 32);
    return lane_id() < 32 ? hi : lo;
  } else {
    return xor_int<kHalf>(v);
  }
}

}  // namespace xlane_detail

template <int kMask>
CKGEN_DEVICE int shfl_xor(int v) { return xlane_detail::xor_int<kMask>(v); }
template <int kMask>
CKGEN_DEVICE float shfl_xor(float v) { return bit_cast<float>(xlane_detail::xor_int<kMask>(bit_cast<int>(v))); }

CKGEN_DEVICE int shfl_xor(int v, int mask) { return __builtin_amdgcn_ds_bpermute((lane_id() ^ (mask & 63)) << 2, v); }
CKGEN_DEVICE float shfl_xor(float v, int mask) { return bit_cast<float>(shfl_xor(bit_cast<int>(v), mask)); }

template <int kHalf>
CKGEN_DEVICE int reduce_swap(int v) { return xlane_detail::swap_int<kHalf>(v); }
template <int kHalf>
CKGEN_DEVICE float reduce_swap(float v) { return bit_cast<float>(xlane_detail::swap_int<kHalf>(bit_cast<int>(v))); }

CKGEN_DEVICE int readlane(int v, int lane) { return __builtin_amdgcn_readlane(v, lane); }
CKGEN_DEVICE float readlane(float v, int lane) { return bit_cast<float>(__builtin_amdgcn_readlane(bit_cast<int>(v), lane)); }

}  // namespace ckgen
