"""What a build tells its user while it runs: progress lines, the tools it runs, the compilers' warnings.

The stages report through :func:`current` and never print themselves:

- ``step(done, total, what, where, cached, seconds)``: one unit of work finished, e.g. ``[3/8] gemm_f16_nt gfx942
  (built 1.2 s)`` or ``(cached)``; :class:`Steps` counts the units of one build across threads;
- ``command(argv, cwd)``: a tool is about to run (shown with ``-v``);
- ``warning(text)``: something the user should see, e.g. a compiler's warnings.

The default reporter (library use: ``ckgen.jit``, the build helpers) shows no progress and turns warnings into
Python warnings (:class:`CkgenWarning`). The ``ckgen`` command installs a :class:`Reporter` that writes to stderr:
progress when stderr is a terminal or with ``-v``, commands with ``-v``, warnings always.
"""

from __future__ import annotations

import shlex
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO


class CkgenWarning(UserWarning):
    """A warning from a build (e.g. compiler warnings on generated code), when no reporter prints it."""


class Reporter:
    """Prints to ``stream`` (default: stderr): progress lines when ``progress``, commands when ``verbose``."""

    def __init__(self, stream: TextIO | None = None, *, progress: bool = False, verbose: bool = False,
                 python_warnings: bool = False):
        self.stream = stream
        self.progress = progress or verbose
        self.verbose = verbose
        self.python_warnings = python_warnings
        self._lock = threading.Lock()

    def _print(self, text: str) -> None:
        stream = self.stream or sys.stderr
        with self._lock:
            stream.write(text + "\n")
            stream.flush()

    def step(self, done: int, total: int, what: str, where: str, cached: bool, seconds: float) -> None:
        if self.progress:
            how = "cached" if cached else f"built {seconds:.1f} s"
            self._print(f"[{done}/{total}] {what} {where} ({how})")

    def command(self, argv: Sequence[str], cwd: str | Path | None = None) -> None:
        if self.verbose:
            self._print(("$ " if cwd is None else f"$ cd {shlex.quote(str(cwd))} && ") + shlex.join(map(str, argv)))

    def warning(self, text: str) -> None:
        if self.python_warnings:
            warnings.warn(text, CkgenWarning, stacklevel=3)
        else:
            self._print(f"warning: {text.rstrip()}")


_default = Reporter(python_warnings=True)
_current = _default


def current() -> Reporter:
    """The reporter in effect (the CLI's, else the quiet library default)."""
    return _current


@contextmanager
def reporting(reporter: Reporter) -> Iterator[Reporter]:
    """Make ``reporter`` the current one for the duration of the block (every thread sees it)."""
    global _current
    saved, _current = _current, reporter
    try:
        yield reporter
    finally:
        _current = saved


class Steps:
    """Counts the units of one build (thread-safe) and reports each as it finishes."""

    def __init__(self, total: int):
        self.total = total
        self.done = 0
        self._lock = threading.Lock()

    def finish(self, what: str, where: str, cached: bool, seconds: float) -> None:
        with self._lock:
            self.done += 1
            n = self.done
        current().step(n, self.total, what, where, cached, seconds)
