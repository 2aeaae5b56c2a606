"""The GEMM's vector body (``instr = none``): planning passes and the frozen plan.

A kernel with ``instr = none`` computes C on the vector ALUs, without a matrix instruction or LDS
(device/gemm_vec.h): each of its ``waves_n`` waves streams ``tile N / waves_n`` rows of a K-contiguous B from
memory with 16-byte loads, against all ``tile M`` rows of A, and sums in f32. It reads B once per tile of M rows
and spends a multiply-add per element of A.B, so it suits the skinny products of decode (nn.Linear at M = 1..8, where
a matrix-core tile computes mostly padding); the cost model (cost_model.py) rates it against the other members of a
dispatcher family.

Rules (:data:`PASSES`; each refusal names the parameter and its legal values):

- A row-major and B column-major (both K-contiguous: nn.Linear's input and weight), C either; A and B f16, bf16, f32
  or an fp8 dtype of the target's encoding (the matrix-core body's rules: ``check_dtypes``), f32 accumulation;
- ``waves = 1xW``; ``tile N`` a multiple of W with 1 .. :data:`MAX_ROWS` rows of B per wave; ``tile M`` in
  1 .. :data:`MAX_TILE_M`, and ``tile M x rows`` at most :data:`MAX_SUMS` sums per lane;
- ``tile K`` = wave size x vector (16 bytes of A's dtype) x unroll, unroll 1 .. :data:`MAX_UNROLL` (vectors of each
  row of B in flight per lane);
- epilogues, alpha / beta, batches, tensor / row / column and block(128) scales as the matrix-core bodies; not a gated
  or rotary epilogue, mx scales, grouped / masked modes, split-K / stream-K, clusters or vector widths (vec_a / vec_b
  / vec_c: its vectors are 16 bytes). ``lds_buffers`` and ``prefetch`` do not apply and are ignored.
"""

from __future__ import annotations

from ckgen.ir.plan import Entry, KernelPlan
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import Target
from ckgen.ir.types import DType, Layout
from ckgen.lower.draft import run_passes
from ckgen.ops.gemm.abi import abi, launch
from ckgen.ops.gemm.body import Body, GemmPlan, RegisterEstimate, VectorPlan
from ckgen.ops.gemm.plan import (
    VECTOR_BYTES,
    GemmDraft,
    check_dtypes,
    check_scale_pairs,
    check_workgroup,
    plan_epilogue,
)

BODY = Body("gemm_vec.h", "ckgen::gemm_vec", max_lds_buffers=0)
MAX_TILE_M = 8
MAX_ROWS = 8
MAX_SUMS = 32
MAX_UNROLL = 8


def _tile(d: GemmDraft) -> str:
    return "x".join(map(str, d.cfg.tile))


def _vec(d: GemmDraft) -> int:
    return VECTOR_BYTES // d.g.a.dtype.bytes


def check_problem(d: GemmDraft) -> None:
    """Layouts, the accumulator and the features the vector body does not offer."""
    g, cfg = d.g, d.cfg
    if g.a.layout != Layout.ROW:
        raise d.fail("A", f"{g.a.dtype.value} {g.a.layout.value}", f"{g.a.dtype.value} row",
                     "instr = none reads A along K: A must be row-major")
    if g.b.layout != Layout.COL:
        raise d.fail("B", f"{g.b.dtype.value} {g.b.layout.value}", f"{g.b.dtype.value} col",
                     "instr = none streams B along K: B must be column-major (nn.Linear's weight as is)")
    if g.acc != DType.F32:
        raise d.fail("acc", g.acc.value, "f32 (f16, bf16, f32 or fp8 inputs)", "instr = none sums in f32")
    refusals = (
        ("epilogue", g.gated is not None, " -> ".join(op.text for op in g.epilogue), "a chain without swiglu / geglu",
         "a gated epilogue"),
        ("rope", g.rope is not None, g.rope_text if g.rope is not None else "", "none", "a rotary epilogue"),
        ("scale_a", g.mx_scaled, g.scale_a or "", "none, tensor, row, block(128)", "mx scales (the scaled MFMA's)"),
        ("mode", g.grouped, g.mode, "dense", "grouped / masked modes"),
        ("schedule", cfg.schedule.kind not in ("tile", "auto"), cfg.schedule.text, "tile",
         "split-K / stream-K"),
        ("cluster", cfg.cluster > 1, str(cfg.cluster), "1 or auto", "clusters (the Hopper body's)"),
    )
    for param, refused, value, legal, what in refusals:
        if refused:
            raise d.fail(param, value, legal, f"instr = none: {what} is not offered on the vector body")
    for param in ("vec_a", "vec_b", "vec_c"):
        if getattr(cfg, param) is not None:
            raise d.fail(param, getattr(cfg, param), "leave it out",
                         "instr = none: the vector body's vectors are 16 bytes (element loads where unaligned)")


