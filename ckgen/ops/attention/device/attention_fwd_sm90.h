// attention_fwd_sm90.h (ckgen/ops/attention/device): fused attention forward for Hopper (sm_90a): TMA loads,
// warp specialization, wgmma, FlashAttention-3 style. The second entry of a kernel planned with the Hopper body
// (ckgen/ops/attention/plan.py, plan_wgmma_body): the generated source emits CKGEN_ATTENTION_SM90_ENTRY(name, Cfg),
// a kernel `<name>_tma`, and the host entry calls attn_sm90::Fwd<Cfg>::launch first; it launches that kernel when
// the device is sm_90 and the operands are TMA-addressable, and otherwise returns kNotApplicable (nothing
// launched) so that the mma.sync entry (attention_fwd_nv.h, same results) runs instead.
//
// Parameters, masks, numerics, LSE and the grid rule: attention_common.h (dense batches; a varlen kernel is never
// planned with this body: the C ABI has no total token count to bound the tensor maps with). Where K and V come
// from is the body's second parameter, a K/V source (`Src`; attention_sm90_kv.h: its contract and DenseKv, the
// attention op's [batch, seq, heads, d] tensors; attention_decode_sm90.h: the decode op's cache, contiguous or
// paged): each tile's mask, the TMA copies of one K or V tile, their bytes, the tensor maps, whether the body
// applies to a call. Cfg members besides
// those of attention_fwd_nv.h (T, kHeadDim 64 or 128, kMask, kGqa):
//   kSm90BlockM      queries per block: 64 per consumer warpgroup, 2 or 3 consumer warpgroups (128 or 192)
//   kSm90BlockN      keys per K/V tile: 64 or 128 (the N of the S wgmma, the K of the O wgmma)
//   kSm90Stages      K/V tiles in flight (each a K and a V stage), >= 2
//   kSm90SmemBytes   the dynamic shared memory (checked against what this body lays out)
//   kSm90Persistent  the persistent grid below, else one block per query tile (x: the tile, from the last; y: the
//                    head; z: the batch item)
//   kSm90OBuffer     O staged for its TMA store in a tile of its own (the next tile's Q then loads during the
//                    epilogue), else in the Q tile (the next Q loads once the store has read it)
//   kRopeStyle, kRopeDim  only with rotary embedding (attention_rope.h): each consumer warpgroup rotates its 64 rows
//                    of the Q tile in shared memory once TMA landed them (rope_q: by 16-byte chunks where the
//                    rotary dim allows, else pair by pair), before its first wgmma
//
// Persistent grid (Tiles): x = min(pairs, SMs) blocks of kThreads = 128 * (consumers + 1), one per SM (the
// register reallocation below fills the SM's file). The work is pairs of query tiles of one head and batch item: the
// i-th tile from the end (the heaviest under a causal mask) and its mirror, the i-th from the start, so that every
// pair holds about the same work under a causal mask and exactly the same under none; block x takes pairs x,
// x + grid_x, ... (pairs of one head next to each other: their K/V stay in L2). With an odd tile count each head's
// middle tile is a pair of its own, of half the work: those come after all whole pairs, so that a static stride
// gives every block whole pairs until the light units even out the last round. The K/V ring's stages and phases
// run on across a block's tiles, so the next tile's first K/V tiles (and, with kSm90OBuffer, its Q) load while the
// consumers finish the current one.
//   warpgroup `consumers` (the last), the producer: gives up registers (setmaxnreg), one thread issues the TMA
//     copies (128-byte swizzle; rows past the sequence arrive as zeros): per tile and visited K/V tile (walked
//     from the last down, masked tiles first, as the mma.sync body) K into the next stage of the ring once the
//     consumers freed it ("k empty"), completing on "k full", then V likewise; after the tile's first K, its Q
//     once the consumers freed the Q tile ("q empty"), completing on "q full".
//   warpgroups 0 .. consumers-1: query rows 64w .. 64w+63 (setmaxnreg up). Per K/V tile j, with the product of
//     tile j-1 overlapping the softmax of tile j (FlashAttention-3's intra-warpgroup pipelining):
//       issue S_j = Q.K_j^T (wgmma from shared memory, kD/16 k16 steps); issue O += P_{j-1}.V_{j-1} (wgmma,
//       P from registers); wait for S_j, free K stage; mask (tiles with a hidden pair only), online softmax of
//       S_j (attn_nv::softmax_rows: the accumulator layout of wgmma is mma.sync's per warp); wait for the
//       product, free V stage; rescale O; P_j = S_j rounded to T (attn_nv::pack_p) ... and the last product.
//     Epilogue: O / l rounded to T into the warpgroup's rows of the O tile (kSm90OBuffer) or of the Q tile
//     (swizzled), one TMA store per 64-column box (rows past the sequence are not written), LSE straight from the
//     lanes. Each warpgroup frees the Q tile once its wgmmas are done (O tile) or its store has read Q's (Q tile).
// Shared memory (1024-byte aligned): Q [kD/64 boxes of kBlockM rows x 128 B] | S x K [kD/64 boxes of kBlockN
// rows x 128 B] | S x V (the same) | O (as Q; kSm90OBuffer only) | mbarriers: q full, q empty, k full[S],
// k empty[S], v full[S], v empty[S].
// Operand forms (nv_wgmma.h): Q and K are K-major (d contiguous; k16 step k at box k/4, +32 (k%4) bytes); V is
// MN-major for O = P.V (keys are K, d is N: k16 step kk at +2048 kk, the next 64 d one box (kBlockN x 128 B)
// further: LBO).
#pragma once

