"""What an op is: the one description every stage reads (docs/adding-an-op.md).

An op is a package ``ckgen/ops/<op>/`` whose ``OP`` is an :class:`Op`. The stages never name an op; they
call these methods through the registry (:func:`ckgen.ir.registry.get_op`):

================  ==========================================================================================
stage             what it asks the op
================  ==========================================================================================
frontend          ``keys`` (the DSL parameters, legal values, defaults), ``build_params`` (values -> frozen
                  params, raising SpecError with the value's span)
lower             ``plan`` (its explicit pass list over one target -> :class:`~ckgen.ir.plan.KernelPlan`,
                  raising ValidationError naming the parameter and what is legal)
codegen           ``kernel_template`` (``<op>/kernel.hip.j2``, which extends ``kernel.hip.j2``), ``kernel_view``
                  (the Cfg it renders), ``summary``
toolchain         nothing op-specific: entries, LDS and threads come from the plan
runtime           the plan's ABI; ``reference`` (float64), ``random_inputs``, ``tolerance`` for ``ckgen run``
dispatch          ``signature`` (which kernels may replace each other), ``model_traits`` + ``estimate`` (a cost
                  model in Python) and ``model_template`` (the same model in C): docs/dispatch.md
================  ==========================================================================================
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from ckgen.ir.abi import Abi
from ckgen.ir.plan import KernelPlan
from ckgen.ir.spec import KernelSpec, Value
from ckgen.ir.target import Target
from ckgen.ir.types import DType

#: the parameters every kernel may set, whatever its op (handled by the frontend)
COMMON_KEYS = ("op", "arch")


@dataclass(frozen=True)
class Key:
    """One DSL parameter of an op: ``legal`` says what may be written, ``default`` what applies when it is
    not (None: required, or chosen by the planner as ``default_text`` says)."""

    name: str
    legal: str
    required: bool = False
    default_text: str = ""


@dataclass(frozen=True)
class BuildContext:
    """What ``build_params`` may need besides the values: the kernel name (for messages) and its block span."""

    kernel: str
    span: Any


class Op(ABC):
    """The interface of one op (see the module docstring). Subclasses are stateless singletons."""

    #: the DSL name (``op = <name>``)
    name: str = ""
    #: one line for docs and ``--help``
    doc: str = ""
    #: the op's DSL parameters, in documentation order
    keys: tuple[Key, ...] = ()
    #: the kernel template, relative to the ops folder (``<op>/kernel.hip.j2``)
    kernel_template: str = ""

    # ------------------------------------------------------------------ frontend
    def key_names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)

    def required(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys if k.required)

    @abstractmethod
    def build_params(self, values: dict[str, Value], ctx: BuildContext) -> Any:
        """The op's frozen params from the parsed values (only keys of ``keys``; required ones present).
        Raises :class:`~ckgen.errors.SpecError` pointing at the offending value."""

    # ------------------------------------------------------------------ lower
    @abstractmethod
    def plan(self, spec: KernelSpec, target: Target) -> KernelPlan:
        """Run the op's pass list for ``target``; ValidationError on the first illegal decision."""

    @abstractmethod
    def abi(self, spec: KernelSpec) -> Abi:
        """The kernel's C ABI (the same for every target)."""

    # ------------------------------------------------------------------ codegen
    @abstractmethod
    def kernel_view(self, plan: KernelPlan) -> dict:
        """What the op's kernel template renders besides the generic fields (docs/adding-an-op.md); the generic
        template reads ``workgroups_per_cu`` (default 0): m > 0 gives the entry CKGEN_LAUNCH_BOUNDS_MIN(threads, m),
        registers for m workgroups per CU / SM (on CUDA ``__launch_bounds__(threads, m)``; 1: the whole register
        file for one workgroup; AMD: the flat workgroup size only, platform_amd.h)."""

    @abstractmethod
    def summary(self, plan: KernelPlan) -> str:
        """One line describing the kernel (generated comments, header, report)."""

    # ------------------------------------------------------------------ runtime
    @abstractmethod
    def reference(self, plan: KernelPlan, arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> dict[str, np.ndarray]:
        """float64 values of every output tensor, from the inputs (``arrays`` by ABI name, as passed to the
        kernel; outputs hold their values from before the call)."""

    def reference_torch(self, plan: KernelPlan, arrays: dict[str, Any], sizes: dict[str, int]) -> dict[str, Any] | None:
        """:meth:`reference` computed in float64 on the tensors' device (torch tensors in, torch tensors out), so
        that a tuning run on a GPU need not copy large operands to the host; None (the default) when the op has
        none, and the caller then copies the operands to the host for :meth:`reference`."""
        return None

    def tolerance(self, plan: KernelPlan, output: str) -> float:
        """Relative norm error allowed for ``output``: the loosest of the kernel's tensor dtypes."""
        return max(TOLERANCE.get(a.dtype, 1e-2) for a in plan.abi.tensors if not a.unused)

    def error(self, plan: KernelPlan, output: str, got: np.ndarray, ref: np.ndarray) -> float:
        """The error of ``output`` that :meth:`tolerance` bounds (float64 arrays): :func:`relative_error`."""
        return relative_error(got, ref)

    # ------------------------------------------------------------------ dispatch
    #: the op's cost model in C (``<op>/model.cpp.j2``; "" for none): renders ``static double {{ fn }}(const
    #: double* t, const int64_t* s, int nsizes)``, the twin of :meth:`estimate`
    model_template: str = ""

    def signature(self, spec: KernelSpec) -> dict:
        """What kernels that may replace each other share (a dispatcher serves one signature): by default the ABI
        without its workspace. Ops whose compile-time parameters change the result (scalars, epilogues) say so."""
        return {"abi": self.abi(spec).without_workspace().to_json()}

    def model_traits(self, plan: KernelPlan) -> tuple[float, ...]:
        """Per-kernel numbers the cost model reads (none by default)."""
        return ()

    def estimate(self, traits: tuple[float, ...], sizes: tuple[int, ...]) -> float:
        """Seconds a call at ``sizes`` (the ABI's size arguments in order) should take (default: 1, no model)."""
        return 1.0

    def flops(self, plan: KernelPlan, sizes: dict[str, int]) -> float | None:
        """Arithmetic of one call at ``sizes`` (reports TFLOP/s; None: not meaningful for the op)."""
        return None

    def extent_bounds(self, plan: KernelPlan, sizes: dict[str, int]) -> dict[str, int]:
        """Upper bounds of the ABI's extents (dims that are not arguments, e.g. a varlen batch's total tokens) at
        ``sizes``: what ``ckgen run`` budgets host memory with before drawing inputs (default: none)."""
        return {}

    def random_inputs(self, plan: KernelPlan, sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray | None]:
        """Arrays for every tensor of the ABI at ``sizes``: random values (never all zero) for what the kernel
        reads, poison (0xFF bytes) for what it only writes, None for unused tensors."""
        from ckgen.ir.arrays import allocate, poison, random_fill

        out: dict[str, np.ndarray | None] = {}
        for a in plan.abi.tensors:
            if a.unused:
                out[a.name] = None
                continue
            arr = allocate(a, sizes)
            out[a.name] = random_fill(arr, a.dtype, rng) if a.role != "out" else poison(arr)
        return out


#: relative norm error allowed per dtype against float64 (``ckgen run``, numerics tests)
TOLERANCE: dict[DType, float] = {DType.F16: 5e-3, DType.BF16: 3e-2, DType.F32: 1e-4, DType.I8: 0.0,
                                 DType.I32: 0.0}


def relative_error(got: np.ndarray, ref: np.ndarray, floor: float = 0.0) -> float:
    """``||got - ref|| / max(||ref||, floor * sqrt(n))`` in float64 over the finite elements of ``ref`` (n of them:
    with ``floor`` > 0 an output whose root-mean-square is under ``floor`` is compared in absolute terms, e.g. a
    log-sum-exp near 0); inf when ``got`` has a NaN or an inf where ``ref`` does not hold the same infinity or NaN
    (an unwritten or wrong element; a NaN in ``ref`` is an element the kernel must leave as it was, poisoned)."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    n = np.count_nonzero(np.isfinite(ref))
    same_inf = (np.isinf(ref) & (got == ref)) | (np.isnan(ref) & np.isnan(got))
    if np.any(same_inf):
        got, ref = np.where(same_inf, 0.0, got), np.where(same_inf, 0.0, ref)
    if not np.all(np.isfinite(got)):
        return math.inf
    denom = max(float(np.linalg.norm(ref)), floor * math.sqrt(n))
    diff = float(np.linalg.norm(got - ref))
    return diff / denom if denom > 0 else diff
