"""Lowering: (KernelSpec, Target) -> KernelPlan through the spec's op.

Each op keeps its pass list as an explicit tuple (``ckgen/ops/<op>/plan.py``, ``PASSES``) and runs it with
:func:`ckgen.lower.draft.run_passes`; :func:`plan_kernel` resolves the target once and dispatches through
the op registry; :func:`plan_all` plans many kernels and collects every error.
"""

from __future__ import annotations

from collections.abc import Iterable

from ckgen.errors import CkgenError, ErrorList
from ckgen.ir.plan import KernelPlan
from ckgen.ir.spec import KernelSpec
from ckgen.ops import get_op
from ckgen.targets import get_target
from ckgen.targets.model import Target


def plan_kernel(spec: KernelSpec, target: Target | str) -> KernelPlan:
    """Plan ``spec`` for ``target``; the first illegal decision raises ValidationError."""
    tgt = get_target(target) if isinstance(target, str) else target
    return get_op(spec.op).plan(spec, tgt)


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
                if exc.span is None:  # e.g. an unknown target: point at where that target was named
                    named = any(k == f"arch:{arch}" for k, _ in spec.spans)
                    exc.span = spec.span(f"arch:{arch}" if named else "arch")
                errors.append(exc)
    if errors:
        raise errors[0] if len(errors) == 1 else ErrorList(errors)
    return plans