#include "attention_fwd_nv.h"
#include "attention_sm90_kv.h"
#include "ckgen/blocks/nv_wgmma.h"

namespace ckgen {
namespace attn_sm90 {

template <class Cfg, class Src = DenseKv<Cfg>>
struct Fwd {
  using T = typename Cfg::T;
  using Args = attn::Args<Cfg>;  // the kernel's arguments (attention_common.h)
  static constexpr int kD = Cfg::kHeadDim;
  static constexpr int kBM = Cfg::kSm90BlockM;
  static constexpr int kBN = Cfg::kSm90BlockN;
  static constexpr int kS = Cfg::kSm90Stages;
  static constexpr int kCons = kBM / 64;           // consumer warpgroups
  static constexpr int kThreads = 128 * (kCons + 1);
  static constexpr int kDBoxes = kD / 64;          // 64-element boxes along d
  static constexpr int kNB = kBN / 8;              // 8-column fragments of S
  static constexpr int kDB = kD / 8;               // 8-column fragments of O
  static constexpr int kKK = kBN / 16;             // k16 steps of O += P.V
  static constexpr int kQBytes = kBM * kD * 2;
  static constexpr int kKVBytes = kBN * kD * 2;
  static constexpr int kKOff = kQBytes;
  static constexpr int kVOff = kKOff + kS * kKVBytes;
  static constexpr bool kPersistent = Cfg::kSm90Persistent;
  static constexpr bool kOBuf = Cfg::kSm90OBuffer;
  static constexpr int kOOff = kVOff + kS * kKVBytes;  // the O tile (kOBuf), else O is staged at the Q tile
  static constexpr int kBarOff = kOOff + (kOBuf ? kQBytes : 0);
  static constexpr int kSmemBytes = 1024 + kBarOff + 8 * (2 + 4 * kS);  // 1024: alignment slack
  // register reallocation: producer down, consumers up, within the registers the launch gave the block (168 x 384
  // at two consumer warpgroups: setmaxnreg.inc waits for what the producer's dec released; 32 + 2 x 240 waits forever)
  static constexpr int kProducerRegs = kCons == 2 ? 24 : 32;
  static constexpr int kConsumerRegs = kCons == 2 ? 240 : 160;
  static constexpr int kNotApplicable = -1;

