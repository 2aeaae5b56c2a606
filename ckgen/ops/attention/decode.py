"""``op = attention_decode``: attention for serving decode, served by the attention package.

A step of one to a few query tokens per sequence against a long KV cache: the query heads that share a KV head
are packed into one workgroup's rows (GQA packing: row r of KV head hk is query head ``hk * group + r //
seqlen_q``, token ``r % seqlen_q``), the keys of a sequence are split over ``splits`` workgroups when batch x
heads_kv leaves the GPU idle (split-KV, flash-decoding), and the partial outputs are combined with their
log-sum-exps by the last workgroup of each row tile, in split order (deterministic). K and V are contiguous per
sequence or kept in pages of ``page_size`` tokens with a block table (paged KV cache); every sequence has its own
length (``seqlens_k``). The split is chosen per call from the shape (the target's CU count) unless the call passes
``num_splits`` (``decode_abi.py``).

The tiling and its checks are the attention op's (``plan.py``: tile, instruction, waves, LDS, registers) with the
decode defaults below; the device bodies are ``device/attention_decode_amd.h`` (AMD MFMA, also the emulator) and
``device/attention_decode_nv.h`` (NVIDIA mma.sync with the cp.async ring, also the emulator as warps of 32), which
run the prefill bodies' score / softmax / P.V stages on each K/V tile (NVIDIA ``warp_split = keys``: the warps share
16 or 32 rows and each runs them on its slice of the tile's keys, ``device/attention_decode_nv_keys.h``);
``device/attention_decode_common.h`` holds what they share (the contract, the packed rows, the split hand-off).
Optional per-sequence query counts (``seqlens_q``) let one batch mix decode steps and prefill chunks. With
``rope``, Q is rotated as it is loaded, at position ``seqlens_k[b] - sq + token`` (the tokens are the last sq of the
sequence); K is read as the cache holds it, rotated by ``attention_kv_append``. ``kv_append.py`` is the op that
writes a step's keys and values into the cache.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ckgen.codegen.escape import bool_literal
from ckgen.frontend import values as V
from ckgen.ir.op import BuildContext, Key, Op
from ckgen.ir.plan import Entry, KernelPlan
from ckgen.ir.spec import KernelSpec, Value
from ckgen.ir.target import Target
from ckgen.ir.types import DType
from ckgen.lower.draft import run_passes
from ckgen.ops.attention import decode_abi as _abi
from ckgen.ops.attention import decode_reference as _ref
from ckgen.ops.attention import plan as _plan
from ckgen.ops.attention import reference as _attn_ref
from ckgen.ops.attention.body import AttentionPlan, cfg_members, k_swizzle_member, wgmma_members
from ckgen.ops.attention.rope import parse as parse_rope
from ckgen.ops.attention.spec import (
    BODY_CHOICES,
    DTYPES,
    GRID_CHOICES,
    HEAD_DIMS,
    AttentionConfig,
    AttentionSpec,
)
from ckgen.ops.attention.spec import KEYS as SPEC_KEYS

MASKS = ("none", "causal")
#: how the waves of a workgroup share a K/V tile: rows (each its own 16-row blocks, every key) or keys (NVIDIA: the
#: 16 or 32 rows shared, each wave N / waves keys; the waves' softmax states merged after the walk)
WARP_SPLITS = ("rows", "keys")
#: warp_split = keys without a written tile, per head dim: 16 rows x 64 keys over 4 warps of 16 keys (d256: 32 keys
#: over 2 warps, as the row split's 32-key tiles: 72 KiB of shared memory with 2 stages). A written tile may have 32
#: rows (plan.KEY_SPLIT_BLOCKS: two m16 blocks per warp, for MQA / wide GQA groups that fill more than 16 rows), d64
#: and d128 (d256: O alone would take 256 registers)
KEY_SPLIT_TILE = {64: ((16, 64), 4), 128: ((16, 64), 4), 256: ((16, 32), 2)}
PAGE_SIZES = (16, 32, 64, 128, 256)
#: the decode body per target platform: (header in device/, entry template)
BODIES = {"amd": ("attention_decode_amd.h", "ckgen::attention_decode_amd"),
          "cuda": ("attention_decode_nv.h", "ckgen::attention_decode_nv")}
#: the header of a kernel with the Hopper prefill entry (it includes the NVIDIA decode body's)
PREFILL_HEADER = "attention_decode_sm90.h"
#: decode defaults per (platform, head dim): (rows, keys) per workgroup and waves, 16 rows per wave (a group of
#: query heads x a few tokens); keys per tile shrink with the head dim so that the next tile's loads and O^T stay
#: in registers. AMD with one LDS buffer (gfx942, clang-19: 194, 148 and 186 VGPRs, 18 KiB of LDS: 2, 3 and 2
#: waves per SIMD; two buffers would take 36 KiB, one workgroup per CU, one wave per SIMD)
DEFAULT_TILE = {("amd", 64): ((32, 64), 2), ("amd", 128): ((64, 32), 4), ("amd", 256): ((64, 16), 4),
                ("cuda", 64): ((32, 64), 2), ("cuda", 128): ((32, 64), 2), ("cuda", 256): ((32, 32), 2)}
#: NVIDIA: Q fragments in registers (16 rows per warp: 32 registers at d128), two cp.async stages

KEYS = (
    Key("dtype", "f16 or bf16 (Q, K, V, O; f32 accumulation, f32 LSE)", required=True),
    Key("head_dim", "64, 128 or 256", required=True),
    Key("mask", "none or causal (the query tokens aligned to the end of the keys)", default_text="none"),
    Key("page_size", "16, 32, 64, 128 or 256: K and V in pages of this many tokens with a block table",
        default_text="contiguous K/V"),
    Key("tile", "MxN: packed query rows per workgroup x keys per K/V tile (AMD: N <= page_size)",
        default_text="planned per target and head dim (AMD: N at most page_size)"),
    Key("waves", "waves per workgroup, all along the rows (warp_split = keys: along the keys of a tile)",
        default_text="planned"),
    Key("warp_split", "rows or keys: how the waves share a K/V tile; keys (NVIDIA): tile M = 16 or 32, every wave "
        "all M rows and N / waves keys of each tile (N a multiple of 16 x waves), the waves' softmax states merged "
        "at the end (decode with few KV heads per batch: GQA 16 rows, MQA 32)", default_text="rows"),
    Key("lds_buffers", "K/V tiles in LDS: 1 or 2 on AMD, 1..4 cp.async stages on NVIDIA",
        default_text="planned per target"),
    Key("instr", "MxNxK of an f32-accumulating matrix instruction of the target, or auto", default_text="planned"),
    Key("waves_per_eu", "AMD: at least this many waves per SIMD (1..8)", default_text="planned per target"),
    Key("q_in_regs", "NVIDIA: true or false, Q fragments held in registers (else re-read from shared memory)",
        default_text="true (false: d256; warp_split = keys at 32 rows and d128, paged or > 16 keys per warp)"),
    Key("kv_barriers", "NVIDIA: barriers per K/V tile, 2 or 1 (lds_buffers >= 2)", default_text="planned"),
    Key("rope", "rotate Q as it is loaded at positions seqlens_k - seqlens_q + token (K comes rotated, by "
        "attention_kv_append) with the table cos_sin: neox, gptj, neox(rot), gptj(rot), true (= neox) or false",
        default_text="false"),
    Key("body", "mma_sync, auto or wgmma: auto and wgmma add the Hopper prefill entry (TMA + wgmma, sm_90; no rope), "
        "which the host entry runs for a call with one split, no seqlens_q and seqlen_q >= half its query tile "
        "(prefill chunks); wgmma refuses a kernel it cannot take", default_text="mma_sync (the decode body alone)"),
    *(k for k in SPEC_KEYS if k.name in ("wgmma_tile", "wgmma_stages", "wgmma_grid")),
)


@dataclass(frozen=True)
class DecodeParams:
    """The problem (``attn``: dtype, head dim, mask), the tiling as written (``config``) and the page size (0:
    contiguous K/V)."""

    attn: AttentionSpec
    config: AttentionConfig
    page_size: int = 0
    warp_split: str = "rows"

    def __post_init__(self) -> None:
        if self.attn.mask not in MASKS or self.attn.varlen or (self.page_size and self.page_size not in PAGE_SIZES):
            raise ValueError("DecodeParams: mask none/causal, no varlen, page_size 0 or 16..256 (powers of 2)")
        if self.warp_split not in WARP_SPLITS:
            raise ValueError(f"DecodeParams: warp_split is one of {', '.join(WARP_SPLITS)}")

    def to_json(self) -> dict:
        return {"attention": self.attn.to_json(), "config": self.config.to_json(), "page_size": self.page_size,
                "warp_split": self.warp_split}


def read_problem(v: dict[str, Value], op: str) -> tuple[DType, int, int]:
    """dtype, head_dim and page_size (0: not written) of a kernel of ``op``, each refused by name with the legal
    values (the keys attention_decode and attention_kv_append share)."""
    dt = V.dtype(v["dtype"], "dtype")
    if dt not in DTYPES:
        raise V.err(f"dtype = {dt.value}: {op} takes f16 or bf16", v["dtype"].span, "legal: f16, bf16")
    hd = V.integer(v["head_dim"], "head_dim", 1, 1 << 16)
    if hd not in HEAD_DIMS:
        raise V.err(f"head_dim = {hd}: not supported", v["head_dim"].span, "legal: 64, 128, 256")
    page = 0
    if "page_size" in v:
        page = V.integer(v["page_size"], "page_size", 1, 1 << 20)
        if page not in PAGE_SIZES:
            raise V.err(f"page_size = {page}: not supported", v["page_size"].span,
                        f"legal: {', '.join(map(str, PAGE_SIZES))}")
    return dt, hd, page


def build_params(v: dict[str, Value], ctx: BuildContext) -> DecodeParams:
    dt, hd, page = read_problem(v, "attention_decode")
    mask = V.word(v["mask"], "mask", MASKS) if "mask" in v else "none"
    instr = None
    if "instr" in v and not (v["instr"].kind == "call" and v["instr"].data == ("auto", ())):
        instr = V.dims(v["instr"], "instr", 3)
    tile = V.dims(v["tile"], "tile", 2) if "tile" in v else None
    cfg = AttentionConfig(
        tile=tile,
        waves=V.integer(v["waves"], "waves", 1, 32) if "waves" in v else None,
        lds_buffers=V.integer(v["lds_buffers"], "lds_buffers", 1, 8) if "lds_buffers" in v else None,
        instr=instr,
        waves_per_eu=V.integer(v["waves_per_eu"], "waves_per_eu", 1, 8) if "waves_per_eu" in v else None,
        q_in_regs=V.boolean(v["q_in_regs"], "q_in_regs") if "q_in_regs" in v else None,
        kv_barriers=V.integer(v["kv_barriers"], "kv_barriers", 1, 2) if "kv_barriers" in v else None,
        body=V.word(v["body"], "body", BODY_CHOICES) if "body" in v else "mma_sync",
        wgmma_tile=V.dims(v["wgmma_tile"], "wgmma_tile", 2) if "wgmma_tile" in v else None,
        wgmma_stages=V.integer(v["wgmma_stages"], "wgmma_stages", 1, 8) if "wgmma_stages" in v else None,
        wgmma_grid=V.word(v["wgmma_grid"], "wgmma_grid", GRID_CHOICES) if "wgmma_grid" in v else None,
    )
    rope = parse_rope(v["rope"], hd) if "rope" in v else None
    split = V.word(v["warp_split"], "warp_split", WARP_SPLITS) if "warp_split" in v else "rows"
    return DecodeParams(AttentionSpec(dt, hd, mask, rope=rope), cfg, page, split)


def _decode_defaults(d: _plan.AttentionDraft) -> None:
    """The decode tiling where the kernel leaves it out: DEFAULT_TILE (AMD: keys per tile at most the page size), a
    16-row instruction on AMD, Q in registers (NVIDIA, but d256), LDS buffers (AMD 1, NVIDIA 2); a written AMD tile
    wider than a page is refused. ``warp_split = keys`` (refused on AMD) sets the draft's ``split_keys`` (the
    attention passes then check and estimate a wave's share of the keys) and takes KEY_SPLIT_TILE."""
    cfg = d.cfg
    (bm, bn), waves = DEFAULT_TILE[(d.target.platform, d.a.head_dim)]
    page = d.spec.params.page_size
    if d.spec.params.warp_split == "keys":
        if d.amd:
            raise d.fail("warp_split", "keys", "rows (or leave it out)",
                         "the AMD decode body splits its waves along the rows only (keys: the NVIDIA body)")
        d.split_keys = True
        (bm, bn), waves = KEY_SPLIT_TILE[d.a.head_dim]
    planned = []
    if cfg.tile is None:  # AMD: a K/V tile lies in one page
        cfg = replace(cfg, tile=(bm, min(bn, page) if page and d.amd else bn))
        planned.append("tile")
    elif page and d.amd and cfg.tile[1] > page:
        raise d.fail("tile", f"{cfg.tile[0]}x{cfg.tile[1]}", f"tile N <= page_size = {page}",
                     "the AMD body reads a K/V tile from one page")
    if cfg.waves is None and "tile" in planned:
        cfg = replace(cfg, waves=waves)
        planned.append("waves")
    if cfg.instr is None and d.amd:  # 16 query rows per instruction: a group of query heads rarely fills 32
        bn = cfg.tile[1]
        sixteen = [i for i in _plan._body_instructions(d) if i.m == 16]
        sixteen = [i for i in sixteen if bn % i.k == 0] + [i for i in sixteen if bn % i.k]  # one that fits the keys
        if sixteen:
            cfg = replace(cfg, instr=sixteen[0].shape)
            planned.append("instr")
    if not d.amd and cfg.q_in_regs is None:
        cfg = replace(cfg, q_in_regs=d.a.head_dim < 256)
        planned.append("q_in_regs")
    if cfg.lds_buffers is None:  # AMD: one buffer (the next tile waits in registers) lets 2-3 workgroups share a CU
        cfg = replace(cfg, lds_buffers=1 if d.amd else 2)
        planned.append("lds_buffers")
    d.spec = replace(d.spec, params=replace(d.spec.params, config=cfg))
    d.planned.extend(planned)


