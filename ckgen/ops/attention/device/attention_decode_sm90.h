// attention_decode_sm90.h (ckgen/ops/attention/device): the Hopper prefill entry of op = attention_decode (sm_90a):
// the attention op's TMA + wgmma body (attention_fwd_sm90.h) reading K and V from the decode op's cache, for prefill
// chunks (ops/attention/decode.py, `body = auto | wgmma`). The kernel's source emits CKGEN_DECODE_SM90_ENTRY(name,
// Cfg), a kernel `<name>_tma`; the host entry calls attn_sm90::DecodeFwd<Cfg>::launch after choosing the split, and
// the portable decode body (attention_decode_nv.h, same results) runs whenever it returns kNotApplicable.
//
// When it applies (CacheKv::applicable, host): every sequence has seqlen_q query tokens (seqlens_q is null), the
// keys are not split (num_splits == 1), and seqlen_q * 2 >= kSm90BlockM (a query tile at least half full: below that
// the decode body's packed rows, a KV head's query heads in one tile, waste less). Then it computes what the decode
// contract (attention_decode_common.h) says, by the attention op's grid: a block per (query tile, head, sequence),
// query head h reading KV head h / (heads / heads_kv); sequence b's mask from its length seqlens_k[b] (queries
// aligned to the end of the keys).
//
// K and V by TMA (CacheKv below): contiguous, one box of kSm90BlockN rows of [batch][capacity][heads_kv][d] per 64
// columns and tile; paged, boxes of min(page, kSm90BlockN) rows of [num_pages][page][heads_kv][d], the page of each
// from the block table (its entries prefetched into L1 before the producer waits for the stage, read as each box is
// issued), none past the sequence's last key. The rows
// of the last tile past the sequence's keys (the rest of its last page, pages not read, the contiguous cache's
// rows past len) are zeroed in shared memory before P.V reads them (Src::kZeroTail). A length outside 0..capacity
// or a page id outside 0..num_pages-1 traps after the walk (the copies bring zeros meanwhile: TMA fills coordinates
// outside the map).
#pragma once

#include "attention_decode_nv.h"
#include "attention_fwd_sm90.h"

namespace ckgen {
namespace attn_sm90 {

// The decode op's KV cache as the Hopper body's K/V source (the contract: attention_sm90_kv.h).
template <class Cfg>
struct CacheKv {
  using Args = attn::Args<Cfg>;
  static constexpr int kP = Cfg::kPageSize;                 // 0: contiguous
  static constexpr int kBN = Cfg::kSm90BlockN, kD = Cfg::kHeadDim, kDBoxes = kD / 64;
  static constexpr int kRows = kP != 0 && kP < kBN ? kP : kBN;  // rows per box: a page, or a tile inside one
  static constexpr int kBoxes = kBN / kRows;                    // boxes per tile and 64 columns
  static constexpr bool kZeroTail = true, kChecked = true;
  static constexpr const char* kError =
      "attention_decode: seqlens_k[b] outside 0..capacity or a block_table entry outside 0..num_pages-1";
  static_assert(!attn::kRope<Cfg>, "the Hopper prefill entry does not rotate Q (decode.py refuses rope with it)");
  static_assert(kP == 0 || kP % kRows == 0, "a page holds whole boxes");

  struct Tile {
    const int* pages;  // paged: the block table's entries of the tile's boxes (a box is a page when kBoxes > 1)
    int row, item, boxes;  // the boxes' first row (contiguous: the key n0; paged: n0's row in its page), the
                           // contiguous cache's item (the sequence), boxes read (paged: those holding keys)
  };

