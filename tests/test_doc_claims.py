"""The README, docs/ and examples/ agree with what ckgen measures (issue 25): every occupancy claim written as
"`ckgen report EXAMPLE --arch A`: `N (LIMIT)` waves/SIMD for every kernel", every "-> N waves per SIMD" comment
of an example kernel, the attention section's waves per SIMD, and the LDS bank-conflict counts quoted from
``ckgen run --target emu`` (the GEMM examples' 0 is tests/runtime/test_emu_lds_banks.py's). One report per
(example, arch) named by a claim: clang runs once per claimed file."""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
REPORT_CLAIM = re.compile(r"`ckgen report (examples/[\w.]+\.ck) --arch (\w+)`: `(\d+) \((\w+)\)` waves/SIMD "
                          r"for every kernel")
NUMBER = {"one": 1, "two": 2, "three": 3, "four": 4}


def _flat(text: str) -> str:
    return " ".join(text.split())


def _ckgen(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, CKGEN_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ckgen", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """``report(example, arch)`` -> {kernel: its JSON report}, run once per pair."""
    cache = tmp_path_factory.mktemp("cache")

    @functools.cache
    def get(example: str, arch: str) -> dict:
        r = _ckgen("report", example, "--arch", arch, "--json", "-j", "2", cache=cache)
        assert r.returncode == 0, r.stderr
        return {k["name"]: k for k in json.loads(r.stdout)["kernels"]}

    get.cache = cache
    return get


def _doc_claims() -> list[tuple[str, str, str, int, str]]:
    out = []
    for path in DOCS:
        for m in REPORT_CLAIM.finditer(_flat(path.read_text())):
            out.append((path.name, m.group(1), m.group(2), int(m.group(3)), m.group(4)))
    return out


def test_the_docs_state_report_claims_for_attention_and_the_two_wave_gemms():
    examples = {c[1] for c in _doc_claims()}
    assert {"examples/attention.ck", "examples/gemm_2waves.ck"} <= examples


@pytest.mark.parametrize("claim", _doc_claims(), ids=lambda c: f"{c[0]}:{Path(c[1]).stem}:{c[2]}")
def test_doc_occupancy_claims_match_the_report(report, claim):
    doc, example, arch, waves, limiter = claim
    got = {k: (r["waves_per_simd"], r["occupancy_limiter"]) for k, r in report(example, arch).items()}
    assert got and all(v == (waves, limiter) for v in got.values()), (doc, got)


def _example_wave_claims() -> list[tuple[str, str, str, int]]:
    """(example, its first target, kernel, N) for each "-> N waves per SIMD" in the comment above a kernel."""
    out = []
    for path in sorted((ROOT / "examples").glob("*.ck")):
        text = path.read_text()
        arch = re.search(r"^target\s+(\w+)", text, re.M).group(1)
        for m in re.finditer(r"->\s*(\d+) waves? per SIMD[^\n]*\n(?://[^\n]*\n)*kernel (\w+)", text):
            out.append((f"examples/{path.name}", arch, m.group(2), int(m.group(1))))
    return out


def test_example_comments_match_the_report(report):
    claims = _example_wave_claims()
    assert len(claims) >= 2
    for example, arch, kernel, waves in claims:
        assert report(example, arch)[kernel]["waves_per_simd"] == waves, (example, kernel)


def test_the_attention_section_states_the_reported_waves(report):
    text = (ROOT / "docs" / "dsl.md").read_text()
    section = text[text.index("\n## Attention"):text.index("\n## Row ops")]
    words = "|".join(NUMBER)
    stated = {NUMBER[w] if w in NUMBER else int(w)
              for w in re.findall(rf"\b({words}|\d+) waves? per SIMD", _flat(section))}
    reported = {r["waves_per_simd"] for r in report("examples/attention.ck", "gfx942").values()}
    assert stated == reported == {1}


def test_quoted_bank_conflict_counts_match_the_emulator(report):
    """Each "`ckgen run ... --target emu ...`: `LDS bank conflicts (...)...`" quote is what the command prints."""
    quotes = []
    for path in DOCS:
        for m in re.finditer(r"`(ckgen run [^`]*--target emu[^`]*)`: `(LDS bank conflicts [^`]*)`(?:, the worst site "
                             r"[^`]*`up to (\d+)-way`)?", _flat(path.read_text())):
            quotes.append((path.name, m.group(1), m.group(2), m.group(3)))
    assert any("attention.ck" in q[1] for q in quotes)
    for doc, command, line, ways in quotes:
        r = _ckgen(*shlex.split(command)[1:], cache=report.cache)
        assert r.returncode == 0, r.stderr
        printed = next(x for x in r.stdout.splitlines() if x.startswith("LDS bank conflicts"))
        assert printed.startswith(line), (doc, printed)
        if ways:
            assert f"up to {ways}-way" in printed, (doc, printed)
