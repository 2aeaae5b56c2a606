"""The house rules that keep ops in their folders and vendor knowledge in the targets (docs/design.md):

- no Python module outside an op's own package names that op (the registry line excepted), and no generic
  template does;
- no matrix-instruction mnemonic (``v_mfma``) outside ``ckgen/targets``;
- no test of an instruction's kind in codegen, no CUDA ``__grid_constant__`` in a target-neutral template;
- op device headers have globally unique names (every op's device folder is on one include path).
"""

from __future__ import annotations

import re
from pathlib import Path

from ckgen.ops import REGISTRY
from ckgen.resources import DEVICE_INCLUDE_DIRS, OPS_DIR, TEMPLATE_DIR

PKG = Path(__file__).resolve().parents[1] / "ckgen"


def _python_outside(folder: Path) -> list[Path]:
    return [p for p in PKG.rglob("*.py") if folder not in p.parents and p != OPS_DIR / "__init__.py"]


def test_no_module_outside_an_op_names_it():
    for op in REGISTRY:
        pattern = re.compile(rf"\b{op}\b", re.IGNORECASE)
        for path in _python_outside(OPS_DIR / op):
            for n, line in enumerate(path.read_text().splitlines(), 1):
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
