"""The one error tree of ckgen.

Every failure a user can cause is a :class:`CkgenError`. Errors carry an optional
:class:`SourceSpan` (from Lark's position metadata) and render as::

    file.ck:3:10: error: message
        tile = 128x100x32
               ^^^^^^^^^^
    note: hint

The CLI prints ``err.render()`` and exits with the error's ``exit_code``: 2 for bad input (the default), 4 for
an environment problem (:class:`EnvironmentProblem`: a missing or broken tool, an unusable cache). It never
shows a traceback for a CkgenError.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

#: longest message and source line shown; longer ones are cut in the middle (a 5000-digit literal)
MAX_SHOWN = 240


@dataclass(frozen=True)
class SourceSpan:
    """A 1-based line/column range inside a DSL file. ``end_col`` is exclusive."""

    file: str
    line: int
    col: int
    end_line: int | None = None
    end_col: int | None = None
    text: str | None = None  # the full source text, kept so errors can show the line

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def source_line(self) -> str | None:
        text = self.text
        if text is None:
            try:
                text = Path(self.file).read_text()
            except OSError:
                return None
        lines = text.split("\n")  # as the parser counts lines: not at form feeds, U+2028 ... (str.splitlines)
        if 1 <= self.line <= len(lines):
            return lines[self.line - 1]
        return None


class CkgenError(Exception):
    """Base class. ``message`` is one sentence; ``hint`` says what would be legal."""

    kind = "error"
    #: the ``ckgen`` command's exit status for this error (docs/reference.md, "Exit codes")
    exit_code = 2

    def __init__(self, message: str, span: SourceSpan | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint

    def render(self) -> str:
        head = f"{self.span}: " if self.span else ""
        out = [f"{head}error: {clip(self.message)}"]
        if self.span is not None:
            line = self.span.source_line()
            if line is not None:
                out.extend(caret_lines(line, self.span))
        if self.hint:
            out.append(f"note: {clip(self.hint)}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()


def clip(text: str, limit: int = MAX_SHOWN) -> str:
    """``text``, cut in the middle when longer than ``limit`` characters."""
    if len(text) <= limit:
        return text
    keep = limit // 2 - 10
    return f"{text[:keep]} ...({len(text) - 2 * keep} characters)... {text[-keep:]}"


def _width(ch: str) -> int:
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 0 if unicodedata.combining(ch) else 1


def caret_lines(line: str, span: SourceSpan) -> list[str]:
    """The source line and a caret line under the span's columns (1-based code points, as Lark counts):
    tabs are kept in the caret's indentation and wide characters counted twice, so the caret lines up in a
    terminal; control characters (an escape, a NUL) are shown as U+FFFD; of a line longer than MAX_SHOWN, a
    window from just before the span is shown."""
    line = line.rstrip("\r\n")
    start = min(max(span.col - 1, 0), len(line))
    end = span.end_col - 1 if span.end_line == span.line and span.end_col else start + 1
    lo, hi = 0, len(line)
    if len(line) > MAX_SHOWN:
        lo = max(0, start - 40)
        hi = min(len(line), lo + MAX_SHOWN)
    end = min(max(end, start + 1), max(hi, start + 1))
    shown = "".join("\ufffd" if unicodedata.category(ch) == "Cc" and ch != "\t" else ch for ch in line[lo:hi])
    text = ("..." if lo else "") + shown + ("..." if hi < len(line) else "")
    pad = ("   " if lo else "") + "".join("\t" if ch == "\t" else " " * _width(ch) for ch in line[lo:start])
    marks = "^" * max(1, sum(max(_width(ch), 1) for ch in line[start:end]))
    return ["    " + text, "    " + pad + marks]


#: how hints spell an option: "python" (``ckgen.jit(..., target='emu')``, the default) or "cli" (``--target emu``,
#: while the ``ckgen`` command runs: :func:`cli_options`)
_OPTION_SYNTAX: ContextVar[str] = ContextVar("ckgen_option_syntax", default="python")


def option(name: str, value: str) -> str:
    """Option ``name`` set to ``value`` as the code that will read the hint writes it: ``target='emu'`` for the
    Python API, ``--target emu`` inside :func:`cli_options` (the ``ckgen`` command)."""
    if _OPTION_SYNTAX.get() == "cli":
        return f"--{name.replace('_', '-')} {value}"
    return f"{name}={value!r}"


@contextmanager
def cli_options() -> Iterator[None]:
    """Within this block, :func:`option` spells options as ``ckgen`` command-line flags."""
    token = _OPTION_SYNTAX.set("cli")
    try:
        yield
    finally:
        _OPTION_SYNTAX.reset(token)


class DslSyntaxError(CkgenError):
    """The .ck text does not parse."""


class SpecError(CkgenError):
    """The text parses but describes something ill-formed (unknown name, duplicate, bad value)."""


class ValidationError(CkgenError):
    """A config is illegal for its target. Always names the parameter, its value and what is legal."""

    def __init__(self, param: str, value: object, legal: str, reason: str,
                 span: SourceSpan | None = None, kernel: str | None = None, arch: str | None = None):
        where = f"kernel '{kernel}'" if kernel else ""
        where += f" on {arch}" if arch else ""
        where += ": " if where else ""
        super().__init__(f"{where}{param} = {value}: {reason}", span=span, hint=f"legal: {legal}")
        self.param = param
        self.value = value
        self.legal = legal
        self.kernel = kernel
        self.arch = arch
        self.suggestion: str | None = None
        self._later: Callable[[], str | None] | None = None

    @property
    def hint(self) -> str | None:
        if self._later is not None:  # a suggestion that costs a search: made when the error is shown
            later, self._later = self._later, None
            text = later()
            if text:
                self.suggest(text)
        return self._hint

    @hint.setter
    def hint(self, text: str | None) -> None:
        self._hint = text

    def suggest(self, text: str, first: bool = False) -> ValidationError:
        """Add a nearby legal value to the note, after the legal values (``legal: ...; nearest legal tile:
        ...``) or, with ``first``, before them (``did you mean 'gfx942'? legal: ...``); returns the error."""
        self.suggestion = text
        self.hint = f"{text} legal: {self.legal}" if first else f"legal: {self.legal}; {text}"
        return self

    def suggest_later(self, make: Callable[[], str | None]) -> ValidationError:
        """Like :meth:`suggest`, with the text made by ``make`` when the hint is first read (an error that is
        only counted, such as a pruned family member's, never pays for the search); returns the error."""
        self._later = make
        return self


def did_you_mean(word: str, options) -> str:
    """``"did you mean 'x'? "`` for the option of ``options`` closest to ``word``, or ``""``."""
    close = difflib.get_close_matches(word, list(options), n=1)
    return f"did you mean '{close[0]}'? " if close else ""


class EnvironmentProblem(CkgenError):
    """The machine, not the input, is the problem: a tool, the cache, memory (exit code 4)."""

    exit_code = 4


class ToolchainError(EnvironmentProblem):
    """A required compiler or tool was not found or does not work."""


class CacheError(EnvironmentProblem):
    """The build cache cannot be used (``CKGEN_CACHE_DIR`` is a file, ...)."""


class OutputError(CkgenError):
    """An output path cannot be written (``-o`` is a file, a directory is not writable ...)."""


class BuildError(CkgenError):
    """A compiler ran and failed. ``log`` holds its output."""

    def __init__(self, message: str, log: str = "", hint: str | None = None):
        super().__init__(message, hint=hint)
        self.log = log

    def render(self) -> str:
        base = super().render()
        return f"{base}\n{self.log.rstrip()}" if self.log else base


class RuntimeFailure(CkgenError):
    """Running a kernel failed: bad arguments, no device, launch error, emulator fault."""


class EmulationFault(RuntimeFailure):
    """The emulator caught an out-of-bounds access, an LDS race or a barrier deadlock."""


class ErrorList(CkgenError):
    """Several independent errors found in one pass (``ckgen check`` reports them all)."""

    def __init__(self, errors: list[CkgenError]):
        super().__init__(f"{len(errors)} error(s)")
        self.errors = errors
        self.exit_code = max(e.exit_code for e in errors) if errors else 2

    def render(self) -> str:
        return "\n".join(e.render() for e in self.errors)
