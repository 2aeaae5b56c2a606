"""Every Python snippet of the README and docs/ is marked with how it is tested, uses no undefined name, and the
ones that need no GPU run (tests/doc_snippets.py explains the markers)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .doc_snippets import KINDS, ROOT, snippets

ALL = snippets()


def _run(code: str, tmp_path, cwd=ROOT) -> subprocess.CompletedProcess:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)  # keep the caller's
    env = dict(os.environ, CKGEN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=path)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def test_there_are_snippets_and_each_is_marked():
    assert len(ALL) >= 8
    unmarked = [s.id for s in ALL if s.kind not in KINDS]
    assert not unmarked, f"mark these with <!-- doc-test: {'|'.join(KINDS)} -->: {unmarked}"


@pytest.mark.parametrize("snippet", [s for s in ALL if s.kind != "excerpt"], ids=lambda s: s.id)
def test_snippets_use_no_undefined_name(snippet):
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "F821",
                        "--stdin-filename", "snippet.py", "-"], input=snippet.code, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("snippet", [s for s in ALL if s.kind == "excerpt"], ids=lambda s: s.id)
def test_excerpts_are_python(snippet):
    compile(snippet.code, snippet.id, "exec")


@pytest.mark.parametrize("snippet", [s for s in ALL if s.kind == "run"], ids=lambda s: s.id)
def test_snippets_run(snippet, tmp_path):
    r = _run(snippet.code, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.parametrize("snippet", [s for s in ALL if s.kind == "amd-gpu"], ids=lambda s: s.id)
def test_amd_snippets_run_up_to_the_gpu(snippet, tmp_path):
    r = _run(snippet.code, tmp_path)
    if r.returncode != 0:  # this machine has no AMD GPU: the snippet must get as far as asking for one
        assert "HipNoDevice" in r.stderr or "HipRuntimeUnavailable" in r.stderr, r.stderr[-3000:]


@pytest.mark.gpu
@pytest.mark.parametrize("snippet", [s for s in ALL if s.kind == "nvidia-gpu"], ids=lambda s: s.id)
def test_nvidia_snippets_run(snippet, tmp_path):  # pragma: no cover - on the lent H200
    r = _run(snippet.code, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
