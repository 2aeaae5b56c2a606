// attention_sm90_kv.h (ckgen/ops/attention/device): where the Hopper attention body (attention_fwd_sm90.h) reads K
// and V from: the contract of a K/V source (the body's second template parameter, `Src`), the attention op's dense
// source, and the tensor maps both sources build. The decode op's cache is the other source
// (attention_decode_sm90.h).
#pragma once

#include "attention_common.h"
#include "ckgen/blocks/nv_wgmma.h"

namespace ckgen {
namespace attn_sm90 {

using nv::TensorMap;

// A 4-D tensor map over [items][seq][heads][kD] with element strides (seq, head, item) (any order: BSHD and BHSD
// alike), boxes of 64 d x `rows` sequence rows of one head and item, 128-byte swizzle. False when an extent is not
// positive, the base or a stride (of a dimension longer than 1) is not 16-byte aligned, or the driver refuses.
template <int kD>
bool encode_rows(CUtensorMap* map, const void* base, long long seq, long long heads, long long items, long long ss,
                 long long hs, long long is, unsigned rows) {
  if (reinterpret_cast<uintptr_t>(base) % 16 || seq <= 0 || heads <= 0 || items <= 0) return false;
  const long long extent[3] = {seq, heads, items};
  long long stride[3] = {ss * 2, hs * 2, is * 2};
  long long packed = kD * 2;  // a dimension of extent 1 gets the packed stride (its own is never used)
  for (int i = 0; i < 3; ++i) {
    if (extent[i] == 1) stride[i] = packed;
    if (stride[i] <= 0 || stride[i] % 16 || stride[i] >= (1LL << 40)) return false;
    packed = stride[i] * extent[i];
  }
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(kD), static_cast<cuuint64_t>(seq),
                              static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(items)};
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(stride[0]), static_cast<cuuint64_t>(stride[1]),
                                 static_cast<cuuint64_t>(stride[2])};
  const cuuint32_t box[4] = {64, rows, 1, 1};
  return nv::encode_sw128_u16(map, base, 4, dims, strides, box);
}

// The K/V source of the attention op (the body's default `Src`): K and V dense [batch, seqlen_k, heads_kv, d], one
// mask for every item. What a source gives the body:
//   kZeroTail            whether the rows of a sequence's last K/V tile past its keys must be zeroed in shared
//                        memory before O += P.V reads V (here they lie past the tensor map and arrive as zeros)
//   kChecked, kError     whether mask() and load() check lengths and pages (setting `bad`; the block then traps
//                        with kError after its walk), and the message
//   mask(p, b, bad)      the visibility rule of item b's problems
//   Tile, tile(p, mask, b, n0)  what the copies of K/V tile [n0, n0 + kBlockN) of item b need (made before the
//                        producer waits for a free stage); bytes(tile) what one K (or V) tile's copies bring
//   load(p, map, dst, tile, hk, bar, bad)  the TMA copies of one K or V tile into the stage at dst (kD / 64 boxes
//                        of kBlockN rows of 128 bytes), completing on bar
//   applicable(p), encode_kv(&tk, &tv, p)  host: whether the body takes the call, K's and V's tensor maps
template <class Cfg>
struct DenseKv {
  using Args = attn::Args<Cfg>;
  static constexpr int kBN = Cfg::kSm90BlockN, kDBoxes = Cfg::kHeadDim / 64;
  static constexpr bool kZeroTail = false, kChecked = false;
  static constexpr const char* kError = "";
  struct Tile {
    int n0, b;
  };

  static CKGEN_DEVICE attn::Mask mask(const Args& p, int /*b*/, bool& /*bad*/) {
    return attn::make_mask<Cfg::kMask>(p.seqlen_q, p.seqlen_k, p.window_left, p.window_right);
  }
  static CKGEN_DEVICE Tile tile(const Args& /*p*/, const attn::Mask& /*mask*/, int b, int n0) {
    return {n0, b};
  }
  static CKGEN_DEVICE int bytes(const Tile& /*t*/) { return kBN * 128 * kDBoxes; }
  static CKGEN_DEVICE void load(const Args& /*p*/, const TensorMap& map, uint32_t dst, const Tile& t, int hk,
                                uint32_t bar, bool& /*bad*/) {
#if defined(CKGEN_NV_WGMMA)
#pragma unroll
    for (int x = 0; x < kDBoxes; ++x) nv::tma_load_4d(dst + x * kBN * 128, &map, 64 * x, t.n0, hk, t.b, bar);
#endif
  }
  static bool applicable(const Args& p) { return p.seqlen_k > 0; }
  static bool encode_kv(CUtensorMap* tk, CUtensorMap* tv, const Args& p) {
    constexpr int kD = Cfg::kHeadDim;
    return encode_rows<kD>(tk, p.K, p.seqlen_k, p.heads_kv, p.batch, p.k_seq_stride, p.k_head_stride,
                           p.k_batch_stride, kBN) &&
           encode_rows<kD>(tv, p.V, p.seqlen_k, p.heads_kv, p.batch, p.v_seq_stride, p.v_head_stride,
                           p.v_batch_stride, kBN);
  }
};

}  // namespace attn_sm90
}  // namespace ckgen
