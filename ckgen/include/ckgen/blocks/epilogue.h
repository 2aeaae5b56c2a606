// ckgen/blocks/epilogue.h: element-wise epilogue operations applied to alpha*acc (+ beta*C) before the cast.
//
// The epilogue's operand (Operand<Cfg>, what the bodies pass along as `bias`): the bias pointer, or for a Cfg that
// declares `using EpiOperand = epi::Scaled<TBias, kScaleA, kScaleB>` the bias pointer with the scale pointers
// (fp8 GEMM scalings: acc * scale_a * scale_b before alpha, beta and the chain).
//
// A Cfg with `using EpiOperand = epi::Residual<TBias, TC>` (epilogue `... -> residual`) passes the bias pointer with
// the residual R: value() adds R at C's element after the chain (D = chain(alpha * acc + beta * C) + R).
//
// A Cfg with `using EpiOperand = epi::Rotary<TBias>` (rope = gptj(kRopeHead[, kRopeDim])) passes the bias pointer
// with the rotary inputs: the finished values of columns (2i, 2i + 1) of a row are rotated as a pair (rope_pair; on
// bodies whose lanes hold one column each, rope_lane with the neighbour's value) when 2i < cols and
// 2i % kRopeHead < kRopeDim, at the row's position: pair i' = (2i % kRopeHead) / 2 of table row positions[row] (the
// table: ckgen/ir/rope.py, vLLM's cos_sin_cache layout).
//
// Gated epilogues (swiglu, geglu): a Cfg with `using Gate = epi::Silu` (or Gelu) and `kGateBlock` has B of 2 N
// columns and C of N: C = Gate(chain(gate)) * chain(up) (+ R), the chain (a bias at most) applied to the gate and
// the up value at their own columns of B. Output column o takes gate column gate_col(o) and up column
// gate_col(o) + up_shift(N): halves (kGateBlock 0) o and N + o; interleaved(b) (o / b) * 2b + o % b and + b.
// The bodies arrange B's tile so that each lane holds both accumulators of its output columns
// (blk::GatedRows, ckgen/blocks/tile_loader.h) and call finish_gated / gated_value with the pair.
//
// Each op:  template <class Cfg> static CKGEN_DEVICE float apply(float v, int row, int col, Operand<Cfg> bias);
// and `static constexpr bool kReads`: whether apply reads memory (a bias). row/col are global C coordinates, in
// bounds (row < M, col < N) whenever the chain reads memory; a chain that reads none may also be evaluated past
// M / N on values the caller then discards (an epilogue whose store clips, e.g. TMA).
// Chain<Ops...> applies Ops left to right; Chain<> is the identity.
#pragma once

#include "ckgen/blocks/activation.h"
#include "ckgen/blocks/fp8.h"
#include "ckgen/blocks/rope.h"
#include "ckgen/platform.h"

