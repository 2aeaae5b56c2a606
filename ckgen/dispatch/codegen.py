"""Generated C dispatchers: ``templates/dispatch.cpp.j2`` rendered from a :class:`~ckgen.dispatch.table.Table`.

The dispatcher of table ``t`` is its own translation unit, linked into the library beside its members' entry
points. It exports (the header declares them, :func:`header_view`)::

    int ckgen_<t>(<the members' arguments>[, void* workspace], void* stream);   // runs the chosen member
    size_t ckgen_<t>_workspace_bytes(<sizes>);     // the workspace the member chosen with one needs (0: none)
    int ckgen_<t>_choice(<sizes>, int has_workspace);   // which member runs (an index)
    const char* ckgen_<t>_kernel_name(int index);

Its arguments are the members' (their ABI without the workspace) followed by an optional ``workspace``: NULL
means "choose among the members that need none". Floats are written with ``repr`` (exact round trip), so the C
choice and :func:`ckgen.dispatch.table.choose` compare the same numbers.
"""

from __future__ import annotations

from ckgen.codegen.escape import c_string
from ckgen.codegen.render import _env, workspace_prototype
from ckgen.dispatch.table import DISTANCE_SCALE, Table
from ckgen.ir.abi import Abi, Arg, ArgKind
from ckgen.ir.registry import get_op
from ckgen.version import __version__

WORKSPACE_DOC = ("scratch of the chosen kernel, or NULL (then a kernel that needs none runs): at least "
                 "ckgen_<name>_workspace_bytes(sizes) bytes, zero-filled before first use (calls leave it zero-filled)")


def dispatcher_abi(table: Table) -> Abi:
    """The dispatcher's arguments: its members' without the workspace, then an optional workspace."""
    base = table.plans[0].abi.without_workspace()
    if not table.needs_workspace:
        return base
    ws = Arg("workspace", ArgKind.WORKSPACE, doc=WORKSPACE_DOC.replace("<name>", table.name), optional=True)
    return Abi((*base.args, ws), base.empty_if, base.doc)


def _float(x: float | None) -> str:
    return "-1.0" if x is None else repr(float(x))


def view(table: Table) -> dict:
    abi = dispatcher_abi(table)
    names = [a.name for a in abi.args if a.kind != ArgKind.WORKSPACE]
    op = get_op(table.op)
    members = []
    for m, p in zip(table.members, table.plans, strict=True):
        args = [a.name for a in p.abi.args]
        assert [a for a in args if a != "workspace"] == names, "members of one signature share their arguments"
        members.append({"name": m.name, "name_literal": f'"{c_string(m.name)}"', "needs_ws": int(m.needs_workspace),
                        "traits": [_float(x) for x in m.traits] or ["0.0"], "prototype": p.abi.prototype(f"ckgen_{m.name}"),
                        "workspace_prototype": workspace_prototype(p),
                        "call_args": ", ".join([*args, "stream"])})
    ws = abi.workspace
    return {
        "name": table.name, "family": table.family, "arch": table.arch, "members": members,
        "tuned": [{"sizes": list(t.sizes), "times": [_float(x) for x in t.times]} for t in table.tuned],
        "size_names": list(table.size_names),
        "size_params": ", ".join(f"int64_t {s}" for s in table.size_names),
        "zeros": ["0"] * len(table.size_names), "member_zeros": ["-1.0"] * len(table.members),
        "ntraits": max(1, max(len(m.traits) for m in table.members)),
        "model_template": op.model_template or "dispatch_no_model.cpp.j2", "model_fn": "ckgen_model",
        "fn": "ckgen_model", "distance_scale": DISTANCE_SCALE,
        "prototype": abi.prototype(f"ckgen_{table.name}"), "workspace_arg": ws.name if ws is not None else "0",
    }


def render(stem: str, table: Table) -> str:
    """The dispatcher's C++ source."""
    return _env().get_template("dispatch.cpp.j2").render(version=__version__, stem=stem, d=view(table),
                                                         fn="ckgen_model")


def header_view(table: Table) -> dict:
    abi = dispatcher_abi(table)
    sizes = ", ".join(f"int64_t {s}" for s in table.size_names)
    how = (f"an exact hit among {len(table.tuned)} tuned shape(s) takes the fastest kernel measured there; any other "
           "shape the nearest tuned shape's measurements scaled by the cost model" if table.tuned
           else "no tuned shapes: the cost model")
    return {"name": f"ckgen_{table.name}", "family": table.family, "members": [m.name for m in table.members],
            "signature": ", ".join(m.summary.split(";")[0] for m in table.members[:1]), "policy": how,
            "prototype": abi.prototype(f"ckgen_{table.name}"),
            "workspace_prototype": f"size_t ckgen_{table.name}_workspace_bytes({sizes})",
            "choice_prototype": f"int ckgen_{table.name}_choice({sizes}, int has_workspace)"}


def dispatch_sources(stem: str, tables: list[Table]) -> dict[str, str]:
    """File name -> C++ source of each table's dispatcher (one translation unit each), for a library's build."""
    return {f"dispatch_{t.name}.cpp": render(stem, t) for t in tables}
