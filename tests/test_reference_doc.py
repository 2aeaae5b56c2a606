"""docs/reference.md documents every command and flag of the parser, every environment variable ckgen reads,
every exit code and the public error classes."""

from __future__ import annotations

import argparse
import inspect
import re
from pathlib import Path

from ckgen import cli, errors

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "reference.md").read_text()


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    p = cli._parser()
    (action,) = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_command_and_flag_is_documented():
    top = cli._parser()
    flags = {s for a in top._actions for s in a.option_strings}
    for name, sub in _subparsers().items():
        assert f"### `ckgen {name}" in DOC, name
        flags |= {s for a in sub._actions for s in a.option_strings}
    missing = sorted(f for f in flags if not re.search(rf"`{re.escape(f)}[`\s=]", DOC))
    assert not missing, missing


def test_every_environment_variable_is_documented():
    config = (ROOT / "ckgen" / "config.py").read_text()
    names = set(re.findall(r'env\.get\("([A-Z_]+)"', config))
    assert {"CKGEN_CLANG", "CKGEN_CACHE_DIR", "HOME"} <= names
    for header in sorted((ROOT / "ckgen").rglob("*.h")):  # host code of the generated libraries
        names |= set(re.findall(r'getenv\("([A-Z_]+)"\)', header.read_text()))
    assert "CKGEN_HIP_LIBRARY" in names
    missing = sorted(n for n in names if f"| `{n}` |" not in DOC)
    assert not missing, missing


def test_no_other_module_reads_the_environment():
    for path in (ROOT / "ckgen").rglob("*.py"):
        if path.name == "config.py" and path.parent.name == "ckgen":
            continue
        text = path.read_text()
        for m in re.finditer(r"os\.environ(?:\.get)?\s*[\[(]\s*\"([A-Z_]+)\"|os\.getenv\(", text):
            assert m.group(1) == "ROCM_PATH", f"{path}: reads the environment ({m.group(0)})"


def test_every_exit_code_is_documented():
    codes = {v for k, v in vars(cli).items() if k.startswith("EXIT_")}
    codes |= {cls.exit_code for cls in vars(errors).values() if inspect.isclass(cls) and issubclass(cls, errors.CkgenError)}
    missing = sorted(c for c in codes if not re.search(rf"^\| {c} \|", DOC, re.M))
    assert not missing, missing


def test_the_error_classes_are_documented():
    classes = [n for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, errors.CkgenError)]
    missing = sorted(n for n in classes if n not in DOC and n != "ErrorList")
    assert not missing, missing