def _key_split_q_place(d: _plan.AttentionDraft) -> None:
    """warp_split = keys at 32 rows and d128 (O of two m16 blocks: 128 registers): a planned q_in_regs becomes false
    over a paged cache (the page ids of three tiles stay in registers) or with more than 16 keys per warp. ptxas
    (sm_90, 2 stages) with Q in registers / in shared memory: 32x64 waves 4 contiguous 255 registers, no spill (kept);
    paged 16: 255 with 40/68 bytes spilled / 253, none; 32x128 waves 4: 255, 212/304 / 252, none; 32x128 waves 8
    paged 16: 255, 108/84 / 252, none."""
    if not (d.split_keys and d.tile[0] > 16 and d.a.head_dim >= 128 and d.q_in_regs and "q_in_regs" in d.planned):
        return
    if d.spec.params.page_size or d.tile[1] // d.waves > 16:
        d.q_in_regs = False


def _prefill_body(d: _plan.AttentionDraft) -> None:
    """``body = auto | wgmma``: the Hopper prefill entry (``device/attention_decode_sm90.h``), planned by the
    attention op's pass (its tile, stages and grid, written or from its table). It reads Q as loaded, so not with
    ``rope`` (the decode body rotates Q)."""
    _plan.plan_wgmma_body(d, ("rope", "Q rotated as it is loaded (rope: the decode body rotates it)")
                          if d.a.rope is not None else None)