namespace ckgen {
namespace epi {

// Scale kinds of Scaled: none, one value for the whole operand (scale[0]), one per row of A (scale[row], length M)
// or per column of B (scale[col], length N).
constexpr int kScaleNone = 0;
constexpr int kScaleTensor = 1;
constexpr int kScaleRow = 2;
constexpr int kScaleCol = 3;
constexpr int kScaleBlock = 4;   // A: per row and 128 K's (M x kb); B: per 128 x 128 block (nb x kb)
constexpr int kScaleBlockK = 128;
constexpr int kScaleMx = 5;      // OCP MX: E8M0 bytes, A M x kb, B N x kb per 32 K's; the scaled MFMA applies them
constexpr int kScaleMxK = 32;

// The element type of a scale kind's tensor: f32, or an E8M0 byte for MX scales.
template <int kKind>
struct ScaleElem {
  using type = float;
};
template <>
struct ScaleElem<kScaleMx> {
  using type = uint8_t;
};

// The epilogue operand of a scaled GEMM: the bias pointer (null without a bias), the f32 scale pointers, and the
// product of the per-tensor scales (1 for the others), read from device memory at every launch (so that a captured
// graph replays with new scales) by make(). `+ d` moves the bias only (batch items share the scales); `bool` tells
// whether there is a bias.
template <class TBias, int kA, int kB>
struct Scaled {
  static constexpr int kScaleA = kA;
  static constexpr int kScaleB = kB;
  static constexpr bool kBlock = kA == kScaleBlock;
  static constexpr bool kMx = kA == kScaleMx;  // (then kB is too: the planner pairs them)
  using TScale = typename ScaleElem<kA>::type;
  const TBias* bias;
  const TScale* scale_a;
  const TScale* scale_b;
  float tensor_scale;
  long long ld_a;  // block scales: leading dimensions of scale_a (M x kb) and scale_b (nb x kb)
  long long ld_b;
  static CKGEN_DEVICE Scaled make(const TBias* bias, const TScale* scale_a, const TScale* scale_b, long long ld_a = 0,
                                  long long ld_b = 0) {
    const float ta = kA == kScaleTensor ? gload(scale_a) : 1.0f;
    const float tb = kB == kScaleTensor ? gload(scale_b) : 1.0f;
    return Scaled{bias, scale_a, scale_b, ta * tb, ld_a, ld_b};
  }
  // Block scales: the factor of K block kb at C's (row, col) (row < M, col < N).
  CKGEN_DEVICE float block(int row, int col, int kb) const {
    return gload(scale_a + row * ld_a + kb) * gload(scale_b + (col / kScaleBlockK) * ld_b + kb);
  }
  CKGEN_DEVICE Scaled operator+(long long d) const {
    return Scaled{bias + d, scale_a, scale_b, tensor_scale, ld_a, ld_b};
  }
  CKGEN_DEVICE explicit operator bool() const { return bias != nullptr; }
  // Group g of a grouped GEMM whose rows start at row0 of A: A's row scales from row0 on; B's scales per group, one
  // (kScaleTensor) or a row of N (kScaleCol, ld_b apart); the bias as it was (the caller moves it).
  CKGEN_DEVICE Scaled group(long long row0, long long g) const {
    const TScale* sa = kA == kScaleRow ? scale_a + row0 : scale_a;
    const TScale* sb = kB == kScaleCol ? scale_b + g * ld_b : kB == kScaleTensor ? scale_b + g : scale_b;
    const float ta = kA == kScaleTensor ? gload(scale_a) : 1.0f;
    const float tb = kB == kScaleTensor ? gload(sb) : 1.0f;
    return Scaled{bias, sa, sb, ta * tb, ld_a, ld_b};
  }
};

// The epilogue operand of group g (rows from row0) of a grouped GEMM: Scaled::group for scaled kernels; the others
// carry nothing per group beyond the bias.
template <class Op>
CKGEN_DEVICE Op for_group(const Op& op, long long, long long) {
  return op;
}
template <class TBias, int kA, int kB>
CKGEN_DEVICE Scaled<TBias, kA, kB> for_group(const Scaled<TBias, kA, kB>& op, long long row0, long long g) {
  return op.group(row0, g);
}

// Whether the operand carries MX scales (the body hands them to the scaled MFMA; the epilogue then scales by 1).
template <class T>
struct IsMxScaled {
  static constexpr bool value = false;
};
template <class TBias, int kA, int kB>
struct IsMxScaled<Scaled<TBias, kA, kB>> {
  static constexpr bool value = Scaled<TBias, kA, kB>::kMx;
};

// Whether the operand carries block scales (the body folds them per K block; the epilogue then scales by 1).
template <class T>
struct IsBlockScaled {
  static constexpr bool value = false;
};
template <class TBias, int kA, int kB>
struct IsBlockScaled<Scaled<TBias, kA, kB>> {
  static constexpr bool value = Scaled<TBias, kA, kB>::kBlock;
};

// The epilogue operand of a kernel whose chain ends in `-> residual`: the bias pointer, the residual R and C's
// pointer at the kernel entry. R is laid out as C (dtype, leading dimension, batch / group strides), so the
// residual of C's element at p is R[p - c_base]: the bodies' moves of C (batch items, groups, tiles) apply to R
// without knowing about it. `+ d` moves the bias only; `bool` tells whether there is a bias.
template <class TBias, class TC>
struct Residual {
  const TBias* bias;
  const TC* r;
  const TC* c_base;
  static CKGEN_DEVICE Residual make(const TBias* bias, const TC* r, const TC* c) { return Residual{bias, r, c}; }
  // R's element at C's element c + off (c anywhere inside C)
  CKGEN_DEVICE TC at(const TC* c, long long off) const { return gload(ptr(c, off)); }
  CKGEN_DEVICE const TC* ptr(const TC* c, long long off) const { return r + ((c + off) - c_base); }
  CKGEN_DEVICE Residual operator+(long long d) const { return Residual{bias + d, r, c_base}; }
  CKGEN_DEVICE explicit operator bool() const { return bias != nullptr; }
};

template <class T>
struct IsResidual {
  static constexpr bool value = false;
};
template <class TBias, class TC>
struct IsResidual<Residual<TBias, TC>> {
  static constexpr bool value = true;
};

// The epilogue operand of a rotary Cfg (rope = gptj(...)): the bias pointer, each row's position, the cos / sin
// table (positions rows, cs_stride apart) and the columns rotated from 0. `+ d` moves the bias only.
template <class TBias>
struct Rotary {
  const TBias* bias;
  const int* positions;
  const float* cos_sin;
  int npos;
  int cols;
  long long cs_stride;
  static CKGEN_DEVICE Rotary make(const TBias* bias, const int* positions, const float* cos_sin, int npos, int cols,
                                  long long cs_stride) {
    return Rotary{bias, positions, cos_sin, npos, cols, cs_stride};
  }
  CKGEN_DEVICE Rotary operator+(long long d) const { return Rotary{bias + d, positions, cos_sin, npos, cols, cs_stride}; }
  CKGEN_DEVICE explicit operator bool() const { return bias != nullptr; }
};

template <class T>
struct IsRotary {
  static constexpr bool value = false;
};
template <class TBias>
struct IsRotary<Rotary<TBias>> {
  static constexpr bool value = true;
};

template <class T>
struct IsScaled {
  static constexpr bool value = false;
};
template <class TBias, int kA, int kB>
struct IsScaled<Scaled<TBias, kA, kB>> {
  static constexpr bool value = true;
};

template <class Cfg, class = void>
struct OperandOf {
  using type = const typename Cfg::TBias*;
};
template <class Cfg>
struct OperandOf<Cfg, decltype(void(static_cast<typename Cfg::EpiOperand*>(nullptr)))> {
  using type = typename Cfg::EpiOperand;
};
// What the GEMM bodies pass to the epilogue: const TBias* unless the Cfg declares its EpiOperand.
template <class Cfg>
using Operand = typename OperandOf<Cfg>::type;

// Row-bound epilogues: a body whose thread finishes few rows of a tile may read a row scale (scale_a = row) once per
// row instead of once per output. RowBound<Cfg>::type is the Cfg whose operand has that row's scale folded into its
// tensor scale (kScaleTensor: scale_at then reads nothing), made by bind(op, row, M) (0 for a row past M, read
// nowhere); for any other Cfg it is Cfg itself and bind returns the operand.
template <class Cfg, class Op = Operand<Cfg>>
struct RowBound {
  using type = Cfg;
  static CKGEN_DEVICE Op bind(const Op& op, int, int) { return op; }
};
template <class Cfg, class TBias, int kB>
struct RowBound<Cfg, Scaled<TBias, kScaleRow, kB>> {
  using Bound = Scaled<TBias, kScaleTensor, kB>;
  struct type : Cfg {
    using EpiOperand = Bound;
  };
  static CKGEN_DEVICE Bound bind(const Scaled<TBias, kScaleRow, kB>& s, int row, int M) {
    return Bound{s.bias, nullptr, s.scale_b, s.tensor_scale * (row < M ? gload(s.scale_a + row) : 0.0f), s.ld_a,
                 s.ld_b};
  }
};
// Whether Cfg's epilogue rotates (rope = gptj(...): its operand is an epi::Rotary).
template <class Cfg>
constexpr bool rotary() {
  return IsRotary<Operand<Cfg>>::value;
}

template <class T>
CKGEN_DEVICE const T* bias_ptr(const T* p) {
  return p;
}
template <class T, int kA, int kB>
CKGEN_DEVICE const T* bias_ptr(const Scaled<T, kA, kB>& s) {
  return s.bias;
}
template <class T, class TC>
CKGEN_DEVICE const T* bias_ptr(const Residual<T, TC>& s) {
  return s.bias;
}
template <class T>
CKGEN_DEVICE const T* bias_ptr(const Rotary<T>& s) {
  return s.bias;
}

// The scale factor of the element (row, col): scale_a's times scale_b's (1 without scales). row/col in bounds.
template <class Op>
CKGEN_DEVICE float scale_at(const Op&, int, int) {
  return 1.0f;
}
template <class T, int kA, int kB>
CKGEN_DEVICE float scale_at(const Scaled<T, kA, kB>& s, int row, int col) {
  const float a = kA == kScaleRow ? gload(s.scale_a + row) : 1.0f;
  const float b = kB == kScaleCol ? gload(s.scale_b + col) : 1.0f;
  return s.tensor_scale * a * b;
}

// bias[row]: one value per row of C (length M).
struct BiasRow {
  static constexpr bool kReads = true;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float v, int row, int /*col*/, Operand<Cfg> bias) {
    return v + to_float(gload(bias_ptr(bias) + row));
  }
};

// bias[col]: one value per column of C (length N).
struct BiasCol {
  static constexpr bool kReads = true;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float v, int /*row*/, int col, Operand<Cfg> bias) {
    return v + to_float(gload(bias_ptr(bias) + col));
  }
};

