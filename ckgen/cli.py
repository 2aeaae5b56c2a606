"""The ``ckgen`` command. A stable contract (issue 2, item 8; every flag in docs/reference.md):

    ckgen check FILE... [--arch A[,B]]
    ckgen emit FILE [--arch A[,B]] [--kernel NAME] [--stage spec|ir|hip|host|header]
    ckgen compile FILE... [--arch A[,B...]] -o DIR [-j N] [--dispatch] [--tuning DB]
    ckgen report FILE [--arch A[,B]] [--json] [-j N]
    ckgen run FILE --kernel NAME [--target emu|sm_90|hip] [--arch A] [--size NAME=V,...] [-m M -n N -k K] [--seed S]
    ckgen tune FILE --family F [--target emu|sm_90|hip] [--arch A] (--shapes MxNxK,... | --shapes-file P) --db DB
               [--reps N] [--inner N] [--timing events|graph] [--warmup N] [--devices N] [--seed S]
    ckgen explain FILE --family F --shape MxNxK[,...] [--arch A] [--tuning DB] [--no-workspace] [--json]
    ckgen examples [NAME...] [--copy DIR] [--force]
    ckgen cmake-dir

Every command also takes ``-v`` (progress and the compiler commands) and ``-q`` (no progress). Without
``--arch``, kernels are built for the targets their spec names (``target`` line or ``arch =``).

Exit codes: 0 success; 1 a numeric check failed (``run``); 2 bad input or a failed build, with the errors on
stderr (``file:line:col: error: ...``); 3 an internal error (a bug in ckgen); 4 an environment problem (a
missing or broken compiler, an unusable cache); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

from ckgen import driver, examples
from ckgen.backends import BACKENDS, resolve_target
from ckgen.config import settings
from ckgen.dispatch import db
from ckgen.dispatch.table import choose, tables
from ckgen.errors import CkgenError, cli_options
from ckgen.frontend import load_file
from ckgen.ir.registry import get_op
from ckgen.lower.pipeline import arch_span
from ckgen.progress import Reporter, reporting
from ckgen.resources import CMAKE_DIR
from ckgen.runtime.family import family_plans
from ckgen.runtime.run import parse_sizes, run_command
from ckgen.targets import get_target
from ckgen.tune import runner, shapes
from ckgen.version import __version__

EXIT_OK, EXIT_NUMERICS, EXIT_USER, EXIT_INTERNAL, EXIT_ENV, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
MAX_JOBS = 256


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors exit 2 with one line, like other errors
        self.print_usage(sys.stderr)
        sys.stderr.write(f"ckgen: error: {message}\n")
        raise SystemExit(EXIT_USER)


def _jobs_arg(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= n <= MAX_JOBS:
        raise argparse.ArgumentTypeError(f"{n}: expected 0 (the CPU count) to {MAX_JOBS}")
    return n


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true",
                        help="show progress and every compiler command")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress lines, even on a terminal")
    arch_help = "comma-separated targets, e.g. gfx942,gfx90a (default: the ones the spec names)"

    p = _Parser(prog="ckgen", description="Code-generation compiler for composable GPU kernels.")
    p.add_argument("--version", action="version", version=f"ckgen {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND",
                         help="one of the commands below; `ckgen COMMAND -h` for its flags")

    c = sub.add_parser("check", parents=[common], help="parse and validate; exit 0, or 2 with the errors on stderr")
    c.add_argument("files", nargs="+", help="the .ck files to check")
    c.add_argument("--arch", help=arch_help)

    e = sub.add_parser("emit", parents=[common], help="print one stage's output")
    e.add_argument("file", help="the .ck file")
    e.add_argument("--arch", help=arch_help)
    e.add_argument("--kernel", help="only this kernel (default: all of the file's)")
    e.add_argument("--stage", default="hip", choices=("spec", "ir", "hip", "host", "header"),
                   help="spec (JSON), ir (plans, JSON), hip (device source), host (host entries), header")

    b = sub.add_parser("compile", parents=[common], help="build lib<stem>.so, <stem>.h and manifest.json")
    b.add_argument("files", nargs="+", help="the .ck files; one library per file")
    b.add_argument("--arch", help=arch_help)
    b.add_argument("-o", "--output", required=True, type=Path, help="output directory (created when missing)")
    b.add_argument("-j", "--jobs", type=_jobs_arg, default=0, help="parallel compiles (default 0: the CPU count)")
    b.add_argument("--dispatch", action="store_true",
                   help="also build each family's dispatcher: one entry point that picks a kernel by shape")
    b.add_argument("--tuning", help="a tuning database (ckgen tune) for the dispatchers (implies --dispatch)")

    r = sub.add_parser("report", parents=[common], help="compile and show what the code objects contain")
    r.add_argument("file", help="the .ck file to compile and report on")
    r.add_argument("--arch", help=arch_help + "; one vendor per run")
    r.add_argument("--json", action="store_true", help="print JSON instead of a table")
    r.add_argument("-j", "--jobs", type=_jobs_arg, default=0, help="parallel compiles (default 0: the CPU count)")

    u = sub.add_parser("run", parents=[common], help="run one kernel on random data and check it against float64")
    u.add_argument("file", help="the .ck file holding the kernel")
    u.add_argument("--kernel", required=True, help="the kernel to run")
    u.add_argument("--target", default="emu", help="emu (CPU emulation), hip, or a GPU target such as sm_90")
    u.add_argument("--arch", help="the AMD arch the emulator plans for (default: the kernel's first)")
    u.add_argument("--size", help="runtime sizes by name, e.g. m=256,n=128,k=64,batch=4 (the kernel's ABI sizes)")
    u.add_argument("-m", type=int, help="shorthand for --size m=M")
    u.add_argument("-n", type=int, help="shorthand for --size n=N")
    u.add_argument("-k", type=int, help="shorthand for --size k=K")
    u.add_argument("--seed", type=int, default=0, help="seed of the random inputs (a non-negative integer)")

    t = sub.add_parser("tune", parents=[common], help="time a family's kernels on a device for a list of shapes; write a tuning database")
    t.add_argument("file", help="the .ck file holding the family")
    t.add_argument("--family", required=True, help="the family (a `family` block of the file) to tune")
    t.add_argument("--target", default="emu", help="emu (CPU emulation), hip, or an NVIDIA arch such as sm_90")
    t.add_argument("--arch", help="the arch to plan for (default: the family's first of the target's vendor)")
    t.add_argument("--shapes", help="comma-separated shapes, e.g. 1x4096x4096,16x4096x4096 (the op's sizes, in order)")
    t.add_argument("--shapes-file", help="a file of shapes, one per line ('#' comments)")
    t.add_argument("--db", required=True, help="the tuning database (JSON lines; created, or extended and resumed)")
    t.add_argument("--reps", type=int, default=None, help="timed samples per kernel and shape (default 20; emu 3)")
    t.add_argument("--inner", type=int, default=None, help="calls per sample (default 10; emu 1)")
    t.add_argument("--timing", choices=("events", "graph"), default="events",
                   help="CUDA: a sample is `inner` back-to-back launches between two events (default), or one replay "
                        "of a CUDA graph of them, as the benchmarks time (not yet run on a GPU since its fix); "
                        "elsewhere the wall clock")
    t.add_argument("--warmup", type=int, default=None, help="untimed calls first (default 5; emu 1)")
    t.add_argument("--devices", type=int, help="worker processes (default: every visible GPU; emu: 1)")
    t.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")

    xp = sub.add_parser("explain", parents=[common], help="say which kernel a family's dispatcher runs at a shape, and "
                        "why; or how one kernel was planned, and why")
    xp.add_argument("file", help="the .ck file holding the family or kernel")
    xp.add_argument("--family", help="the family whose dispatcher to explain (with --shape)")
    xp.add_argument("--kernel", help="a kernel whose plan to explain (its tile, workgroup and pipeline, and why)")
    xp.add_argument("--shape", help="with --family: one or more comma-separated shapes, e.g. 16x4096x4096")
    xp.add_argument("--arch", help="the arch (default: the family's first; --kernel: every target the kernel names)")
    xp.add_argument("--tuning", help="the tuning database (default: none: the cost model alone)")
    xp.add_argument("--no-workspace", action="store_true", help="choose as a C caller passing workspace = NULL")
    xp.add_argument("--json", action="store_true", help="print JSON instead of text")

    x = sub.add_parser("examples", parents=[common], help="list the example specs shipped with ckgen, or copy them")
    x.add_argument("names", nargs="*", help="examples to show or copy (default: all)")
    x.add_argument("--copy", type=Path, metavar="DIR", help="copy the examples into DIR")
    x.add_argument("--force", action="store_true", help="with --copy: overwrite files that exist")

    sub.add_parser("cmake-dir", parents=[common], help="print the directory holding ckgenConfig.cmake")
    return p


def _jobs(n: int) -> int:

    return n if n > 0 else settings().jobs


def _arches(a) -> tuple[str, ...]:

    return driver.parse_arches(a.arch)


def _notes(notes: list[str]) -> None:
    for line in notes:
        sys.stderr.write(f"note: {line}\n")


def _cmd_check(a) -> int:

    arches = _arches(a)
    notes: list[str] = []
    plans = driver.plan(driver.load(a.files, arches), arches, notes)
    _notes(notes)
    for stem, ps in plans.items():
        kernels = sorted({p.name for p in ps})
        if not ps:
            print(f"{stem}: no kernels: ok")
            continue
        print(f"{stem}: {len(kernels)} kernel(s), {len(ps)} plan(s) for {', '.join(sorted({p.arch for p in ps}))}: ok")
    return EXIT_OK


def _cmd_emit(a) -> int:

    sys.stdout.write(driver.emit(a.file, _arches(a), a.kernel, a.stage))
    return EXIT_OK


def _cmd_compile(a) -> int:

    notes: list[str] = []
    libs = driver.compile_files(a.files, _arches(a), a.output, _jobs(a.jobs), notes, dispatch=a.dispatch,
                                tuning=a.tuning)
    _notes(notes)
    for lib in libs:
        print(f"wrote {lib.library} ({len({p.name for p in lib.plans})} kernel(s)), {lib.header}")
        for t in lib.dispatchers:
            print(f"  dispatcher ckgen_{t.name}: {len(t.members)} kernel(s), {len(t.tuned)} tuned shape(s) on {t.arch}")
    print(f"wrote {a.output / 'manifest.json'}")
    return EXIT_OK


def _cmd_report(a) -> int:


    notes: list[str] = []
    reports, format_table = driver.report(a.file, _arches(a), _jobs(a.jobs), notes)
    _notes(notes)
    if a.json:
        print(json.dumps({"file": str(a.file), "kernels": [r.to_json() for r in reports]}, indent=2, sort_keys=True))
    else:
        sys.stdout.write(format_table(reports))
    return EXIT_OK


def _cmd_run(a) -> int:

    sizes = parse_sizes(a.size)
    for flag in ("m", "n", "k"):
        value = getattr(a, flag)
        if value is not None:
            if flag in sizes:
                raise CkgenError(f"-{flag} and --size {flag}= both given")
            sizes[flag] = value
    return run_command(a.file, a.kernel, a.target, a.arch, sizes, a.seed)


def _cmd_examples(a) -> int:

    chosen = examples.select(a.names)
    if a.copy is None:
        width = max(len(ex.path.name) for ex in chosen) + 2
        for ex in chosen:
            lines = textwrap.wrap(ex.summary, max(40, 110 - width), break_on_hyphens=False) or [""]
            print(ex.path.name.ljust(width) + lines[0])
            for line in lines[1:]:
                print(" " * width + line)
        print(f"(in {examples.EXAMPLES_DIR}; copy them with: ckgen examples --copy DIR)")
        return EXIT_OK
    for path in examples.copy(chosen, a.copy, force=a.force):
        print(f"wrote {path}")
    return EXIT_OK


def _cmd_tune(a) -> int:

    backend, arch = resolve_target(a.target, a.arch)
    if (a.shapes is None) == (a.shapes_file is None):
        raise CkgenError("give the shapes with --shapes or --shapes-file (one of them)")
    table = _explain_table(a.file, a.family, backend, arch, None)
    todo = shapes.parse_list(a.shapes, table) if a.shapes is not None else shapes.read_file(a.shapes_file, table)
    emu = backend == "emu"
    reps = a.reps if a.reps is not None else (3 if emu else 20)
    inner = a.inner if a.inner is not None else (1 if emu else 10)
    warmup = a.warmup if a.warmup is not None else (1 if emu else 5)
    for name, v in (("--reps", reps), ("--inner", inner)):
        if v < 1:
            raise CkgenError(f"{name} {v}: expected at least 1")
    if warmup < 0 or (a.devices is not None and a.devices < 1):
        raise CkgenError("--warmup must be >= 0 and --devices >= 1")
    s = runner.run(a.file, a.family, backend, table.arch, todo, a.db, reps, inner, warmup, a.seed, a.devices,
                   timing=a.timing)
    print(f"ckgen tune: {s.shapes} shape(s) measured ({s.records} records), {s.skipped} already recorded; wrote {a.db}")
    return EXIT_OK


def _explain_table(file: str, family: str, backend: str | None, arch: str | None, tuning: str | None):
    """The dispatch table of ``family`` for ``backend``'s vendor (None: the vendor of ``arch``, else of the family's
    first target) on ``arch`` (None: the family's first target of that vendor)."""
    specs = load_file(file)
    if backend is None:
        spec = next((s for s in specs if s.family == family and s.arches), None)
        first = spec.arches[0] if spec is not None else None
        if arch is None and first is not None:
            try:
                get_target(first)
            except CkgenError as exc:  # an unknown target of the spec: say where it is named
                exc.span = exc.span or arch_span(spec, first)
                raise
        backend, arch = resolve_target(arch or first or "emu", None)
    plans = family_plans(specs, family, BACKENDS[backend].vendor, arch)
    found = tables(plans, db.read(tuning) if tuning else [], family)
    if len(found) != 1:
        raise CkgenError(f"family '{family}' has kernels of {len(found)} signatures",
                         hint="tune and explain one signature at a time")
    return found[0]


def _explain_kernel(a) -> int:

    if a.shape or a.tuning or a.no_workspace:
        raise CkgenError("--shape, --tuning and --no-workspace go with --family, not --kernel")
    arches = _arches(a)
    specs = {stem: [s for s in ss if s.name == a.kernel] for stem, ss in driver.load([a.file], arches).items()}
    if not any(specs.values()):
        raise CkgenError(f"no kernel '{a.kernel}' in {a.file}")
    plans = [p for ps in driver.plan(specs, arches).values() for p in ps]
    if a.json:
        print(json.dumps([{"kernel": p.name, "arch": p.arch, "summary": get_op(p.op).summary(p),
                           "plan": p.body.to_json()} for p in plans], indent=2))
        return EXIT_OK
    for p in plans:
        print(f"{p.name} on {p.arch}: {get_op(p.op).summary(p)}")
        for reason in getattr(p.body, "why", ()):
            print(f"  why: {reason}")
    return EXIT_OK


def _cmd_explain(a) -> int:

    if (a.family is None) == (a.kernel is None):
        raise CkgenError("give --family (with --shape) or --kernel (one of them)")
    if a.kernel is not None:
        return _explain_kernel(a)
    if not a.shape:
        raise CkgenError("--family needs --shape (one or more comma-separated shapes)")
    table = _explain_table(a.file, a.family, None, a.arch, a.tuning)
    out = []
    for text in [t for t in a.shape.split(",") if t.strip()]:
        sizes = table.parse_shape(text)
        c = choose(table, sizes, not a.no_workspace)
        out.append((sizes, c))
    if a.json:
        print(json.dumps([{"shape": dict(zip(table.size_names, s, strict=True)), "kernel": c.kernel, "how": c.how,
                           "reason": c.reason, "estimates_us": {m.name: (None if e is None else e * 1e6)
                                                               for m, e in zip(table.members, c.estimates, strict=True)}}
                          for s, c in out], indent=2))
        return EXIT_OK
    print(f"dispatcher ckgen_{table.name} on {table.arch}: {len(table.members)} kernel(s), "
          f"{len(table.tuned)} tuned shape(s)")
    for sizes, c in out:
        print(f"{'x'.join(map(str, sizes))}: {c.kernel}")
        print(f"  why: {c.reason}")
        label = {"tuned": "measured", "nearest": "scaled estimate", "model": "model estimate"}[c.how]
        for m, e in sorted(zip(table.members, c.estimates, strict=True), key=lambda x: (x[1] is None, x[1] or 0)):
            shown = "-" if e is None else f"{e * 1e6:10.2f} us"
            print(f"    {'*' if m.name == c.kernel else ' '} {m.name:48s} {shown:>14s}  ({label})")
    return EXIT_OK


def _cmd_cmake_dir(a) -> int:

    print(CMAKE_DIR)
    return EXIT_OK


COMMANDS = {"check": _cmd_check, "emit": _cmd_emit, "compile": _cmd_compile, "report": _cmd_report,
            "run": _cmd_run, "tune": _cmd_tune, "explain": _cmd_explain, "examples": _cmd_examples,
            "cmake-dir": _cmd_cmake_dir}


def _reporter(a):

    tty = sys.stderr.isatty()
    return Reporter(progress=tty and not a.quiet, verbose=a.verbose)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    try:
        with cli_options(), reporting(_reporter(args)):
            return COMMANDS[args.command](args)
    except CkgenError as exc:
        sys.stderr.write(exc.render() + "\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("ckgen: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug in ckgen: say so plainly, with the details a report needs
        import traceback

        sys.stderr.write(f"ckgen: internal error: {exc.__class__.__name__}: {exc}\n"
                         "This is a bug in ckgen; please report it with the details below.\n")
        traceback.print_exc(limit=8, file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
