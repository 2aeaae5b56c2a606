"""``ckgen run``: one kernel of any op on random data, checked against the op's float64 reference.

:func:`run_command` builds the kernel for the target (``emu``, ``hip``, ``sm_90`` ...) as
:func:`ckgen.runtime.api.jit` does, takes the runtime sizes by name (``--size m=200,n=130,k=70``: the ABI's size
arguments, case-insensitive; ``-m/-n/-k`` are shorthands for sizes named M, N, K), draws random inputs
(never zeros; outputs poisoned unless the kernel reads them), runs it, and prints per output the relative
error ``||out - ref|| / ||ref||`` against the op's float64 reference; on ``emu`` also the LDS bank conflicts
the emulator counted (docs/emulation.md). Exit status: 0 within every output's
tolerance, 1 over it (or unwritten / NaN outputs), 2 on bad input (a CkgenError, printed with ``render()``).

Before anything is allocated, the sizes are checked against the ABI's range and the host memory the run needs
(:func:`host_bytes`: the arrays, their copies and the float64 reference) against what is available
(:func:`ckgen.config.available_memory`); ``--seed`` must be a non-negative integer.
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from ckgen.backends.emu import lds_bank_summary
from ckgen.config import available_memory
from ckgen.errors import CkgenError
from ckgen.ir.abi import INT32_MAX
from ckgen.ir.arrays import numpy_dtype, shape_of, to_float64
from ckgen.ir.plan import KernelPlan
from ckgen.ir.registry import get_op
from ckgen.runtime.api import Kernel, get_backend, plan_for, resolve_target


def parse_sizes(text: str | None) -> dict[str, int]:
    """``m=200,n=130`` -> {"m": 200, "n": 130}; CkgenError on anything else."""
    out: dict[str, int] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise CkgenError(f"--size {item!r}: expected NAME=VALUE", hint="e.g. --size m=256,n=128,k=64")
        try:
            v = int(value.strip(), 10)
        except ValueError:
            raise CkgenError(f"--size {name}={value.strip()}: not an integer") from None
        if name.lower() in out:
            raise CkgenError(f"--size names {name} twice")
        out[name.lower()] = v
    return out


def resolve_sizes(plan, given: dict[str, int]) -> dict[str, int]:
    """ABI size name -> value from ``given`` (lower-case names) and the ABI defaults; CkgenError when a size is
    unknown, missing, or out of range."""
    by_lower = {a.name.lower(): a for a in plan.abi.sizes}
    names = ", ".join(a.name.lower() for a in plan.abi.sizes)
    unknown = sorted(set(given) - set(by_lower))
    if unknown:
        raise CkgenError(f"kernel '{plan.name}' (op {plan.op}) has no size {', '.join(unknown)}", hint=f"sizes: {names}")
    out: dict[str, int] = {}
    derived = {count: (size, block) for count, size, block in plan.abi.blocks}  # counts of blocks: from their size
    for low, a in by_lower.items():
        if low in given:
            v = given[low]
        elif a.default is not None:
            v = int(a.default)
        elif a.name in derived and derived[a.name][0].lower() in given:
            size, block = derived[a.name]
            v = -(-given[size.lower()] // block)
        else:
            raise CkgenError(f"kernel '{plan.name}' needs size {low}", hint=f"pass --size with {names}")
        hi = INT32_MAX if a.at_most is None else a.at_most
        if not 0 <= v <= hi:
            raise CkgenError(f"size {low} = {v}: out of range", hint=f"legal: 0..{hi}" + (f" ({a.doc})" if a.doc else ""))
        out[a.name] = v
    return out


#: bytes per element besides the array itself: a copy of it before the call and float64 values for the reference
_PER_ELEMENT_EXTRA = 16


def host_bytes(plan, sizes: dict[str, int]) -> int:
    """Host memory a ``ckgen run`` of ``plan`` at ``sizes`` needs: each tensor, its copy and its float64 values."""
    total = 0
    bounded = {**get_op(plan.op).extent_bounds(plan, sizes), **sizes}
    for a in plan.abi.tensors:
        if not a.unused:
            elems = 1
            for n in shape_of(a, bounded):
                elems *= n
            total += elems * (2 * numpy_dtype(a.dtype).itemsize + _PER_ELEMENT_EXTRA)
    return total


def check_memory(plan, sizes: dict[str, int], available: int | None) -> None:
    """CkgenError when the run needs more host memory than is ``available`` (None: unknown, no check)."""
    need = host_bytes(plan, sizes)
    if available is not None and need > available:
        shown = ", ".join(f"{k.lower()}={v}" for k, v in sizes.items())
        raise CkgenError(f"--size {shown}: the run needs about {_gib(need)} of host memory (inputs, outputs, their "
                         f"copies and the float64 reference), but {_gib(available)} is available",
                         hint="pass smaller sizes")


def _gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.1f} MiB"


def check_seed(seed: int | None) -> int:
    if seed is None:
        return 0
    if seed < 0:
        raise CkgenError(f"--seed {seed}: the seed must be a non-negative integer")
    return seed


def run_command(path: str, kernel: str | None, target: str, arch: str | None, sizes: dict[str, int],
                seed: int | None) -> int:
    """``ckgen run``. Returns the exit status: 0 ok, 1 numeric failure, else the CkgenError's exit code (2 for
    bad input), after printing the error."""
    try:
        return _run(path, kernel, target, arch, sizes, seed)
    except CkgenError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code


def check_call(kern: Kernel, values: dict[str, int], rng: np.random.Generator) -> tuple[list[tuple[str, float, float]], float]:
    """Run ``kern`` once on the op's random inputs at sizes ``values`` (outputs poisoned); return
    :func:`judge_outputs` of the call and the seconds it took."""
    op = get_op(kern.plan.op)
    arrays = op.random_inputs(kern.plan, values, rng)
    before = {k: (v.copy() if v is not None else None) for k, v in arrays.items()}
    t0 = time.perf_counter()
    kern(**arrays, **free_sizes(kern.plan, values))
    dt = time.perf_counter() - t0
    return judge_outputs(kern.plan, values, before, arrays), dt


def free_sizes(plan: KernelPlan, values: dict[str, int]) -> dict[str, int]:
    """The sizes of ``values`` no array's shape gives (e.g. a rotary epilogue's rope_cols): they go with the call."""
    dims = {d for a in plan.abi.tensors for d in a.dims if isinstance(d, str)}
    return {s.name: values[s.name] for s in plan.abi.sizes if s.name not in dims and s.name in values}


def judge_outputs(plan: KernelPlan, values: dict[str, int], before: dict, after: dict) -> list[tuple[str, float, float]]:
    """``[(output, error vs the float64 reference, tolerance)]`` per written output of a call at sizes ``values``:
    ``before`` the arrays it was given (copies), ``after`` them as it left them (an unwritten or non-finite output
    has error inf; the op's :meth:`~ckgen.ir.op.Op.error` and :meth:`~ckgen.ir.op.Op.tolerance`)."""
    op = get_op(plan.op)
    written = [a for a in plan.abi.tensors if a.writes and not a.unused]
    if any(values.get(n) == 0 for n in plan.abi.empty_if):
        # a no-op call (a size of the ABI's empty_if is 0): nothing may change, whatever the other sizes (the checks
        # between them, e.g. heads a multiple of heads_kv, are skipped for it); the reference is not consulted
        return [(a.name, 0.0 if _same_bytes(after[a.name], before[a.name]) else math.inf,
                 op.tolerance(plan, a.name)) for a in written]
    refs = op.reference(plan, before, values)
    return [(a.name, op.error(plan, a.name, to_float64(np.ascontiguousarray(after[a.name]), a.dtype), refs[a.name]),
             op.tolerance(plan, a.name)) for a in written]


def _same_bytes(after: np.ndarray, before: np.ndarray) -> bool:
    """Whether two arrays hold the same elements bit for bit (NaN poison included), in any memory order."""
    a, b = np.asarray(after), np.asarray(before)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _run(path: str, kernel: str | None, target: str, arch: str | None, sizes: dict[str, int],
         seed: int | None) -> int:
    seed = check_seed(seed)
    backend_name, arch = resolve_target(target, arch)
    backend = get_backend(backend_name)
    plan = plan_for(path, kernel, backend.vendor, arch)
    values = resolve_sizes(plan, sizes)
    check_memory(plan, values, available_memory())  # before the build and before any allocation
    kern = Kernel(plan, backend)
    try:
        results, dt = check_call(kern, values, np.random.default_rng(seed))
    except MemoryError:
        raise CkgenError(f"out of host memory for sizes {values}", hint="pass smaller sizes") from None
    shown = " ".join(f"{k}={v}" for k, v in values.items())
    for name, err, tol in results:
        print(f"{kern.name} on {kern.backend.name} ({kern.arch}): {shown}, {dt:.3f} s, {name}: relative error vs "
              f"float64 {err:.3e} (tolerance {tol:.1e}): {'ok' if err <= tol else 'FAILED'}")
    if kern.backend.name == "emu":

        print(lds_bank_summary(kern.handle.library.lds_sites()))
    ok = all(err <= tol for _, err, tol in results)
    return 0 if ok else 1