struct Relu {
  static constexpr bool kReads = false;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float v, int, int, Operand<Cfg>) {
    return act::relu(v);
  }
};

// GELU, tanh form (ckgen/blocks/activation.h).
struct Gelu {
  static constexpr bool kReads = false;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float x, int, int, Operand<Cfg>) {
    return act::gelu_tanh(x);
  }
};

// SiLU: x * sigmoid(x) (ckgen/blocks/activation.h).
struct Silu {
  static constexpr bool kReads = false;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float x, int, int, Operand<Cfg>) {
    return act::silu(x);
  }
};

template <class... Ops>
struct Chain;

template <>
struct Chain<> {
  static constexpr bool kEmpty = true;
  static constexpr bool kReads = false;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float v, int, int, Operand<Cfg>) {
    return v;
  }
};

template <class Op, class... Rest>
struct Chain<Op, Rest...> {
  static constexpr bool kEmpty = false;
  static constexpr bool kReads = Op::kReads || Chain<Rest...>::kReads;
  template <class Cfg>
  static CKGEN_DEVICE float apply(float v, int row, int col, Operand<Cfg> bias) {
    return Chain<Rest...>::template apply<Cfg>(Op::template apply<Cfg>(v, row, col, bias), row, col, bias);
  }
};

template <class T>
struct IsInt {
  static constexpr bool value = false;
};
template <>
struct IsInt< ::int8_t> {
  static constexpr bool value = true;
};
template <>
struct IsInt< ::int32_t> {
  static constexpr bool value = true;
};

