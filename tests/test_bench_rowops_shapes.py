"""bench/rowops.py's public list of widths (bench/shapes/hidden_sizes.txt through bench/rowops_shapes.py): enough
open models, each width with its source, vocabulary sizes in range, the generated kernels file up to date, and every
kernel in it planned by ckgen for sm_90 with a tile that holds its width (no GPU, no torch)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rs():
    spec = importlib.util.spec_from_file_location("rowops_shapes", ROOT / "bench" / "rowops_shapes.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["rowops_shapes"] = mod  # (dataclasses look their module up)
    spec.loader.exec_module(mod)
    return mod


def test_the_list_names_enough_models_and_widths(rs) -> None:
    widths = rs.read()
    models = {w.model.split()[0] for w in widths}
    with_both = {m for m in models if {"hidden", "intermediate"} <= {w.kind for w in widths if w.model.startswith(m)}}
    assert len(with_both) >= 25, sorted(with_both)
    for family in ("Llama-2", "Llama-3", "Mistral", "Mixtral", "Qwen2-", "Qwen2.5", "Qwen3", "gemma-2b", "gemma-2-",
                   "gemma-3", "Phi-3", "phi-4", "DeepSeek-V2", "DeepSeek-V3", "falcon", "gpt-neox", "OLMo"):
        assert any(family in m for m in models), family
    vocab = sorted({w.cols for w in widths if w.kind == "vocab"})
    assert vocab[0] == 32000 and vocab[-1] == 256000 and len(vocab) >= 10
    assert all(w.cols % 8 == 0 and w.cols >= 512 for w in widths)


def test_shapes_rows_and_quick_subset(rs) -> None:
    widths = rs.read()
    full, quick = rs.shapes(widths), rs.shapes(widths, quick=True)
    assert {s.kind for s in full} == {"hidden", "intermediate", "vocab", "decode"}
    for s in full:
        if s.kind in ("hidden", "intermediate"):
            assert s.rows * s.cols * 4 >= 64 << 20 and s.rows % 128 == 0 and s.ops == rs.OPS
        elif s.kind == "vocab":
            assert (s.rows, s.ops) == (1024, ("softmax",))
        assert s.models
    assert {(s.kind, s.cols) for s in quick} < {(s.kind, s.cols) for s in full}
    assert {(s.rows, s.cols) for s in quick if s.kind == "decode"} == set(rs.QUICK["decode"])
    assert [s.cols for s in rs.shapes(widths, kinds=("vocab",))] == sorted({w.cols for w in widths if w.kind == "vocab"})


def test_generated_kernels_file_is_up_to_date_and_plans(rs) -> None:
    from ckgen import driver

    assert rs.SPEC_FILE.read_text() == rs.spec_text(rs.read()), "run: python bench/rowops_shapes.py --write"
    plans = driver.plan(driver.load([str(rs.SPEC_FILE)], ("sm_90",)), ("sm_90",))[rs.SPEC_FILE.stem]
    names = {p.name for p in plans}
    for s in rs.shapes(rs.read()):
        for op in s.ops:
            assert rs.kernel_name(op, s.cols) in names
    for p in plans:
        b = p.body
        assert b.max_cols == int(p.name.rsplit("_w", 1)[1])
        assert b.looped or b.tile_cols * max(1, b.split) >= b.max_cols  # (split rows: kSplit tiles)


def test_given_widths_get_the_same_kernels_in_a_file_of_their_own(rs, tmp_path, monkeypatch) -> None:
    from ckgen import driver

    monkeypatch.setattr(rs, "GIVEN_FILE", tmp_path / "rowops_given_nv.ck")
    assert rs.parse_widths("2880, 960,2880") == [2880, 960, 2880]
    for bad in ("28x0", "0", "", "2880,,960"):
        with pytest.raises(ValueError, match="--widths"):
            rs.parse_widths(bad)
    shapes = rs.given_shapes([2880, 960, 2880])
    assert [(s.kind, s.cols, s.rows, s.ops) for s in shapes] == [
        ("given", 960, rs.rows_for(960), rs.OPS), ("given", 2880, rs.rows_for(2880), rs.OPS)]
    path = rs.write_given([2880, 960])
    stamp = path.stat().st_mtime_ns
    assert rs.write_given([960, 2880]) == path and path.stat().st_mtime_ns == stamp  # same text: not rewritten
    plans = driver.plan(driver.load([str(path)], ("sm_90",)), ("sm_90",))[path.stem]
    assert sorted(p.name for p in plans) == sorted(rs.kernel_name(op, c) for op in rs.OPS for c in (960, 2880))
    listed = {p.name: p for p in driver.plan(driver.load([str(rs.SPEC_FILE)], ("sm_90",)), ("sm_90",))[rs.SPEC_FILE.stem]}
    same = rs.write_given([4096])  # a listed width: the planner's kernel is the shapes file's
    plan = driver.plan(driver.load([str(same)], ("sm_90",)), ("sm_90",))[same.stem][1]
    assert plan.name == "layernorm_w4096" and plan.body == listed["layernorm_w4096"].body
