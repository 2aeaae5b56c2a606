"""Plans -> source text, for any op. Every template is rendered with ``StrictUndefined`` from plain lists
prepared here and by the op's ``kernel_view``; the templates hold no decisions.

- :func:`render_kernel`: one kernel's device source (Cfg struct + entries), the same text on every platform:
  the op's ``<op>/kernel.hip.j2``, which extends ``templates/kernel.hip.j2``.
- :func:`render_launchers`: the ``extern "C"`` host entry points of one library, for one platform, from each
  kernel's ABI.
- :func:`render_header`: the C header of one library.
- :func:`manifest_kernels`: the manifest's kernel entries (JSON-ready).

Templates are looked up in ``templates/`` and in ``ckgen/ops`` (op templates are named ``<op>/<file>``).
User text reaches them only through the ``comment`` and ``c_string`` filters (:mod:`ckgen.codegen.escape`).
"""

from __future__ import annotations

from functools import lru_cache

import jinja2

from ckgen.codegen.escape import c_string, comment
from ckgen.ir import expr as E
from ckgen.ir import plan as ir_plan
from ckgen.ir.abi import INT32_MAX, ArgKind, dim_parts
from ckgen.ir.plan import KernelPlan, split_axes
from ckgen.ir.registry import get_op
from ckgen.resources import INCLUDE_DIR, OPS_DIR, TEMPLATE_DIR
from ckgen.targets import device_defines
from ckgen.version import __version__

#: headers the host entry points include, per platform (the launch macro comes from these).
HOST_INCLUDES = {
    "amd": ("ckgen/host_api.h", "ckgen/types.h", "ckgen/host_runtime.h"),
    "emu": ("ckgen/host_api.h", "ckgen/platform.h"),
    "cuda": ("ckgen/host_api.h", "ckgen/platform.h"),
}
#: platforms whose host library compiles the kernels in the same translation unit.
INLINE_KERNELS = ("emu", "cuda")
#: the manifest's layout version (bump on an incompatible change)
MANIFEST_SCHEMA_VERSION = 3


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader([str(TEMPLATE_DIR), str(OPS_DIR)]),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, autoescape=False)
    env.filters["comment"] = comment
    env.filters["c_string"] = c_string
    return env


def summary(plan: KernelPlan) -> str:
    """One line describing the kernel (comments, header, report)."""
    return get_op(plan.op).summary(plan)


def render_kernel(plan: KernelPlan) -> str:
    """Device source of one kernel for its plan's target."""
    op = get_op(plan.op)
    view = {"workgroups_per_cu": 0, **op.kernel_view(plan)}
    params = [f"{a.device_ctype} {a.name}" for a in plan.abi.args]
    return _env().get_template(op.kernel_template).render(
        version=__version__, source=plan.spec.source_name, name=plan.name, op=plan.op, arch=plan.arch,
        summary=summary(plan), threads=plan.threads, params=params, arg_names=[a.name for a in plan.abi.args],
        defines=_defines(plan), **view)


def _defines(plan: KernelPlan) -> tuple[str, ...]:
    """The target's preprocessor names (its native fp8 encoding: ckgen/blocks/fp8.h then converts with the
    hardware's instructions) for a kernel with an 8-bit float tensor; none for the others (their source unchanged)."""
    return device_defines(plan.target) if any(a.dtype.fp8 for a in plan.abi.tensors) else ()


def _bound(names: tuple[str, ...]) -> str:
    return "0" if not names else f"ckgen_at_least_1({' * '.join(names)})"


def _literal(a, x: float) -> str:
    """A C literal of a scalar bound: an integer for i32 scalars, a float (``1e-30f``) otherwise."""
    return str(int(x)) if a.is_int_scalar else f"{float(x)!r}f"


def _grid(plan: KernelPlan, g) -> str:
    if g.expr is not None:
        return host_expr(plan, g.expr)
    if g.size is None:
        return "1"
    n = g.size if g.per == 1 else f"ckgen_ceil_div({g.size}, {g.per})"
    return n if g.cap is None else f"({n} < {g.cap} ? {n} : {g.cap})"


def _checked_strides(abi) -> list:
    """Stride arguments the host entry checks: those of a tensor the kernel uses (a stride only unused tensors
    name is ignored by the kernel, so any value is accepted)."""
    used = {s for a in abi.tensors if not a.unused for s in a.strides if isinstance(s, str)}
    named = {s for a in abi.tensors for s in a.strides if isinstance(s, str)}
    return [a for a in abi.of(ArgKind.STRIDE) if a.name in used or a.name not in named]


