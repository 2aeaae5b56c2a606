"""The ``ckgen`` command. A stable contract (issue 2, item 8):

    ckgen check FILE... [--arch A[,B]]
    ckgen emit FILE --arch A [--kernel NAME] [--stage spec|ir|hip|host|header]
    ckgen compile FILE... --arch A[,B...] -o DIR [-j N]
    ckgen report FILE --arch A [--json] [-j N]
    ckgen run FILE --kernel NAME [--target emu|sm_90|hip] [--arch A] [--size NAME=V,...] [-m M -n N -k K] [--seed S]
    ckgen cmake-dir

Exit codes: 0 success; 1 a numeric check failed (``run``); 2 bad input or a failed build, with
the errors on stderr (``file:line:col: error: ...``); 3 an internal error (a bug in ckgen).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ckgen import __version__
from ckgen.errors import CkgenError

EXIT_OK, EXIT_NUMERICS, EXIT_USER, EXIT_INTERNAL = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors exit 2 with one line, like other errors
        self.print_usage(sys.stderr)
        sys.stderr.write(f"ckgen: error: {message}\n")
        raise SystemExit(EXIT_USER)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ckgen", description="Code-generation compiler for composable GPU kernels.")
    p.add_argument("--version", action="version", version=f"ckgen {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    c = sub.add_parser("check", help="parse and validate; exit 0, or 2 with the errors on stderr")
    c.add_argument("files", nargs="+")
    c.add_argument("--arch", help="comma-separated targets (default: the file's)")

    e = sub.add_parser("emit", help="print one stage's output")
    e.add_argument("file")
    e.add_argument("--arch", required=True)
    e.add_argument("--kernel")
    e.add_argument("--stage", default="hip", choices=("spec", "ir", "hip", "host", "header"))

    b = sub.add_parser("compile", help="build lib<stem>.so, <stem>.h and manifest.json")
    b.add_argument("files", nargs="+")
    b.add_argument("--arch", required=True, help="comma-separated targets, e.g. gfx942,gfx90a")
    b.add_argument("-o", "--output", required=True, type=Path)
    b.add_argument("-j", "--jobs", type=int, default=0, help="parallel compiles (default: CPU count)")

    r = sub.add_parser("report", help="compile and show what the code objects contain")
    r.add_argument("file")
    r.add_argument("--arch", required=True)
    r.add_argument("--json", action="store_true")
    r.add_argument("-j", "--jobs", type=int, default=0)

    u = sub.add_parser("run", help="run one kernel on random data and check it against float64")
    u.add_argument("file")
    u.add_argument("--kernel", required=True)
    u.add_argument("--target", default="emu", help="emu (CPU emulation), or a GPU target such as sm_90")
    u.add_argument("--arch", help="the AMD arch the emulator plans for (default: the kernel's first)")
    u.add_argument("--size", help="runtime sizes by name, e.g. m=256,n=128,k=64,batch=4 (the kernel's ABI sizes)")
    u.add_argument("-m", type=int, help="shorthand for --size m=M")
    u.add_argument("-n", type=int, help="shorthand for --size n=N")
    u.add_argument("-k", type=int, help="shorthand for --size k=K")
    u.add_argument("--seed", type=int, default=0)

    sub.add_parser("cmake-dir", help="print the directory holding ckgenConfig.cmake")
    return p


def _jobs(n: int) -> int:
    from ckgen.config import settings

    return n if n > 0 else settings().jobs


def _notes(notes: list[str]) -> None:
    for line in notes:
        sys.stderr.write(f"note: {line}\n")


def _cmd_check(a) -> int:
    from ckgen import driver

    arches = driver.parse_arches(a.arch)
    notes: list[str] = []
    plans = driver.plan(driver.load(a.files, arches), arches, notes)
    _notes(notes)
    for stem, ps in plans.items():
        kernels = sorted({p.name for p in ps})
        print(f"{stem}: {len(kernels)} kernel(s), {len(ps)} plan(s) for {', '.join(sorted({p.arch for p in ps}))}: ok")
    return EXIT_OK


def _cmd_emit(a) -> int:
    from ckgen import driver

    sys.stdout.write(driver.emit(a.file, a.arch, a.kernel, a.stage))
    return EXIT_OK


def _cmd_compile(a) -> int:
    from ckgen import driver

    arches = driver.parse_arches(a.arch)
    notes: list[str] = []
    libs = driver.compile_files(a.files, arches, a.output, _jobs(a.jobs), notes)
    _notes(notes)
    for lib in libs:
        print(f"wrote {lib.library} ({len({p.name for p in lib.plans})} kernel(s)), {lib.header}")
    print(f"wrote {a.output / 'manifest.json'}")
    return EXIT_OK


def _cmd_report(a) -> int:
    import json

    from ckgen import driver

    notes: list[str] = []
    reports, format_table = driver.report(a.file, driver.parse_arches(a.arch), _jobs(a.jobs), notes)
    _notes(notes)
    if a.json:
        print(json.dumps({"file": str(a.file), "kernels": [r.to_json() for r in reports]}, indent=2, sort_keys=True))
    else:
        sys.stdout.write(format_table(reports))
    return EXIT_OK


def _cmd_run(a) -> int:
    from ckgen.runtime.run import parse_sizes, run_command

    sizes = parse_sizes(a.size)
    for flag in ("m", "n", "k"):
        value = getattr(a, flag)
        if value is not None:
            if flag in sizes:
                raise CkgenError(f"-{flag} and --size {flag}= both given")
            sizes[flag] = value
    return run_command(a.file, a.kernel, a.target, a.arch, sizes, a.seed)


def _cmd_cmake_dir(a) -> int:
    from ckgen.resources import CMAKE_DIR

    print(CMAKE_DIR)
    return EXIT_OK


COMMANDS = {"check": _cmd_check, "emit": _cmd_emit, "compile": _cmd_compile, "report": _cmd_report,
            "run": _cmd_run, "cmake-dir": _cmd_cmake_dir}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except CkgenError as exc:
        sys.stderr.write(exc.render() + "\n")
        return EXIT_USER
    except KeyboardInterrupt:
        sys.stderr.write("ckgen: interrupted\n")
        return 130
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
