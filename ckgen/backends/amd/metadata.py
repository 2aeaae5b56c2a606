"""AMDGPU code object metadata (the ``NT_AMDGPU_METADATA`` note) as ``llvm-readelf --notes`` prints it.

- :func:`read_metadata_text(readelf, path)` -> the YAML documents of every AMDGPU metadata note.
- :func:`parse_yaml(text)` -> Python values, for the block-style YAML subset that LLVM prints
  (mappings, ``-`` sequences, flow lists of scalars, plain and quoted scalars). No pyyaml needed.
- :func:`merge_kernel_metadata(texts)` -> one YAML document whose ``amdhsa.kernels`` is the
  concatenation of the inputs' kernels. It works on the text (each input's top-level blocks), so
  every kernel's entry is kept byte for byte; the other top-level blocks (``amdhsa.target``,
  ``amdhsa.version`` ...) must be identical in all inputs.

The merged text is what ``.amdgpu_metadata`` in an assembly file takes (see amdgpu.py: one code
object from separately compiled kernels).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ckgen.errors import BuildError

_INT_RE = re.compile(r"^-?(?:0x[0-9a-fA-F]+|\d+)$")
_FLOAT_RE = re.compile(r"^-?\d+\.\d*(?:[eE][-+]?\d+)?$")


def read_metadata_text(readelf: Path, path: Path) -> list[str]:
    """The YAML text of each AMDGPU metadata note in ``path`` (``---`` to ``...``, dedented)."""
    proc = subprocess.run([str(readelf), "--notes", str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"llvm-readelf --notes failed on {path}", log=proc.stderr)
    docs: list[str] = []
    cur: list[str] | None = None
    for line in proc.stdout.splitlines():
        if cur is None:
            if line.strip() == "---":
                cur = []
            continue
        if line.rstrip() == "...":
            docs.append("\n".join(cur) + "\n")
            cur = None
            continue
        cur.append(line.rstrip())
    if cur is not None:
        raise BuildError(f"truncated AMDGPU metadata note in {path}", log=proc.stdout[-4000:])
    return docs


# ---------------------------------------------------------------------------------------------- parse
def _scalar(text: str) -> object:
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        body = t[1:-1]
        return body.replace("''", "'") if t[0] == "'" else body.encode().decode("unicode_escape")
    if t in ("true", "false"):
        return t == "true"
    if t in ("~", "null", ""):
        return None
    if _INT_RE.match(t):
        return int(t, 16) if "x" in t else int(t, 10)
    if _FLOAT_RE.match(t):
        return float(t)
    return t


def _split_key(content: str) -> tuple[str, str] | None:
    """``key: rest`` -> (key, rest); None when the line is not a mapping entry."""
    m = re.match(r"^((?:'[^']*'|\"[^\"]*\"|[^:'\"\s][^:]*?)):(?:\s+(.*))?$", content)
    if not m:
        return None
    k = m.group(1)
    if k[0] in "'\"":
        k = k[1:-1]
    return k, (m.group(2) or "")


def _flow(text: str) -> list[object]:
    inner = text.strip()[1:-1].strip()
    return [] if not inner else [_scalar(p) for p in inner.split(",")]


class _Lines:
    def __init__(self, text: str):
        self.items: list[tuple[int, str]] = []
        for raw in text.splitlines():
            if not raw.strip() or raw.strip() in ("---", "...") or raw.lstrip().startswith("#"):
                continue
            self.items.append((len(raw) - len(raw.lstrip(" ")), raw.strip()))


def _value(rest: str, lines: _Lines, i: int, indent: int) -> tuple[object, int]:
    if rest.startswith("["):
        return _flow(rest), i
    if rest:
        return _scalar(rest), i
    if i < len(lines.items):
        ind, content = lines.items[i]
        if ind > indent or (ind == indent and (content == "-" or content.startswith("- "))):
            return _block(lines, i, ind)
    return None, i


def _block(lines: _Lines, i: int, indent: int) -> tuple[object, int]:
    ind, content = lines.items[i]
    if content == "-" or content.startswith("- "):
        seq: list[object] = []
        while i < len(lines.items):
            ind, content = lines.items[i]
            if ind != indent or not (content == "-" or content.startswith("- ")):
                break
            rest = content[1:].lstrip()
            if not rest:
                val, i = _value("", lines, i + 1, indent)
                seq.append(val)
                continue
            # "- key: v" opens a mapping whose keys sit at the column after "- ".
            lines.items[i] = (indent + 2, rest)
            if _split_key(rest) is not None:
                val, i = _block(lines, i, indent + 2)
            else:
                val, i = (_flow(rest) if rest.startswith("[") else _scalar(rest)), i + 1
            seq.append(val)
        return seq, i
    mapping: dict[str, object] = {}
    while i < len(lines.items):
        ind, content = lines.items[i]
        if ind != indent:
            if ind > indent:
                raise ValueError(f"unexpected indentation at: {content}")
            break
        kv = _split_key(content)
        if kv is None:
            break
        k, rest = kv
        mapping[k], i = _value(rest, lines, i + 1, indent)
    return mapping, i


def parse_yaml(text: str) -> object:
    """Parse LLVM's block-style YAML subset. ValueError on anything outside it."""
    lines = _Lines(text)
    if not lines.items:
        return None
    value, i = _block(lines, 0, lines.items[0][0])
    if i != len(lines.items):
        raise ValueError(f"unparsed YAML from: {lines.items[i][1]}")
    return value


# ---------------------------------------------------------------------------------------------- merge
def _top_blocks(text: str) -> dict[str, list[str]]:
    blocks: dict[str, list[str]] = {}
    cur: list[str] | None = None
    for line in text.splitlines():
        if not line.strip() or line.strip() in ("---", "..."):
            continue
        if not line[0].isspace() and not line.startswith("-"):
            name = line.split(":", 1)[0]
            cur = blocks.setdefault(name, [])
            if cur:
                raise ValueError(f"top-level key {name} twice")
        if cur is None:
            raise ValueError(f"metadata starts with an indented line: {line}")
        cur.append(line)
    return blocks


def merge_kernel_metadata(texts: list[str]) -> str:
    """One metadata document holding every kernel of ``texts`` (see the module docstring)."""
    if not texts:
        raise ValueError("no metadata to merge")
    kernels: list[str] = []
    rest: dict[str, list[str]] | None = None
    for text in texts:
        blocks = _top_blocks(text)
        block = blocks.pop("amdhsa.kernels", None)
        if block is None:
            raise BuildError("a device object has no amdhsa.kernels in its metadata", log=text)
        if block[0].strip() != "amdhsa.kernels:":
            raise BuildError("unexpected amdhsa.kernels form in metadata", log=text)
        kernels.extend(block[1:])
        if rest is None:
            rest = blocks
        elif rest != blocks:
            raise BuildError("device objects disagree on code object metadata (target or version)",
                             log="\n".join(sum(rest.values(), [])) + "\n---\n" + "\n".join(sum(blocks.values(), [])))
    assert rest is not None
    out = ["amdhsa.kernels:", *kernels]
    for name in sorted(rest):
        out.extend(rest[name])
    return "\n".join(out) + "\n"


def kernels_of(text: str) -> list[dict]:
    """The ``amdhsa.kernels`` entries of one metadata document, parsed."""
    doc = parse_yaml(text)
    if not isinstance(doc, dict) or not isinstance(doc.get("amdhsa.kernels"), list):
        raise ValueError("metadata without an amdhsa.kernels list")
    return [k for k in doc["amdhsa.kernels"] if isinstance(k, dict)]