def _split_args(plan: KernelPlan, size: str) -> list[str]:
    """The host entry's arguments for a sub-problem ``off_ .. off_ + part_`` along ``size``."""
    out = []
    for a in plan.abi.args:
        if a.name == size:
            out.append("part_")
        elif a.is_tensor and size in a.dims:
            stride = a.strides[a.dims.index(size)]
            step = "off_" if stride == 1 else f"off_ * {stride}"
            out.append(f"ckgen_advance({a.name}, {step}, {a.dtype.bytes})")
        else:
            out.append(a.name)
    return out


def host_expr(plan: KernelPlan, e: E.Expr) -> str:
    """An expression of the sizes and launch values as C in a host entry (values are ``<name>_v``)."""
    values = {n for n, _ in plan.launch.values}
    return E.render_c(e, lambda n: f"{n}_v" if n in values else n)


def workspace_prototype(plan: KernelPlan) -> str | None:
    """``size_t ckgen_<kernel>_workspace_bytes(int64_t M, ...)``: the workspace a call needs (None without one)."""
    if plan.abi.workspace is None:
        return None
    params = ", ".join(f"int64_t {a.name}" for a in plan.abi.sizes) or "void"
    return f"size_t ckgen_{plan.name}_workspace_bytes({params})"


def workspace_formula(plan: KernelPlan) -> str | None:
    """The workspace bytes as a readable formula, with the launch values it uses (header, manifest)."""
    ws = plan.launch.workspace
    if ws is None:
        return None
    used = E.names(ws)
    where = [f"{n} = {E.text(e)}" for n, e in plan.launch.values if n in used]
    return E.text(ws) + (f", where {'; '.join(where)}" if where else "")


def _slot_read(a, i: int) -> str:
    """How the packed host entry reads ABI argument ``a`` from its slot ``i`` (ckgen/host_api.h)."""
    if a.host_ctype == "void*":
        return f"const_cast<void*>(args[{i}].p)"
    if a.host_ctype == "const void*":
        return f"args[{i}].p"
    return {"int64_t": f"args[{i}].i", "int32_t": f"args[{i}].i32", "float": f"args[{i}].f"}[a.host_ctype]


def launcher_view(plan: KernelPlan) -> dict:
    abi, launch = plan.abi, plan.launch
    limits = ir_plan.GRID_LIMITS
    splits = [{"axis": "xyz"[axis], "size": g.size, "per": g.per, "limit": limits[axis],
               "args": _split_args(plan, g.size)} for axis, g in split_axes(launch)
              if limits[axis] * g.per < INT32_MAX]  # sizes are at most INT32_MAX: no other dim can be too large
    ws = abi.workspace
    size_names = {a.name for a in abi.sizes}
    return {
        "name": plan.name, "summary": summary(plan), "prototype": abi.prototype(f"ckgen_{plan.name}"),
        "sizes": [(a.name, a.at_most if a.at_most is not None else "INT32_MAX") for a in abi.sizes],
        # (tensor, its dims that are sizes): a required tensor may be NULL when one of those is 0 (no element)
        # (a multiplied or divided dim, 2*N or K/2, is empty with its size; batch+1 is not)
        "required": [(a.name, [n for n, _, k in map(dim_parts, a.dims) if n in size_names and k == 0]) for a in abi.tensors
                     if not a.unused and not a.optional],
        "stride_checks": [(a.name, _bound(a.at_least)) for a in _checked_strides(abi)],
        "scalar_bounds": [(a.name, _literal(a, a.bounds[0]), _literal(a, a.bounds[1]))
                          for a in abi.of(ArgKind.SCALAR) if a.bounds is not None],
        "empty_if": list(abi.empty_if), "divides": [list(p) for p in abi.divides],
        "blocks": [list(t) for t in abi.blocks],
        "grid": [_grid(plan, g) for g in launch.grid],
        "host_values": [(n, host_expr(plan, e)) for n, e in launch.values],
        "workspace_arg": ws.name if ws is not None else None,
        "workspace_bytes": host_expr(plan, launch.workspace) if ws is not None and launch.workspace is not None
        else "(int64_t)0",
        "workspace_prototype": workspace_prototype(plan),
        "locals": [(a.device_ctype, a.name) for a in abi.args],
        "device_args": [f"{a.name}_" for a in abi.args], "threads": launch.threads,
        "packed_args": [_slot_read(a, i) for i, a in enumerate(abi.args)],
        "lds_bytes": launch.lds_bytes, "prelaunch": launch.prelaunch, "splits": splits, "limits": list(limits),
    }


