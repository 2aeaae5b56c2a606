"""The lowering pipeline: an explicit, ordered list of passes from (KernelSpec, Target) to KernelPlan.

``PASSES`` is the whole story; ``plan_kernel`` runs it. Adding a check means adding a pass here.
"""

from __future__ import annotations

from collections.abc import Iterable

from ckgen.errors import CkgenError, ErrorList
from ckgen.ir.plan import KernelPlan
from ckgen.ir.spec import KernelSpec
from ckgen.lower import passes as P
from ckgen.targets import get_target
from ckgen.targets.model import Target

PASSES = (
    P.check_workgroup,      # waves x wave size within the workgroup limit
    P.check_dtypes,         # the target has instructions for these dtypes, and codegen supports them
    P.select_instruction,   # the given instruction exists, or pick the best legal one
    P.check_tile,           # tile divisible by waves x instruction; threads; pipeline depth
    P.check_kernel_body,    # the shape rules of the target's kernel body
    P.choose_vectors,       # global vector widths
    P.plan_lds,             # LDS layout, bytes and capacity
    P.estimate_registers,   # register budget
    P.plan_epilogue,        # epilogue op types, bias dtype, integer path
    P.plan_tma_body,        # sm_90: does the Hopper TMA + wgmma body take this kernel too
)


def plan_kernel(spec: KernelSpec, target: Target | str) -> KernelPlan:
    """Run every pass; the first illegal decision raises ValidationError."""
    tgt = get_target(target) if isinstance(target, str) else target
    d = P.Draft(spec, tgt)
    for p in PASSES:
        p(d)
    cfg, i = spec.config, d.instr
    wave_tile = (cfg.tile[0] // cfg.waves[0], cfg.tile[1] // cfg.waves[1])
    lanes = tgt.wave_size
    return KernelPlan(
        spec=spec, target=tgt, instr=i, threads=cfg.waves[0] * cfg.waves[1] * lanes, wave_tile=wave_tile,
        repeats=(wave_tile[0] // i.m, wave_tile[1] // i.n), items=(i.a_items(lanes), i.b_items(lanes), i.c_items(lanes)),
        vec=d.vec, lds=d.lds, prefetch=cfg.prefetch, registers=d.registers, bias_dtype=d.bias_dtype,
        integer_epilogue=d.integer_epilogue, epilogue_types=d.epilogue_types, tma=d.tma)


def plan_all(specs: Iterable[KernelSpec], arches: Iterable[str] | None = None) -> list[KernelPlan]:
    """Plan every kernel for every arch (its own ``arches`` unless ``arches`` overrides).
    Collects all errors and raises them together."""
    plans: list[KernelPlan] = []
    errors: list[CkgenError] = []
    for spec in specs:
        for arch in (tuple(arches) if arches else spec.arches):
            try:
                plans.append(plan_kernel(spec, arch))
            except CkgenError as exc:
                if exc.span is None:
                    exc.span = spec.span("arch")
                errors.append(exc)
    if errors:
        raise errors[0] if len(errors) == 1 else ErrorList(errors)
    return plans
