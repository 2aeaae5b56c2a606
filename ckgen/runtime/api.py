"""The one JIT API of ckgen, with the target as a parameter, for every op.

    import ckgen.runtime.api as ck          # (ckgen.jit is the same function)
    k = ck.jit("kernels.ck", kernel="my_kernel", target="emu", arch="gfx942")
    out = k(*arrays)                        # numpy in, numpy out on the emulator

``jit(source, kernel=None, target="emu", arch=None) -> Kernel``
    ``source`` is a path to a ``.ck`` file or DSL text. ``target`` names a backend: ``"emu"`` (CPU
    emulator, AMD arch), ``"hip"`` (AMD GPU through hip-python) or ``"cuda"``; an NVIDIA arch name
    (``"sm_90"``) means ``target="cuda", arch="sm_90"``. ``arch`` defaults to the kernel's first
    declared arch of the backend's vendor. The kernel is planned for that arch, built through the
    backend (cached on disk) and returned as a :class:`Kernel`.

``Kernel.__call__(*tensors, stream=None, **named) -> output(s)``
    Tensors are passed positionally in the order of the kernel's ABI (``kernel.abi``; e.g. A, B, C,
    bias) or by name; sizes and scalars no array determines may be given by name (``batch=4``). Every
    check is :mod:`ckgen.runtime.binding`'s, the same for every op and backend: dtypes (bf16 travels as
    uint16 bit patterns, see :func:`ckgen.ir.arrays.to_bf16`), shapes that agree, layouts, strides,
    unused tensors None, no output aliasing an input. Outputs left out are allocated (unless the kernel reads
    them). Returns the output, or a tuple of the outputs in ABI order when there are several. A repeated call
    signature skips all that (:mod:`ckgen.runtime.prepared`); on the cuda backend with torch tensors it is served
    by compiled code, with no Python beyond this method (ckgen/backends/nvidia/fastcall.cpp).

Backends
    ``target`` names a backend of :mod:`ckgen.backends` (``emu``, ``hip``, ``cuda``); its driver honours
    :class:`ckgen.backends.base.Backend`'s contract, and its compiler builds the plan.

``Kernel.__call__(..., workspace=buf)`` passes a workspace (at least ``kernel.workspace_bytes(M=.., ...)``
bytes, zero-filled before its first use); without one, a call that needs it allocates a new one.
    - ``to_host(obj) -> numpy array``: a host copy of a (small) array the binding must read, e.g. an offsets
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ckgen.backends import get_backend, resolve_target
from ckgen.backends.base import ArrayInfo, Backend, Call
from ckgen.errors import CkgenError, RuntimeFailure
from ckgen.frontend import load_file, load_text
from ckgen.ir.abi import Abi, ArgKind
from ckgen.ir.arrays import from_bf16, numpy_dtype, poison, to_bf16
from ckgen.lower import plan_kernel
from ckgen.runtime.binding import bind, call_form, positional
from ckgen.runtime.family import jit_family
from ckgen.runtime.prepared import (
    MAX_ENTRIES,
    MISS,
    cacheable,
    call_key,
    compiled_self,
    new_callable,
    prepare,
)
from ckgen.targets import arch_for, default_target, get_target

__all__ = ["ArrayInfo", "Backend", "Call", "Kernel", "emu_kernels", "from_bf16", "get_backend", "jit", "numpy_dtype",
           "plan_for", "poison", "resolve_target", "to_bf16"]

def _load_specs(source: str | Path, default_arches: tuple[str, ...] = ()):
    """Specs of a .ck path or DSL text; kernels that name no target take ``default_arches``."""

    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and source.endswith(".ck")):
        path = Path(source)
        if not path.is_file():
            raise CkgenError(f"{path}: no such .ck file")
        return load_file(path, default_arches)
    return load_text(str(source), default_arches=default_arches)


def plan_for(source: str | Path, kernel: str | None, vendor: str, arch: str | None):
    """Parse ``source``, pick ``kernel`` and plan it for ``arch`` (default: its first arch of ``vendor``)."""

    specs = _load_specs(source, (arch or default_target(vendor),))
    names = [s.name for s in specs]
    if kernel is None:
        if len(specs) != 1:
            raise CkgenError(f"the source defines {len(specs)} kernels; choose one with kernel=",
                             hint="kernels: " + ", ".join(names))
        spec = specs[0]
    else:
        found = [s for s in specs if s.name == kernel]
        if not found:
            raise CkgenError(f"no kernel named '{kernel}'", hint="kernels: " + ", ".join(names))
        spec = found[0]
    if arch is None:
        arch = arch_for(spec.arches, vendor, f"kernel '{spec.name}'")
    target = get_target(arch)
    if target.vendor != vendor:
        raise CkgenError(f"arch '{arch}' is a {target.vendor} target; this backend runs {vendor} targets")
    return plan_kernel(spec, target)


def jit(source: str | Path, kernel: str | None = None, target: str = "emu", arch: str | None = None,
        tuning: str | Path | None = None):
    """Build one kernel for ``target`` and return it as a callable (see the module docstring). When ``kernel``
    names a family rather than a kernel, return its dispatching callable
    (:class:`ckgen.runtime.family.DispatchKernel`), which picks a member by shape from the ``tuning`` database
    (optional) and builds members as they are first chosen."""
    name, arch = resolve_target(target, arch)
    backend = get_backend(name)
    if kernel is not None:

        specs = _load_specs(source, (arch or default_target(backend.vendor),))
        if not any(s.name == kernel for s in specs):

            return jit_family(specs, kernel, backend, arch, str(tuning) if tuning else None)
    plan = plan_for(source, kernel, backend.vendor, arch)
    return Kernel(plan, backend)


class Kernel:
    """One planned kernel built for one backend; call it with its tensors (see the module docstring).

    ``Kernel(plan, backend)`` makes an instance of the backend's compiled subclass when it has one
    (:func:`ckgen.runtime.prepared.new_callable`): calls with a prepared signature then run no Python at all."""

    def __new__(cls, plan: Any = None, backend: Backend | None = None):
        return new_callable(cls, backend)

    def __init__(self, plan: Any, backend: Backend):
        self.plan = plan
        self.backend = backend
        self.name = plan.name
        self.arch = plan.arch
        self.op = plan.op
        self.abi: Abi = plan.abi
        self.handle = backend.build(plan)
        self._prepared: dict = {}
        self._native = compiled_self(self)

    def __repr__(self) -> str:
        return (f"Kernel({self.name!r}, op={self.op!r}, arch={self.arch!r}, target={self.backend.name!r}): "
                f"{self.signature()}")

    def signature(self) -> str:
        """The call form: inputs positional in ABI order; outputs, sizes, scalars, ``stream`` and ``workspace``
        keyword-only (None: allocated / given by the arrays / the default); then what the call returns."""
        return call_form(self.name, self.abi)

    def workspace_bytes(self, **sizes: int) -> int:
        """Bytes of workspace a call at these sizes (by ABI name; defaults apply) needs; 0 without one."""
        vals = {a.name: sizes.get(a.name, a.default) for a in self.abi.sizes}
        missing = [k for k, v in vals.items() if v is None]
        if missing:
            raise RuntimeFailure(f"kernel '{self.name}': workspace_bytes needs {', '.join(missing)}")
        if any(vals.get(s, 1) == 0 for s in self.abi.empty_if):
            return 0
        return self.plan.launch.workspace_bytes(vals)

    def bind(self, *tensors: Any, stream: Any = None, workspace: Any = None, **named: Any) -> Call:
        """The checked :class:`Call` of these arguments (what ``__call__`` launches)."""
        names = positional(self.abi)
        if len(tensors) > len(names):
            rest = [a.name for a in self.abi.tensors if a.name not in names and not a.unused]
            raise RuntimeFailure(f"kernel '{self.name}' takes its inputs positionally ({', '.join(names) or 'none'}), "
                                 f"got {len(tensors)} positional arguments",
                                 hint="outputs and the rest are keyword-only: pass "
                                      + ", ".join(f"{n}=..." for n in rest or ["..."]) + f"; {self.signature()}")
        arrays = dict(zip(names, tensors, strict=False))
        sizes, scalars = {}, {}
        for key, val in named.items():
            if key in arrays and key in names[:len(tensors)]:
                raise RuntimeFailure(f"kernel '{self.name}': {key} is given twice")
            kind = next((a.kind for a in self.abi.args if a.name == key), None)
            if kind == ArgKind.TENSOR:
                arrays[key] = val
            elif kind == ArgKind.SIZE:
                sizes[key] = val
            elif kind == ArgKind.SCALAR:
                scalars[key] = val
            else:
                raise RuntimeFailure(f"kernel '{self.name}' has no argument {key!r}",
                                     hint="arguments: " + ", ".join(a.name for a in self.abi.args
                                                                    if a.kind not in (ArgKind.STRIDE,
                                                                                      ArgKind.WORKSPACE)))
        return bind(self.plan, self.backend, arrays, sizes, scalars, stream, workspace)

    def __call__(self, *tensors: Any, stream: Any = None, workspace: Any = None, **named: Any) -> Any:
        """The Python prepared path, else binding and launch. An instance of the backend's compiled class is called
        by compiled code first, which hands here (as ``_full_call``) the calls it does not serve."""
        op = self.backend.fast_operand
        keyed = None
        if op is not None and stream is None and workspace is None:
            keyed = call_key(op, tensors, named)
            if keyed is not None:
                out = self.run_prepared(*keyed)
                if out is not MISS:
                    return out
        call = self.bind(*tensors, stream=stream, workspace=workspace, **named)
        self.backend.launch(self.handle, call)
        if keyed is not None and keyed[0] not in self._prepared:
            self._remember(keyed[0], call, tensors, named)
        outs = call.outputs()
        return outs[0] if len(outs) == 1 else tuple(outs)

    _full_call = __call__

    def _raise_status(self, status: int) -> None:
        """A failed compiled launch (fastcall.cpp calls this with the entry's status)."""
        self.backend.raise_status(self.handle, status)

    def run_prepared(self, key: tuple, objs: list, ptrs: list) -> Any:
        """Launch the prepared call of signature ``key`` (see :mod:`ckgen.runtime.prepared`); MISS when there is
        none or the call needs the full checks."""
        prep = self._prepared.get(key)
        if prep is None:
            return MISS
        return prep.run(objs, ptrs)

    def _remember(self, key: tuple, call: Call, tensors: tuple, named: dict) -> None:
        if not cacheable(self.abi, tensors, named):
            return
        if call.workspace() is not None and call.workspace()[1] is not None and self.backend.fast_workspace is None:
            return
        if len(self._prepared) >= MAX_ENTRIES:
            self._prepared.clear()
            if self._native is not None:
                self._native.clear()
        prep = self._prepared[key] = prepare(self.plan, self.backend, self.handle, call, tensors, named)
        if self._native is not None:
            prep.native = self.backend.native_spec(self.handle, key, prep)
            self._native.add(prep.native)


def emu_kernels(plans, stem: str = "emu_kernels", jobs: int = 1) -> dict:
    """name -> :class:`Kernel` on the emulator for every plan (distinct names), from one emu library per arch
    (:func:`ckgen.backends.emu.build_library`: one host compile instead of one per kernel), or with ``jobs`` > 1
    from up to ``jobs`` libraries per arch, each a share of its plans, built side by side (one host compiler each)."""
    from concurrent.futures import ThreadPoolExecutor

    from ckgen.backends.emu import prebuilt_backend

    plans = list(plans)
    if len({p.name for p in plans}) != len(plans):
        raise CkgenError("emu_kernels: the plans' kernel names must be distinct (one arch per name)")
    groups = []  # (arch, share index, plans)
    for arch in sorted({p.arch for p in plans}):
        mine = [p for p in plans if p.arch == arch]
        n = max(1, min(jobs, len(mine)))
        groups += [(arch, i, mine[i::n]) for i in range(n)]
    stems = [stem] if len(groups) == 1 else [f"{stem}_{arch}_{i}" for arch, i, _ in groups]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        backends = list(pool.map(prebuilt_backend, [g[2] for g in groups], stems))
    return {p.name: Kernel(p, backend) for (_, _, ps), backend in zip(groups, backends, strict=True) for p in ps}