def render_launchers(stem: str, plans: list[KernelPlan], platform: str,
                     kernel_files: list[str] | None = None) -> str:
    """Host entry points for ``plans`` (one per kernel name). On inline platforms (emu, cuda),
    ``kernel_files`` are #included so kernels and launchers share one translation unit."""
    includes = list(HOST_INCLUDES[platform])
    if platform in INLINE_KERNELS:
        includes += list(kernel_files or [])
    kernels = [launcher_view(p) for p in unique_plans(plans)]
    return _env().get_template("launchers.cpp.j2").render(
        version=__version__, stem=stem, platform=platform, includes=includes, kernels=kernels,
        uses_exprs=any(k["host_values"] or k["workspace_prototype"] for k in kernels))


def unique_plans(plans: list[KernelPlan]) -> list[KernelPlan]:
    """One plan per kernel name, the first one, except that a plan with more entries (an alternative body,
    e.g. a Hopper body) wins: its text is a superset (a library for sm_80 and sm_90 carries the
    sm_90 entry; its host entry checks the device)."""
    seen: dict[str, KernelPlan] = {}
    for p in plans:
        if p.name not in seen or len(p.entries) > len(seen[p.name].entries):
            seen[p.name] = p
    return list(seen.values())


def c_identifier(text: str) -> str:
    """``text`` as an upper-case C identifier of ASCII letters, digits and '_' (a header guard's middle)."""
    out = "".join(ch.upper() if ch.isascii() and ch.isalnum() else "_" for ch in text)
    return out if out and not out[0].isdigit() else "_" + out


def render_header(stem: str, plans: list[KernelPlan], dispatchers: list[dict] | None = None) -> str:
    """The C header: every kernel's prototype (and workspace-size function), then the dispatchers' entries
    (``dispatchers``: the header views of :mod:`ckgen.dispatch.codegen`)."""
    kernels = unique_plans(plans)
    return _env().get_template("header.h.j2").render(
        version=__version__, stem=stem, guard=c_identifier(stem),
        sources=sorted({p.spec.source_name for p in kernels}), arches=sorted({p.arch for p in plans}),
        kernels=[{"name": p.name, "op": p.op, "summary": summary(p), "doc": p.abi.doc,
                  "arg_docs": [f"{a.name}: {a.doc}" for a in p.abi.args if a.doc],
                  "prototype": p.abi.prototype(f"ckgen_{p.name}"),
                  "workspace_prototype": workspace_prototype(p),
                  "workspace_formula": workspace_formula(p)}
                 for p in kernels],
        dispatchers=list(dispatchers or ()),
        uses_size_t=bool(dispatchers) or any(p.abi.workspace is not None for p in kernels),
        status_h=(INCLUDE_DIR / "ckgen" / "status.h").read_text().strip())


def _workspace_json(p: KernelPlan, mine: list[KernelPlan]) -> dict | None:
    """The manifest's ``workspace``: the C function that sizes it and its formula per arch (None: none)."""
    if p.abi.workspace is None:
        return None
    return {"argument": p.abi.workspace.name, "symbol": f"ckgen_{p.name}_workspace_bytes",
            "args": [a.name for a in p.abi.sizes], "zero_filled": True,
            "formula": {q.arch: workspace_formula(q) for q in mine if q.launch.workspace is not None}}


def manifest_kernels(plans: list[KernelPlan], resources: dict[tuple[str, str], dict] | None = None) -> list[dict]:
    """Manifest ``kernels`` entries, one per kernel name, with per-arch plans and resources."""
    out = []
    for p in unique_plans(plans):
        mine = [q for q in plans if q.name == p.name]
        span = p.spec.span("kernel")
        out.append({
            "name": p.name, "op": p.op, "symbol": f"ckgen_{p.name}", "source": p.spec.source,
            "line": span.line if span else None, "family": p.spec.family,
            "signature": p.abi.prototype(f"ckgen_{p.name}"), "summary": summary(p),
            "abi": p.abi.to_json(), "workspace": _workspace_json(p, mine),
            "parameters": p.spec.to_json(), "arches": [q.arch for q in mine],
            "plans": {q.arch: q.to_json() for q in mine},
            "resources": {q.arch: (resources or {}).get((q.name, q.arch)) for q in mine},
        })
    return out