  static_assert(IsSame<T, f16>::value || IsSame<T, bf16>::value, "T must be ckgen::f16 or ckgen::bf16");
  static_assert(kD == 64 || kD == 128 || kD == 256, "the Hopper body takes kHeadDim 64, 128 or 256");
  static_assert(kBM == 128 || kBM == 192, "kSm90BlockM: 2 or 3 consumer warpgroups of 64 rows (128 or 192)");
  static_assert(kBN == 64 || kBN == 128, "kSm90BlockN must be 64 or 128");
  static_assert(kS >= 2, "kSm90Stages must be >= 2");
  static_assert(kSmemBytes == Cfg::kSm90SmemBytes, "kSm90SmemBytes (planned) differs from what this body lays out");
  static_assert(128 * (kProducerRegs + kCons * kConsumerRegs) <= 65536, "register reallocation over the SM's file");
  static_assert(!Cfg::kVarlen, "the Hopper body takes dense batches (varlen kernels keep the mma.sync body)");

#if defined(CKGEN_NV_WGMMA)
  // Warpgroup w's barrier (named barrier 1 + w; barrier 0 is the block's).
  static CKGEN_DEVICE void wg_sync(int w) { asm volatile("bar.sync %0, 128;\n" ::"r"(1 + w) : "memory"); }
  // Every consumer warpgroup's barrier (named barrier 1 + kCons, after the warpgroups').
  static CKGEN_DEVICE void consumers_sync() {
    asm volatile("bar.sync %0, %1;\n" ::"n"(1 + kCons), "n"(128 * kCons) : "memory");
  }
  static CKGEN_DEVICE void sts32(uint32_t addr, uint32_t v) {
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
  }
  static CKGEN_DEVICE uint32_t lds32(uint32_t addr) {
    uint32_t v;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
    return v;
  }
  static CKGEN_DEVICE void lds128(uint32_t addr, uint32_t (&w)[4]) {
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "r"(addr)
                 : "memory");
  }
  static CKGEN_DEVICE void sts128(uint32_t addr, const uint32_t (&w)[4]) {
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
                 : "memory");
  }
  static CKGEN_DEVICE float lds_elem(uint32_t addr) {
    uint16_t v;
    asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(addr) : "memory");
    return to_float(bit_cast<T>(v));
  }
  static CKGEN_DEVICE void sts_elem(uint32_t addr, float x) {
    asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(addr), "h"(bit_cast<uint16_t>(from_float<T>(x))) : "memory");
  }
  // Byte address of element (r, col) of the warpgroup's Q rows (q_base): 64-column boxes of 128-byte rows, the
  // 16-byte chunks swizzled by the row (as TMA wrote them).
  static CKGEN_DEVICE uint32_t q_elem(uint32_t q_base, int r, int col) {
    return q_base + (col >> 6) * kBM * 128 + r * 128 + ((((col & 63) >> 3) ^ (r & 7)) << 4) + (col & 7) * 2;
  }
  // Rotary Cfg (attn::kRope<Cfg>): once Q landed, the warpgroup's 64 rows rotated in place (attention_rope.h; rows
  // past the sequence stay zeros), then the proxy fence (generic-proxy writes before wgmma's async-proxy reads)
  // and the warpgroup's barrier. Each warpgroup's S products read only its own rows. The table reads are issued
  // before the wait for Q (q_full), so that their latency overlaps its copy.
  static CKGEN_DEVICE void rope_q(const Args& p, uint32_t q_base, int wg, int m0, int b, int tid, uint32_t q_full,
                                  uint32_t q_phase, bool& bad) {
    if constexpr (attn::RopeChunks<Cfg::kRopeStyle, Cfg::kRopeDim>::kOk)
      rope_q_chunks(p, q_base, m0 + wg * 64, b, tid, q_full, q_phase, bad);
    else
      rope_q_pairs(p, q_base, m0 + wg * 64, b, tid, q_full, q_phase, bad);
    nv::fence_proxy_async_shared();
    wg_sync(wg);
  }
  // rope_q where the rotary dim splits into 16-byte units (attn::RopeChunks: rot a multiple of 16 for neox, of 8 for
  // gptj): two threads per row, each taking every other unit of it, two units (16 or 8 pairs) at a time: their table
  // values read at once (16-byte loads where aligned; the first two units' before the wait for Q, so that their
  // latency overlaps its copy), then 16-byte shared loads and stores (the 128-byte swizzle keeps a chunk whole; a
  // warp's 16 rows x 2 units fill each 128-byte wavefront with 8 distinct chunks). (All of a thread's units at once,
  // 64 table values at rot 128, spilled 60 bytes under the body's 168 registers: sm_90a, nvcc 13.)
  static CKGEN_DEVICE void rope_q_chunks(const Args& p, uint32_t q_base, int row0, int b, int tid, uint32_t q_full,
                                         uint32_t q_phase, bool& bad) {
    using R = attn::RopeChunks<Cfg::kRopeStyle, Cfg::kRopeDim>;
    constexpr int kMine = (R::kUnits + 1) / 2, kAtOnce = 2;  // units of this thread (the last may lie past the row's)
    const int r = (tid & 127) >> 1, u0 = tid & 1;
    const bool live = row0 + r < p.seqlen_q;
    const float* cs = nullptr;
    if (live)  // (a position outside the table: the block traps once its tiles are done, see Ring)
      cs = attn::rope_row_or_first(p.cos_sin, p.cs_pos_stride, attn::query_position<Cfg>(p, b, row0 + r),
                                   p.rope_positions, bad);
    const bool wide = R::vec_ok(p.cos_sin, p.cs_pos_stride);
#pragma unroll
    for (int k0 = 0; k0 < kMine; k0 += kAtOnce) {
      float c[kAtOnce][R::kPairs], s[kAtOnce][R::kPairs];
#pragma unroll
      for (int k = 0; k < kAtOnce; ++k)
        if (live && u0 + 2 * (k0 + k) < R::kUnits) R::read(cs, u0 + 2 * (k0 + k), c[k], s[k], wide);
      if (k0 == 0) nv::mbar_wait(q_full, q_phase);
      if (!live) return;
#pragma unroll
      for (int k = 0; k < kAtOnce; ++k) {
        const int u = u0 + 2 * (k0 + k);
        if (u >= R::kUnits) break;
        uint32_t x[4], y[4];
        const uint32_t xa = q_elem(q_base, r, R::x_col(u));
        lds128(xa, x);
        if constexpr (R::kNeox) {
          const uint32_t ya = q_elem(q_base, r, R::y_col(u));
          lds128(ya, y);
          R::template rotate<T>(x, y, c[k], s[k]);
          sts128(ya, y);
        } else {
          R::template rotate<T>(x, y, c[k], s[k]);
        }
        sts128(xa, x);
      }
    }
  }
  // rope_q for other rotary dims: a thread's pairs go 16 at a time (attn::RopeBatch): the table reads of a batch (a
  // position, then its cosine and sine) are all issued before any rotation, so their latencies overlap (one after
  // another they cost about 30 us per tile), and those of the first batch before the wait for Q.
  static CKGEN_DEVICE void rope_q_pairs(const Args& p, uint32_t q_base, int row0, int b, int tid, uint32_t q_full,
                                        uint32_t q_phase, bool& bad) {
    constexpr int kHalf = Cfg::kRopeDim / 2;
    using Batch = attn::RopeBatch<Cfg::kRopeStyle, Cfg::kRopeDim, 64 * kHalf, 128, 16>;
#pragma unroll 1
    for (int i0 = tid & 127; i0 < Batch::kPairs; i0 += Batch::kStep) {
      Batch batch;
      batch.read(i0, [&](int r, const float*& cs) {
        if (row0 + r >= p.seqlen_q) return false;
        cs = attn::rope_row_or_first(p.cos_sin, p.cs_pos_stride, attn::query_position<Cfg>(p, b, row0 + r),
                                     p.rope_positions, bad);
        return true;
      });
      nv::mbar_wait(q_full, q_phase);  // (at once after the first batch)
      batch.apply(i0, [&](int r, int col) { return lds_elem(q_elem(q_base, r, col)); },
              [&](int r, int col, float v) { sts_elem(q_elem(q_base, r, col), v); });
    }
    nv::mbar_wait(q_full, q_phase);  // a thread without pairs (rot < 4) has not waited yet
  }
