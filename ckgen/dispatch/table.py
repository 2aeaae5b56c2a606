"""A dispatcher's data and its choice of kernel for a shape.

A :class:`Table` is one family's members on one arch that share one signature (the op's :meth:`signature`:
kernels that may replace each other), each member's cost-model traits, and the tuned shapes: per shape, the
best measured time of each member (``None``: not measured, or failed). :func:`tables` builds them from plans and
tuning records; :func:`choose` picks the kernel for a shape:

1. **tuned**: the shape was tuned: the fastest member measured there;
2. **nearest**: else the tuned shape nearest in log space (sum over the sizes of ``|ln((s + 1) / (t + 1))|``),
   each member measured there scaled by the op's cost model (``time * model(shape) / model(tuned shape)``), the
   fastest estimate;
3. **model**: with no tuned shape, the fastest by the cost model alone.

Only members that can run are candidates: with ``has_workspace`` false, those that need no workspace. Every
member is a legal kernel for every shape (the op's kernels take any sizes), so a choice always exists. Ties go to
the member listed first. The generated C dispatcher (``templates/dispatch.cpp.j2``) implements the same steps
on the same numbers; a test compares the two.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ckgen.codegen.render import summary
from ckgen.dispatch import db
from ckgen.errors import CkgenError
from ckgen.ir.plan import KernelPlan
from ckgen.ir.registry import get_op

#: log-distance resolution (distances are compared after rounding to this many parts per unit)
DISTANCE_SCALE = 1_000_000


@dataclass(frozen=True)
class Member:
    name: str
    traits: tuple[float, ...]
    needs_workspace: bool
    summary: str = ""


@dataclass(frozen=True)
class Tuned:
    sizes: tuple[int, ...]
    times: tuple[float | None, ...]   # seconds per member


@dataclass(frozen=True)
class Table:
    name: str                         # the dispatcher's name (its C entry is ckgen_<name>)
    family: str
    op: str
    arch: str
    signature: dict
    size_names: tuple[str, ...]       # the ABI's size arguments, in order
    members: tuple[Member, ...]
    tuned: tuple[Tuned, ...] = ()
    plans: tuple[KernelPlan, ...] = field(default=(), compare=False, repr=False)

    @property
    def needs_workspace(self) -> bool:
        return any(m.needs_workspace for m in self.members)

    def estimate(self, i: int, sizes: tuple[int, ...]) -> float:
        return get_op(self.op).estimate(self.members[i].traits, sizes)

    def parse_shape(self, text: str) -> tuple[int, ...]:
        """A shape of this table's sizes (:func:`parse_shape`, with its ABI's size defaults and block counts)."""
        abi = self.plans[0].abi if self.plans else None
        defaults = {x.name: int(x.default) for x in abi.sizes if x.default is not None} if abi else {}
        return parse_shape(text, self.size_names, defaults, abi.blocks if abi else ())

    def to_json(self) -> dict:
        return {"name": self.name, "family": self.family, "op": self.op, "arch": self.arch,
                "signature": self.signature, "sizes": list(self.size_names),
                "members": [{"name": m.name, "needs_workspace": m.needs_workspace, "summary": m.summary}
                            for m in self.members],
                "tuned": [{"sizes": list(t.sizes), "times_us": [None if x is None else x * 1e6 for x in t.times]}
                          for t in self.tuned]}


@dataclass(frozen=True)
class Choice:
    index: int
    kernel: str
    how: str                          # tuned | nearest | model
    reason: str                       # one sentence
    estimates: tuple[float | None, ...]   # seconds per member, as compared (None: not a candidate)
    nearest: Tuned | None = None


def distance(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """Log-space distance between two shapes, as an integer (see the module docstring)."""
    d = sum(abs(math.log((x + 1.0) / (y + 1.0))) for x, y in zip(a, b, strict=True))
    return int(math.floor(d * DISTANCE_SCALE + 0.5))


def _argmin(values: list[float | None]) -> int:
    best = -1
    for i, v in enumerate(values):
        if v is not None and (best < 0 or v < values[best]):
            best = i
    return best


def _shape(sizes: tuple[int, ...]) -> str:
    return "x".join(map(str, sizes))


def choose(table: Table, sizes: tuple[int, ...], has_workspace: bool = True,
           estimate: Callable[[int, tuple[int, ...]], float] | None = None) -> Choice:
    """The member that runs at ``sizes`` (see the module docstring)."""
    est = estimate or table.estimate
    n = len(table.members)
    ok = [has_workspace or not m.needs_workspace for m in table.members]
    if not any(ok):  # (tables always hold a member without workspace? no: then the workspace is required)
        ok = [True] * n
    exact = next((t for t in table.tuned if t.sizes == tuple(sizes)), None)
    if exact is not None:
        times = [exact.times[i] if ok[i] else None for i in range(n)]
        i = _argmin(times)
        if i >= 0:
            return Choice(i, table.members[i].name, "tuned",
                          f"{_shape(sizes)} was tuned: {table.members[i].name} measured fastest "
                          f"({times[i] * 1e6:.2f} us)", tuple(times), exact)
    near, near_d = None, None
    for t in table.tuned:
        if not any(ok[i] and t.times[i] is not None for i in range(n)):
            continue
        d = distance(tuple(sizes), t.sizes)
        if near_d is None or d < near_d:
            near, near_d = t, d
    if near is not None:
        times = [near.times[i] * est(i, tuple(sizes)) / est(i, near.sizes)
                 if ok[i] and near.times[i] is not None else None for i in range(n)]
        i = _argmin(times)
        return Choice(i, table.members[i].name, "nearest",
                      f"{_shape(sizes)} was not tuned; nearest tuned shape {_shape(near.sizes)} (log distance "
                      f"{near_d / DISTANCE_SCALE:.2f}): {table.members[i].name} measured there "
                      f"{near.times[i] * 1e6:.2f} us, scaled by the cost model to {times[i] * 1e6:.2f} us",
                      tuple(times), near)
    times = [est(i, tuple(sizes)) if ok[i] else None for i in range(n)]
    i = _argmin(times)
    return Choice(i, table.members[i].name, "model",
                  f"no tuned shape: the cost model estimates {table.members[i].name} fastest "
                  f"({times[i] * 1e6:.2f} us)", tuple(times))


# ------------------------------------------------------------------------------------------ building tables
def tables(plans: Iterable[KernelPlan], records: Iterable[db.Record] = (), family: str | None = None) -> list[Table]:
    """One table per (family, signature) of ``plans`` (one arch per family: the first), with the matching
    records' best times. ``family`` restricts to one family (CkgenError when it has no members)."""
    plans = [p for p in plans if p.spec.family is not None and (family is None or p.spec.family == family)]
    if family is not None and not plans:
        raise CkgenError(f"no family named '{family}'")
    records = [r for r in records if r.ok]
    out: list[Table] = []
    by_family: dict[str, list[KernelPlan]] = {}
    for p in plans:
        by_family.setdefault(p.spec.family, []).append(p)
    for fam, ps in by_family.items():
        arch = ps[0].arch
        mine = [p for p in ps if p.arch == arch]
        groups: dict[str, list[KernelPlan]] = {}
        sigs: dict[str, dict] = {}
        for p in mine:
            sig = get_op(p.op).signature(p.spec)
            k = db.signature_key(sig)
            groups.setdefault(k, []).append(p)
            sigs[k] = sig
        for gi, (sk, members) in enumerate(groups.items()):
            name = fam if len(groups) == 1 else f"{fam}_sig{gi}"
            clash = [p.name for p in plans if p.name == name]
            if clash:
                raise CkgenError(f"the dispatcher of family '{fam}' would be named '{name}', like one of its kernels",
                                 hint="rename that kernel's family or the kernel")
            out.append(_table(name, fam, arch, sigs[sk], sk, members, records))
    return out


