"""Plans → source text. Every template is rendered with ``StrictUndefined`` from plain lists
prepared here; the templates hold no decisions.

- :func:`render_kernel`: one kernel's device source (Cfg struct + entry), the same text on every platform.
- :func:`render_launchers`: the ``extern "C"`` host entry points of one library, for one platform.
- :func:`render_header`: the C header of one library.
- :func:`manifest`: the manifest entry list (JSON-ready).
"""

from __future__ import annotations

from functools import lru_cache

import jinja2

from ckgen import __version__
from ckgen.ir.plan import KernelPlan
from ckgen.ir.types import Layout
from ckgen.resources import INCLUDE_DIR, TEMPLATE_DIR

#: headers the host entry points include, per platform (the launch macro comes from these).
HOST_INCLUDES = {
    "amd": ("ckgen/host_api.h", "ckgen/types.h", "ckgen/host_runtime.h"),
    "emu": ("ckgen/host_api.h", "ckgen/platform.h"),
    "cuda": ("ckgen/host_api.h", "ckgen/platform.h"),
}
#: platforms whose host library compiles the kernels in the same translation unit.
INLINE_KERNELS = ("emu", "cuda")


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)), undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)


def _bool(x: bool) -> str:
    return "true" if x else "false"


def _float(x: float) -> str:
    return f"{float(x)!r}f"


def summary(plan: KernelPlan) -> str:
    """One line describing the kernel (comments, header, report)."""
    g, c = plan.spec.gemm, plan.spec.config
    ep = " -> ".join(op.text for op in g.epilogue) or "none"
    return (f"{g.a.dtype.value} {g.a.layout.value} x {g.b.dtype.value} {g.b.layout.value} -> {g.c.dtype.value} "
            f"{g.c.layout.value} (acc {g.acc.value}), alpha {g.alpha:g}, beta {g.beta:g}, epilogue {ep}; "
            f"tile {'x'.join(map(str, c.tile))}, waves {c.waves[0]}x{c.waves[1]}, instr {plan.instr.shape_text}")


def cfg_view(plan: KernelPlan) -> dict:
    """The Cfg struct (docs/design.md) as lists: (alias, C++ type) and (C++ type, member, literal)."""
    g, c, i, lds = plan.spec.gemm, plan.spec.config, plan.instr, plan.lds
    types = [("TA", g.a.dtype.cpp), ("TB", g.b.dtype.cpp), ("TC", g.c.dtype.cpp), ("TAcc", g.acc.cpp),
             ("TBias", plan.bias_dtype.cpp), ("AOperand", i.a_operand), ("BOperand", i.b_operand),
             ("COperand", i.c_operand)]
    ints = [("kTileM", c.tile[0]), ("kTileN", c.tile[1]), ("kTileK", c.tile[2]),
            ("kWavesM", c.waves[0]), ("kWavesN", c.waves[1]), ("kWaveSize", plan.target.wave_size),
            ("kThreads", plan.threads), ("kWaveTileM", plan.wave_tile[0]), ("kWaveTileN", plan.wave_tile[1]),
            ("kInstrM", i.m), ("kInstrN", i.n), ("kInstrK", i.k), ("kRepM", plan.repeats[0]),
            ("kRepN", plan.repeats[1]), ("kAItems", plan.items[0]), ("kBItems", plan.items[1]),
            ("kCItems", plan.items[2]), ("kLdsBuffers", lds.buffers), ("kPrefetch", plan.prefetch),
            ("kVecA", plan.vec[0]), ("kVecB", plan.vec[1]), ("kVecC", plan.vec[2]),
            ("kLdsAGranule", lds.a.granule), ("kLdsASwizzleBits", lds.a.low_bits), ("kLdsAMnLanes", lds.a.mn_lanes),
            ("kLdsAMnPiece", lds.a.mn_piece),
            ("kLdsBGranule", lds.b.granule), ("kLdsBSwizzleBits", lds.b.low_bits), ("kLdsBMnLanes", lds.b.mn_lanes),
            ("kLdsBMnPiece", lds.b.mn_piece),
            ("kLdsABytes", lds.a_bytes), ("kLdsBBytes", lds.b_bytes), ("kLdsBytes", lds.total_bytes)]
    constants = [("bool", "kARowMajor", _bool(g.a.layout == Layout.ROW)),
                 ("bool", "kBRowMajor", _bool(g.b.layout == Layout.ROW)),
                 ("bool", "kCRowMajor", _bool(g.c.layout == Layout.ROW))]
    if plan.tma is not None:  # the Hopper body's own pipeline (gemm_sm90_tma.h checks the bytes)
        ints += [("kTmaStages", plan.tma.stages), ("kTmaSmemBytes", plan.tma.smem_bytes)]
    constants += [("int", name, str(v)) for name, v in ints]
    constants += [("unsigned long long", "kLdsASwizzle", f"{lds.a.packed_table:#x}ull"),
                  ("unsigned long long", "kLdsBSwizzle", f"{lds.b.packed_table:#x}ull")]
    constants += [("float", "kAlpha", _float(g.alpha)), ("float", "kBeta", _float(g.beta)),
                  ("bool", "kHasBias", _bool(g.has_bias)), ("bool", "kIntegerEpilogue", _bool(plan.integer_epilogue))]
    return {"types": types, "constants": constants, "epilogue": list(plan.epilogue_types),
            "mma_builtins": [i.builtin] if i.kind == "mfma" else []}


