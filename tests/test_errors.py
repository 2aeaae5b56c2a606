"""Rendering of errors: the caret sits under the reported column whatever the line holds (tabs, wide
characters, very long lines), and every error class of the frontend reports exact columns."""

from __future__ import annotations

import pytest

from ckgen.errors import (
    MAX_SHOWN,
    CkgenError,
    SourceSpan,
    ValidationError,
    caret_lines,
    cli_options,
    clip,
    option,
)
from ckgen.frontend import load_text
from ckgen.lower import plan_all
from ckgen.targets import TARGETS


def test_tabs_are_kept_and_wide_characters_count_twice():
    line = "\t\tA = 1 // 漢字 x = 2"
    col = line.index("x") + 1
    text, caret = caret_lines(line, SourceSpan("f.ck", 1, col, 1, col + 1, line))
    assert caret.startswith("    \t\t") and caret.endswith("^")
    shown_before = text[4:][:col - 1]
    width = sum(2 if ch in "漢字" else 1 for ch in shown_before.replace("\t", ""))
    assert len(caret[4:].replace("\t", "")) - 1 == width


def test_long_lines_and_messages_are_windowed():
    line = "x = " + "9" * 10000 + " y"
    text, caret = caret_lines(line, SourceSpan("f.ck", 1, 5, 1, 10005, line))
    assert len(text) < MAX_SHOWN + 20 and caret.index("^") - 4 == text.index("9") - 4
    assert len(clip("m" * 5000)) < MAX_SHOWN + 40


B = "A = f16 row B = f16 col C = f16 row tile = 128x128x32 waves = 2x2"


@pytest.mark.parametrize("text,line,col,width", [
    # syntax
    ("kernel k { @ }", 1, 12, 1),
    ("kernel k {\n\tA = f16 row\n\t@\n}", 3, 2, 1),
    ("kernel k { A = f16 row\n\n", 1, 23, 1),
    ("kernel 9k { }", 1, 8, 1),
    # statements
    (f"kernel k {{ {B} tlie = 3 }}", 1, 78, 4),
    (f"kernel k {{ {B} tile = 64x64x32 }}", 1, 78, 4),
    (f"kernel k {{ {B} op = conv }}", 1, 83, 4),
    (f"kernel k {{ {B} arch = [gfx942, bogus(1)] }}", 1, 94, 8),
    (f"kernel k {{ {B} lds_buffers = 2.5 }}", 1, 92, 3),
    (f"kernel k {{ {B} alpha = 1e39 }}", 1, 86, 4),
    (f"kernel k {{ {B} epilogue = bias(col) ->\n  gelu -> cast(f32) }}", 2, 11, 9),
    (f"kernel k {{ {B} instr = 32x32 }}", 1, 86, 5),
    (f"kernel int {{ {B} }}", 1, 8, 3),
    (f"kernel k {{ {B.replace('tile = 128x128x32 ', '')} }}", 1, 8, 1),
    # targets and planning
    (f"target gfx942, gfx1234\nkernel k {{ {B} }}", 1, 16, 7),
    (f"kernel k {{ {B} arch = [gfx942, gfx1234] }}", 1, 94, 7),
    (f"kernel k {{ {B} waves = 9x9 }}".replace("waves = 2x2 ", ""), 1, 74, 3),
    (f"kernel k {{ {B} vec_a = 3 }}", 1, 86, 1),
    (f"family f {{ {B} vec_a in [4, 3] }}", 1, 91, 1),
])
def test_every_error_class_points_at_the_exact_column(text, line, col, width):
    with pytest.raises(CkgenError) as ei:
        plan_all(load_text(text, "e.ck", ("gfx942",)))
    e = ei.value
    assert (e.span.line, e.span.col) == (line, col), e.render()
    rendered = e.render().splitlines()
    assert rendered[0].startswith(f"e.ck:{line}:{col}: error: ")
    caret = rendered[2][4:]
    prefix = caret[:caret.index("^")]
    assert len(prefix) == col - 1 and all(c in " \t" for c in prefix)
    assert caret.count("^") == width, e.render()


