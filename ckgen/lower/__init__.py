"""Lowering: (KernelSpec, Target) → KernelPlan through the passes in ``pipeline.PASSES``."""

from ckgen.lower.pipeline import PASSES, plan_all, plan_kernel

__all__ = ["PASSES", "plan_all", "plan_kernel"]