#endif

  // Pairs of query tiles (the grid rule above): ceil(tiles / 2) per head and batch item. Host and device.
  static __host__ __device__ long long pair_count(int seqlen_q, int heads, int batch) {
    const long long mt = (seqlen_q + kBM - 1) / kBM;
    return (mt + 1) / 2 * heads * batch;
  }
  // The block's query tiles in the order of the grid rule: `while (tiles.next(m0, h, b))` gives each one's first
  // query row m0, head h and batch item b (without kPersistent: the block's one tile).
  struct Tiles {
    int mt, half, heads, t = -1;  // query tiles per head and item, whole pairs of them; t: the pair's tile (-1: none)
    long long whole, pairs, q;    // whole pairs in all (first), pairs in all (then each head's middle tile when mt is
                                  // odd: the light units close the walk), the current pair
    CKGEN_DEVICE explicit Tiles(const Args& p)
        : mt((p.seqlen_q + kBM - 1) / kBM), half(mt / 2), heads(p.heads),
          whole(static_cast<long long>(half) * p.heads * p.batch), pairs(pair_count(p.seqlen_q, p.heads, p.batch)),
          q(block_id(0)) {}
    CKGEN_DEVICE bool next(int& m0, int& h, int& b) {
      if constexpr (!kPersistent) {
        m0 = (grid_dim(0) - 1 - block_id(0)) * kBM;
        h = block_id(1);
        b = block_id(2);
        return t++ < 0;
      } else {
        return next_pair_tile(m0, h, b);
      }
    }
    // The persistent walk's next tile (the grid rule above).
    CKGEN_DEVICE bool next_pair_tile(int& m0, int& h, int& b) {
      for (; q < pairs; q += grid_dim(0), t = -1) {
        long long hb;
        int first, second;  // the pair's tiles: the i-th from the end, then the i-th (a middle tile: itself alone)
        if (q < whole) {
          const int i = static_cast<int>(q % half);
          hb = q / half;
          first = mt - 1 - i;
          second = i;
        } else {
          hb = q - whole;
          first = second = half;
        }
        if (t < 0 || t > second) {
          t = t < 0 ? first : second;
          h = static_cast<int>(hb % heads);
          b = static_cast<int>(hb / heads);
          m0 = t * kBM;
          return true;
        }
      }
      return false;
    }
  };

  static CKGEN_DEVICE void run(const TensorMap& tq, const TensorMap& tk, const TensorMap& tv, const TensorMap& to,
                               const Args& p) {
#if defined(CKGEN_NV_WGMMA)
    extern __shared__ __align__(1024) unsigned char ckgen_attn_smem[];
    const uint32_t s0 = (nv::smem_addr(ckgen_attn_smem) + 1023u) & ~1023u;
    const Bars bars{s0 + kBarOff};
    const int tid = thread_id();
    const int warp = tid >> 5;
    if (tid == 0) {
      nv::mbar_init(bars.q_full, 1);
      nv::mbar_init(bars.q_empty(), kCons);  // one arrive per consumer warpgroup
      for (int s = 0; s < kS; ++s) {
        nv::mbar_init(bars.k_full() + 8 * s, 1);  // the producer's arrive + the TMA bytes
        nv::mbar_init(bars.v_full() + 8 * s, 1);
        nv::mbar_init(bars.k_empty() + 8 * s, 4 * kCons);  // one arrive per consumer warp
        nv::mbar_init(bars.v_empty() + 8 * s, 4 * kCons);
      }
      if constexpr (Src::kChecked) sts32(bars.bad(), 0u);
      nv::mbar_init_fence();
    }
    barrier();
    if (warp / 4 == kCons) {
      nv::setmaxnreg_dec<kProducerRegs>();
      if (tid == 128 * kCons) produce(tq, tk, tv, p, s0, bars);
    } else {
      nv::setmaxnreg_inc<kConsumerRegs>();
      Ring ring;
      Tiles tiles(p);
      int m0, h, b;
      while (tiles.next(m0, h, b)) consume(to, p, s0, bars, ring, m0, h, b);
      if (ring.bad_position) trap(attn::kQueryPositionError);
      if constexpr (Src::kChecked)  // a bad length (this thread's walk) or page (the producer's flag)
        if (ring.bad_kv || lds32(bars.bad()) != 0) trap(Src::kError);
      if ((tid & 127) == 0) nv::bulk_wait<0>();  // the shared memory stays the block's until the stores have read it
    }
#else
    __trap();  // the host entry launches this kernel only on sm_90 devices, where the sm_90a code runs
#endif
  }

