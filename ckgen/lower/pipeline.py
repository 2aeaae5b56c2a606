"""Lowering: (KernelSpec, Target) -> KernelPlan through the spec's op.

Each op keeps its pass list as an explicit tuple (``ckgen/ops/<op>/plan.py``, ``PASSES``) and runs it with
:func:`ckgen.lower.draft.run_passes`; :func:`plan_kernel` resolves the target once and dispatches through
the op registry; :func:`plan_all` plans many kernels and collects every error.

Families at scale: with ``pruned`` given, a family member that is illegal for one of its arches is dropped
(from every arch, so that a library's kernels are the same on each) and recorded as a :class:`Pruned`
instead of failing the whole file; :func:`pruned_notes` summarizes them (their count and the first reasons).
A family none of whose members is legal is still an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ckgen.errors import CkgenError, ErrorList, SourceSpan
from ckgen.ir.plan import KernelPlan
from ckgen.ir.registry import get_op
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import Target
from ckgen.targets import get_target


def plan_kernel(spec: KernelSpec, target: Target | str) -> KernelPlan:
    """Plan ``spec`` for ``target``; the first illegal decision raises ValidationError."""
    tgt = get_target(target) if isinstance(target, str) else target
    return get_op(spec.op).plan(spec, tgt)


@dataclass(frozen=True)
class Pruned:
    """A family member left out because it is illegal on ``arch``; ``error`` says why."""

    family: str
    kernel: str
    arch: str
    error: CkgenError


def arch_span(spec: KernelSpec, arch: str) -> SourceSpan | None:
    """Where ``spec`` named the target ``arch`` (its ``target`` line or ``arch =``), else where it was named."""
    named = any(k == f"arch:{arch}" for k, _ in spec.spans)
    return spec.span(f"arch:{arch}" if named else "arch")


def plan_all(specs: Iterable[KernelSpec], arches: Iterable[str] | None = None,
             pruned: list[Pruned] | None = None) -> list[KernelPlan]:
    """Plan every kernel for every arch (its own ``arches`` unless ``arches`` overrides).
    Collects all errors and raises them together. With ``pruned``, illegal family members are appended there
    and left out (see the module docstring)."""
    plans: list[KernelPlan] = []
    errors: list[CkgenError] = []
    dropped: list[Pruned] = []
    members: dict[str, int] = {}
    for spec in specs:
        mine: list[KernelPlan] = []
        failed: list[Pruned] = []
        for arch in (tuple(arches) if arches else spec.arches):
            try:
                mine.append(plan_kernel(spec, arch))
            except CkgenError as exc:
                if exc.span is None:  # e.g. an unknown target: point at where that target was named
                    exc.span = arch_span(spec, arch)
                failed.append(Pruned(spec.family or "", spec.name, arch, exc))
        if spec.family is not None:
            members[spec.family] = members.get(spec.family, 0) + 1
        if failed and spec.family is not None and pruned is not None:
            dropped.extend(failed)
            continue
        errors.extend(f.error for f in failed)
        plans.extend(mine)
    for family, total in members.items():
        gone = [d for d in dropped if d.family == family]
        if len({d.kernel for d in gone}) == total:  # nothing left of this family: its errors stand
            errors.extend(d.error for d in gone)
    if errors:
        raise errors[0] if len(errors) == 1 else ErrorList(errors)
    if pruned is not None:
        pruned.extend(dropped)
    return plans


def pruned_notes(pruned: list[Pruned], specs: Iterable[KernelSpec], first: int = 3) -> list[str]:
    """One line per family with pruned members: how many of how many, and the first reasons."""
    totals: dict[str, int] = {}
    for s in specs:
        if s.family is not None:
            totals[s.family] = totals.get(s.family, 0) + 1
    out = []
    for family in dict.fromkeys(d.family for d in pruned):
        gone = [d for d in pruned if d.family == family]
        kernels = list(dict.fromkeys(d.kernel for d in gone))
        reasons = "; ".join(d.error.message for d in gone[:first])
        more = f" (and {len(gone) - first} more)" if len(gone) > first else ""
        out.append(f"family '{family}': {len(kernels)} of {totals.get(family, len(kernels))} members are illegal "
                   f"and were pruned: {reasons}{more}")
    return out
