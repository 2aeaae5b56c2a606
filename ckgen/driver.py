"""The ahead-of-time driver: .ck files → plans → sources → libraries. The CLI, the CMake
package and the Python-build helpers all go through these functions.

Stages (docs/design.md): ``load`` (frontend) → ``plan`` (lower) → ``generate`` (codegen) →
``build`` (the platform's compiler, :func:`ckgen.backends.build_library`). Each function returns frozen data; nothing here reads the environment.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from ckgen.backends import build_library
from ckgen.backends.amd import report as amd_report
from ckgen.backends.nvidia import compiler as nvidia
from ckgen.codegen import manifest_kernels, render_header, render_kernel, render_launchers
from ckgen.codegen.render import MANIFEST_SCHEMA_VERSION
from ckgen.dispatch import db as tuning_db
from ckgen.dispatch.codegen import dispatch_sources, dispatcher_abi, header_view
from ckgen.dispatch.table import tables as dispatch_tables
from ckgen.errors import CkgenError, ErrorList
from ckgen.files import atomic_write, output_dir, shown
from ckgen.frontend import load_file
from ckgen.frontend.values import did_you_mean
from ckgen.ir.plan import KernelPlan
from ckgen.ir.spec import KernelSpec
from ckgen.lower import plan_all
from ckgen.lower.pipeline import Pruned, pruned_notes
from ckgen.targets import TARGETS
from ckgen.version import __version__


def parse_arches(text: str | None) -> tuple[str, ...]:
    """``gfx942,gfx90a`` → ("gfx942", "gfx90a"); None or empty → (). Unknown names are a CkgenError."""

    if not text:
        return ()
    arches = tuple(dict.fromkeys(a.strip() for a in text.split(",") if a.strip()))
    unknown = [a for a in arches if a not in TARGETS]
    if unknown:

        raise CkgenError(f"--arch {','.join(unknown)}: unknown target",
                         hint=f"{did_you_mean(unknown[0], TARGETS)}targets: {', '.join(sorted(TARGETS))}")
    return arches


def load(paths: list[str | Path], arches: tuple[str, ...] = ()) -> dict[str, list[KernelSpec]]:
    """Specs of every file, keyed by file stem. Kernels with no target take ``arches``."""
    out: dict[str, list[KernelSpec]] = {}
    errors: list[CkgenError] = []
    for path in paths:
        stem = Path(path).stem
        problem = stem_problem(stem)
        if problem:
            errors.append(CkgenError(f"{shown(path)}: {problem}", hint="rename the file, e.g. my_kernels.ck"))
            continue
        if stem in out:
            errors.append(CkgenError(f"two input files have the stem '{stem}'; their libraries would collide"))
            continue
        try:
            out[stem] = load_file(path, arches)
        except ErrorList as exc:
            errors.extend(exc.errors)
        except CkgenError as exc:
            errors.append(exc)
    _raise(errors)
    names: dict[str, str] = {}
    for specs in out.values():
        for s in specs:
            if s.name in names:
                errors.append(CkgenError(f"kernel '{s.name}' is defined in both {names[s.name]} and {s.source}",
                                         s.span("kernel"), "kernel names become C symbols and must be unique"))
            names[s.name] = s.source
    _raise(errors)
    return out


#: a library stem: lib<stem>.so, <stem>.h, a header guard and a CMake target name are made from it
_STEM = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")


def stem_problem(stem: str) -> str | None:
    """Why the file stem ``stem`` cannot name a library (lib<stem>.so, <stem>.h), or None."""
    if not _STEM.fullmatch(stem):
        return (f"the library is named after the file ({stem!r}), so its name must be letters, digits, '_', '.', "
                "'+' or '-' (not starting with '.', '+' or '-'), at most 200 characters")
    return None


def _raise(errors: list[CkgenError]) -> None:
    if errors:
        raise errors[0] if len(errors) == 1 else ErrorList(errors)


def targets(spec: KernelSpec, arches: tuple[str, ...]) -> tuple[str, ...]:
    """The arches ``spec`` is built for under ``--arch`` ``arches``: those arches instead of the file's ``target``
    line, but of a kernel that names its own (``arch = ...``) only those it names (none: it is left out)."""
    if not arches:
        return spec.arches
    return tuple(a for a in arches if a in spec.arches) if spec.own_arches else arches


def plan(specs: dict[str, list[KernelSpec]], arches: tuple[str, ...] = (),
         notes: list[str] | None = None) -> dict[str, list[KernelPlan]]:
    """Plans per stem, each kernel for its :func:`targets`. A file none of whose kernels is for ``arches`` is an
    error; kernels left out of a file that keeps others get a note. Family members illegal for an arch are pruned;
    ``notes`` (when given) receives one line per family that lost members and per file with kernels left out."""
    out: dict[str, list[KernelPlan]] = {}
    errors: list[CkgenError] = []
    for stem, ss in specs.items():
        kept = [replace(s, arches=t) for s in ss if (t := targets(s, arches))]
        left = [s for s in ss if not targets(s, arches)]
        if left and not kept:
            errors.append(CkgenError(f"no kernel of {shown(left[0].source)} is for --arch {','.join(arches)}: each "
                                     "names its own arches (arch = ...)", left[0].span("arch"),
                                     hint="pass one of " + ", ".join(dict.fromkeys(a for s in left for a in s.arches))))
            continue
        if left and notes is not None:
            names = list(dict.fromkeys(s.family or s.name for s in left))  # (a family's members by its name)
            more = f" and {len(names) - 6} more" if len(names) > 6 else ""
            notes.append(f"{shown(left[0].source)}: {len(left)} kernel(s) left out, their own arch lists name none of "
                         f"--arch {','.join(arches)}: {', '.join(names[:6])}{more}")
        try:
            pruned: list[Pruned] = []
            out[stem] = plan_all(kept, None, pruned)
            if notes is not None:
                notes.extend(pruned_notes(pruned, kept))
        except ErrorList as exc:
            errors.extend(exc.errors)
        except CkgenError as exc:
            errors.append(exc)
    _raise(errors)
    for ps in out.values():
        errors.extend(_entry_clashes(ps))
    _raise(errors)
    return out


def _entry_clashes(plans: list[KernelPlan]) -> list[CkgenError]:
    """A kernel's extra device entries (e.g. ``<kernel>_tma``) must not take another kernel's name."""
    kernels = {p.name: p for p in plans}
    pairs = dict.fromkeys((e.name, p.name, p.arch) for p in plans for e in p.entries[1:] if e.name in kernels)
    seen: set[tuple[str, str]] = set()
    out: list[CkgenError] = []
    for entry, owner, arch in pairs:
        if (entry, owner) not in seen:
            seen.add((entry, owner))
            out.append(CkgenError(f"kernel '{entry}' has the name of an extra entry point of kernel '{owner}' "
                                  f"(on {arch})", kernels[entry].spec.span("kernel"), "rename one of them"))
    return out


def select(plans: list[KernelPlan], kernel: str | None) -> list[KernelPlan]:
    if kernel is None:
        return plans
    chosen = [p for p in plans if p.name == kernel]
    if not chosen:
        names = ", ".join(sorted({p.name for p in plans})) or "none"
        raise CkgenError(f"no kernel named '{kernel}'", hint=f"kernels: {names}")
    return chosen


@dataclass(frozen=True)
class Library:
    stem: str
    library: Path
    header: Path
    plans: tuple[KernelPlan, ...]
    resources: dict  # (kernel, arch) -> resource dict from the code object's metadata
    dispatchers: tuple = ()  # ckgen.dispatch.table.Table of each dispatcher in the library


def _dispatcher_json(t) -> dict:
    """The manifest's entry of one dispatcher."""

    abi = dispatcher_abi(t)
    return {"name": t.name, "symbol": f"ckgen_{t.name}", "family": t.family, "op": t.op, "arch": t.arch,
            "signature": abi.prototype(f"ckgen_{t.name}"), "abi": abi.to_json(),
            "workspace_symbol": f"ckgen_{t.name}_workspace_bytes", "choice_symbol": f"ckgen_{t.name}_choice",
            "members": [m.name for m in t.members], "tuned_shapes": len(t.tuned), "sizes": list(t.size_names)}


