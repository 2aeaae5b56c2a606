// attention_fwd_sm90.h (ckgen/ops/attention/device): fused attention forward for Hopper (sm_90a): TMA loads,
// warp specialization, wgmma, FlashAttention-3 style. The second entry of a kernel planned with the Hopper body
// (ckgen/ops/attention/plan.py, plan_wgmma_body): the generated source emits CKGEN_ATTENTION_SM90_ENTRY(name, Cfg),
// a kernel `<name>_tma`, and the host entry calls attn_sm90::Fwd<Cfg>::launch first; it launches that kernel when
// the device is sm_90 and the operands are TMA-addressable, and otherwise returns kNotApplicable (nothing
// launched) so that the mma.sync entry (attention_fwd_nv.h, same results) runs instead.
//
// Parameters, masks, numerics, LSE and the grid rule: attention_common.h (dense batches; a varlen kernel is never
// planned with this body: the C ABI has no total token count to bound the tensor maps with). Cfg members besides
// those of attention_fwd_nv.h (T, kHeadDim 64 or 128, kMask, kGqa):
//   kSm90BlockM      queries per block: 64 per consumer warpgroup, 2 or 3 consumer warpgroups (128 or 192)
//   kSm90BlockN      keys per K/V tile: 64 or 128 (the N of the S wgmma, the K of the O wgmma)
//   kSm90Stages      K/V tiles in flight (each a K and a V stage), >= 2
//   kSm90SmemBytes   the dynamic shared memory (checked against what this body lays out)
//   kRopeStyle, kRopeDim  only with rotary embedding (attention_rope.h): each consumer warpgroup rotates its 64 rows
//                    of the Q tile in shared memory once TMA landed them (rope_q), before its first wgmma
//
// Block (kThreads = 128 * (consumers + 1)), query tile (grid_x - 1 - block x) of head y, batch item z:
//   warpgroup `consumers` (the last), the producer: gives up registers (setmaxnreg), one thread issues the TMA
//     copies (128-byte swizzle; rows past the sequence arrive as zeros): Q once, then per visited K/V tile
//     (walked from the last down, masked tiles first, as the mma.sync body) K into stage j % S once the
//     consumers freed it ("k empty"), completing on "k full", then V likewise.
//   warpgroups 0 .. consumers-1: query rows 64w .. 64w+63 (setmaxnreg up). Per K/V tile j, with the product of
//     tile j-1 overlapping the softmax of tile j (FlashAttention-3's intra-warpgroup pipelining):
//       issue S_j = Q.K_j^T (wgmma from shared memory, kD/16 k16 steps); issue O += P_{j-1}.V_{j-1} (wgmma,
//       P from registers); wait for S_j, free K stage; mask (tiles with a hidden pair only), online softmax of
//       S_j (attn_nv::softmax_rows: the accumulator layout of wgmma is mma.sync's per warp); wait for the
//       product, free V stage; rescale O; P_j = S_j rounded to T (attn_nv::pack_p) ... and the last product.
//     Epilogue: O / l rounded to T into the warpgroup's rows of the Q tile (swizzled), one TMA store per
//     64-column box (rows past the sequence are not written), LSE straight from the lanes.
// Shared memory (1024-byte aligned): Q [kD/64 boxes of kBlockM rows x 128 B] | S x K [kD/64 boxes of kBlockN
// rows x 128 B] | S x V (the same) | mbarriers: q full, k full[S], k empty[S], v full[S], v empty[S].
// Operand forms (nv_wgmma.h): Q and K are K-major (d contiguous; k16 step k at box k/4, +32 (k%4) bytes); V is
// MN-major for O = P.V (keys are K, d is N: k16 step kk at +2048 kk, the next 64 d one box (kBlockN x 128 B)
// further: LBO).
#pragma once

#include "attention_fwd_nv.h"
#include "ckgen/blocks/nv_wgmma.h"