// Whether a scaled operand's scales are read per output (row, column, block or MX scales; per-tensor scales are
// read once, by make(), and a bias is the chain's read).
template <class T>
struct ReadsScales {
  static constexpr bool value = false;
};
template <class TBias, int kA, int kB>
struct ReadsScales<Scaled<TBias, kA, kB>> {
  static constexpr bool value = kA > kScaleTensor || kB > kScaleTensor;
};

// Whether the epilogue of Cfg reads memory: beta * C, a bias, per-output scales or a residual. When it does not,
// value() may run past M / N.
template <class Cfg>
constexpr bool reads_memory() {
  return Cfg::kBeta != 0.0f || Cfg::Epilogue::kReads || ReadsScales<Operand<Cfg>>::value ||
         IsResidual<Operand<Cfg>>::value || IsRotary<Operand<Cfg>>::value;
}

// ---------------------------------------------------------------- the rotary epilogue
// Whether the pair holding column col (head dim d = col % kRopeHead) is rotated: both its outputs lie in C (`in`),
// col is below rope_cols and d below kRopeDim.
template <class Cfg>
CKGEN_DEVICE bool rope_rotates(const Operand<Cfg>& r, int col, int d, bool in) {
  return in && col < r.cols && d < Cfg::kRopeDim;
}

