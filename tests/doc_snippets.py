"""The Python snippets of README.md and docs/*.md, each with the marker on the line before its fence that says
how it is tested:

- ``<!-- doc-test: run -->``: runs here, no GPU (tests/test_doc_snippets.py);
- ``<!-- doc-test: nvidia-gpu -->``: runs on an NVIDIA GPU (marked gpu: the lent H200);
- ``<!-- doc-test: amd-gpu -->``: runs here up to the point where it needs an AMD GPU (HipNoDevice), fully on one;
- ``<!-- doc-test: pybuild -->``: runs where examples/pybuild's wheel is installed (tests/integration/test_pybuild.py);
- ``<!-- doc-test: excerpt -->``: an excerpt of ckgen's source, only compiled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
KINDS = ("run", "nvidia-gpu", "amd-gpu", "pybuild", "excerpt")


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int          # of the opening fence
    kind: str | None   # None: no marker
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def snippets() -> list[Snippet]:
    out = []
    for path in DOCS:
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            if lines[i].strip() == "```python":
                start = i
                marker = re.fullmatch(r"<!-- doc-test: ([\w-]+) -->", lines[i - 1].strip()) if i else None
                i += 1
                body = []
                while i < len(lines) and lines[i].strip() != "```":
                    body.append(lines[i])
                    i += 1
                out.append(Snippet(path, start + 1, marker.group(1) if marker else None, "\n".join(body) + "\n"))
            i += 1
    return out
