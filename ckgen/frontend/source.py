"""Reading a spec file: only a readable ``.ck`` text file is parsed; anything else is a CkgenError saying
what the path is (missing, a directory, a device, a binary file, too large, another kind of file)."""

from __future__ import annotations

import stat
from pathlib import Path

from ckgen.errors import CkgenError
from ckgen.files import shown

#: largest spec file read (a .ck file is a few KiB)
MAX_SPEC_BYTES = 16 << 20
SUFFIX = ".ck"

#: leading bytes of common binary formats -> what to call them
_MAGIC = ((b"\x7fELF", "an ELF object or executable"), (b"\x1f\x8b", "a gzip archive"),
          (b"PK\x03\x04", "a zip archive (a wheel?)"), (b"\x89PNG", "a PNG image"), (b"%PDF", "a PDF document"),
          (b"BC\xc0\xde", "LLVM bitcode"), (b"!<arch>", "an ar archive"),
          (b"\xff\xfe", "UTF-16 text (save it as UTF-8)"), (b"\xfe\xff", "UTF-16 text (save it as UTF-8)"))
_BOM = b"\xef\xbb\xbf"


def _not_text(data: bytes) -> str | None:
    """What ``data`` is when it is not UTF-8 text (a phrase: "it is an ELF object ..."), else None."""
    for magic, what in _MAGIC:
        if data.startswith(magic):
            return f"it is {what}"
    if b"\0" in data:
        return "it is a binary file (it has NUL bytes)"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"it is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
    return None


def read_spec(path: str | Path) -> str:
    """The text of the spec file ``path``; CkgenError when it is not a readable .ck text file."""
    p = Path(path)
    name = shown(p)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise CkgenError(f"{name}: no such file", hint=f"spec files are {SUFFIX} text files") from None
    except OSError as exc:
        raise CkgenError(f"cannot read {name}: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise CkgenError(f"{name} is a directory, not a {SUFFIX} file",
                         hint=f"pass the {SUFFIX} files inside it, e.g. {shown(p / ('*' + SUFFIX))}")
    if not stat.S_ISREG(st.st_mode):
        raise CkgenError(f"{name} is not a regular file (a device, pipe or socket)")
    if st.st_size > MAX_SPEC_BYTES:
        raise CkgenError(f"{name} is {st.st_size:,} bytes; a spec file may have at most {MAX_SPEC_BYTES:,}")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise CkgenError(f"cannot read {name}: {exc.strerror}") from None
    what = _not_text(data)
    if what is not None:
        raise CkgenError(f"cannot read {name}: {what}", hint=f"spec files are {SUFFIX} text files (docs/dsl.md)")
    if p.suffix != SUFFIX:
        raise CkgenError(f"{name} is not a {SUFFIX} file", hint=f"spec files are named <library>{SUFFIX} (docs/dsl.md)")
    return data[len(_BOM):].decode("utf-8") if data.startswith(_BOM) else data.decode("utf-8")
