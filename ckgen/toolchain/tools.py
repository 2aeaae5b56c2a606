"""Running tools: the one place ckgen runs a compiler or binary utility and asks one for its version.

- :func:`run_tool` runs a command (shown by ``ckgen -v``), raises :class:`~ckgen.errors.BuildError` with the
  command and its output when it fails, and passes what it printed on stderr to the user as a warning when
  asked to (compilers of generated code: a warning there is worth seeing).
- :func:`tool_version` is the text ``<tool> --version`` prints, asked once per path and process (the version
  goes into cache keys, so every caller must see the same text).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from ckgen.errors import BuildError
from ckgen.progress import current

#: the first line of one clang diagnostic (``file:line:col: kind: text``); lines up to the next one belong to it
_DIAGNOSTIC = re.compile(r"^\S[^\n]*?:\d+:\d+: (warning|error|remark|note|fatal error): ", re.MULTILINE)


def without_remarks(log: str) -> str:
    """``log`` less the compiler's ``remark:`` diagnostics (with their source excerpts): what is left is worth a
    warning (ckgen asks for resource remarks itself: ckgen/backends/amd/occupancy.py reads them)."""
    starts = [m.start() for m in _DIAGNOSTIC.finditer(log)]
    if not starts:
        return log
    parts = [log[:starts[0]]] + [log[a:b] for a, b in zip(starts, [*starts[1:], len(log)], strict=True)]
    return "".join(p for p in parts if not (_DIAGNOSTIC.match(p) and _DIAGNOSTIC.match(p).group(1) == "remark"))


def run_tool(cmd: Sequence[str], what: str, cwd: Path | None = None, *, warn: bool = False) -> str:
    """Run ``cmd``; BuildError with its output when it fails. Returns its stderr (a compiler's warnings and
    remarks); when ``warn``, what is left of it without remarks is also reported as a warning."""
    cmd = [str(c) for c in cmd]
    current().command(cmd, cwd)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, check=False)
    except OSError as exc:
        raise BuildError(f"{what}: cannot run {cmd[0]}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        log = f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}"
        raise BuildError(f"{what} failed (exit {proc.returncode})", log=log[-20000:])
    shown = without_remarks(proc.stderr).strip() if warn else ""
    if shown:
        current().warning(f"{what}:\n{shown}")
    return proc.stderr


@lru_cache(maxsize=64)
def tool_version(path: str) -> str | None:
    """What ``path --version`` prints on stdout (stripped), or None when it does not run or fails."""
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    return proc.stdout.strip()


def first_line(path: str) -> str | None:
    """The first line of :func:`tool_version` (the version line of most compilers)."""
    text = tool_version(path)
    return text.splitlines()[0].strip() if text else None
