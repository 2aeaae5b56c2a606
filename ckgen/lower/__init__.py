"""Lowering: (KernelSpec, Target) -> KernelPlan through the op's explicit pass list."""

from ckgen.lower.pipeline import plan_all, plan_kernel

__all__ = ["plan_all", "plan_kernel"]
