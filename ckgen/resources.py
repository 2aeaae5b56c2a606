"""Where the grammar, templates and device headers live, and their content hashes.

In a wheel they sit under ``ckgen/_data``; in a source checkout (editable install) at the
repository root. Device headers always live in ``ckgen/include``.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

_PKG = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    packaged = _PKG / "_data" / name
    if packaged.is_dir():
        return packaged
    return _PKG.parent / name


GRAMMAR_DIR = _data_dir("grammar")
TEMPLATE_DIR = _data_dir("templates")
CMAKE_DIR = _data_dir("cmake")
INCLUDE_DIR = _PKG / "include"


def _tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(root)).encode())
            h.update(b"\0")
            h.update(p.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


@lru_cache(maxsize=1)
def content_hashes() -> dict[str, str]:
    """sha256 of the grammar, templates and device headers: part of every cache key."""
    return {
        "grammar": _tree_hash(GRAMMAR_DIR),
        "templates": _tree_hash(TEMPLATE_DIR),
        "include": _tree_hash(INCLUDE_DIR),
    }