def check_shape(d: GemmDraft) -> None:
    """Waves, rows per wave, tile M and tile K (the module docstring's rules)."""
    cfg, lanes = d.cfg, d.target.wave_size
    (tm, tn, tk), (wm, wn) = cfg.tile, cfg.waves
    if wm != 1:
        raise d.fail("waves", f"{wm}x{wn}", f"1x{wn}", "instr = none: the waves sit side by side along N")
    if tn % wn or not 1 <= tn // wn <= MAX_ROWS:
        raise d.fail("tile", _tile(d), f"tile N = waves_n x 1..{MAX_ROWS} ({wn}..{wn * MAX_ROWS} in steps of {wn})",
                     "instr = none: each wave streams tile N / waves_n whole rows of B")
    rows = tn // wn
    if not 1 <= tm <= MAX_TILE_M or tm * rows > MAX_SUMS:
        legal = min(MAX_TILE_M, MAX_SUMS // rows)
        raise d.fail("tile", _tile(d), f"tile M in 1..{legal} with {rows} rows of B per wave (tile M x rows <= "
                     f"{MAX_SUMS})", "instr = none keeps tile M x rows sums per lane in registers")
    step = lanes * _vec(d)
    if tk % step or not 1 <= tk // step <= MAX_UNROLL:
        legal = ", ".join(str(step * u) for u in (1, 2, 4, 8))
        raise d.fail("tile", _tile(d), f"tile K = {lanes} lanes x {_vec(d)} elements x unroll 1..{MAX_UNROLL} "
                     f"(e.g. {legal})", "instr = none: each lane loads 16 bytes of every row of B per step")


PASSES = (
    check_workgroup,      # waves x wave size within the workgroup limit
    check_dtypes,         # the target has instructions for these dtypes (the matrix-core body's rules)
    check_problem,        # layouts, f32 sums, features the vector body does not offer
    check_scale_pairs,    # scalings: f32 accumulation, block pairs, no batch with block scales
    check_shape,          # waves 1xW, rows per wave, tile M, tile K
    plan_epilogue,        # epilogue op types, bias dtype
)


def plan(spec: KernelSpec, target: Target) -> KernelPlan:
    """Run :data:`PASSES` for ``target`` and freeze the vector body's plan."""
    d = run_passes(PASSES, GemmDraft(spec, target))
    cfg, lanes, v = d.cfg, target.wave_size, _vec(d)
    rows, unroll = cfg.tile[1] // cfg.waves[1], cfg.tile[2] // (lanes * v)
    words = v * d.g.a.dtype.bytes // 4
    sums = cfg.tile[0] * rows
    registers = RegisterEstimate(accumulators=2 * sums, fragments=words * (unroll * rows + 1), prefetch=0,
                                 overhead=24)
    body = GemmPlan(body=BODY, instr=None, wave_tile=(cfg.tile[0], rows), repeats=(1, 1), items=(v, v, 1),
                    vec=(v, v, 1), lds=None, prefetch=0, registers=registers, bias_dtype=d.bias_dtype,
                    integer_epilogue=False, epilogue_types=d.epilogue_types,
                    vector=VectorPlan(rows=rows, unroll=unroll, vec=v))
    threads = cfg.waves[1] * lanes
    return KernelPlan(spec=spec, target=target, body=body, abi=abi(spec), launch=launch(spec, threads, tma=False),
                      entries=(Entry(spec.name, threads, 0),))


def kernel_constants(plan: KernelPlan) -> list[tuple[str, int]]:
    """The Cfg integers of the vector body (device/gemm_vec.h; kLdsBytes, 0, for the host launchers)."""
    c, b = plan.spec.params.config, plan.body
    return [("kTileM", c.tile[0]), ("kTileN", c.tile[1]), ("kTileK", c.tile[2]), ("kWavesN", c.waves[1]),
            ("kWaveSize", plan.target.wave_size), ("kThreads", plan.threads), ("kRows", b.vector.rows),
            ("kUnroll", b.vector.unroll), ("kVec", b.vector.vec), ("kLdsBytes", 0)]