// The cosine and sine a rotated pair gets when its row's position lies outside the table: a quiet NaN.
CKGEN_DEVICE float rope_outside() { return bit_cast<float>(0x7fc00000u); }

// The cosine and sine of the pair holding column col of row `row` (c = 1, s = 0: not rotated, also when `in` is
// false: the pair is not wholly inside C; NaN: the row's position lies outside the table). The table is read only
// for a rotated pair of a row inside it. (The Hopper body's TMA-store epilogue gathers a tile's entries into shared
// memory instead: gemm_sm90_tma_store.h, finish_rotated.)
template <class Cfg>
CKGEN_DEVICE void rope_angle(const Operand<Cfg>& r, int row, int col, bool in, float& c, float& s) {
  const int d = col % Cfg::kRopeHead;
  c = 1.0f;
  s = 0.0f;
  if (!rope_rotates<Cfg>(r, col, d, in)) return;
  const int pos = gload(r.positions + row);
  if (pos < 0 || pos >= r.npos) {
    c = s = rope_outside();
    return;
  }
  const float* cs = r.cos_sin + static_cast<long long>(pos) * r.cs_stride + d / 2;
  c = gload(cs);
  s = gload(cs + Cfg::kRopeDim / 2);
}

// The finished values v0, v1 of (row, col), (row, col + 1), col even, rotated as a pair when both are in C (`in`).
template <class Cfg>
CKGEN_DEVICE void rope_pair(float& v0, float& v1, int row, int col, bool in, const Operand<Cfg>& r) {
  float c, s;
  rope_angle<Cfg>(r, row, col, in, c, s);
  rope_rotate(v0, v1, c, s);
}

// The finished value v of (row, col) rotated, p being its partner's (column col ^ 1 of the row): a lane that holds
// one column of the pair (`in`: both are in C, else v is returned as is).
template <class Cfg>
CKGEN_DEVICE float rope_lane(float v, float p, int row, int col, bool in, const Operand<Cfg>& r) {
  float c, s;
  rope_angle<Cfg>(r, row, col, in, c, s);
  return (col & 1) ? v * c + p * s : v * c - p * s;
}

// The value one accumulator gives C before the cast: alpha * acc (times the scales of a scaled operand), plus
// beta*C[off] when kBeta != 0 (C is read only then), then the chain, then the residual R (a Residual operand;
// with kAddResidual false the caller adds it, read its own way).
template <class Cfg, bool kAddResidual = true, class AccT>
CKGEN_DEVICE float value(AccT acc, int row, int col, const typename Cfg::TC* C, long long off,
                         Operand<Cfg> bias) {
  float v = Cfg::kAlpha * static_cast<float>(acc);
  if constexpr (IsScaled<Operand<Cfg>>::value) v = Cfg::kAlpha * (static_cast<float>(acc) * scale_at(bias, row, col));
  if constexpr (Cfg::kBeta != 0.0f) v += Cfg::kBeta * to_float(gload(C + off));
  v = Cfg::Epilogue::template apply<Cfg>(v, row, col, bias);
  if constexpr (kAddResidual && IsResidual<Operand<Cfg>>::value) v += to_float(bias.at(C, off));
  return v;
}

