"""The Python callable of a family: ``ckgen.jit(source, kernel="<family>", target=..., tuning="db.jsonl")``.

A :class:`DispatchKernel` plans every member of the family for the arch (members illegal there are left out, as
``ckgen compile`` prunes them), builds the dispatch table (:mod:`ckgen.dispatch.table`) from the tuning database
(optional: without one the cost model decides), and on each call binds the arguments once, chooses the member
for their sizes (:func:`~ckgen.dispatch.table.choose`, the same choice as the generated C dispatcher), builds that
member on first use (cached) and runs it, with a workspace allocated when the member needs one and none is given.
``explain(M, N, K)`` returns the :class:`~ckgen.dispatch.table.Choice` without running anything.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ckgen.dispatch import db
from ckgen.dispatch.table import Choice, Table, choose, tables
from ckgen.errors import CkgenError
from ckgen.ir.abi import ArgKind
from ckgen.lower.pipeline import Pruned, plan_all
from ckgen.runtime.binding import call_form
from ckgen.runtime.prepared import MAX_ENTRIES, MISS, call_key, compiled_self, new_callable
from ckgen.targets import arch_for, get_target


def family_plans(specs, family: str, vendor: str, arch: str | None):
    """The legal plans of the members of ``family`` for ``arch`` (default: the first arch of ``vendor`` any member
    names): the members that name ``arch`` (all of them when none does); CkgenError when there is no such family or
    no member is legal."""

    members = [s for s in specs if s.family == family]
    if not members:
        fams = sorted({s.family for s in specs if s.family})
        raise CkgenError(f"no kernel named '{family}' (and no family)",
                         hint="kernels: " + ", ".join(s.name for s in specs) + "; families: " + (", ".join(fams) or "none"))
    if arch is None:
        arch = arch_for(tuple(dict.fromkeys(a for s in members for a in s.arches)), vendor, f"family '{family}'")
    if get_target(arch).vendor != vendor:
        raise CkgenError(f"arch '{arch}' is a {get_target(arch).vendor} target; this backend runs {vendor} targets")
    # blocks that name their arches (``arch = [...]``) serve only those; a family written for other arches only
    # is planned for ``arch`` as a whole
    members = [s for s in members if arch in s.arches] or members
    pruned: list[Pruned] = []
    return plan_all(members, (arch,), pruned)


class DispatchKernel:
    """A family behind one callable (see the module docstring); of the backend's compiled subclass when it has one
    (as :class:`ckgen.runtime.api.Kernel`)."""

    def __new__(cls, table: Table | None = None, backend: Any = None):
        return new_callable(cls, backend)

    def __init__(self, table: Table, backend: Any):
        self.table = table
        self.backend = backend
        self.name = table.name
        self.arch = table.arch
        self.op = table.op
        self._plans = {p.name: p for p in table.plans}
        self._kernels: dict[str, Any] = {}
        first = table.plans[0]
        self._binder = dataclasses.replace(first, abi=first.abi.without_workspace())
        self.abi = self._binder.abi
        self._chosen: dict = {}  # call signature (ckgen.runtime.prepared.call_key) -> member Kernel
        self._native = compiled_self(self)  # where the members' prepared signatures go for compiled launches

    def __repr__(self) -> str:
        return (f"DispatchKernel({self.name!r}, {len(self.table.members)} kernels, {len(self.table.tuned)} tuned shapes, "
                f"arch={self.arch!r}, target={self.backend.name!r}): {self.signature()}")

    def signature(self) -> str:
        """The call form (as :meth:`ckgen.runtime.api.Kernel.signature`; the member's workspace is allocated)."""

        return call_form(self.name, self.abi, workspace=any(p.abi.workspace is not None for p in self.table.plans))

    def workspace_bytes(self, **sizes: int) -> int:
        """Bytes of workspace the member chosen at these sizes (by ABI name; defaults apply) needs; 0 without one.
        A buffer of this size passed as ``workspace=`` serves calls at these sizes."""
        vals = {a.name: sizes.get(a.name, a.default) for a in self.abi.sizes}
        missing = [k for k, v in vals.items() if v is None]
        if missing:
            raise CkgenError(f"family '{self.name}': workspace_bytes needs {', '.join(missing)}")
        plan = self._plans[choose(self.table, tuple(vals[a.name] for a in self.abi.sizes), True).kernel]
        if plan.abi.workspace is None or any(vals.get(s, 1) == 0 for s in plan.abi.empty_if):
            return 0
        return plan.launch.workspace_bytes(vals)

    def kernel(self, name: str):
        """The member ``name``, built on first use."""
        from ckgen.runtime.api import Kernel

        if name not in self._kernels:
            self._kernels[name] = Kernel(self._plans[name], self.backend)
        return self._kernels[name]

    def explain(self, *sizes: int, has_workspace: bool = True) -> Choice:
        """Which member runs at these sizes (the ABI's sizes in order; defaults fill the rest), and why."""
        full = list(sizes)
        for a in self.abi.sizes[len(full):]:
            if a.default is None:
                raise CkgenError(f"explain: give {', '.join(a.name for a in self.abi.sizes)}")
            full.append(int(a.default))
        return choose(self.table, tuple(full), has_workspace)

    def __call__(self, *tensors: Any, stream: Any = None, workspace: Any = None, **named: Any) -> Any:
        """Bind, choose and run; a call signature seen before reuses its choice and the member's prepared
        launch (:mod:`ckgen.runtime.prepared`): no binding, no choice. An instance of the backend's compiled class
        is called by compiled code first, which hands here (as ``_full_call``) the calls it does not serve."""

        native = self._native
        op = self.backend.fast_operand
        keyed = None
        if op is not None and stream is None and workspace is None:
            keyed = call_key(op, tensors, named)
            if keyed is not None:
                member = self._chosen.get(keyed[0])
                if member is not None:
                    out = member.run_prepared(*keyed)
                    return member(*tensors, **named) if out is MISS else out
        member, args, sizes_named = self._choose(tensors, stream, named)
        if keyed is not None:
            if len(self._chosen) >= MAX_ENTRIES:
                self._chosen.clear()
                if native is not None:
                    native.clear()
            self._chosen[keyed[0]] = member
            out = member(*tensors, **named)  # positional as given: the member prepares this signature
            prep = member._prepared.get(keyed[0])
            if native is not None and prep is not None and prep.native is not None:
                native.add(prep.native)
            return out
        return member(stream=stream, workspace=workspace if member.abi.workspace is not None else None,
                      **args, **sizes_named)

    _full_call = __call__

    def _raise_status(self, status: int) -> None:
        """A failed compiled launch of a member (the status texts are the same in every member's library)."""
        self.backend.raise_status(next(iter(self._kernels.values())).handle, status, f"family '{self.name}'")

    def _choose(self, tensors: tuple, stream: Any, named: dict) -> tuple:
        """(member, tensors by name, sizes given by name) for this call, after the full checks through the members' common ABI."""
        from ckgen.runtime.api import Kernel

        probe = Kernel.__new__(Kernel)  # bind through the members' common ABI, without building anything
        probe.plan, probe.backend, probe.name, probe.abi = self._binder, self.backend, self.name, self.abi
        call = Kernel.bind(probe, *tensors, stream=stream, **named)
        sizes = tuple(call.sizes[a.name] for a in self.abi.sizes)
        member = self.kernel(choose(self.table, sizes, True).kernel)
        args = {a.name: v for a, v in zip(self.abi.args, call.values, strict=True) if a.kind == ArgKind.TENSOR}
        sizes_named = {k: v for k, v in named.items() if k in call.sizes}
        return member, args, sizes_named


def jit_family(specs, family: str, backend: Any, arch: str | None, tuning: str | None) -> DispatchKernel:
    """The :class:`DispatchKernel` of ``family`` (or of one of its signature groups, ``<family>_sig<i>``)."""
    base = family
    if not any(s.family == family for s in specs) and "_sig" in family:
        base = family.rsplit("_sig", 1)[0]
    plans = family_plans(specs, base, backend.vendor, arch)
    found = tables(plans, db.read(tuning) if tuning else [], base)
    chosen = [t for t in found if t.name == family] or (found if len(found) == 1 else [])
    if not chosen:
        raise CkgenError(f"family '{base}' has kernels of {len(found)} signatures; pick one",
                         hint="dispatchers: " + ", ".join(t.name for t in found))
    return DispatchKernel(chosen[0], backend)
