"""The house rules that keep ops in their folders and vendor knowledge in the targets (docs/design.md):

- no Python module outside an op's own package names that op (the registry line excepted), and no generic
  template does. An op's package is the folder ``ckgen/ops/<pkg>`` of its registry module: one package may
  serve several registry names (``ckgen.ops.rowops.softmax`` -> ``ckgen/ops/rowops``), and then every one of
  those names, and the package's own name, stay inside it (another op's comments and strings may use the word:
  attention computes a softmax);
- no matrix-instruction mnemonic (``v_mfma``) outside ``ckgen/targets``;
- no test of an instruction's kind in codegen, no CUDA ``__grid_constant__`` in a target-neutral template;
- op device headers have globally unique names (every op's device folder is on one include path).
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from ckgen.ops import REGISTRY
from ckgen.resources import DEVICE_INCLUDE_DIRS, OPS_DIR, TEMPLATE_DIR

PKG = Path(__file__).resolve().parents[1] / "ckgen"


def _python_outside(folder: Path) -> list[Path]:
    return [p for p in PKG.rglob("*.py") if folder not in p.parents and p != OPS_DIR / "__init__.py"]


def _code_only(text: str) -> list[str]:
    """The lines of ``text`` with comments and string literals (docstrings, descriptions) blanked out."""
    lines = text.splitlines()
    prose = {tokenize.COMMENT, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    for t in tokenize.generate_tokens(io.StringIO(text).readline):
        if t.type not in prose:
            continue
        for n in range(t.start[0], t.end[0] + 1):
            lo = t.start[1] if n == t.start[0] else 0
            hi = t.end[1] if n == t.end[0] else len(lines[n - 1])
            lines[n - 1] = lines[n - 1][:lo] + " " * (hi - lo) + lines[n - 1][hi:]
    return lines


def op_package(op: str) -> Path:
    """The folder of the package that serves registry name ``op``: ``ckgen.ops.<pkg>[.<module>]``."""
    parts = REGISTRY[op].split(".")
    assert parts[:2] == ["ckgen", "ops"] and len(parts) >= 3, f"{op}: {REGISTRY[op]} is not under ckgen.ops"
    folder = OPS_DIR / parts[2]
    assert (folder / "__init__.py").is_file(), f"{op}: {folder} is not a package"
    return folder


def test_no_module_outside_an_op_names_it():
    names = {op: op_package(op) for op in REGISTRY}
    names |= {folder.name: folder for folder in set(names.values())}  # a package's own name too
    for op, folder in names.items():
        pattern = re.compile(rf"\b{op}\b", re.IGNORECASE)
        for path in _python_outside(folder):
            # another op's package may use the word in its prose (attention computes a softmax), never in code
            text = path.read_text()
            code = _code_only(text) if OPS_DIR in path.parents else text.splitlines()
            for n, line in enumerate(code, 1):
                assert not pattern.search(line), f"{path.relative_to(PKG.parent)}:{n} names op '{op}': {line.strip()}"
        for tpl in TEMPLATE_DIR.glob("*.j2"):
            assert not pattern.search(tpl.read_text()), f"{tpl.name} names op '{op}'"


def test_vendor_knowledge_stays_in_targets():
    for path in PKG.rglob("*.py"):
        if PKG / "targets" in path.parents:
            continue
        text = path.read_text()
        assert "v_mfma" not in text, f"{path}: matrix mnemonic outside ckgen/targets"
        if PKG / "codegen" in path.parents:
            assert not re.search(r"kind\s*==", text), f"{path}: instruction kinds are tested in ckgen/targets"
    for tpl in [*TEMPLATE_DIR.glob("*.j2"), *OPS_DIR.glob("*/*.j2")]:
        assert "__grid_constant__" not in tpl.read_text(), f"{tpl}: CUDA-only syntax in a target-neutral template"


def test_op_device_headers_have_unique_names():
    names: dict[str, Path] = {}
    for d in DEVICE_INCLUDE_DIRS[1:]:
        op = d.parent.name
        for h in d.glob("*.h"):
            assert h.name.startswith(op), f"{h}: an op's headers start with its name"
            assert h.name not in names, f"{h} and {names[h.name]} share a name on the include path"
            names[h.name] = h