namespace ckgen {
namespace attn_sm90 {

using nv::TensorMap;

template <class Cfg>
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
  static constexpr int kBarOff = kVOff + kS * kKVBytes;
  static constexpr int kSmemBytes = 1024 + kBarOff + 8 * (1 + 4 * kS);  // 1024: alignment slack
  // register reallocation: producer down, consumers up, within the 64 K registers of the SM
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
  static CKGEN_DEVICE void sts32(uint32_t addr, uint32_t v) {
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
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
  // and the warpgroup's barrier. Each warpgroup's S products read only its own rows.
  // A thread's pairs go 16 at a time (attn::RopeBatch): the table reads of a batch (a position, then its cosine and
  // sine) are all issued before any rotation, so their latencies overlap (one after another they cost about 30 us
  // per tile), and those of the first batch before the wait for Q (q_full), so that they overlap its copy too.
  static CKGEN_DEVICE void rope_q(const Args& p, uint32_t q_base, int wg, int m0, int tid, uint32_t q_full) {
    constexpr int kHalf = Cfg::kRopeDim / 2;
    using Batch = attn::RopeBatch<Cfg::kRopeStyle, Cfg::kRopeDim, 64 * kHalf, 128, 16>;
    const int row0 = m0 + wg * 64;  // the sequence row of the warpgroup's first Q row
#pragma unroll 1
    for (int i0 = tid & 127; i0 < Batch::kPairs; i0 += Batch::kStep) {
      Batch b;
      b.read(i0, [&](int r, const float*& cs) {
        if (row0 + r >= p.seqlen_q) return false;
        cs = attn::query_rope_row<Cfg>(p, row0 + r);
        return true;
      });
      nv::mbar_wait(q_full, 0);  // (at once after the first batch)
      b.apply(i0, [&](int r, int col) { return lds_elem(q_elem(q_base, r, col)); },
              [&](int r, int col, float v) { sts_elem(q_elem(q_base, r, col), v); });
    }
    nv::mbar_wait(q_full, 0);  // a thread without pairs (rot < 4) has not waited yet
    nv::fence_proxy_async_shared();
    wg_sync(wg);
  }
#endif

  static CKGEN_DEVICE void run(const TensorMap& tq, const TensorMap& tk, const TensorMap& tv, const TensorMap& to,
                               const Args& p) {
#if defined(CKGEN_NV_WGMMA)
    extern __shared__ __align__(1024) unsigned char ckgen_attn_smem[];
    const uint32_t s0 = (nv::smem_addr(ckgen_attn_smem) + 1023u) & ~1023u;
    const uint32_t q_full = s0 + kBarOff;
    const uint32_t k_full = q_full + 8, k_empty = k_full + 8 * kS, v_full = k_empty + 8 * kS,
                   v_empty = v_full + 8 * kS;
    const int tid = thread_id();
    const int warp = tid >> 5;
    if (tid == 0) {
      nv::mbar_init(q_full, 1);
      for (int s = 0; s < kS; ++s) {
        nv::mbar_init(k_full + 8 * s, 1);  // the producer's arrive + the TMA bytes
        nv::mbar_init(v_full + 8 * s, 1);
        nv::mbar_init(k_empty + 8 * s, 4 * kCons);  // one arrive per consumer warp
        nv::mbar_init(v_empty + 8 * s, 4 * kCons);
      }
      nv::mbar_init_fence();
    }
    barrier();
    const int h = block_id(1), b = block_id(2);
    const int m0 = (grid_dim(0) - 1 - block_id(0)) * kBM;
    const int sq = p.seqlen_q, sk = p.seqlen_k;
    const attn::Mask mask = attn::make_mask<Cfg::kMask>(sq, sk, p.window_left, p.window_right);
    const int r1 = m0 + kBM < sq ? m0 + kBM : sq;
    const attn::TileWalk<kBN> walk(mask, m0, r1);
    if (warp / 4 == kCons) {
      nv::setmaxnreg_dec<kProducerRegs>();
      if (tid == 128 * kCons) {
        const int hk = Cfg::kGqa ? h / (p.heads / p.heads_kv) : h;
        nv::mbar_expect_tx(q_full, kQBytes);
#pragma unroll
        for (int x = 0; x < kDBoxes; ++x) nv::tma_load_4d(s0 + x * kBM * 128, &tq, 64 * x, m0, h, b, q_full);
        for (int j = 0; j < walk.nt; ++j) {
          const int st = j % kS;
          const uint32_t ph = (j / kS) & 1;
          const int n0 = walk.n0(j);
          nv::mbar_wait(k_empty + 8 * st, ph ^ 1);
          nv::mbar_expect_tx(k_full + 8 * st, kKVBytes);
#pragma unroll
          for (int x = 0; x < kDBoxes; ++x)
            nv::tma_load_4d(s0 + kKOff + st * kKVBytes + x * kBN * 128, &tk, 64 * x, n0, hk, b, k_full + 8 * st);
          nv::mbar_wait(v_empty + 8 * st, ph ^ 1);
          nv::mbar_expect_tx(v_full + 8 * st, kKVBytes);
#pragma unroll
          for (int x = 0; x < kDBoxes; ++x)
            nv::tma_load_4d(s0 + kVOff + st * kKVBytes + x * kBN * 128, &tv, 64 * x, n0, hk, b, v_full + 8 * st);
        }
      }
    } else {
      nv::setmaxnreg_inc<kConsumerRegs>();
      consume(to, p, s0, q_full, k_full, k_empty, v_full, v_empty, mask, walk, m0, h, b);
    }
#else
    __trap();  // the host entry launches this kernel only on sm_90 devices, where the sm_90a code runs
#endif
  }

#if defined(CKGEN_NV_WGMMA)
  static CKGEN_DEVICE void consume(const TensorMap& to, const Args& p, uint32_t s0, uint32_t q_full,
                                   uint32_t k_full, uint32_t k_empty, uint32_t v_full, uint32_t v_empty,
                                   const attn::Mask& mask, const attn::TileWalk<kBN>& walk, int m0, int h,
                                   int b) {
    const int tid = thread_id();
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int wg = warp >> 2;                         // consumer warpgroup: tile rows 64 wg ..
    const int wl = warp & 3;                          // warp in it: 16 rows each
    const int g = lane >> 2, t4 = lane & 3;
    const int row = m0 + wg * 64 + wl * 16 + g;       // sequence row of the lane's h = 0 values (h = 1: + 8)
    const float sl2 = p.scale * attn::kLog2e;
    const uint32_t q_base = s0 + wg * 64 * 128;
    float o[kD / 2];
    float s[kBN / 2];
    uint32_t pa[kKK][4];
    float m_run[2] = {attn::kNegInf, attn::kNegInf}, l_run[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < kD / 2; ++i) o[i] = 0.0f;
    auto& s4 = *reinterpret_cast<f32x4_t(*)[kNB]>(s);
    auto& o4 = *reinterpret_cast<f32x4_t(*)[kDB]>(o);
    auto& pa4 = *reinterpret_cast<u32x4_t(*)[kKK]>(pa);

    // S_j = Q . K_j^T into s (one commit group)
    auto issue_s = [&](int j) {
      const uint32_t kb = s0 + kKOff + (j % kS) * kKVBytes;
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
      const uint32_t vb = s0 + kVOff + (j % kS) * kKVBytes;
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
      if (lane == 0) nv::mbar_arrive(bar + 8 * (j % kS));
    };
    auto phase = [](int j) -> uint32_t { return (j / kS) & 1; };

    // Q landed (also before the epilogue reuses the Q tile when there is no key); rope_q waits itself, after its
    // first table reads
    if constexpr (attn::kRope<Cfg>)
      rope_q(p, q_base, wg, m0, tid, q_full);
    else
      nv::mbar_wait(q_full, 0);
    const int nt = walk.nt;
    if (nt > 0) {
      float alpha[2];
      nv::mbar_wait(k_full, 0);
      issue_s(0);
      nv::wgmma_wait<0>();
      release(k_empty, 0);
      softmax(0, alpha);
      attn_nv::pack_p<T, kKK>(s4, pa4);
#pragma unroll 1
      for (int j = 1; j < nt; ++j) {
        nv::mbar_wait(k_full + 8 * (j % kS), phase(j));
        issue_s(j);
        nv::mbar_wait(v_full + 8 * ((j - 1) % kS), phase(j - 1));
        issue_pv(j - 1);
        nv::wgmma_wait<1>();  // S_j is complete, the product may still run
        release(k_empty, j);
        softmax(j, alpha);
        nv::wgmma_wait<0>();
        release(v_empty, j - 1);
        attn_nv::rescale_rows<kDB>(o4, alpha);
        attn_nv::pack_p<T, kKK>(s4, pa4);
      }
      nv::mbar_wait(v_full + 8 * ((nt - 1) % kS), phase(nt - 1));
      issue_pv(nt - 1);
      nv::wgmma_wait<0>();
      release(v_empty, nt - 1);
    }

    // ---- epilogue: O / l -> T -> the warpgroup's rows of the Q tile (swizzled as TMA reads it) -> TMA stores
    wg_sync(wg);  // every wgmma of the warpgroup (the readers of its Q rows) is complete
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
        const uint32_t addr = q_base + (nb >> 3) * kBM * 128 + r * 128 + (((nb & 7) ^ (r & 7)) << 4) + 4 * t4;
        sts32(addr, pack2<T>(o[4 * nb + 2 * hh] * inv[hh], o[4 * nb + 2 * hh + 1] * inv[hh]));
      }
    nv::fence_proxy_async_shared();
    wg_sync(wg);
    if (wl == 0 && lane == 0) {
#pragma unroll
      for (int x = 0; x < kDBoxes; ++x) nv::tma_store_4d(&to, q_base + x * kBM * 128, 64 * x, m0 + wg * 64, h, b);
      nv::bulk_commit();
      nv::bulk_wait<0>();  // the shared memory stays the block's until the stores have read it
    }
  }
#endif