def render_kernel(plan: KernelPlan) -> str:
    """Device source of one kernel for its plan's target."""
    view = cfg_view(plan)
    return _env().get_template("gemm_kernel.hip.j2").render(
        version=__version__, source=plan.spec.source, name=plan.name, arch=plan.arch, summary=summary(plan),
        mnemonic=plan.instr.mnemonic, lds_bytes=plan.lds.total_bytes, lds_buffers=plan.lds.buffers,
        threads=plan.threads, header=plan.target.gemm_header, impl=plan.target.gemm_impl,
        tma_entry=plan.tma is not None, **view)


def _ld_min(layout: Layout, row_major_extent: str, col_major_extent: str) -> str:
    return row_major_extent if layout == Layout.ROW else col_major_extent


def launcher_view(plan: KernelPlan) -> dict:
    g, c = plan.spec.gemm, plan.spec.config
    return {"name": plan.name, "summary": summary(plan), "tile_m": c.tile[0], "tile_n": c.tile[1],
            "threads": plan.threads, "ta": g.a.dtype.cpp, "tb": g.b.dtype.cpp, "tc": g.c.dtype.cpp,
            "tbias": plan.bias_dtype.cpp, "needs_bias": g.has_bias,
            "lda_min": _ld_min(g.a.layout, "K", "M"), "ldb_min": _ld_min(g.b.layout, "N", "K"),
            "ldc_min": _ld_min(g.c.layout, "N", "M"), "tma_entry": plan.tma is not None}


def render_launchers(stem: str, plans: list[KernelPlan], platform: str,
                     kernel_files: list[str] | None = None) -> str:
    """Host entry points for ``plans`` (one per kernel name). On inline platforms (emu, cuda),
    ``kernel_files`` are #included so kernels and launchers share one translation unit."""
    includes = list(HOST_INCLUDES[platform])
    if platform in INLINE_KERNELS:
        includes += list(kernel_files or [])
    return _env().get_template("launchers.cpp.j2").render(
        version=__version__, stem=stem, platform=platform, includes=includes,
        kernels=[launcher_view(p) for p in unique_plans(plans)])


def unique_plans(plans: list[KernelPlan]) -> list[KernelPlan]:
    """One plan per kernel name, the first one, except that a plan with the TMA variant wins: its text is a
    superset (a library for sm_80 and sm_90 carries the sm_90 entry; the host entry checks the device)."""
    seen: dict[str, KernelPlan] = {}
    for p in plans:
        if p.name not in seen or (p.tma and not seen[p.name].tma):
            seen[p.name] = p
    return list(seen.values())


def c_identifier(text: str) -> str:
    out = "".join(ch.upper() if ch.isalnum() else "_" for ch in text)
    return out if out and not out[0].isdigit() else "_" + out


def render_header(stem: str, plans: list[KernelPlan]) -> str:
    kernels = unique_plans(plans)
    return _env().get_template("header.h.j2").render(
        version=__version__, stem=stem, guard=c_identifier(stem),
        sources=sorted({p.spec.source for p in kernels}), arches=sorted({p.arch for p in plans}),
        kernels=[{"name": p.name, "summary": summary(p)} for p in kernels],
        status_h=(INCLUDE_DIR / "ckgen" / "status.h").read_text().strip())


C_SIGNATURE = ("int ckgen_{name}(const void* A, const void* B, void* C, const void* bias, int64_t M, int64_t N, "
               "int64_t K, int64_t lda, int64_t ldb, int64_t ldc, void* stream)")


def manifest_kernels(plans: list[KernelPlan], resources: dict[tuple[str, str], dict] | None = None) -> list[dict]:
    """Manifest ``kernels`` entries, one per kernel name, with per-arch plans and resources."""
    out = []
    for p in unique_plans(plans):
        mine = [q for q in plans if q.name == p.name]
        span = p.spec.span("kernel")
        out.append({
            "name": p.name, "symbol": f"ckgen_{p.name}", "source": p.spec.source,
            "line": span.line if span else None, "family": p.spec.family,
            "signature": C_SIGNATURE.format(name=p.name), "summary": summary(p),
            "parameters": p.spec.to_json(), "arches": [q.arch for q in mine],
            "plans": {q.arch: q.to_json() for q in mine},
            "resources": {q.arch: (resources or {}).get((q.name, q.arch)) for q in mine},
        })
    return out
