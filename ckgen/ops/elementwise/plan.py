"""The element-wise op's planning passes: (KernelSpec, Target) -> KernelPlan.

The op is memory-bound: each thread moves ``unroll`` vectors of ``vec`` elements per tensor, ``vec`` at most 16
bytes of every tensor (the widest vector access both vendors have), so that a workgroup of ``threads`` keeps
``threads * vec * unroll`` columns of every tensor in flight. Nothing depends on the arch beyond the wave size
(whole waves per workgroup).
"""

from __future__ import annotations

from dataclasses import dataclass

from ckgen.ir.plan import Entry, KernelPlan
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import Target
from ckgen.ir.types import DType
from ckgen.lower.draft import Draft, run_passes
from ckgen.ops.elementwise.abi import abi, launch

VECTOR_BYTES = 16
HEADER = "elementwise_body.h"
IMPL = "ckgen::ew::elementwise_forward"
#: a quantized y (i8 / fp8 with per-group scales): device/elementwise_quant.h
QUANT_HEADER = "elementwise_quant.h"
QUANT_IMPL = "ckgen::ew::elementwise_quant_forward"


@dataclass(frozen=True)
class EwPlan:
    header: str
    impl: str
    vec: int
    threads: int
    unroll: int

    def to_json(self) -> dict:
        return {"header": self.header, "impl": self.impl, "vec": self.vec, "threads": self.threads,
                "unroll": self.unroll}


@dataclass
class EwDraft(Draft):
    vec: int = 0


def _widest(p) -> int:
    return max(d.bytes for d in (p.a, p.b, p.c, p.y) if d is not None)


def check_output(d: EwDraft) -> None:
    """An fp8 y in the target's own encoding (Target.fp8_dtypes: FNUZ on gfx942, OCP on gfx950 and sm_89+)."""
    p, t = d.spec.params, d.target
    reason = t.fp8_refusal(p.y)
    if reason is not None:
        legal = ", ".join(x.value for x in (DType.F16, DType.BF16, DType.F32, DType.I8, *t.fp8_dtypes))
        raise d.fail("y", p.y.value, legal, reason)


def check_workgroup(d: EwDraft) -> None:
    p, t = d.spec.params, d.target
    if p.threads % t.wave_size:
        legal = [n for n in (64, 128, 256, 512, 1024) if n % t.wave_size == 0]
        raise d.fail("threads", p.threads, ", ".join(map(str, legal)), f"a workgroup is whole waves of {t.wave_size}")


def choose_vector(d: EwDraft) -> None:
    p = d.spec.params
    most = VECTOR_BYTES // _widest(p)
    if p.vec is not None and p.vec > most:
        raise d.fail("vec", p.vec, ", ".join(str(v) for v in (1, 2, 4, 8, 16) if v <= most),
                     f"a vector of every tensor is at most {VECTOR_BYTES} bytes ({_widest(p)}-byte elements)")
    d.vec = p.vec or most


def check_groups(d: EwDraft) -> None:
    """Per-group scales: every vector of a thread in one group, a group G / vec consecutive threads of one wave
    (each workgroup's chunk of a row is whole groups: threads * vec a multiple of G)."""
    p, w, g = d.spec.params, d.target.wave_size, d.spec.params.quant_group
    if not g:
        return
    if p.y.pack > 1 and d.vec % p.y.pack:  # (fp4 pairs: a thread's vector is whole bytes of y)
        raise d.fail("vec", d.vec, ", ".join(str(v) for v in (2, 4, 8, 16) if v <= VECTOR_BYTES // _widest(p)),
                     f"y = {p.y.value} packs {p.y.pack} values per byte: a vector holds whole bytes")
    if g % d.vec or g // d.vec > w or (p.threads * d.vec) % g:
        legal = [v for v in (1, 2, 4, 8, 16) if g % v == 0 and g // v <= w and (p.threads * v) % g == 0
                 and v <= VECTOR_BYTES // _widest(p)]
        raise d.fail("vec", d.vec, ", ".join(map(str, legal)) or "none with these threads",
                     f"quant = {'mx' if p.quant_mx else 'group'}({g}): a group is {g} / vec threads of one {w}-lane wave, and threads x vec "
                     f"a multiple of {g}")


PASSES = (check_output, check_workgroup, choose_vector, check_groups)


def plan(spec: KernelSpec, target: Target) -> KernelPlan:
    d = run_passes(PASSES, EwDraft(spec, target))
    p = spec.params
    q = p.quant_group > 0
    body = EwPlan(QUANT_HEADER if q else HEADER, QUANT_IMPL if q else IMPL, d.vec, p.threads, p.unroll)
    return KernelPlan(spec=spec, target=target, body=body, abi=abi(spec), launch=launch(p.threads, d.vec, p.unroll),
                      entries=(Entry(spec.name, p.threads, 0),))
