"""Packaging facts that a checkout can check without building: the distribution's name, its license, the
examples the wheel carries, and no wheel in git."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_distribution_name_license_and_extras():
    p = PROJECT["project"]
    assert p["name"] == "ckgen-compiler" and p["scripts"] == {"ckgen": "ckgen.cli:main"}
    assert p["license"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert p["requires-python"] == ">=3.10"
    assert p["optional-dependencies"]["hip"] == ["hip-python>=6.2"]


def test_the_wheel_carries_every_example_spec():
    included = PROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    examples = {f"examples/{p.name}" for p in (ROOT / "examples").glob("*.ck")}
    assert examples and examples == {k for k in included if k.startswith("examples/")}
    assert all(included[k] == f"ckgen/_data/{k}" for k in examples)


@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None, reason="not a git checkout")
def test_no_wheel_is_tracked():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert not [f for f in files if f.endswith((".whl", ".tar.gz", ".egg"))]
