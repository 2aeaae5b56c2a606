"""Golden emitted sources: generated/<example>/<kernel>.<arch>.hip must equal what ckgen emits now.

Regenerate after an intended change with:  pytest tests/codegen/test_golden.py --update-golden
"""

from pathlib import Path

import pytest

from ckgen import driver
from ckgen.codegen import render_header, render_kernel, render_launchers

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.ck"))
GOLDEN = ROOT / "generated"
ARCH = "gfx942"


def _outputs(example: Path) -> dict[str, str]:
    rel = example.relative_to(ROOT)
    stem = example.stem
    plans = driver.plan(driver.load([rel], (ARCH,)), (ARCH,))[stem]
    out = {f"{p.name}.{ARCH}.hip": render_kernel(p) for p in plans}
    out[f"lib{stem}.host.cpp"] = render_launchers(stem, plans, "amd")
    out[f"{stem}.h"] = render_header(stem, plans)
    return out


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_golden(example, update_golden, monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples are loaded by their paths relative to the repository
    folder = GOLDEN / example.stem
    outputs = _outputs(example)
    if update_golden:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*"):
            old.unlink()
        for name, text in outputs.items():
            (folder / name).write_text(text)
        pytest.skip("golden files rewritten")
    have = sorted(p.name for p in folder.glob("*"))
    assert have == sorted(outputs), "golden set differs: run pytest tests/codegen/test_golden.py --update-golden"
    for name, text in outputs.items():
        assert (folder / name).read_text() == text, f"{folder / name} drifted: rerun with --update-golden if intended"
