"""Shape lists for ``ckgen tune``: ``MxNxK`` items (one number per size argument of the op's ABI, in order;
trailing sizes with a default, and trailing block counts such as block scales' ``kb`` / ``nb``, may be left out:
``Table.parse_shape``), comma-separated inline or one per line in a file, where ``#`` starts a comment and blank
lines are ignored."""

from __future__ import annotations

from pathlib import Path

from ckgen.dispatch.table import Table
from ckgen.errors import CkgenError


def parse_list(text: str, table: Table) -> list[tuple[int, ...]]:
    """``1x4096x4096,16x4096x4096`` -> shapes of the family's sizes, in order, without repeats."""
    items = [t for t in (x.strip() for x in text.split(",")) if t]
    if not items:
        raise CkgenError("--shapes: no shapes given",
                         hint=f"e.g. --shapes 1x4096x4096,16x4096x4096 ({'x'.join(table.size_names)})")
    return list(dict.fromkeys(table.parse_shape(t) for t in items))


def read_file(path: str | Path, table: Table) -> list[tuple[int, ...]]:
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
            out.append(table.parse_shape(text))
        except CkgenError as exc:
            raise CkgenError(f"{p}:{n}: {exc.message}") from None
    if not out:
        raise CkgenError(f"{p}: no shapes")
    return list(dict.fromkeys(out))
