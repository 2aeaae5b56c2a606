"""Writing files: the one way ckgen publishes a file, and checks of output directories.

- :func:`atomic_output` yields a temporary path beside the destination; when the block succeeds the file gets
  its mode and replaces the destination with ``os.replace``, else it is removed. Readers never see a
  half-written file, and a failed step leaves the old file (or none).
- :func:`atomic_write` (bytes or text) and :func:`atomic_copy` are built on it.
- :func:`output_dir` creates an output directory or says plainly why it cannot be used (it is a file, it
  cannot be created, it is not writable).

Every failure is an :class:`~ckgen.errors.OutputError` naming the path and the reason.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ckgen.errors import OutputError


def shown(path: str | Path) -> str:
    """``path`` as text for a message: as is when printable, else Python-quoted (no raw newlines)."""
    text = str(path)
    return text if text.isprintable() else repr(text)


def _reason(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__


@contextmanager
def atomic_output(path: str | Path, mode: int = 0o644) -> Iterator[Path]:
    """A temporary path in ``path``'s directory to write; published as ``path`` (with ``mode``) on success."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:80]}.", suffix=".tmp")
        os.close(fd)
    except OSError as exc:
        raise OutputError(f"cannot write {shown(path)}: {_reason(exc)}") from None
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, mode)  # mkstemp makes 0600; outputs are ordinary files
        os.replace(tmp, path)
    except OSError as exc:
        raise OutputError(f"cannot write {shown(path)}: {_reason(exc)}") from None
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write(path: str | Path, data: str | bytes, mode: int = 0o644) -> None:
    """Write ``data`` (text is UTF-8) to ``path`` atomically."""
    with atomic_output(path, mode) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)


def atomic_copy(src: str | Path, dst: str | Path, mode: int = 0o755) -> None:
    """Copy ``src`` to ``dst`` atomically (libraries: mode 0755)."""
    with atomic_output(dst, mode) as tmp:
        shutil.copyfile(src, tmp)


def output_dir(path: str | Path, what: str = "output directory") -> Path:
    """``path`` as an existing, writable directory (created with its parents when missing)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputError(f"{what} {shown(p)} exists and is not a directory", hint="name a directory")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the {what} {shown(p)}: {_reason(exc)}") from None
    try:
        fd, probe = tempfile.mkstemp(dir=p, prefix=".ckgen-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputError(f"the {what} {shown(p)} is not writable: {_reason(exc)}",
                          hint="choose a directory you can write to") from None
    return p