def _refusal(text: str, arch: str) -> CkgenError:
    with pytest.raises(CkgenError) as ei:
        plan_all(load_text(text, "e.ck", (arch,)))
    return ei.value


@pytest.mark.parametrize("arch", sorted(TARGETS))
@pytest.mark.parametrize("bad", ["fp8 of the other encoding", "f64"])
def test_a_refused_dtype_lists_only_dtypes_that_are_then_accepted(arch, bad):
    """Every dtype the A refusal names as legal plans on that target (f64 has instructions on some targets but
    no kernel body, so it is never listed; an fp8 dtype of the encoding the target does not use is refused)."""
    if bad.startswith("fp8"):
        bad = "e4m3fn" if TARGETS[arch].fp8_encoding == "fnuz" else "e4m3fnuz"
    e = _refusal(f"kernel k {{ A = {bad} row B = {bad} col C = f32 row tile = 64x64x32 waves = 2x2 }}", arch)
    assert isinstance(e, ValidationError) and e.param == "A"
    legal = e.legal.split(", ")
    assert legal and "f64" not in legal
    for dt in legal:
        plan_all(load_text(f"kernel k {{ A = {dt} row B = {dt} col C = f32 row tile = 64x64x32 waves = 2x2 }}",
                           "e.ck", (arch,)))


@pytest.mark.parametrize("arch,tile,waves,near", [
    ("gfx942", "128x100x32", "2x2", "128x96x32"),      # no instruction divides N / waves_n
    ("gfx942", "256x256x64", "2x2", "256x256x32"),     # over the LDS
    ("sm_90", "256x256x64", "2x2", "128x128x64"),      # over the registers
    ("gfx942", "24x24x24", "1x1", "32x32x24"),
])
def test_a_refused_tile_names_the_nearest_legal_tile(arch, tile, waves, near):
    text = f"kernel k {{ A = f16 row B = f16 col C = f16 row tile = {tile} waves = {waves} }}"
    e = _refusal(text, arch)
    assert isinstance(e, ValidationError) and e.param == "tile"
    assert e.hint.endswith(f"; nearest legal tile on {arch}: {near}"), e.hint
    assert e.hint.startswith(f"legal: {e.legal}")  # the rule stays
    plan_all(load_text(text.replace(tile, near), "e.ck", (arch,)))  # and the suggestion is legal


def test_the_nearest_tile_is_searched_only_when_the_error_is_shown(monkeypatch):
    from ckgen.ops.gemm import plan as gemm_plan

    calls = []
    real = gemm_plan.nearest_tile
    monkeypatch.setattr(gemm_plan, "nearest_tile", lambda *a: calls.append(a) or real(*a))
    e = _refusal("kernel k { A = f16 row B = f16 col C = f16 row tile = 128x100x32 waves = 2x2 }", "gfx942")
    assert calls == []
    assert "128x96x32" in e.render() and "128x96x32" in e.render() and len(calls) == 1  # searched once


def test_an_unknown_target_in_the_dsl_gets_a_did_you_mean():
    with pytest.raises(CkgenError) as ei:
        plan_all(load_text(f"target gfx9424\nkernel k {{ {B} }}", "e.ck"))
    e = ei.value
    assert (e.span.line, e.span.col) == (1, 8)
    assert e.hint.startswith("did you mean 'gfx942'? legal: ")


@pytest.mark.parametrize("cli,text", [(False, "use target='emu'"), (True, "use --target emu")])
def test_options_are_spelled_as_the_caller_writes_them(cli, text):
    from contextlib import nullcontext

    with cli_options() if cli else nullcontext():
        assert f"use {option('target', 'emu')}" == text
        hint = option("lds_buffers", "1")
    assert hint == ("--lds-buffers 1" if cli else "lds_buffers='1'")
    assert option("target", "emu") == "target='emu'"  # the block ends: Python again