  // ------------------------------------------------------------------------------------------ host side
  // Launches `kernel` (the generated `<kernel>_tma` entry) and returns a ckgen status, or kNotApplicable (nothing
  // launched) when the device is not sm_90, the driver has no tensor maps, seqlen_k is 0, or a base or a stride of
  // Q, K, V, O is not 16-byte aligned. The caller (the host entry) checked the sizes, the heads and the grid.
  template <class Kernel>
  static int launch(Kernel kernel, const Args& p, void* stream) {
    if (p.seqlen_k <= 0 || p.seqlen_q <= 0) return kNotApplicable;
    if (!nv::sm90_device()) return kNotApplicable;  // (the portable path reports a failed query)
    CUtensorMap tq, tk, tv, tom;
    if (!encode(&tq, p.Q, p.seqlen_q, p.heads, p.batch, p.q_seq_stride, p.q_head_stride, p.q_batch_stride, kBM) ||
        !encode(&tk, p.K, p.seqlen_k, p.heads_kv, p.batch, p.k_seq_stride, p.k_head_stride, p.k_batch_stride, kBN) ||
        !encode(&tv, p.V, p.seqlen_k, p.heads_kv, p.batch, p.v_seq_stride, p.v_head_stride, p.v_batch_stride, kBN) ||
        !encode(&tom, p.O, p.seqlen_q, p.heads, p.batch, p.o_seq_stride, p.o_head_stride, p.o_batch_stride, 64))
      return kNotApplicable;
    static int configured = 0;  // the kernel's shared-memory limit, raised once (cuda_host::launch)
    return cuda_host::launch(kernel, &configured, static_cast<unsigned>((p.seqlen_q + kBM - 1) / kBM),
                             static_cast<unsigned>(p.heads), static_cast<unsigned>(p.batch), kThreads, kSmemBytes,
                             stream, tq, tk, tv, tom, p);
  }

