"""The GEMM op's planning passes: (KernelSpec, Target) -> KernelPlan.

``PASSES`` is the whole pipeline, in order. Each pass takes the working :class:`GemmDraft`, checks one
concern or derives one part of the plan, and raises ``d.fail(...)`` (a ValidationError naming the parameter,
its value and what would be legal). :func:`plan` runs them and freezes the result. Arch knowledge comes only
from the :class:`Target` (numbers, instruction lists, features, platform).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from functools import partial

from ckgen.errors import CkgenError, ValidationError
from ckgen.ir.plan import Entry, KernelPlan
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import FEATURE_FP8_OCP, MatrixInstr, Target
from ckgen.ir.types import DType, Layout
from ckgen.lower.draft import Draft, run_passes
from ckgen.lower.lds_banks import mn_unit_elements
from ckgen.ops.gemm.abi import abi, grouped_launch, launch
from ckgen.ops.gemm.body import Body, GemmPlan, LdsPlan, RegisterEstimate, SchedulePlan, TmaBodyPlan
from ckgen.ops.gemm.fp4 import FP4, check_fp4, storage_view
from ckgen.ops.gemm.grouped import GroupPlan, body_of, plan_groups
from ckgen.ops.gemm.lds_layout import plan_gemm_lds
from ckgen.ops.gemm.registers import budget, estimate, register_features, smaller_tiles_hint
from ckgen.ops.gemm.schedule import plan_schedule
from ckgen.ops.gemm.spec import (
    GATE_BLOCKS,
    MX_BLOCK,
    SCALE_BLOCK,
    GemmParams,
    GemmSpec,
    TileConfig,
    gate_run,
    resolve_schedule,
)
from ckgen.ops.gemm.tma_body import plan_tma_body
from ckgen.targets import amd_targets, nvidia_targets
from ckgen.targets.amd import FEATURE_MFMA_SCALE_F8F6F4, MX_BLOCK_K, MX_INSTRUCTIONS

#: dtypes the GEMM kernel bodies generate code for (A/B inputs), and legal C dtypes per accumulator.
CODEGEN_INPUTS = (DType.F16, DType.BF16, DType.F32, DType.I8, DType.E4M3FN, DType.E5M2, DType.E4M3FNUZ, DType.E5M2FNUZ)
C_DTYPES = {DType.F32: (DType.F16, DType.BF16, DType.F32), DType.I32: (DType.I32, DType.I8, DType.F32)}
MAX_PREFETCH = 1
MAX_THREADS = 1024
VECTOR_BYTES = 16           # widest global access per lane
EPILOGUE_TYPES = {("bias", "row"): "ckgen::epi::BiasRow", ("bias", "col"): "ckgen::epi::BiasCol",
                  ("relu", None): "ckgen::epi::Relu", ("gelu", None): "ckgen::epi::Gelu",
                  ("silu", None): "ckgen::epi::Silu"}
#: the device body per target platform (a Target field): header in device/, entry, deepest LDS pipeline
BODIES = {
    "amd": Body("gemm_mfma.h", "ckgen::gemm_mfma", max_lds_buffers=2),
    "cuda": Body("gemm_mma_sm90.h", "ckgen::nv::gemm_mma", max_lds_buffers=6),
}
#: split-K / stream-K kernels enter through the schedule driver, which calls the platform's body per piece of work
SCHEDULED_ENTRY = ("gemm_schedule.h", "ckgen::gemm_sched::scheduled")


@dataclass
class GemmDraft(Draft):
    """Mutable working state of one GEMM lowering. Passes fill it; :func:`plan` freezes it."""

    instr: MatrixInstr | None = None
    vec: tuple[int, int, int] | None = None
    lds: LdsPlan | None = None
    registers: RegisterEstimate | None = None
    bias_dtype: DType | None = None
    integer_epilogue: bool = False
    epilogue_types: tuple[str, ...] = ()
    tma: TmaBodyPlan | None = None
    schedule: SchedulePlan | None = None
    grouping: GroupPlan | None = None
    why: tuple[str, ...] = ()

    @property
    def g(self) -> GemmSpec:
        return self.spec.params.gemm

    @property
    def cfg(self) -> TileConfig:
        return self.spec.params.config

    @property
    def body(self) -> Body:
        return BODIES[self.target.platform]


def _shapes(instrs) -> str:
    return ", ".join(dict.fromkeys(i.shape_text for i in instrs)) or "none"


def check_workgroup(d: GemmDraft) -> None:
    (wm, wn), lanes = d.cfg.waves, d.target.wave_size
    if wm * wn * lanes > MAX_THREADS:
        raise d.fail("waves", f"{wm}x{wn}", f"waves_m*waves_n <= {MAX_THREADS // lanes}",
                     f"{wm * wn * lanes} threads exceed the {MAX_THREADS}-thread workgroup limit")


def generated_inputs(t: Target) -> list[DType]:
    """The A dtypes the GEMM generates for ``t``: those its matrix instructions take (fp8 dtypes only in the
    target's own fp8 encoding: ``Target.fp8_encoding``)."""
    kinds = t.input_dtypes()
    return [x for x in CODEGEN_INPUTS
            if x.matrix_kind in kinds and (x.fp8 is None or x.fp8.encoding == t.fp8_encoding)]


def _kinds(g: GemmSpec) -> tuple[DType, DType]:
    """A's and B's operand kinds in the instruction tables (fp8 / bf8 for the encoded 8-bit floats)."""
    return g.a.dtype.matrix_kind, g.b.dtype.matrix_kind


def check_dtypes(d: GemmDraft) -> None:
    """A and B of dtypes that the target has instructions for and the kernel bodies generate (B = A's dtype, or for
    8-bit floats any fp8 dtype of A's encoding that an instruction pairs with A), an accumulator of one of those
    instructions, and a C dtype for it. Each refusal lists only values that pass every check here for this target
    (f64 has instructions on some targets but no kernel body: it is never listed; an fp8 dtype of the other
    encoding is refused with the target's own)."""
    g, t = d.g, d.target
    made = generated_inputs(t)
    if check_fp4(d, made, C_DTYPES):
        return
    if g.a.dtype not in made:
        reason = t.fp8_refusal(g.a.dtype) or (
            "the target has instructions for this dtype but ckgen's GEMM kernel does not generate it yet"
            if g.a.dtype.matrix_kind in t.input_dtypes() else "no matrix instruction takes this dtype")
        raise d.fail("A", g.a.dtype.value, ", ".join(x.value for x in made), reason)
    ka, kb = _kinds(g)
    legal_b = [x for x in made if x.fp8 is not None and t.instructions_for(ka, x.matrix_kind, DType.F32)] \
        if g.a.dtype.fp8 is not None else [g.a.dtype]
    if g.b.dtype not in legal_b:
        raise d.fail("B", g.b.dtype.value, ", ".join(x.value for x in legal_b),
                     "B must have A's dtype" if len(legal_b) == 1 else f"no {t.name} instruction takes A {g.a.dtype.value} with it")
    accs = sorted({i.acc_dtype.value for i in t.instructions if i.a_dtype == ka and i.acc_dtype in C_DTYPES})
    if not t.instructions_for(ka, kb, g.acc) or g.acc not in C_DTYPES:
        raise d.fail("acc", g.acc.value, ", ".join(accs), f"no single-block {g.a.dtype.value} instruction accumulates in it")
    legal_c = C_DTYPES[g.acc]
    if g.c.dtype not in legal_c:
        raise d.fail("C", g.c.dtype.value, ", ".join(x.value for x in legal_c), f"not an output type for {g.acc.value} accumulation")


#: bodies that apply block scales per K block in their main loop
BLOCK_SCALE_BODIES = ("gemm_mfma.h", "gemm_mma_sm90.h")


def check_scale_pairs(d: Draft) -> None:
    """Scalings (scale_a / scale_b) multiply the f32 accumulator: kernels with integer accumulation take none. Block
    scales come in pairs (A per 1 x 128, B per 128 x 128) and not on batched kernels (every body's rule)."""
    g = d.spec.params.gemm
    if g.scaled and g.acc != DType.F32:
        param = "scale_a" if g.scale_a is not None else "scale_b"
        raise d.fail(param, getattr(g, param), "none (leave it out) for i32 accumulation",
                     "scales multiply an f32 accumulator; this kernel accumulates in i32")
    if not g.block_scaled:
        return
    blk = f"block({SCALE_BLOCK})"
    for param, other in (("scale_a", "scale_b"), ("scale_b", "scale_a")):
        if getattr(g, param) != "block":
            raise d.fail(param, getattr(g, param) or "none", blk,
                         f"{other} = {blk}: block scales come in pairs (A 1 x {SCALE_BLOCK}, B {SCALE_BLOCK} x {SCALE_BLOCK})")
    if g.batched:
        raise d.fail("batched", "true", "false", "block scales are not offered for batched kernels yet")


def check_scales(d: GemmDraft) -> None:
    """:func:`check_scale_pairs`, then block scales on a body that folds them per K block (the MFMA body), with K
    tiles that divide the 128-block and one workgroup per tile (no split-K / stream-K)."""
    g, cfg = d.g, d.cfg
    check_scale_pairs(d)
    if not g.block_scaled:
        return
    blk = f"block({SCALE_BLOCK})"
    if d.body.header not in BLOCK_SCALE_BODIES:
        raise d.fail("scale_a", blk, "tensor, row (and scale_b tensor, col)",
                     f"{d.target.name}'s GEMM body does not apply block scales yet")
    if SCALE_BLOCK % cfg.tile[2]:
        raise d.fail("tile", "x".join(map(str, cfg.tile)), f"a tile K dividing {SCALE_BLOCK} (32, 64, 128)",
                     f"a K tile must lie in one {SCALE_BLOCK}-block of the block scales")
    if resolve_schedule(cfg, g).kind != "tile" and (cfg.tile[2] != SCALE_BLOCK or
                                                    (SCALE_BLOCK % cfg.tile[1] and cfg.tile[1] % SCALE_BLOCK)):
        tile = f"{cfg.tile[0]}x{min(cfg.tile[1], SCALE_BLOCK)}x{SCALE_BLOCK}"
        raise d.fail("schedule", cfg.schedule.text, f"tile, or a K tile of {SCALE_BLOCK} and an N tile dividing or "
                     f"a multiple of {SCALE_BLOCK} (e.g. tile = {tile})",
                     f"split-K / stream-K pieces of a block-scaled kernel start on whole {SCALE_BLOCK}-K blocks "
                     f"(each K tile one block), and a tile's columns lie within one {SCALE_BLOCK}-column block of "
                     "B's scales or cover whole ones")


def _instruction_fits(tile: tuple[int, int, int], waves: tuple[int, int], instr: MatrixInstr,
                      gated: bool = False) -> bool:
    """M/waves_m, N/waves_n and K are multiples of the instruction's M, N and K (gated: N/waves_n of twice its N,
    gate and up fragments)."""
    (tm, tn, tk), (wm, wn) = tile, waves
    n = 2 * instr.n if gated else instr.n
    return tm % wm == 0 and tn % wn == 0 and (tm // wm) % instr.m == 0 and (tn // wn) % n == 0 \
        and tk % instr.k == 0


#: the most accumulator registers per lane an mx kernel may hold (a wave tile of 64x64: 4 fragments of the 32x32x64
#: instruction). Measured with clang-22 for gfx950 (ckgen report): 64x64 wave tiles compile without spills (up to 256
#: VGPRs for 128x128x256 on 2x2 waves), 128x64 (128 accumulators) spilled; the calibrated estimate of registers.py
#: was not fitted on the mx body (each fragment is 8 registers and its scales are loaded per instruction step).
MX_MAX_ACCUMULATORS = 64


#: bodies that fold ``mx(32)`` scales per 32-K block in f32 registers (the portable form, on targets without the
#: block-scaled MFMA that are not refused outright: see select_mx_instruction)
MX_FOLD_BODIES = ("gemm_mma_sm90.h",)


def select_mx_instruction(d: GemmDraft) -> None:
    """``mx(32)`` scales: a pair, with fp8 A and B (the OCP encodings the target takes), one workgroup per tile and no
    batch, on a target with the block-scaled MFMA (its table: targets.amd.MX_INSTRUCTIONS), which applies the scales
    per 32 K's itself (a tile it divides, wave tiles up to 64x64), or on sm_90, whose mma.sync body folds them per
    32-K block in f32 registers (a K tile of 32; the instruction chosen as for any fp8 kernel). Other AMD targets are
    refused: their MFMA body does not fold them."""
    g, cfg, t = d.g, d.cfg, d.target
    mx = f"mx({MX_BLOCK})"
    for param, other in (("scale_a", "scale_b"), ("scale_b", "scale_a")):
        if getattr(g, param) != "mx":
            raise d.fail(param, getattr(g, param) or "none", mx,
                         f"{other} = {mx}: MX scales come in pairs (A and B, one E8M0 exponent per 32 K's each)")
    scaled_mfma = FEATURE_MFMA_SCALE_F8F6F4 in t.features and bool(MX_INSTRUCTIONS.get(t.name))
    if not scaled_mfma and d.body.header not in MX_FOLD_BODIES:
        names = ", ".join(x.name for x in amd_targets() if FEATURE_MFMA_SCALE_F8F6F4 in x.features)
        folds = ", ".join(x.name for x in nvidia_targets() if BODIES[x.platform].header in MX_FOLD_BODIES
                          and FEATURE_FP8_OCP in x.features)
        raise d.fail("scale_a", mx, f"tensor, row, block({SCALE_BLOCK}) on {t.name}; {mx} on {names}, {folds}",
                     f"mx scales need {names}'s scaled MFMA (block-scaled f8f6f4); {t.name} has none")
    for param, x in (("A", g.a), ("B", g.b)):
        if x.dtype.fp8 is None and x.dtype != FP4:  # (fp4: check_fp4)
            legal = ", ".join(v.value for v in generated_inputs(t) if v.fp8 is not None)
            raise d.fail(param, x.dtype.value, legal, f"mx scales take 8-bit float operands ({legal})")
    if resolve_schedule(cfg, g).kind != "tile":
        raise d.fail("schedule", cfg.schedule.text, "tile", "mx scales are applied by one workgroup per C tile")
    if g.batched or g.grouped:
        raise d.fail("batched" if g.batched else "mode", "true" if g.batched else g.mode,
                     "false" if g.batched else "dense", "mx scales are offered for plain (dense, unbatched) GEMMs")
    if not scaled_mfma:  # the portable fold: the K tile is one 32-K block
        if cfg.tile[2] != MX_BLOCK:
            tile = "x".join(map(str, cfg.tile))
            raise d.fail("tile", tile, f"a K tile of {MX_BLOCK} on {t.name} (e.g. {cfg.tile[0]}x{cfg.tile[1]}x{MX_BLOCK})",
                         f"{t.name}'s GEMM body folds mx scales per {MX_BLOCK}-K block, one K tile each")
        select_plain_instruction(d)
        return
    (instr,) = MX_INSTRUCTIONS[t.name]
    if cfg.instr is not None and tuple(cfg.instr) != instr.shape:
        raise d.fail("instr", "x".join(map(str, cfg.instr)), instr.shape_text,
                     f"mx scales use the block-scaled MFMA, {instr.shape_text} on {t.name}")
    if not _instruction_fits(cfg.tile, cfg.waves, instr, g.gated is not None):
        raise d.fail("tile", "x".join(map(str, cfg.tile)),
                     f"M/waves_m and N/waves_n multiples of {instr.m}, K a multiple of {instr.k} (e.g. 128x128x128 "
                     "with waves 2x2)", f"the block-scaled MFMA is {instr.shape_text}: a K tile must be whole "
                     f"instructions (each {instr.k // MX_BLOCK_K} MX blocks of {MX_BLOCK_K})")
    acc = (cfg.tile[0] // cfg.waves[0] // instr.m) * (cfg.tile[1] // cfg.waves[1] // instr.n) * instr.c_regs
    if acc > MX_MAX_ACCUMULATORS:
        raise d.fail("tile", "x".join(map(str, cfg.tile)),
                     f"a wave tile (tile M x N / waves) of at most 64x64 with mx scales, e.g. tile = "
                     f"{2 * 64}x{2 * 64}x{cfg.tile[2]} with waves = 2x2",
                     f"{acc} accumulator registers per lane; the mx body spills beyond {MX_MAX_ACCUMULATORS}")
    d.instr = instr


def select_instruction(d: GemmDraft) -> None:
    if d.g.mx_scaled:
        select_mx_instruction(d)
    else:
        select_plain_instruction(d)


def select_plain_instruction(d: GemmDraft) -> None:
    g, cfg, t = d.g, d.cfg, d.target
    cands = t.instructions_for(*_kinds(g), g.acc)
    if cfg.instr is not None:
        instr = t.find_instruction(cfg.instr, *_kinds(g), g.acc)
        if instr is None:
            raise d.fail("instr", "x".join(map(str, cfg.instr)), _shapes(cands),
                         f"no single-block {g.a.dtype.value}->{g.acc.value} matrix instruction of this shape")
        d.instr = instr
        return
    for instr in cands:
        if _instruction_fits(cfg.tile, cfg.waves, instr, g.gated is not None):
            d.instr = instr
            return
    raise d.fail("tile", "x".join(map(str, cfg.tile)),
                 f"a tile whose M/waves_m, N/waves_n and K are multiples of an instruction shape ({_shapes(cands)})",
                 f"no {g.a.dtype.value} instruction fits waves {cfg.waves[0]}x{cfg.waves[1]}")


def check_tile(d: GemmDraft) -> None:
    cfg, i = d.cfg, d.instr
    (tm, tn, tk), (wm, wn) = cfg.tile, cfg.waves
    tile = f"{tm}x{tn}x{tk}"
    if tm % (wm * i.m):
        raise d.fail("tile", tile, f"tile M a multiple of waves_m*instr_m = {wm}*{i.m} = {wm * i.m}",
                     "tile M is not divisible by waves x instruction")
    if tn % (wn * i.n):
        raise d.fail("tile", tile, f"tile N a multiple of waves_n*instr_n = {wn}*{i.n} = {wn * i.n}",
                     "tile N is not divisible by waves x instruction")
    if d.g.gated and tn % (2 * wn * i.n):
        raise d.fail("tile", tile, f"tile N a multiple of 2*waves_n*instr_n = {2 * wn * i.n}",
                     f"{d.g.gated}: each wave's N extent holds gate and up fragments of instr_n = {i.n} columns")
    if tk % i.k:
        raise d.fail("tile", tile, f"tile K a multiple of instr_k = {i.k}", "tile K is not divisible by the instruction's K")
    if not 1 <= cfg.lds_buffers <= d.body.max_lds_buffers:
        raise d.fail("lds_buffers", cfg.lds_buffers, f"1..{d.body.max_lds_buffers}", "unsupported LDS pipeline depth")
    if not 0 <= cfg.prefetch <= MAX_PREFETCH:
        raise d.fail("prefetch", cfg.prefetch, f"0..{MAX_PREFETCH}", "unsupported prefetch depth")


def _mma_sync_body(d: GemmDraft) -> None:
    """Shape rules of the mma.sync kernel body (ckgen/include/gemm_mma_sm90.h): its ldmatrix tiling
    needs warp tiles N of 16 (K rows of 32 bytes follow from the instruction K) and MN-contiguous operands in power-of-two 16-byte chunks."""
    g, cfg = d.g, d.cfg
    (tm, tn, tk), wn = cfg.tile, cfg.waves[1]
    tile = f"{tm}x{tn}x{tk}"
    if (tn // wn) % 16:
        raise d.fail("tile", tile, f"tile N / waves_n a multiple of 16 (waves_n = {wn})", "the warp tile N must be a multiple of 16")
    for param, layout, extent, dtype in (("A", g.a.layout, tm, g.a.dtype), ("B", g.b.layout, tn, g.b.dtype)):
        mn_contiguous = (layout == Layout.COL) if param == "A" else (layout == Layout.ROW)
        chunks = extent * dtype.bytes // 16
        if mn_contiguous and (extent * dtype.bytes % 16 or chunks & (chunks - 1)):
            side = "M" if param == "A" else "N"
            raise d.fail("tile", tile, f"tile {side} * {dtype.bytes} bytes a power-of-two multiple of 16 bytes",
                         f"{param} is {layout.value}-major, so its {side} extent is loaded in 16-byte chunks")
    if g.gated and g.b.layout == Layout.ROW and gate_run(g, _wave_n(cfg)) * g.b.dtype.bytes % 16:
        run = gate_run(g, _wave_n(cfg))
        raise d.fail("gate" if g.gate == "interleaved" else "tile", g.gate_text if g.gate == "interleaved" else tile,
                     f"runs of gate / up columns of a multiple of {16 // g.b.dtype.bytes} (16 bytes)",
                     f"row-major B loads in 16-byte chunks; this kernel's runs are {run} columns")


#: extra shape rules of a device body, by its header (the MFMA body has none beyond the common checks).
BODY_RULES = {"gemm_mma_sm90.h": (_mma_sync_body,)}


def check_kernel_body(d: GemmDraft) -> None:
    for rule in BODY_RULES.get(d.body.header, ()):
        rule(d)


def _wave_n(cfg: TileConfig) -> int:
    return cfg.tile[1] // cfg.waves[1]


def check_gated(d: GemmDraft) -> None:
    """Gated epilogues (swiglu, geglu): no column scales of B, and an interleave block that either divides half a
    wave's N extent or is a multiple of it (so that each half of every wave's extent is whole blocks of gate or up
    columns). Split-K and stream-K pieces keep the raw gate and up sums; the tile's finisher pairs them."""
    g, cfg = d.g, d.cfg
    if g.gated is None:
        return
    if g.scale_b in ("col", "block", "mx"):
        raise d.fail("scale_b", g.scale_b, "tensor or none",
                     f"a gated epilogue ({g.gated}) takes no per-column scales of B yet")
    half = cfg.tile[1] // cfg.waves[1] // 2
    if g.gate == "interleaved" and g.gate_block % half and half % g.gate_block:
        legal = [b for b in GATE_BLOCKS if b % half == 0 or half % b == 0]
        raise d.fail("gate", g.gate_text, "halves, " + ", ".join(f"interleaved({b})" for b in legal),
                     f"half a wave's N extent ({half} columns) must be whole blocks, or lie in one")


def check_rope(d: GemmDraft) -> None:
    """``rope = gptj(...)``: the rotation pairs two finished outputs of one row, so every output is finished by one
    workgroup (no split-K / stream-K), in a float C laid out row-major (the layout attention reads), of a plain
    dense GEMM without gate, residual or scales."""
    g, cfg = d.g, d.cfg
    if g.rope is None:
        return
    rope = f"rope = {g.rope_text}"
    if resolve_schedule(cfg, g).kind != "tile":
        raise d.fail("schedule", cfg.schedule.text, "tile or auto", f"{rope}: split-K and stream-K are not "
                     "implemented for a rotary epilogue (the pair is rotated once its sums are whole)")
    if g.gated or g.residual:
        raise d.fail("epilogue", " -> ".join(op.text for op in g.epilogue), "none, a bias, an activation",
                     f"{rope}: a gated or residual epilogue does not combine with the rotation")
    if g.scaled:
        raise d.fail("scale_a" if g.scale_a else "scale_b", g.scale_a or g.scale_b, "none",
                     f"{rope}: fp8 scalings do not combine with the rotation yet")
    if g.batched or g.grouped:
        raise d.fail("batched" if g.batched else "mode", "true" if g.batched else g.mode, "a dense, unbatched GEMM",
                     f"{rope}: the positions are per row of one matrix")
    if g.c.layout != Layout.ROW or g.c.dtype not in (DType.F16, DType.BF16, DType.F32) or g.acc != DType.F32:
        raise d.fail("C", f"{g.c.dtype.value} {g.c.layout.value}", "f16, bf16 or f32, row-major (f32 accumulation)",
                     f"{rope}: the rotated outputs are written row-major in a float dtype")


def choose_vectors(d: GemmDraft) -> None:
    g, cfg = d.g, storage_view(d.spec.params, None)[0].config  # (the K tile in bytes for fp4 pairs)
    (tm, tn, tk) = cfg.tile
    threads = cfg.waves[0] * cfg.waves[1] * d.target.wave_size
    # A (MxK): row-major is K-contiguous. B (KxN): row-major is N-contiguous. C (MxN): row-major N-contiguous.
    # unit: elements along K one thread moves per vector (MN-contiguous operands of swizzled LDS tiles are
    # transposed in registers into LDS writes of at least 4 bytes along K: ckgen/lower/lds_banks.py).
    unit_a = mn_unit_elements(d.target, g.a.dtype.bytes, g.a.layout == Layout.ROW)
    unit_b = mn_unit_elements(d.target, g.b.dtype.bytes, g.b.layout == Layout.COL)
    extents = {"vec_a": (g.a.dtype, tk if g.a.layout == Layout.ROW else tm, tm * tk // unit_a),
               "vec_b": (g.b.dtype, tk if g.b.layout == Layout.COL else gate_run(g, _wave_n(cfg)) if g.gated else tn,
                         tn * tk // unit_b),
               "vec_c": (g.c.dtype, tn if g.c.layout == Layout.ROW else tm, tm * tn)}
    chosen = []
    for param, (dtype, extent, elems) in extents.items():
        widest = VECTOR_BYTES // dtype.bytes
        given = getattr(cfg, param)
        if given is not None:
            if given & (given - 1) or given > widest or extent % given:
                raise d.fail(param, given, f"a power of two <= {widest} dividing the tile's contiguous extent {extent}",
                             "illegal vector width")
            chosen.append(given)
            continue
        v = widest
        while v > 1 and (extent % v or (elems // v) % threads):
            v //= 2
        chosen.append(v)
    d.vec = tuple(chosen)


def plan_lds(d: GemmDraft) -> None:
    """Unpadded, XOR-swizzled LDS tiles (ckgen/ops/gemm/lds_layout.py, on the bank model of ckgen/lower/lds_banks.py,
    chooses them per dtype, tile, instruction and layout from the target's bank figures) and their bytes against
    the target's LDS."""
    cfg, t = d.cfg, d.target
    a, b = plan_gemm_lds(t, *storage_view(d.spec.params, d.instr), d.vec)
    lds = LdsPlan(a=a, b=b, buffers=cfg.lds_buffers)
    if lds.total_bytes > t.lds_bytes:
        per_buf = lds.a_bytes + lds.b_bytes
        hint = f"<= {t.lds_bytes} bytes; this tile needs {per_buf} per buffer"
        if cfg.lds_buffers > 1 and per_buf <= t.lds_bytes:
            hint += f"; lds_buffers = 1 would fit ({per_buf} bytes)"
        raise d.fail("tile", "x".join(map(str, cfg.tile)), hint,
                     f"needs {lds.total_bytes} bytes of LDS ({cfg.lds_buffers} buffer(s)), over the {t.lds_bytes}-byte limit")
    d.lds = lds


def estimate_registers(d: GemmDraft) -> None:
    """Registers per lane before compiling. Targets with the MFMA body take the calibrated estimate of
    ckgen/ops/gemm/registers.py against registers.budget(target) and are refused, naming the tile and what
    would fit, when the compiler would spill; other bodies keep the simple sum."""
    g, cfg, t, i = d.g, d.cfg, d.target, d.instr
    tile = "x".join(map(str, cfg.tile))
    if t.lds_swizzle:
        feats = register_features(storage_view(d.spec.params, i)[0], t, i, d.vec, d.lds)
        if g.block_scaled:  # a second set of accumulators: the scaled total beside the current K block's sums
            # (mx scales on the MFMA body need none: the block-scaled MFMA applies them)
            feats = {**feats, "acc": 2 * feats["acc"]}
        total = estimate(feats)
        acc, frags, stage = feats["acc"], feats["frag"], feats["stage"]
        est = RegisterEstimate(accumulators=acc, fragments=frags, prefetch=stage, overhead=total - acc - frags - stage)
        b = budget(t)
        over = acc > b.accumulators or total > b.total or (not b.unified and total - acc > b.arch)
        if over:
            raise d.fail("tile", tile, smaller_tiles_hint(d.spec.params, t, i, b),
                         f"needs about {total} registers per lane ({acc} accumulators, {frags} fragments, {stage} "
                         f"staging; calibrated estimate), over {t.name}'s budget of {b.total} per lane with at most "
                         f"{b.accumulators} accumulators{'' if b.unified else f' and {b.arch} other VGPRs'}: it would spill")
        d.registers = est
        return
    threads = cfg.waves[0] * cfg.waves[1] * t.wave_size
    rep_m, rep_n = cfg.tile[0] // cfg.waves[0] // i.m, cfg.tile[1] // cfg.waves[1] // i.n
    # block / mx scales folded per block: the running total beside a block
    acc = rep_m * rep_n * i.c_regs * (2 if g.block_scaled or g.mx_scaled else 1)
    frags = rep_m * i.a_regs + rep_n * i.b_regs
    tile_bytes = (cfg.tile[0] * g.a.dtype.bytes + cfg.tile[1] * g.b.dtype.bytes) * cfg.tile[2]
    pre = -(-tile_bytes // (threads * 4)) if cfg.prefetch else 0
    est = RegisterEstimate(accumulators=acc, fragments=frags, prefetch=pre, overhead=24)
    budget_total = t.vgprs + t.agprs if not t.unified_vgpr_file else t.vgprs_per_simd_lane
    acc_budget = t.agprs or t.vgprs
    if acc > acc_budget or est.total > budget_total:
        raise d.fail("tile", tile,
                     f"a smaller tile or more waves: at most {acc_budget} accumulator and {budget_total} total registers per lane",
                     f"needs about {est.total} registers per lane ({acc} accumulators, {frags} fragments, {pre} prefetch)")
    d.registers = est


def plan_epilogue(d: GemmDraft) -> None:
    g = d.g
    d.bias_dtype = g.c.dtype if g.c.dtype.is_float else DType.F32
    d.integer_epilogue = not g.acc.is_float and not g.chain and not g.gated and g.alpha == 1.0 and g.beta == 0.0
    d.epilogue_types = tuple(EPILOGUE_TYPES[(op.kind, op.axis)] for op in g.chain)
    if g.residual and g.scaled:
        raise d.fail("epilogue", " -> ".join(op.text for op in g.epilogue), "a chain without residual, or no "
                     "scale_a / scale_b", "a residual is not offered with fp8 scalings yet")


PASSES = (
    check_workgroup,      # waves x wave size within the workgroup limit
    check_dtypes,         # the target has instructions for these dtypes, and codegen supports them
    select_instruction,   # the given instruction exists, or pick the best legal one
    check_scales,         # scalings: f32 accumulation; block scales' pairing, K tile, schedule, body
    check_tile,           # tile divisible by waves x instruction; pipeline depth
    check_kernel_body,    # the shape rules of the target's device body
    check_gated,          # gated epilogues: schedule, scales, interleave block
    check_rope,           # the rotary epilogue: schedule, layout, no gate / residual / scales
    choose_vectors,       # global vector widths
    plan_lds,             # LDS layout, bytes and capacity
    estimate_registers,   # register budget
    plan_epilogue,        # epilogue op types, bias dtype, integer path
    plan_tma_body,        # sm_90: does the Hopper TMA + wgmma body take this kernel too
    plan_groups,          # mode = grouped / masked: the persistent walk over every group's tiles
    plan_schedule,        # split-K / stream-K: legality, workers, workspace slots
)


#: extents a suggested tile may have: powers of two and their halfway points (24, 48, 96 ...), 4 to 1024
TILE_EXTENTS = tuple(sorted({b << s for b in (2, 3) for s in range(1, 10) if 4 <= b << s <= 1024}))
#: most tiles planned when looking for a legal tile near a refused one
MAX_TILE_TRIES = 48


def nearest_tile(spec: KernelSpec, target: Target) -> tuple[int, int, int] | None:
    """The legal tile nearest to ``spec``'s (every other parameter kept; every pass of :data:`PASSES` passes
    for ``target``), or None when none of the :data:`MAX_TILE_TRIES` nearest candidates is legal.

    Candidates are tiles of :data:`TILE_EXTENTS`; nearness is the sum over M, N, K of |log2(candidate /
    given)|, ties going to the candidate that changes fewer extents, then to the smaller one. Candidates
    whose A and B tiles alone overflow the LDS, or whose accumulators alone overflow the target's accumulator
    registers, or that no instruction divides, are not planned (what the passes would refuse first)."""
    cfg, g = spec.params.config, spec.params.gemm
    lanes, (wm, wn) = target.wave_size, cfg.waves
    instrs = target.instructions_for(*_kinds(g), g.acc)
    if cfg.instr is not None:
        instrs = [i for i in instrs if i.shape == tuple(cfg.instr)]
    acc_limit = budget(target).accumulators if target.lds_swizzle else (target.agprs or target.vgprs)

    def cost(t: tuple[int, int, int]) -> tuple:
        return (round(sum(abs(math.log2(c / x)) for c, x in zip(t, cfg.tile, strict=True)), 9),
                sum(c != x for c, x in zip(t, cfg.tile, strict=True)), math.prod(t))

    def fits(t: tuple[int, int, int]) -> bool:
        lds = (t[0] * g.a.dtype.value_bytes + t[1] * g.b.dtype.value_bytes) * t[2] * cfg.lds_buffers
        acc = t[0] * t[1] // (wm * wn * lanes) * max(1, g.acc.bytes // 4)
        return t != cfg.tile and lds <= target.lds_bytes and acc <= acc_limit \
            and any(_instruction_fits(t, cfg.waves, i) for i in instrs)

    near = [[c for c in TILE_EXTENTS if x / 16 <= c <= x * 16] for x in cfg.tile]
    for tile in sorted(filter(fits, itertools.product(*near)), key=cost)[:MAX_TILE_TRIES]:
        trial = replace(spec, params=replace(spec.params, config=replace(cfg, tile=tile)))
        try:
            run_passes(PASSES, GemmDraft(trial, target))
        except CkgenError:
            continue
        return tile
    return None


def nearest_tile_text(spec: KernelSpec, target: Target) -> str | None:
    """``nearest legal tile on <target>: MxNxK``, or None."""
    near = nearest_tile(spec, target)
    return f"nearest legal tile on {target.name}: {'x'.join(map(str, near))}" if near else None


def plan(spec: KernelSpec, target: Target) -> KernelPlan:
    """Run :data:`PASSES` for ``target`` and freeze the result."""
    if not isinstance(spec.params, GemmParams):  # pragma: no cover - the registry routes by op
        raise TypeError("the GEMM planner takes GEMM specs")
    try:
        d = run_passes(PASSES, GemmDraft(spec, target))
    except ValidationError as exc:
        if exc.param == "tile":
            exc.suggest_later(partial(nearest_tile_text, spec, target))
        raise
    cfg, i, lanes = d.cfg, d.instr, target.wave_size
    si = storage_view(spec.params, i)[1]  # (per-lane items in storage elements: bytes of fp4 pairs)
    wave_tile = (cfg.tile[0] // cfg.waves[0], cfg.tile[1] // cfg.waves[1])
    entry = d.body if d.schedule is None else Body(*SCHEDULED_ENTRY, max_lds_buffers=d.body.max_lds_buffers)
    if d.grouping is not None:
        entry = body_of(d.grouping, d.body.max_lds_buffers)
    body = GemmPlan(
        body=entry, instr=i, wave_tile=wave_tile, repeats=(wave_tile[0] // i.m, wave_tile[1] // i.n),
        items=(si.a_items(lanes), si.b_items(lanes), i.c_items(lanes)), vec=d.vec, lds=d.lds,
        prefetch=cfg.prefetch, registers=d.registers, bias_dtype=d.bias_dtype,
        integer_epilogue=d.integer_epilogue, epilogue_types=d.epilogue_types, tma=d.tma, schedule=d.schedule,
        grouping=d.grouping, why=d.why)
    threads = cfg.waves[0] * cfg.waves[1] * lanes
    entries = [Entry(spec.name, threads, d.lds.total_bytes)]
    if d.tma is not None:
        entries.append(Entry(f"{spec.name}_tma", d.tma.threads, d.tma.smem_bytes, variant_of=spec.name))
    run = (grouped_launch(spec, threads, d.grouping.workers, tma=d.tma is not None) if d.grouping is not None
           else launch(spec, threads, tma=d.tma is not None, schedule=d.schedule))
    return KernelPlan(spec=spec, target=target, body=body, abi=abi(spec), launch=run,
                      entries=tuple(entries))