#if defined(CKGEN_NV_WGMMA)
  // The block's mbarriers (shared addresses, at fixed offsets from the first: no registers of their own), and after
  // them the source's error flag (bad(): a 32-bit word in the alignment slack, of which at least 16 bytes follow the
  // mbarriers: the dynamic shared memory starts 16-byte aligned).
  struct Bars {
    uint32_t q_full;
    CKGEN_DEVICE uint32_t q_empty() const { return q_full + 8; }
    CKGEN_DEVICE uint32_t k_full() const { return q_full + 16; }
    CKGEN_DEVICE uint32_t k_empty() const { return q_full + 16 + 8 * kS; }
    CKGEN_DEVICE uint32_t v_full() const { return q_full + 16 + 16 * kS; }
    CKGEN_DEVICE uint32_t v_empty() const { return q_full + 16 + 24 * kS; }
    CKGEN_DEVICE uint32_t bad() const { return q_full + 16 + 32 * kS; }
  };
  // Where a thread is in the block's run of tiles: K/V tiles and query tiles passed (stage = kv % S, phase = its
  // parity of kv / S; the Q tile's phase: the parity of tiles).
  // bad_position: a rotary position outside the table was met (rope_q reads row 0 instead), bad_kv: the source
  // met a bad length (Src::mask): the thread traps after its last tile (a trap site inside the loop over tiles makes
  // ptxas spill the main loop's registers).
  struct Ring {
    int kv = 0, tiles = 0;
    bool bad_position = false, bad_kv = false;
  };

  // The producer's thread: per tile of the block, K and V of every visited K/V tile, and Q after the first K (so
  // that a K/V stage freed before the Q tile is does not wait for it). What a K/V tile's copies need (Src::tile: a
  // paged cache's block-table entries, prefetched) is made before the wait for its stage, so that its latency
  // overlaps the wait. A bad
  // page id (the copies then bring zeros: TMA fills coordinates outside the map) sets the block's flag, read by the
  // consumers after their walk (a trap site in this loop makes ptxas spill it).
  static CKGEN_DEVICE void produce(const TensorMap& tq, const TensorMap& tk, const TensorMap& tv, const Args& p,
                                   uint32_t s0, const Bars& bars) {
    Ring ring;
    Tiles tiles(p);
    bool bad = false;  // (a bad length: the consumers find it too)
    int m0, h, b;
    while (tiles.next(m0, h, b)) {
      const attn::Mask mask = Src::mask(p, b, bad);
      const int r1 = m0 + kBM < p.seqlen_q ? m0 + kBM : p.seqlen_q;
      const attn::TileWalk<kBN> walk(mask, m0, r1);
      const int hk = Cfg::kGqa ? h / (p.heads / p.heads_kv) : h;
      auto load_q = [&] {
        nv::mbar_wait(bars.q_empty(), (ring.tiles & 1) ^ 1);
        nv::mbar_expect_tx(bars.q_full, kQBytes);
#pragma unroll
        for (int x = 0; x < kDBoxes; ++x) nv::tma_load_4d(s0 + x * kBM * 128, &tq, 64 * x, m0, h, b, bars.q_full);
      };
      if (walk.nt == 0) load_q();
      for (int j = 0; j < walk.nt; ++j, ++ring.kv) {
        const int st = ring.kv % kS;
        const uint32_t ph = (ring.kv / kS) & 1;
        const typename Src::Tile kv = Src::tile(p, mask, b, walk.n0(j));
        const int bytes = Src::bytes(kv);
        nv::mbar_wait(bars.k_empty() + 8 * st, ph ^ 1);
        nv::mbar_expect_tx(bars.k_full() + 8 * st, bytes);
        Src::load(p, tk, s0 + kKOff + st * kKVBytes, kv, hk, bars.k_full() + 8 * st, bad);
        if (Src::kChecked && bad) sts32(bars.bad(), 1u);  // before the arrives below: the consumers trap after
        if (j == 0) load_q();
        nv::mbar_wait(bars.v_empty() + 8 * st, ph ^ 1);
        nv::mbar_expect_tx(bars.v_full() + 8 * st, bytes);
        Src::load(p, tv, s0 + kVOff + st * kKVBytes, kv, hk, bars.v_full() + 8 * st, bad);
      }
      ++ring.tiles;
    }
  }

  // Src::kZeroTail: the walk's first K/V tile (the one that may hold the sequence's last key) has `keep` rows of
  // keys; the consumer warpgroups zero its V rows from `keep` on (what the copies brought from past the keys, or
  // an earlier tile's rows where no page was read) once V landed, so that O += P.V adds 0 x 0 there and never a
  // NaN of a stale row, then meet (named barrier 1 + kCons, after the proxy fence) before either reads V. Whole
  // 128-byte rows: the swizzle permutes 16-byte chunks within a row.
  static CKGEN_DEVICE void zero_v_tail(uint32_t s0, const Bars& bars, int keep, int st, uint32_t ph, int tid) {
    if (keep >= kBN) return;  // the same for every consumer thread (one mask, one tile)
    const int first = keep > 0 ? keep : 0;
    const int per_box = (kBN - first) * 8;  // 16-byte chunks of one 64-column box's rows [first, kBN)
    const uint32_t vb = s0 + kVOff + st * kKVBytes;
    const uint32_t zero[4] = {0u, 0u, 0u, 0u};
    nv::mbar_wait(bars.v_full() + 8 * st, ph);
    for (int i = tid; i < per_box * kDBoxes; i += 128 * kCons) {
      const int x = i / per_box, c = i % per_box;
      sts128(vb + x * kBN * 128 + (first + c / 8) * 128 + (c % 8) * 16, zero);
    }
    nv::fence_proxy_async_shared();
    consumers_sync();
  }

  // A consumer thread's part of the query tile at row m0 of head h, item b.
  static CKGEN_DEVICE void consume(const TensorMap& to, const Args& p, uint32_t s0, const Bars& bars, Ring& ring,
                                   int m0, int h, int b) {
    const int tid = thread_id();
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int wg = warp >> 2;                         // consumer warpgroup: tile rows 64 wg ..
    const int wl = warp & 3;                          // warp in it: 16 rows each
    const int g = lane >> 2, t4 = lane & 3;
    const int row = m0 + wg * 64 + wl * 16 + g;       // sequence row of the lane's h = 0 values (h = 1: + 8)
    const float sl2 = p.scale * attn::kLog2e;
    const uint32_t q_base = s0 + wg * 64 * 128;
    const uint32_t o_base = (kOBuf ? s0 + kOOff : s0) + wg * 64 * 128;
    const attn::Mask mask = Src::mask(p, b, ring.bad_kv);
    const int r1 = m0 + kBM < p.seqlen_q ? m0 + kBM : p.seqlen_q;
    const attn::TileWalk<kBN> walk(mask, m0, r1);
    const int kv0 = ring.kv;
    float o[kD / 2];
    float s[kBN / 2];
    uint32_t pa[kKK][4];
    float m_run[2] = {attn::kNegInf, attn::kNegInf}, l_run[2] = {0.0f, 0.0f};
    auto& s4 = *reinterpret_cast<f32x4_t(*)[kNB]>(s);
    auto& o4 = *reinterpret_cast<f32x4_t(*)[kDB]>(o);
    auto& pa4 = *reinterpret_cast<u32x4_t(*)[kKK]>(pa);
    // the ring's stage and phase of the walk's j-th K/V tile
    auto stage = [&](int j) { return (kv0 + j) % kS; };
    auto phase = [&](int j) -> uint32_t { return ((kv0 + j) / kS) & 1; };

    // S_j = Q . K_j^T into s (one commit group)
    auto issue_s = [&](int j) {
      const uint32_t kb = s0 + kKOff + stage(j) * kKVBytes;
#pragma unroll
      for (int i = 0; i < kBN / 2; ++i) s[i] = 0.0f;
      nv::wgmma_fence();
#pragma unroll
      for (int k = 0; k < kD / 16; ++k)
        nv::wgmma_m64k16<kBN, T, 0, 0>(s, nv::sw128_desc(q_base + (k >> 2) * kBM * 128 + 32 * (k & 3), nv::kLboUnused),
                                       nv::sw128_desc(kb + (k >> 2) * kBN * 128 + 32 * (k & 3), nv::kLboUnused));
      nv::wgmma_commit();
    };
    // O += P_j . V_j (one commit group)
    auto issue_pv = [&](int j) {
      const uint32_t vb = s0 + kVOff + stage(j) * kKVBytes;
      nv::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kKK; ++kk) nv::wgmma_rs_m64k16<kD, T, 1>(o, pa[kk], nv::sw128_desc(vb + 2048 * kk, kBN * 128));
      nv::wgmma_commit();
    };
    // mask (tiles with a hidden pair only) and the online softmax of S_j; alpha rescales O
    auto softmax = [&](int j, float (&alpha)[2]) {
      const int n0 = walk.n0(j);
      if (walk.needs_mask(n0)) attn_nv::mask_rows<kNB>(s4, mask, row, n0, t4);
      attn_nv::softmax_rows<kNB>(s4, m_run, l_run, sl2, alpha, lane);
    };
    auto release = [&](uint32_t bar, int j) {
      if (lane == 0) nv::mbar_arrive(bar + 8 * stage(j));
    };

    // Q landed (also before the epilogue when there is no key); rope_q waits itself, after its first table reads
    if constexpr (attn::kRope<Cfg>)
      rope_q(p, q_base, wg, m0, b, tid, bars.q_full, ring.tiles & 1, ring.bad_position);
    else
      nv::mbar_wait(bars.q_full, ring.tiles & 1);
