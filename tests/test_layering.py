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

from ckgen.ir.registry import REGISTRY
from ckgen.resources import DEVICE_INCLUDE_DIRS, OPS_DIR, TEMPLATE_DIR

PKG = Path(__file__).resolve().parents[1] / "ckgen"


def _python_outside(folder: Path) -> list[Path]:
    return [p for p in PKG.rglob("*.py") if folder not in p.parents and p != PKG / "ir" / "registry.py"]


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


#: the packages (and top-level modules) of ckgen, lowest first: a module may import its own package and those below
#: it (docs/design.md). ``ops`` are plug-ins above every stage, reached through ``ckgen.ir.registry`` by name.
LAYERS = ("errors", "config", "resources", "files", "progress", "version", "toolchain", "ir", "targets", "frontend",
          "lower", "codegen", "dispatch", "backends", "runtime", "tune", "driver", "examples", "cli", "__init__",
          "__main__", "ops")
#: imports allowed to run upward, each with its reason
UPWARD_ALLOWED = {
    ("__init__", "runtime"): "ckgen.jit: the package's lazy convenience name for ckgen.runtime.api.jit",
}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[int, str]]:
    import ast

    rel = path.relative_to(PKG.parent).with_suffix("")
    mod = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".")[: len(mod.split(".")) - node.level + (rel.name == "__init__")]
                out.append((node.lineno, ".".join([*base, node.module or ""]).rstrip(".")))
            elif node.module == "ckgen":  # from ckgen import resources: the submodule
                out += [(node.lineno, f"ckgen.{a.name}") for a in node.names]
            elif node.module:
                out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return [(n, m) for n, m in out if m == "ckgen" or m.startswith("ckgen.")]


def test_no_stage_imports_upward():
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG)
        here = rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 or rel.name != "__init__.py" else "__init__"
        assert here in rank, f"{rel}: package {here!r} is not in LAYERS"
        for line, target in _imports(path):
            there = _layer(target)
            assert there in rank, f"{rel}:{line}: imports {target}, whose package is not in LAYERS"
            if rank[there] > rank[here] and (here, there) not in UPWARD_ALLOWED:
                upward.append(f"ckgen/{rel}:{line} ({here}) imports {target} ({there})")
    assert not upward, "imports that run upward:\n" + "\n".join(upward)