#: the attention op's passes after the decode defaults, the key split's Q placement before the register estimate,
#: the Hopper prefill entry last
PASSES = (_decode_defaults,) + tuple(p for p in _plan.PASSES if p not in (_plan.plan_wgmma_body,
                                                                          _plan.estimate_registers)) + (
    _key_split_q_place, _plan.estimate_registers, _prefill_body)


def plan(spec: KernelSpec, target: Target) -> KernelPlan:
    d = run_passes(PASSES, _plan.AttentionDraft(spec, target))
    body = AttentionPlan(body=_plan.BODIES[target.platform], instr=d.instr, block_m=d.tile[0], block_n=d.tile[1],
                         waves=d.waves, lds_buffers=d.lds_buffers, q_in_regs=d.q_in_regs, waves_per_eu=d.waves_per_eu,
                         kv_barriers=d.kv_barriers, vec=d.vec, lds_k_stride=d.lds_k_stride, lds_k=d.lds_k,
                         lds_v_stride=d.lds_v_stride, lds_bytes=d.lds_bytes, mma_per_tile=d.mma_per_tile,
                         registers=d.registers, planned=tuple(dict.fromkeys(d.planned)), split_keys=d.split_keys,
                         wgmma=d.wgmma)
    threads = d.waves * target.wave_size
    entries = [Entry(spec.name, threads, d.lds_bytes),
               Entry(f"{spec.name}_combine", _abi.combine_threads(spec.params.attn.head_dim), 0, part_of=spec.name)]
    if d.wgmma is not None:
        entries.append(Entry(f"{spec.name}_tma", d.wgmma.threads, d.wgmma.smem_bytes, variant_of=spec.name))
    return KernelPlan(spec=spec, target=target, body=body, abi=_abi.abi(spec),
                      launch=_abi.launch(spec, threads, d.tile[0], d.tile[1],
                                         _abi.workers(target.cus, target.lds_bytes_per_cu, d.lds_bytes),
                                         tma=d.wgmma is not None),
                      entries=tuple(entries))