def compile_files(paths: list[str | Path], arches: tuple[str, ...], out_dir: Path, jobs: int,
                  notes: list[str] | None = None, dispatch: bool = False,
                  tuning: str | Path | None = None) -> list[Library]:
    """``ckgen compile``: one library + header per file, one manifest for all, in ``out_dir``. With ``dispatch``
    (or a ``tuning`` database), every family also gets its dispatchers (docs/dispatch.md) in its library."""

    out_dir = output_dir(out_dir)  # before anything is built: a bad -o fails at once
    plans = plan(load(paths, arches), arches, notes)
    records = tuning_db.read(tuning) if tuning else []
    dispatch = dispatch or tuning is not None
    libs = []
    for stem, ps in plans.items():
        header = out_dir / f"{stem}.h"
        groups = {plat: [p for p in ps if p.target.platform == plat] for plat in ("amd", "cuda")}
        groups = {plat: g for plat, g in groups.items() if g}
        views: dict[str, dict] = {}
        for plat, group in groups.items():
            # AMD and NVIDIA code cannot share one library: with both, the NVIDIA one is lib<stem>_cuda.so.
            lib_stem = stem if plat == "amd" or len(groups) == 1 else f"{stem}_cuda"
            tables = dispatch_tables(group, records) if dispatch else []
            built = build_library(plat, lib_stem, group, out_dir=out_dir, jobs=jobs,
                                  host_sources=dispatch_sources(lib_stem, tables))
            libs.append(Library(stem, built.library, header, tuple(group), built.resources, tuple(tables)))
            if notes is not None:
                notes.extend(spill_notes(built.resources))
            views.update({t.name: header_view(t) for t in tables})
        atomic_write(header, render_header(stem, ps, list(views.values())))
    manifest = {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "ckgen_version": __version__,
        "libraries": [{"stem": lib.stem, "library": lib.library.name, "header": lib.header.name,
                       "arches": sorted({p.arch for p in lib.plans})} for lib in libs],
        "kernels": [dict(k, library=lib.library.name, header=lib.header.name)
                    for lib in libs for k in manifest_kernels(list(lib.plans), lib.resources)],
        "dispatchers": [dict(_dispatcher_json(t), library=lib.library.name, header=lib.header.name)
                        for lib in libs for t in lib.dispatchers],
    }
    atomic_write(out_dir / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return libs


#: the manifest resources that count a kernel's register spills, per vendor's report (AMD: VGPR / SGPR spills and
#: scratch; NVIDIA: ptxas's spill stores and loads, in bytes)
SPILL_KEYS = ("vgpr_spills", "sgpr_spills", "scratch_bytes", "spill_stores", "spill_loads")


def spill_notes(resources: dict[tuple[str, str], dict]) -> list[str]:
    """One line per (kernel, arch) of a built library whose code object spills registers (a kernel's Hopper body,
    nested under ``tma_body``, and the entries its host entry also launches, under ``parts``, count as the kernel):
    the build succeeded, but the kernel is slower than planned. The line names the entry that spills when it is not
    the kernel's own, and says so when only the portable entry spills beside a clean Hopper body (that entry runs
    only where the Hopper body cannot take the operands)."""
    out = []
    for (name, arch), res in sorted(resources.items()):
        body = res.get("tma_body") or {}
        entries = [(None, res), (body.get("entry", f"{name}_tma"), body),
                   *((part, r) for part, r in (res.get("parts") or {}).items())]
        for entry, part in entries:
            spilled = {k: part[k] for k in SPILL_KEYS if part.get(k)}
            if not spilled:
                continue
            what = ", ".join(f"{k} {v}" for k, v in spilled.items())
            where = f"{name} on {arch}" + (f" (entry {entry})" if entry else "")
            if entry is None and body and not any(body.get(k) for k in SPILL_KEYS):
                out.append(f"{where}: its portable entry spills registers ({what}); it runs only where the Hopper "
                           f"body ({body.get('entry', name + '_tma')}, no spills) cannot take the operands "
                           "(unaligned, or not sm_90), slower than planned there")
            else:
                out.append(f"{where} spills registers ({what}): it runs, but slower than planned; a smaller tile, "
                           "fewer buffers or stages, or fewer operands kept in registers usually avoids it "
                           "(`ckgen report` shows its resources)")
            break
    return out


def report(path: str | Path, arches: tuple[str, ...], jobs: int, notes: list[str] | None = None):
    """``ckgen report``: compile (cached) and return ``(reports, format_table)`` for one vendor's arches.
    Each report has ``to_json()``; ``format_table(reports)`` is that vendor's table."""

    plans = plan(load([path], arches), arches, notes)
    platforms = sorted({p.target.platform for ps in plans.values() for p in ps})
    if len(platforms) > 1:
        what = f"--arch {','.join(arches)}" if arches else "the spec's targets"
        raise CkgenError(f"{what}: report AMD and NVIDIA targets in separate runs",
                         hint="e.g. --arch " + ",".join(sorted({p.arch for ps in plans.values() for p in ps
                                                                 if p.target.platform == platforms[0]})))
    reports: list = []
    with tempfile.TemporaryDirectory(prefix="ckgen-report-") as tmp:
        for stem, ps in plans.items():
            built = build_library(platforms[0], stem, ps, out_dir=None if platforms == ["cuda"] else Path(tmp),
                                  jobs=jobs)
            reports.extend(built.reports.values() if platforms == ["cuda"]
                           else [built.reports[(p.name, p.arch)] for p in ps])
    return reports, (nvidia.format_table if platforms == ["cuda"] else amd_report.format_table)


def emit(path: str | Path, arches: tuple[str, ...] | str = (), kernel: str | None = None, stage: str = "hip") -> str:
    """``ckgen emit``: one stage's output for the file's kernels on ``arches`` (default: the targets the spec
    names; a string is parsed as ``--arch`` is).

    stage ``spec``: the frontend's KernelSpecs (JSON); ``ir``: the KernelPlans (JSON);
    ``hip``: the device source of each kernel; ``host``: the host entry points; ``header``: the C header.
    """
    if isinstance(arches, str):
        arches = parse_arches(arches)
    stem = Path(path).stem
    specs = load([path], arches)
    if stage == "spec":
        chosen = [s for s in specs[stem] if kernel is None or s.name == kernel]
        if kernel is not None and not chosen:
            raise CkgenError(f"no kernel named '{kernel}'",
                             hint="kernels: " + (", ".join(s.name for s in specs[stem]) or "none"))
        return json.dumps([s.to_json() for s in chosen], indent=2) + "\n"
    plans = select(plan(specs, arches)[stem], kernel)
    if stage == "ir":
        return json.dumps([p.to_json() for p in plans], indent=2) + "\n"
    if stage == "hip":
        return "\n".join(render_kernel(p) for p in plans)
    if stage == "host":
        platforms = sorted({p.target.platform for p in plans})
        if not platforms:
            raise CkgenError(f"--stage host: {shown(path)} has no kernels, so no host entries",
                             hint="add a kernel block (docs/dsl.md)")
        if len(platforms) > 1:
            raise CkgenError("--stage host: AMD and NVIDIA targets have different host entries; emit them "
                             "with one --arch each")
        kernel_files = [f"{p.name}.cu" for p in plans] if platforms == ["cuda"] else None
        return render_launchers(stem, plans, platforms[0], kernel_files)
    if stage == "header":
        return render_header(stem, plans)
    raise CkgenError(f"unknown stage '{stage}'", hint="stages: spec, ir, hip, host, header")