def _table(name: str, fam: str, arch: str, sig: dict, sig_key: str, members: list[KernelPlan],
           records: list[db.Record]) -> Table:
    op = get_op(members[0].op)
    size_names = tuple(a.name for a in members[0].abi.sizes)
    keys = {db.kernel_key(p.spec): i for i, p in enumerate(members)}
    best: dict[tuple[int, ...], list[float | None]] = {}
    for r in records:
        d = r.data
        i = keys.get(d["kernel_key"])
        if d["arch"] != arch or d["signature_key"] != sig_key or i is None or d["kernel"] != members[i].name:
            continue
        shape = d["shape"]
        if set(shape) != set(size_names):
            continue
        sizes = tuple(int(shape[s]) for s in size_names)
        row = best.setdefault(sizes, [None] * len(members))
        row[i] = r.seconds if row[i] is None else min(row[i], r.seconds)

    ms = tuple(Member(p.name, tuple(float(x) for x in op.model_traits(p)), p.abi.workspace is not None, summary(p))
               for p in members)
    tuned = tuple(Tuned(s, tuple(t)) for s, t in sorted(best.items()))
    return Table(name, fam, members[0].op, arch, sig, size_names, ms, tuned, tuple(members))


def parse_shape(text: str, size_names: tuple[str, ...], defaults: dict[str, int] | None = None,
                blocks: tuple[tuple[str, str, int], ...] = ()) -> tuple[int, ...]:
    """``16x4096x4096`` -> (16, 4096, 4096): one number per size argument, in order; trailing sizes with a default
    may be left out, and so may trailing block counts (``blocks``: the ABI's (count, size, block) triples, e.g. the
    K blocks of block scales, ceil(K / 128)), derived from their size. CkgenError naming what is expected otherwise."""
    parts = text.strip().lower().split("x")
    defaults = defaults or {}
    derived = {count: (size, blk) for count, size, blk in blocks}
    want = "x".join(size_names)
    try:
        vals = [int(p, 10) for p in parts]
    except ValueError:
        raise CkgenError(f"shape '{text}': expected {want} (integers)") from None
    if len(vals) > len(size_names) or any(v < 0 or v > 2**31 - 1 for v in vals):
        raise CkgenError(f"shape '{text}': expected {want}, each in 0..{2**31 - 1}")
    for name in size_names[len(vals):]:
        if name in defaults:
            vals.append(defaults[name])
        elif name in derived and derived[name][0] in size_names[:len(vals)]:
            size, blk = derived[name]
            vals.append(-(-vals[size_names.index(size)] // blk))
        else:
            raise CkgenError(f"shape '{text}': expected {want}")
    return tuple(vals)
