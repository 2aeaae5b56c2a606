"""The example specs shipped with ckgen (``examples/*.ck`` in a checkout, ``ckgen/_data/examples`` in a wheel):
what ``ckgen examples`` lists and copies, so that a plain wheel install can compile one.

    ckgen examples                      # names and each one's description (its opening comment)
    ckgen examples --copy my_kernels/   # then: ckgen compile my_kernels/gemm_f16.ck -o out
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ckgen.errors import CkgenError, OutputError
from ckgen.files import atomic_write, output_dir, shown
from ckgen.resources import EXAMPLES_DIR


@dataclass(frozen=True)
class Example:
    path: Path
    summary: str   # the file's opening comment, whole: its lines joined with single spaces


def _summary(text: str) -> str:
    """The opening comment of a spec: the ``//`` lines before the first other line, or the first ``/* ... */``
    block, joined into one paragraph ("" when the file does not open with a comment)."""
    body = text.lstrip()
    if body.startswith("/*"):
        end = body.find("*/")
        lines = body[2:end if end >= 0 else len(body)].splitlines()
        lines = [ln.strip().removeprefix("*") for ln in lines]
    else:
        lines = []
        for ln in body.splitlines():
            if not ln.strip().startswith("//"):
                break
            lines.append(ln.strip().removeprefix("//"))
    return " ".join(w for ln in lines for w in ln.split())


def all_examples() -> list[Example]:
    return [Example(p, _summary(p.read_text())) for p in sorted(EXAMPLES_DIR.glob("*.ck"))]


def select(names: list[str]) -> list[Example]:
    """The examples called ``names`` (with or without ``.ck``), or all of them; CkgenError for an unknown name."""
    known = {e.path.stem: e for e in all_examples()}
    if not known:
        raise CkgenError(f"no example specs found in {shown(EXAMPLES_DIR)}", hint="reinstall ckgen")
    out = []
    for name in names:
        stem = name.removesuffix(".ck")
        if stem not in known:
            raise CkgenError(f"no example named '{name}'", hint="examples: " + ", ".join(sorted(known)))
        out.append(known[stem])
    return out or list(known.values())


def copy(examples: list[Example], dest: Path, force: bool = False) -> list[Path]:
    """Copy ``examples`` into ``dest`` (created); an existing file is an error unless ``force``."""
    dest = output_dir(dest)
    targets = [(e, dest / e.path.name) for e in examples]
    clash = [t for _, t in targets if t.exists()]
    if clash and not force:
        raise OutputError(f"{shown(clash[0])} exists", hint="pass --force to overwrite, or copy into another directory")
    for e, t in targets:
        atomic_write(t, e.path.read_bytes())
    return [t for _, t in targets]