  // A 4-D tensor map over [batch][seq][heads][d] with element strides (seq, head, batch) (any order: BSHD and
  // BHSD alike), boxes of 64 d x `rows` sequence rows of one head and item, 128-byte swizzle. False when the
  // base or a stride (of a dimension longer than 1) is not 16-byte aligned, or the driver refuses.
  static bool encode(CUtensorMap* map, const void* base, long long seq, long long heads, long long items,
                     long long ss, long long hs, long long bs, unsigned rows) {
    if (reinterpret_cast<uintptr_t>(base) % 16) return false;
    const long long extent[3] = {seq, heads, items};
    long long stride[3] = {ss * 2, hs * 2, bs * 2};
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
};

}  // namespace attn_sm90
}  // namespace ckgen

// The `<name>_tma` device entry of a Cfg planned with the Hopper body (the kernel template emits one line; the
// tensor maps travel as __grid_constant__ parameters).
#define CKGEN_ATTENTION_SM90_ENTRY(name, Cfg)                                                                   \
  extern "C" __global__ void __launch_bounds__(::ckgen::attn_sm90::Fwd<Cfg>::kThreads, 1) name##_tma(           \
      const __grid_constant__ ::ckgen::nv::TensorMap tq, const __grid_constant__ ::ckgen::nv::TensorMap tk,     \
      const __grid_constant__ ::ckgen::nv::TensorMap tv, const __grid_constant__ ::ckgen::nv::TensorMap to,     \
      const ::ckgen::attn::Args<Cfg> p) {                                                                       \
    ::ckgen::attn_sm90::Fwd<Cfg>::run(tq, tk, tv, to, p);                                                       \
  }
