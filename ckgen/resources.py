"""Where the grammar, templates and device headers live, and their content hashes.

In a wheel the grammar, templates, CMake files and example specs sit under ``ckgen/_data``; in a source checkout
(editable install) at the repository root. Device headers live in ``ckgen/include`` (platform layers and
the shared blocks, included as ``"ckgen/..."``) and in each op's ``ckgen/ops/<op>/device`` folder (its
bodies, included by bare name, so their file names start with the op's name). Every compiler ckgen runs
gets :data:`DEVICE_INCLUDE_DIRS`, in that order.
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
#: the example specs (``examples/*.ck``; ``ckgen examples`` lists and copies them)
EXAMPLES_DIR = _data_dir("examples")
INCLUDE_DIR = _PKG / "include"
OPS_DIR = _PKG / "ops"
#: ckgen/include, then every op's device folder (sorted by op name)
DEVICE_INCLUDE_DIRS: tuple[Path, ...] = (INCLUDE_DIR, *sorted(p for p in OPS_DIR.glob("*/device") if p.is_dir()))


def include_flags() -> list[str]:
    """``-I<dir>`` for each of :data:`DEVICE_INCLUDE_DIRS`."""
    return [f"-I{d}" for d in DEVICE_INCLUDE_DIRS]


def _tree_hash(*roots: Path) -> str:
    h = hashlib.sha256()
    for i, root in enumerate(roots):
        for p in sorted(root.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                h.update(f"{i}:{p.relative_to(root).as_posix()}".encode())
                h.update(b"\0")
                h.update(p.read_bytes())
                h.update(b"\0")
    return h.hexdigest()


@lru_cache(maxsize=1)
def content_hashes() -> dict[str, str]:
    """sha256 of the grammar, templates (with the op folders, which hold theirs) and device headers: part of
    every cache key."""
    return {
        "grammar": _tree_hash(GRAMMAR_DIR),
        "templates": _tree_hash(TEMPLATE_DIR, *sorted(p for p in OPS_DIR.iterdir() if p.is_dir())),
        "include": _tree_hash(*DEVICE_INCLUDE_DIRS),
    }
