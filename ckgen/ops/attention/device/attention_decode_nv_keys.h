// attention_decode_nv_keys.h (ckgen/ops/attention/device): the NVIDIA decode body's key split (warp_split = keys,
// Cfg::kWarpSplitKeys; ops/attention/decode.py). The kWarps warps of a workgroup share its kBlockM = 16 or 32 packed
// rows (one or two m16 blocks per warp: kMB) and warp w takes keys [w * kBN / kWarps, (w + 1) * kBN / kWarps) of
// every K/V tile; every thread still issues the cp.async copies of whole tiles (attention_decode_nv.h's ring,
// unchanged). Used by attention_decode_nv.h:
//
//   WarpMath<Cfg>::type  the Cfg of one warp's math: Cfg itself, or (key split) Cfg with kBlockN / kWarps keys,
//                        one warp of 32 threads; attn_nv::Fwd of it runs scores / softmax / pv on the warp's
//                        sub-tile (all kBlockM rows: kMB = kBlockM / 16 blocks, as the row split's 32-row warps).
//                        The swizzle of a tile line depends on (line & 7) only (nv::SmemTile, 16-byte chunks:
//                        kHeadDim >= 64), so the sub-tile at key k0 (a multiple of 16) is the whole tile's bytes
//                        from k0 * kRowBytes on, laid out as a tile of its own.
//   KeyMerge<Cfg>        after the walk: each warp's online-softmax state (m: running max of its logits, l: the
//                        quad's row sums, O unnormalized) to shared memory (the K/V stages, free once the ring
//                        drained), then the merged rows in fixed warp order (deterministic):
//                        m = max_w m_w, a_w = exp2((m_w - m) * scale * log2 e) (0 for a warp that saw no key),
//                        l = sum_w a_w l_w, O = sum_w a_w O_w / l, LSE = m * scale + ln l (attn::finish_row).
#pragma once

#include "attention_fwd_nv.h"

namespace ckgen {
namespace attn_dec {

// One warp's share of a key-split Cfg: kBlockN / kWarps keys of each tile, the same kBlockM (16 or 32) rows.
template <class Cfg>
struct WarpKeysCfg : Cfg {
  static constexpr int kBlockN = Cfg::kBlockN / Cfg::kWarps;
  static constexpr int kWarps = 1;
  static constexpr int kThreads = 32;
  static constexpr bool kWarpSplitKeys = false;
};

template <class Cfg, bool kSplit = attn_nv::kSplitKeys<Cfg>>
struct WarpMath {
  using type = Cfg;
};
template <class Cfg>
struct WarpMath<Cfg, true> {
  using type = WarpKeysCfg<Cfg>;
  static_assert(Cfg::kBlockM == 16 || Cfg::kBlockM == 32,
                "key split: kBlockM must be 16 or 32 (the warps share one or two m16 blocks)");
  static_assert(Cfg::kBlockN % (16 * Cfg::kWarps) == 0,
                "key split: kBlockN must be a multiple of 16 * kWarps (whole k16 steps of O += P.V per warp)");
};

// The warps' states in shared memory and their merge (the file comment). Warp w's area: kBlockM rows of kLd floats
// (O, unnormalized), then m[kBlockM] and l[kBlockM].
template <class Cfg>
struct KeyMerge {
  static constexpr int kD = Cfg::kHeadDim, kW = Cfg::kWarps, kDB = kD / 8;
  static constexpr int kBM = Cfg::kBlockM, kMB = kBM / 16;
  static constexpr int kLd = kD + 8;  // padded rows: a half-warp's 8-byte stores (4 rows x 4 pairs) hit 32 banks
  static constexpr int kMOff = kBM * kLd, kLOff = kMOff + kBM;  // m and l after the O rows
  static constexpr int kWarpFloats = kBM * kLd + 2 * kBM;
  static constexpr int kBytes = kW * kWarpFloats * 4;

  // This warp's state (of m16 block mb, the lane's rows 16 mb + g and 16 mb + g + 8, columns 8 db + 2 t4 + e) ->
  // its area.
  static CKGEN_DEVICE void put(float* area, const f32x4_t (&o)[kMB][kDB], const float (&m)[kMB][2],
                               const float (&l)[kMB][2], int warp, int lane) {
    float* a = area + warp * kWarpFloats;
    const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float lq = attn::lanes_sum<1, 4>(l[mb][h], lane);  // the row's sum over the quad
        const int r = 16 * mb + g + 8 * h;
        if (t4 == 0) {
          lds_store(a + kMOff + r, m[mb][h]);
          lds_store(a + kLOff + r, lq);
        }
#pragma unroll
        for (int db = 0; db < kDB; ++db) {
          float* dst = a + r * kLd + db * 8 + 2 * t4;
          lds_store(dst, o[mb][db].r[2 * h]);
          lds_store(dst + 1, o[mb][db].r[2 * h + 1]);
        }
      }
  }

  // Row r (< kBlockM), columns d0 .. d0 + 3 of the merged output (normalized; 0 for a row that saw no key) and the
  // row's LSE.
  static CKGEN_DEVICE void row(const float* area, int r, int d0, float scale, float sl2, float (&out)[4],
                               float& lse) {
    float m = attn::kNegInf;
#pragma unroll
    for (int w = 0; w < kW; ++w) m = attn::fmax_f32(m, lds_load(area + w * kWarpFloats + kMOff + r));
    float l = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = 0.0f;
#pragma unroll
    for (int w = 0; w < kW; ++w) {
      const float* a = area + w * kWarpFloats;
      const float mw = lds_load(a + kMOff + r);
      const float aw = mw == attn::kNegInf ? 0.0f : exp2_f32((mw - m) * sl2);
      l += aw * lds_load(a + kLOff + r);
#pragma unroll
      for (int i = 0; i < 4; ++i) out[i] += aw * lds_load(a + r * kLd + d0 + i);
    }
    const float inv = attn::finish_row(m, l, scale, lse);
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] *= inv;
  }
};

}  // namespace attn_dec
}  // namespace ckgen