class DecodeOp(Op):
    name = "attention_decode"
    doc = "decode attention for serving: split-KV, GQA-packed rows, contiguous or paged KV cache"
    keys = KEYS
    kernel_template = "attention/decode_kernel.hip.j2"

    def build_params(self, values, ctx):
        return build_params(values, ctx)

    def plan(self, spec: KernelSpec, target: Target) -> KernelPlan:
        return plan(spec, target)

    def abi(self, spec: KernelSpec):
        return _abi.abi(spec)

    def summary(self, plan: KernelPlan) -> str:
        a, b, page = plan.spec.params.attn, plan.body, plan.spec.params.page_size
        kv = f"pages of {page}" if page else "contiguous K/V"
        rope = f", RoPE {a.rope.text} on Q" if a.rope else ""
        split = ", warp_split keys" if b.split_keys else ""
        w = b.wgmma
        hopper = (f"; Hopper prefill entry {w.block_m}x{w.block_n}, {w.stages} stages"
                  f"{', persistent' if w.persistent else ''}" if w is not None else "")
        return (f"{a.dtype.value} d{a.head_dim}, mask {a.mask}, {kv}{rope}, split-KV; tile {b.block_m}x{b.block_n}, "
                f"waves {b.waves}{split}, lds_buffers {b.lds_buffers}, instr {b.instr.shape_text}{hopper}")

    def kernel_view(self, plan: KernelPlan) -> dict:
        """The Cfg of the decode body: the prefill AMD body's members (its stages run each K/V tile) plus
        kPageSize (0: contiguous) and kCombineLanes (the combine kernel's lanes per 4 columns); with the Hopper
        prefill entry also the Hopper body's members."""
        a, b, t = plan.spec.params.attn, plan.body, plan.target
        i, amd = b.instr, t.platform == "amd"
        extra, ints = cfg_members(b, a.head_dim, t.wave_size, plan.threads, amd)
        types = [("T", a.dtype.cpp), *extra]
        w_ints, w_bools, w_notes = wgmma_members(b.wgmma)
        ints += [("kPageSize", plan.spec.params.page_size), ("kCombineLanes", _abi.COMBINE_LANES), *w_ints]
        constants = [("int", n, str(v)) for n, v in ints]
        constants += [("bool", n, bool_literal(v)) for n, v in w_bools]
        constants += k_swizzle_member(b) if amd else []
        if not amd:
            constants += [("bool", "kQInRegs", bool_literal(b.q_in_regs)), ("bool", "kWarpSplitKeys", bool_literal(b.split_keys))]
        constants += [("int", "kMask", f"ckgen::attn::kMask{a.mask.capitalize()}"), ("bool", "kVarlen", "false"),
                      ("bool", "kGqa", "true")]
        constants += a.rope.constants() if a.rope else []
        notes = [f"instruction {i.mnemonic}, {b.mma_per_tile} per wave and K/V tile; LDS {b.lds_bytes} bytes "
                 f"({b.lds_buffers} K/V buffer(s)); {plan.threads} threads; planned: {', '.join(b.planned) or 'none'}.",
                 *(f"prefill entry: {n}" for n in w_notes)]
        header, impl = BODIES[t.platform]
        return {"types": types, "constants": constants, "header": PREFILL_HEADER if b.wgmma else header,
                "impl": impl, "mma_builtins": [i.builtin] if i.builtin_in_cfg else [], "notes": notes,
                "combine_threads": plan.entries[1].threads, "tma_entry": b.wgmma is not None}

    def reference(self, plan: KernelPlan, arrays: dict[str, np.ndarray], sizes: dict[str, int]):
        return _ref.reference(plan, arrays, sizes)

    def tolerance(self, plan: KernelPlan, output: str) -> float:
        return _attn_ref.tolerance(plan, output)  # (O and LSE as prefill's)

    def error(self, plan: KernelPlan, output: str, got: np.ndarray, ref: np.ndarray) -> float:
        return _attn_ref.error(output, got, ref)  # (O and LSE as prefill's)

    def random_inputs(self, plan: KernelPlan, sizes: dict[str, int], rng: np.random.Generator):
        return _ref.random_inputs(plan, sizes, rng)


OP = DecodeOp()
