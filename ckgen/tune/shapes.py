"""Shape lists for ``ckgen tune``: ``MxNxK`` items (one number per size argument of the op's ABI, in order;
trailing sizes with a default may be left out), comma-separated inline or one per line in a file, where ``#``
starts a comment and blank lines are ignored."""

from __future__ import annotations

from pathlib import Path

from ckgen.dispatch.table import parse_shape
from ckgen.errors import CkgenError


def parse_list(text: str, size_names: tuple[str, ...], defaults: dict[str, int]) -> list[tuple[int, ...]]:
    """``1x4096x4096,16x4096x4096`` -> shapes, in order, without repeats."""
    items = [t for t in (x.strip() for x in text.split(",")) if t]
    if not items:
        raise CkgenError("--shapes: no shapes given", hint=f"e.g. --shapes 1x4096x4096,16x4096x4096 ({'x'.join(size_names)})")
    return list(dict.fromkeys(parse_shape(t, size_names, defaults) for t in items))


def read_file(path: str | Path, size_names: tuple[str, ...], defaults: dict[str, int]) -> list[tuple[int, ...]]:
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CkgenError(f"cannot read the shape file {p}: {exc}") from None
    out = []
    for n, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            out.append(parse_shape(text, size_names, defaults))
        except CkgenError as exc:
            raise CkgenError(f"{p}:{n}: {exc.message}") from None
    if not out:
        raise CkgenError(f"{p}: no shapes")
    return list(dict.fromkeys(out))
