"""The row-op kinds: one table (:data:`KINDS`, a :class:`RowKind` per kind) that the rest of the package reads.

A kind is what the device body computes per row: its statistics, the row scalars they give and ``y(v)``. Each
registry op (``softmax``, ``layernorm``, ``rmsnorm``) serves the kinds whose ``op`` is its name: ``softmax``
serves ``softmax`` and, with ``log = true`` (the kind's ``variant`` key), ``log_softmax``. From the table come
the op's DSL keys (``spec.keys``) and doc, the ABI (weight, bias, the runtime scalar), the plan's device entry,
header and per-row state size, the register model's cost per element, the Cfg's ``kOp`` and the float64
reference.

The device half of a kind is a specialization of ``ckgen::rowops::RowKind<kOp>`` (``device/rowops_kinds.h``
states what it provides). Adding a kind is one row here plus its math: the row's numpy ``reference`` and the
device trait. A kind outside the package (a test's, an experiment's) gives its trait in its own device header,
named by the row's ``header`` (an absolute path), which includes ``rowops_entry.h`` and then specializes the
trait; the generated kernel includes that header in place of ``rowops_entry.h``, and names it with its sha256 in
a comment (:func:`header_note`), so that the build cache, which keys a kernel on its source and the package's
headers, sees a changed outside header. :func:`register` adds such a row; the caller serves its op with a
:class:`~ckgen.ops.rowops.RowOp` in ``ckgen.ir.registry.REGISTRY`` (docs/adding-an-op.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: y(v, scale, eps) in float64 over the rows of v, before weight and bias (``y * weight + bias``)
Reference = Callable[[np.ndarray, float, float], np.ndarray]
#: the device header a kernel includes when its kind gives none (device/rowops_entry.h)
ENTRY_HEADER = "rowops_entry.h"
_NS = "ckgen::rowops::"


@dataclass(frozen=True)
class RowKind:
    """One row-op kind. ``op``: the registry name serving it; ``variant``: the boolean DSL key that selects it
    among the op's kinds (None: the op's default kind). ``weight`` / ``bias``: the op takes them (``y *= weight``,
    ``y += bias`` after ``y(v)``); ``scalar``: its runtime scalar, ``scale`` or ``eps`` (``none``: no scalar);
    ``quantizes``: its y is always quantized (int8 / fp8 with scales: the ``quantize`` op). ``kop``: the device
    ``kOp`` (a C++ constant expression: ``RowKind<kOp>``); ``state_floats``: floats of its per-row state
    (``RowKind<kOp>::State::kN``); ``entry``: the device entry taking the op's ABI (``device/rowops_entry.h``:
    softmax_entry for (scale), layernorm_entry for (weight, bias, eps), rmsnorm_entry for (weight, eps)).
    ``reg_cost``: registers per element a thread holds, per wave size (the planner's register model);
    ``bounded``: planned as a register-bounded single pass where no register single pass holds the row (plan.py
    BOUNDED_SINGLE_PASS); ``sgpr_extra``: wave64 scalar registers it costs over the others (registers.py SGPR_MODEL).
    ``what``: its name in prose; ``doc``: the op's line for docs and ``--help`` (the default kind's is the op's).
    ``header``: the device header its kernel includes (:data:`ENTRY_HEADER`, or an outside kind's, which
    includes it). ``rstd_entry``: the device entry of its kernels with the ``rstd`` output (the row's
    ``RowScalars::b``, 1/sqrt(var + eps): the DSL key ``rstd`` and ``y = none``; the ABI gains ``rstd`` after
    ``y_scale``); None: the op has no ``rstd`` key."""

    name: str
    op: str
    what: str
    doc: str
    kop: str
    state_floats: int
    entry: str
    reference: Reference = field(compare=False)
    reg_cost: dict[int, float] = field(compare=False)
    variant: str | None = None
    weight: bool = False
    bias: bool = False
    scalar: str = "eps"
    bounded: bool = False
    sgpr_extra: int = 0
    header: str = ENTRY_HEADER
    quantizes: bool = False
    rstd_entry: str | None = None

    def __post_init__(self) -> None:
        if self.scalar not in ("scale", "eps", "none"):
            raise ValueError(f"RowKind {self.name}: scalar is scale, eps or none")
        if self.bias and not self.weight:
            raise ValueError(f"RowKind {self.name}: a bias comes with a weight")


def _softmax(v: np.ndarray, scale: float, eps: float, log: bool = False) -> np.ndarray:
    t = scale * v
    m = t.max(axis=-1, keepdims=True)
    e = np.exp(t - m)
    d = e.sum(axis=-1, keepdims=True)
    return t - m - np.log(d) if log else e / d


def _layernorm(v: np.ndarray, scale: float, eps: float) -> np.ndarray:
    mean = v.mean(axis=-1, keepdims=True)
    return (v - mean) / np.sqrt(((v - mean) ** 2).mean(axis=-1, keepdims=True) + eps)


def _rmsnorm(v: np.ndarray, scale: float, eps: float) -> np.ndarray:
    return v / np.sqrt((v * v).mean(axis=-1, keepdims=True) + eps)


def _identity(v: np.ndarray, scale: float, eps: float) -> np.ndarray:
    return v.copy()


#: the table: every kind the package serves (register adds outside ones)
KINDS: dict[str, RowKind] = {k.name: k for k in (
    RowKind("softmax", "softmax", "softmax",
            "y = softmax(scale * v) or log-softmax over the last dimension (v = x or x + residual)",
            _NS + "kSoftmax", 2, _NS + "softmax_entry", _softmax, {32: 2.1, 64: 2.3}, scalar="scale"),
    RowKind("log_softmax", "softmax", "log-softmax", "", _NS + "kLogSoftmax", 2, _NS + "softmax_entry",
            lambda v, scale, eps: _softmax(v, scale, eps, log=True), {32: 2.1, 64: 2.3},
            variant="log", scalar="scale"),
    RowKind("layernorm", "layernorm", "layer norm",
            "y = layer norm of each row (v = x or x + residual) [* weight] [+ bias]",
            _NS + "kLayerNorm", 3, _NS + "layernorm_entry", _layernorm, {32: 1.8, 64: 4.5}, weight=True, bias=True,
            bounded=True, sgpr_extra=16),
    RowKind("rmsnorm", "rmsnorm", "RMS norm", "y = RMS norm of each row (v = x or x + residual) [* weight]",
            _NS + "kRmsNorm", 1, _NS + "rmsnorm_entry", _rmsnorm, {32: 1.3, 64: 2.9}, weight=True, bounded=True,
            rstd_entry=_NS + "rmsnorm_rstd_entry"),
    RowKind("quantize", "quantize", "quantization",
            "y = x (or x + residual) quantized to int8 / fp8 with per-row or per-group f32 scales",
            _NS + "kQuantize", 1, _NS + "quantize_entry", _identity, {32: 1.3, 64: 2.9}, scalar="none",
            quantizes=True),
)}


def ops() -> tuple[str, ...]:
    """The registry names the table serves, in table order."""
    return tuple(dict.fromkeys(k.op for k in KINDS.values()))


def of_op(op: str) -> tuple[RowKind, ...]:
    """The kinds op ``op`` serves, its default kind first (KeyError for an op the table lacks)."""
    kinds = [k for k in KINDS.values() if k.op == op]
    if not kinds:
        raise KeyError(f"row op {op}")
    return tuple(sorted(kinds, key=lambda k: k.variant is not None))


def default(op: str) -> RowKind:
    """Op ``op``'s default kind (the one no variant key selects), which gives the op's doc and ABI."""
    return of_op(op)[0]


def variants(op: str) -> tuple[str, ...]:
    """The variant keys of op ``op`` (boolean DSL keys, each selecting one kind)."""
    return tuple(k.variant for k in of_op(op) if k.variant is not None)


def kind_of(op: str, variant: str | None = None) -> RowKind:
    """The kind of op ``op`` that ``variant`` selects (None: the default kind)."""
    for k in of_op(op):
        if k.variant == variant:
            return k
    raise KeyError(f"row op {op}: no kind for variant {variant}")


def register(kind: RowKind) -> None:
    """Adds ``kind`` to the table: a new op's kind (``kind.op`` a new registry name, served by a
    ``RowOp(kind.op)`` the caller puts in ``ckgen.ir.registry.REGISTRY``) or an existing op's new variant. Refuses a name
    the table has, and a header that is neither :data:`ENTRY_HEADER` nor an absolute path to a file."""
    if kind.name in KINDS:
        raise ValueError(f"row kind {kind.name} exists")
    if kind.header != ENTRY_HEADER and not (Path(kind.header).is_absolute() and Path(kind.header).is_file()):
        raise ValueError(f"row kind {kind.name}: header {kind.header!r} is not an absolute path to a file")
    KINDS[kind.name] = kind


def header_note(kind: RowKind) -> str | None:
    """A comment line naming an outside kind's header and its sha256 (None for the package's own header)."""
    if kind.header == ENTRY_HEADER:
        return None
    digest = hashlib.sha256(Path(kind.header).read_bytes()).hexdigest()
    return f"kind {kind.name}: device header {kind.header} (sha256 {digest})"


def unregister(name: str) -> None:
    """Removes a kind :func:`register` added (a test's)."""
    KINDS.pop(name)
