// ckgen/emu/xlane.h: the AMD gfx9 cross-lane builtins that ckgen's device code uses, as wave collectives of
// the CPU emulator (docs/emulation.md, "Cross-lane operations"). Included by platform_emu.h, which declares
// the builtins themselves (__builtin_amdgcn_update_dpp / mov_dpp / ds_swizzle / readlane) on top of these.
//
// Semantics (gfx9 ISA, wave64; "lane" is the lane id in the wave, row = lane / 16, bank = (lane / 4) % 4):
//
//   update_dpp(old, src, dpp_ctrl, row_mask, bank_mask, bound_ctrl)  (v_mov_b32_dpp with its old value)
//     A lane whose row bit in row_mask or bank bit in bank_mask is 0 is not written: it returns old.
//     Otherwise it reads src of its source lane (dpp_source_lane below). A source that is out of range for
//     the control, or does not exist (partial wave), is invalid: with bound_ctrl the lane gets 0, without
//     it the lane is not written (old).
//   mov_dpp(src, dpp_ctrl, row_mask, bank_mask, bound_ctrl): update_dpp with an undefined old value; a lane
//     that would return old gets 0xFFFFFFFF (NaN as a float), so a kernel that relies on it shows.
//   dpp_ctrl encodings emulated: quad_perm 0x00-0xFF, row_shl:1-15 0x101-0x10F, row_shr:1-15 0x111-0x11F,
//     row_ror:1-15 0x121-0x12F, row_mirror 0x140, row_half_mirror 0x141, row_bcast:15 0x142,
//     row_bcast:31 0x143. The wave shifts/rotates (0x130/0x134/0x138/0x13C), gfx90a's row_newbcast
//     (0x150-0x15F) and every other value are an emulation fault naming the control.
//   ds_swizzle(src, offset): offset[15] = 1: quad permute, lane l of each quad reads lane offset[2l+1:2l] of
//     that quad. offset[15] = 0: bit mode inside each half of the wave, lane l reads
//     (l & 32) | (((l & and) | or) ^ xor) with and = offset[4:0], or = offset[9:5], xor = offset[14:10].
//     A source lane that does not exist reads 0. Offsets outside 0..0xFFFF are a fault.
//   readlane(v, lane): v of `lane` in every lane; `lane` must be the same in every lane (it is an SGPR) and
//     an existing lane of the wave, else a fault.
// The controls are immediates on the real chip: lanes that pass different controls are a fault.
// A 32-lane wave (CKGEN_EMU_WAVE_SIZE=32: warp-sized bodies on the emulator) has rows 0 and 1 and one half:
// the row-local controls and ds_swizzle behave as above (as DPP16 and ds_swizzle of wave32 hardware);
// row_bcast:15 / row_bcast:31 cross rows of a wave64 and are a fault there.
#pragma once

#include <stdio.h>
#include <string.h>

#include "ckgen/emu/runtime.h"

