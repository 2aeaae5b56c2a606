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
from ckgen.lower.draft import Draft, run_passes
from ckgen.ops.elementwise.abi import abi, launch

VECTOR_BYTES = 16
HEADER = "elementwise_body.h"
IMPL = "ckgen::ew::elementwise_forward"


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


PASSES = (check_workgroup, choose_vector)


def plan(spec: KernelSpec, target: Target) -> KernelPlan:
    d = run_passes(PASSES, EwDraft(spec, target))
    p = spec.params
    body = EwPlan(HEADER, IMPL, d.vec, p.threads, p.unroll)
    return KernelPlan(spec=spec, target=target, body=body, abi=abi(spec), launch=launch(p.threads, d.vec, p.unroll),
                      entries=(Entry(spec.name, p.threads, 0),))