  static CKGEN_DEVICE attn::Mask mask(const Args& p, int b, bool& bad) {
    int len = gload(p.seqlens_k + b);
    const long long cap = kP != 0 ? static_cast<long long>(p.max_pages) * kP : p.seqlen_k;
    if (len < 0 || len > cap) {
      bad = true;
      len = 0;
    }
    return attn::make_mask<Cfg::kMask>(p.seqlen_q, len, -1, -1);
  }
  // Paged: the tile's block-table entries are prefetched into L1 here (before the producer waits for the stage),
  // and read by load() (K's, then V's: L1 hits) as each box is issued: holding a tile's page ids across the wait
  // spilled the producer's 24 registers at pages of 16.
  static CKGEN_DEVICE Tile tile(const Args& p, const attn::Mask& mask, int b, int n0) {
    Tile t{nullptr, n0, b, 1};
    if constexpr (kP != 0) {
      const int left = (mask.sk - n0 + kRows - 1) / kRows;  // boxes that hold keys (>= 1: the walk's tiles do)
      t.row = n0 % kP;
      t.boxes = left < kBoxes ? left : kBoxes;
      t.pages = p.block_table + static_cast<long long>(b) * p.bt_batch_stride + n0 / kP;
      prefetch_l1(t.pages);
      if (kBoxes > 1) prefetch_l1(t.pages + t.boxes - 1);
    }
    return t;
  }
  static CKGEN_DEVICE int bytes(const Tile& t) { return t.boxes * kRows * 128 * kDBoxes; }
  static CKGEN_DEVICE void load(const Args& p, const TensorMap& map, uint32_t dst, const Tile& t, int hk,
                                uint32_t bar, bool& bad) {
#if defined(CKGEN_NV_WGMMA)
    if constexpr (kP == 0) {
      (void)p;
      (void)bad;
#pragma unroll
      for (int x = 0; x < kDBoxes; ++x) nv::tma_load_4d(dst + x * kBN * 128, &map, 64 * x, t.row, hk, t.item, bar);
    } else {
#pragma unroll
      for (int i = 0; i < kBoxes; ++i) {
        if (i >= t.boxes) break;
        const int pg = gload(t.pages + i);
        bad |= pg < 0 || pg >= p.num_pages;  // (TMA fills a page outside the map with zeros)
#pragma unroll
        for (int x = 0; x < kDBoxes; ++x)
          nv::tma_load_4d(dst + x * kBN * 128 + i * kRows * 128, &map, 64 * x, t.row, hk, pg, bar);
      }
    }
#endif
  }
  static CKGEN_DEVICE void prefetch_l1(const int* addr) {
    asm volatile("prefetch.global.L1 [%0];\n" ::"l"(addr));
  }
  static bool applicable(const Args& p) {
    return p.seqlens_q == nullptr && p.num_splits == 1 && 2LL * p.seqlen_q >= Cfg::kSm90BlockM;
  }
  static bool encode_kv(CUtensorMap* tk, CUtensorMap* tv, const Args& p) {
    if constexpr (kP != 0)
      return encode_rows<kD>(tk, p.K, kP, p.heads_kv, p.num_pages, p.k_seq_stride, p.k_head_stride, p.k_page_stride,
                             kRows) &&
             encode_rows<kD>(tv, p.V, kP, p.heads_kv, p.num_pages, p.v_seq_stride, p.v_head_stride, p.v_page_stride,
                             kRows);
    return encode_rows<kD>(tk, p.K, p.seqlen_k, p.heads_kv, p.batch, p.k_seq_stride, p.k_head_stride,
                           p.k_page_stride, kBN) &&
           encode_rows<kD>(tv, p.V, p.seqlen_k, p.heads_kv, p.batch, p.v_seq_stride, p.v_head_stride,
                           p.v_page_stride, kBN);
  }
};

template <class Cfg>
using DecodeFwd = Fwd<Cfg, CacheKv<Cfg>>;

}  // namespace attn_sm90
}  // namespace ckgen

#define CKGEN_DECODE_SM90_ENTRY(name, Cfg) \
  CKGEN_ATTENTION_SM90_BODY_ENTRY(name, ::ckgen::attn_sm90::DecodeFwd<Cfg>, Cfg)