// ---------------------------------------------------------------- gated epilogues
// A derived Cfg's Gate that takes its base's away (declared, never defined: GateOf's sizeof test fails on it;
// sizeof(void) would not, being 1 in GNU C++).
struct NoGate;
template <class Cfg, class = void>
struct GateOf {
  static constexpr bool kGated = false;
  static constexpr int kBlock = 0;
};
template <class Cfg>
struct GateOf<Cfg, decltype(void(sizeof(typename Cfg::Gate)))> {
  static constexpr bool kGated = true;
  static constexpr int kBlock = Cfg::kGateBlock;
};
template <class Cfg>
constexpr bool gated() {
  return GateOf<Cfg>::kGated;
}
// How a body reads B: as gate and up columns (blk::GatedRows, in blocks of GateBlockOf) for a gated Cfg, and for
// the partial-sum Cfg of one (gemm_work.h PartialCfg: a split-K / stream-K piece keeps both halves raw, kGatedLoads,
// and applies no gate: its Gate is epi::NoGate).
CKGEN_CFG_OPTIONAL(GatedLoadsOf, kGatedLoads, bool, false);
CKGEN_CFG_OPTIONAL(GateBlockOf, kGateBlock, int, 0);
template <class Cfg>
constexpr bool gated_loads() {
  return gated<Cfg>() || GatedLoadsOf<Cfg>::value;
}
// The columns of C one tile writes: kTileN, or half of it (gate and up) for a gated Cfg.
template <class Cfg>
constexpr int out_tile_n() {
  return gated<Cfg>() ? Cfg::kTileN / 2 : Cfg::kTileN;
}
// B's gate column of output column o, and how far its up column lies beyond it (n: C's columns).
template <int kBlock>
CKGEN_DEVICE int gate_col(int o) {
  return kBlock ? (o / kBlock) * (2 * kBlock) + o % kBlock : o;
}
template <int kBlock>
CKGEN_DEVICE int up_shift(int n) {
  return kBlock ? kBlock : n;
}

// The value of output (row, col) from its gate and up accumulators: alpha (and the scales) on each, the chain on
// each at its own column of B, Gate(gate) * up, then the residual (kAddResidual: as value()). n: C's columns (N).
template <class Cfg, bool kAddResidual = true, class AccT>
CKGEN_DEVICE float gated_value(AccT gate, AccT up, int row, int col, int n, const typename Cfg::TC* C, long long off,
                               Operand<Cfg> op) {
  constexpr int kB = GateOf<Cfg>::kBlock;
  const int cg = gate_col<kB>(col);
  const int cu = cg + up_shift<kB>(n);
  float g = Cfg::kAlpha * static_cast<float>(gate);
  float u = Cfg::kAlpha * static_cast<float>(up);
  if constexpr (IsScaled<Operand<Cfg>>::value) {  // (tensor / row scales only: the same for gate and up)
    const float s = scale_at(op, row, cg);
    g *= s;
    u *= s;
  }
  g = Cfg::Epilogue::template apply<Cfg>(g, row, cg, op);
  u = Cfg::Epilogue::template apply<Cfg>(u, row, cu, op);
  float v = Cfg::Gate::template apply<Cfg>(g, row, col, op) * u;
  if constexpr (kAddResidual && IsResidual<Operand<Cfg>>::value) v += to_float(op.at(C, off));
  return v;
}

template <class Cfg, class AccT>
CKGEN_DEVICE typename Cfg::TC finish_gated(AccT gate, AccT up, int row, int col, int n, const typename Cfg::TC* C,
                                           long long off, Operand<Cfg> op) {
  return from_float<typename Cfg::TC>(gated_value<Cfg>(gate, up, row, col, n, C, off, op));
}

// The value one accumulator writes to C (shared by every GEMM body): value(), then the cast to TC. An integer
// GEMM with kIntegerEpilogue, an empty chain and integral alpha/beta stays exact (64-bit, then saturated).
template <class Cfg, class AccT>
CKGEN_DEVICE typename Cfg::TC finish(AccT acc, int row, int col, const typename Cfg::TC* C, long long off,
                                     Operand<Cfg> bias) {
  using TC = typename Cfg::TC;
  constexpr bool kIntExact = Cfg::kIntegerEpilogue && IsInt<TC>::value && Cfg::Epilogue::kEmpty &&
                             Cfg::kAlpha == static_cast<float>(static_cast<long long>(Cfg::kAlpha)) &&
                             Cfg::kBeta == static_cast<float>(static_cast<long long>(Cfg::kBeta));
  if constexpr (kIntExact) {
    long long v = static_cast<long long>(acc) * static_cast<long long>(Cfg::kAlpha);
    if constexpr (Cfg::kBeta != 0.0f) v += static_cast<long long>(Cfg::kBeta) * static_cast<long long>(gload(C + off));
    if constexpr (IsResidual<Operand<Cfg>>::value) v += static_cast<long long>(bias.at(C, off));
    return saturate_int<TC>(v);
  } else {
    return from_float<TC>(value<Cfg>(acc, row, col, C, off, bias));
  }
}

}  // namespace epi
}  // namespace ckgen