#pragma unroll
    for (int i = 0; i < kD / 2; ++i) o[i] = 0.0f;
    const int nt = walk.nt;
    if (nt > 0) {
      float alpha[2];
      nv::mbar_wait(bars.k_full() + 8 * stage(0), phase(0));
      issue_s(0);
      nv::wgmma_wait<0>();
      release(bars.k_empty(), 0);
      softmax(0, alpha);
      attn_nv::pack_p<T, kKK>(s4, pa4);
      if constexpr (Src::kZeroTail) zero_v_tail(s0, bars, mask.sk - walk.n0(0), stage(0), phase(0), tid);
#pragma unroll 1
      for (int j = 1; j < nt; ++j) {
        nv::mbar_wait(bars.k_full() + 8 * stage(j), phase(j));
        issue_s(j);
        nv::mbar_wait(bars.v_full() + 8 * stage(j - 1), phase(j - 1));
        issue_pv(j - 1);
        nv::wgmma_wait<1>();  // S_j is complete, the product may still run
        release(bars.k_empty(), j);
        softmax(j, alpha);
        nv::wgmma_wait<0>();
        release(bars.v_empty(), j - 1);
        attn_nv::rescale_rows<kDB>(o4, alpha);
        attn_nv::pack_p<T, kKK>(s4, pa4);
      }
      nv::mbar_wait(bars.v_full() + 8 * stage(nt - 1), phase(nt - 1));
      issue_pv(nt - 1);
      nv::wgmma_wait<0>();
      release(bars.v_empty(), nt - 1);
    }
    ring.kv = kv0 + nt;
    ++ring.tiles;

    // ---- epilogue: O / l -> T -> the warpgroup's rows of the O (or Q) tile (swizzled as TMA reads it) -> TMA
    // stores, by the warpgroup's first thread (`leader`), which also frees the Q tile
    const bool leader = wl == 0 && lane == 0;
    if (kOBuf && leader) nv::bulk_wait_read<0>();  // the previous tile's stores have read the O tile
    wg_sync(wg);  // every wgmma of the warpgroup (the readers of its Q rows) is complete
    if (kOBuf && leader) nv::mbar_arrive(bars.q_empty());
    float inv[2];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      float lse;
      inv[hh] = attn_nv::finish_quad_row(m_run[hh], l_run[hh], p.scale, lse, lane);
      const int r = row + 8 * hh;
      if (p.LSE != nullptr && t4 == 0 && r < p.seqlen_q)
        gstore(p.LSE + b * p.lse_batch_stride + h * p.lse_head_stride + r, lse);
    }