namespace ckgen {
namespace emu __attribute__((visibility("hidden"))) {

constexpr int kLaneInvalid = -1;       // the control names no lane for this one (bound_ctrl decides)
constexpr int kCtrlUnsupported = -2;   // not an emulated control
constexpr uint32_t kUndefinedLane = 0xffffffffu;

// The lane whose src lane `lane` of a wave64 reads under dpp_ctrl; kLaneInvalid or kCtrlUnsupported.
inline int dpp_source_lane(int ctrl, int lane) {
  const int row_base = lane & ~15, i = lane & 15;
  if (ctrl >= 0x000 && ctrl <= 0x0ff) return (lane & ~3) | ((ctrl >> (2 * (lane & 3))) & 3);
  if (ctrl >= 0x101 && ctrl <= 0x10f) return i + (ctrl & 15) < 16 ? lane + (ctrl & 15) : kLaneInvalid;
  if (ctrl >= 0x111 && ctrl <= 0x11f) return i - (ctrl & 15) >= 0 ? lane - (ctrl & 15) : kLaneInvalid;
  if (ctrl >= 0x121 && ctrl <= 0x12f) return row_base + ((i - (ctrl & 15)) & 15);
  if (ctrl == 0x140) return row_base + (15 - i);
  if (ctrl == 0x141) return row_base + (i & 8) + (7 - (i & 7));
  if (ctrl == 0x142) return lane >= 16 ? row_base - 1 : kLaneInvalid;
  if (ctrl == 0x143) return lane >= 32 ? 31 : kLaneInvalid;
  return kCtrlUnsupported;
}

// The assembler's name of a DPP control (for messages).
inline std::string dpp_ctrl_name(int ctrl) {
  char b[64];
  if (ctrl >= 0 && ctrl <= 0xff)
    snprintf(b, sizeof b, "quad_perm:[%d,%d,%d,%d]", ctrl & 3, (ctrl >> 2) & 3, (ctrl >> 4) & 3, (ctrl >> 6) & 3);
  else if (ctrl > 0x100 && ctrl <= 0x10f) snprintf(b, sizeof b, "row_shl:%d", ctrl & 15);
  else if (ctrl > 0x110 && ctrl <= 0x11f) snprintf(b, sizeof b, "row_shr:%d", ctrl & 15);
  else if (ctrl > 0x120 && ctrl <= 0x12f) snprintf(b, sizeof b, "row_ror:%d", ctrl & 15);
  else if (ctrl == 0x130) snprintf(b, sizeof b, "wave_shl:1");
  else if (ctrl == 0x134) snprintf(b, sizeof b, "wave_rol:1");
  else if (ctrl == 0x138) snprintf(b, sizeof b, "wave_shr:1");
  else if (ctrl == 0x13c) snprintf(b, sizeof b, "wave_ror:1");
  else if (ctrl == 0x140) snprintf(b, sizeof b, "row_mirror");
  else if (ctrl == 0x141) snprintf(b, sizeof b, "row_half_mirror");
  else if (ctrl == 0x142) snprintf(b, sizeof b, "row_bcast:15");
  else if (ctrl == 0x143) snprintf(b, sizeof b, "row_bcast:31");
  else if (ctrl >= 0x150 && ctrl <= 0x15f) snprintf(b, sizeof b, "row_newbcast:%d", ctrl & 15);
  else snprintf(b, sizeof b, "an invalid encoding");
  return b;
}

// The lane whose src lane `lane` reads under a ds_swizzle offset (0..0xFFFF).
inline int swizzle_source_lane(int offset, int lane) {
  if (offset & 0x8000) return (lane & ~3) | ((offset >> (2 * (lane & 3))) & 3);
  const int and_mask = offset & 31, or_mask = (offset >> 5) & 31, xor_mask = (offset >> 10) & 31;
  return (lane & 32) | ((((lane & 31) & and_mask) | or_mask) ^ xor_mask);
}

struct DppIn {
  uint32_t old, src;
  int ctrl, row_mask, bank_mask, bound_ctrl;
};

// One DPP move for the wave; has_old false: mov_dpp (old undefined).
inline uint32_t dpp_move(const char* op, bool has_old, uint32_t old, uint32_t src, int ctrl, int row_mask,
                         int bank_mask, bool bound_ctrl) {
  DppIn in{old, src, ctrl, row_mask, bank_mask, bound_ctrl ? 1 : 0};
  uint32_t r;
  int bad_lane = -1;
  wave_collective(op, &in, sizeof in, &r, sizeof r, [&](Wave& wv, int lanes) {
    DppIn l0;
    memcpy(&l0, wv.in[0], sizeof l0);
    for (int l = 0; l < lanes; ++l) {
      DppIn a;
      memcpy(&a, wv.in[l], sizeof a);
      if ((a.ctrl != l0.ctrl || a.row_mask != l0.row_mask || a.bank_mask != l0.bank_mask ||
           a.bound_ctrl != l0.bound_ctrl) && bad_lane < 0)
        bad_lane = l;
      uint32_t v = has_old ? a.old : kUndefinedLane;
      const bool written = ((l0.row_mask >> (l >> 4)) & 1) && ((l0.bank_mask >> ((l >> 2) & 3)) & 1);
      if (written) {
        const int s = dpp_source_lane(l0.ctrl, l);
        if (s >= 0 && s < lanes) {
          DppIn b;
          memcpy(&b, wv.in[s], sizeof b);
          v = b.src;
        } else if (l0.bound_ctrl) {
          v = 0;
        }
      }
      memcpy(wv.out[l], &v, sizeof v);
    }
  });
  // Only the lane that computed the wave's results saw bad_lane; it reports for the wave.
  if (bad_lane >= 0)
    fault("%s: the DPP controls are immediates, but lane %d passed dpp_ctrl 0x%x, row_mask 0x%x, bank_mask 0x%x, "
          "bound_ctrl %d while this lane passed 0x%x, 0x%x, 0x%x, %d", op, bad_lane, ctrl, row_mask, bank_mask,
          bound_ctrl ? 1 : 0, in.ctrl, in.row_mask, in.bank_mask, in.bound_ctrl);
  if (row_mask < 0 || row_mask > 15 || bank_mask < 0 || bank_mask > 15)
    fault("%s: row_mask 0x%x / bank_mask 0x%x: each is a 4-bit immediate", op, row_mask, bank_mask);
  if (dpp_source_lane(ctrl, 0) == kCtrlUnsupported)
    fault("%s: dpp_ctrl 0x%x (%s) is not emulated; the emulator implements quad_perm (0x00-0xFF), row_shl, "
          "row_shr, row_ror (0x101-0x12F, shift 1-15), row_mirror (0x140), row_half_mirror (0x141), "
          "row_bcast:15 (0x142) and row_bcast:31 (0x143)", op, ctrl, dpp_ctrl_name(ctrl).c_str());
  if (kWaveSize != 64 && (ctrl == 0x142 || ctrl == 0x143))
    fault("%s: row_bcast (dpp_ctrl 0x%x) is emulated for wave64 only", op, ctrl);
  return r;
}

inline uint32_t swizzle(uint32_t src, int offset) {
  int in[2] = {static_cast<int>(src), offset};
  uint32_t r;
  int bad_lane = -1;
  wave_collective("ds_swizzle", in, sizeof in, &r, sizeof r, [&](Wave& wv, int lanes) {
    int off0;
    memcpy(&off0, wv.in[0] + sizeof(int), sizeof off0);
    for (int l = 0; l < lanes; ++l) {
      int a[2];
      memcpy(a, wv.in[l], sizeof a);
      if (a[1] != off0 && bad_lane < 0) bad_lane = l;
      const int s = swizzle_source_lane(off0 & 0xffff, l);
      uint32_t v = 0;
      if (s < lanes) memcpy(&v, wv.in[s], sizeof v);
      memcpy(wv.out[l], &v, sizeof v);
    }
  });
  if (bad_lane >= 0)
    fault("ds_swizzle: the offset is an immediate, but lane %d passed a different one than this lane (0x%x)",
          bad_lane, offset);
  if (offset < 0 || offset > 0xffff) fault("ds_swizzle: offset 0x%x is not a 16-bit immediate", offset);
  if (kWaveSize != 64 && kWaveSize != 32) fault("ds_swizzle: emulated for wave64 and wave32 only");
  return r;
}

inline uint32_t readlane(uint32_t v, int lane) {
  int in[2] = {static_cast<int>(v), lane};
  uint32_t r;
  int bad_lane = -1, nlanes = 0;
  wave_collective("readlane", in, sizeof in, &r, sizeof r, [&](Wave& wv, int lanes) {
    nlanes = lanes;
    int src0;
    memcpy(&src0, wv.in[0] + sizeof(int), sizeof src0);
    uint32_t val = 0;
    if (src0 >= 0 && src0 < lanes) memcpy(&val, wv.in[src0], sizeof val);
    for (int l = 0; l < lanes; ++l) {
      int a[2];
      memcpy(a, wv.in[l], sizeof a);
      if (a[1] != src0 && bad_lane < 0) bad_lane = l;
      memcpy(wv.out[l], &val, sizeof val);
    }
  });
  if (bad_lane >= 0)
    fault("readlane: the lane index must be the same in every lane (an SGPR), but lane %d passed another "
          "index than this lane (%d)", bad_lane, lane);
  if (nlanes > 0 && (lane < 0 || lane >= nlanes))
    fault("readlane: lane %d does not exist in this wave of %d lanes", lane, nlanes);
  return r;
}

}  // namespace emu
}  // namespace ckgen