#pragma unroll
    for (int nb = 0; nb < kDB; ++nb)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int r = wl * 16 + g + 8 * hh;  // row in the warpgroup's 64
        const uint32_t addr = o_base + (nb >> 3) * kBM * 128 + r * 128 + (((nb & 7) ^ (r & 7)) << 4) + 4 * t4;
        sts32(addr, pack2<T>(o[4 * nb + 2 * hh] * inv[hh], o[4 * nb + 2 * hh + 1] * inv[hh]));
      }
    nv::fence_proxy_async_shared();
    wg_sync(wg);
    if (leader) {
#pragma unroll
      for (int x = 0; x < kDBoxes; ++x) nv::tma_store_4d(&to, o_base + x * kBM * 128, 64 * x, m0 + wg * 64, h, b);
      nv::bulk_commit();
      if (!kOBuf) {
        nv::bulk_wait_read<0>();  // the stores have read the Q tile's rows: the next Q may land there
        nv::mbar_arrive(bars.q_empty());
      }
    }
  }
#endif

  // ------------------------------------------------------------------------------------------ host side
  // Launches `kernel` (the generated `<kernel>_tma` entry) and returns a ckgen status, or kNotApplicable (nothing
  // launched) when the device is not sm_90, the driver has no tensor maps, the source does not take the call
  // (Src::applicable; DenseKv: seqlen_k is 0), seqlen_q is 0, or a base or a stride of Q, K, V, O is not 16-byte
  // aligned. The caller (the host entry) checked the sizes and the heads.
  template <class Kernel>
  static int launch(Kernel kernel, const Args& p, void* stream) {
    if (p.seqlen_q <= 0 || p.heads > 65535 || p.batch > 65535 || !Src::applicable(p)) return kNotApplicable;
    int sms = 0;
    if (!nv::sm90_device(&sms)) return kNotApplicable;  // (the portable path reports a failed query)
    CUtensorMap tq, tk, tv, tom;
    if (!encode_rows<kD>(&tq, p.Q, p.seqlen_q, p.heads, p.batch, p.q_seq_stride, p.q_head_stride, p.q_batch_stride,
                         kBM) ||
        !Src::encode_kv(&tk, &tv, p) ||
        !encode_rows<kD>(&tom, p.O, p.seqlen_q, p.heads, p.batch, p.o_seq_stride, p.o_head_stride, p.o_batch_stride,
                         64))
      return kNotApplicable;
    static int configured = 0;  // the kernel's shared-memory limit, raised once (cuda_host::launch)
    if constexpr (!kPersistent)
      return cuda_host::launch(kernel, &configured, static_cast<unsigned>((p.seqlen_q + kBM - 1) / kBM),
                               static_cast<unsigned>(p.heads), static_cast<unsigned>(p.batch), kThreads, kSmemBytes,
                               stream, tq, tk, tv, tom, p);
    const long long pairs = pair_count(p.seqlen_q, p.heads, p.batch);  // the persistent grid: one block per SM
    return cuda_host::launch(kernel, &configured, static_cast<unsigned>(pairs < sms ? pairs : sms), 1u, 1u, kThreads,
                             kSmemBytes, stream, tq, tk, tv, tom, p);
  }
};

}  // namespace attn_sm90
}  // namespace ckgen

// The `<name>_tma` device entry of a Cfg planned with the Hopper body `Body` (Fwd<Cfg> or Fwd<Cfg, a source>; the
// kernel template emits one line; the tensor maps travel as __grid_constant__ parameters).
#define CKGEN_ATTENTION_SM90_BODY_ENTRY(name, Body, Cfg)                                                        \
  extern "C" __global__ void __launch_bounds__(Body::kThreads, 1) name##_tma(                                   \
      const __grid_constant__ ::ckgen::nv::TensorMap tq, const __grid_constant__ ::ckgen::nv::TensorMap tk,     \
      const __grid_constant__ ::ckgen::nv::TensorMap tv, const __grid_constant__ ::ckgen::nv::TensorMap to,     \
      const ::ckgen::attn::Args<Cfg> p) {                                                                       \
    Body::run(tq, tk, tv, to, p);                                                                               \
  }
#define CKGEN_ATTENTION_SM90_ENTRY(name, Cfg) CKGEN_ATTENTION_SM90_BODY_ENTRY(name, ::ckgen::attn_sm90::Fwd<Cfg>, Cfg)
