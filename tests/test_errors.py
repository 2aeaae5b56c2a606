"""Rendering of errors: the caret sits under the reported column whatever the line holds (tabs, wide
characters, very long lines), and every error class of the frontend reports exact columns."""

from __future__ import annotations

import pytest

from ckgen.errors import MAX_SHOWN, CkgenError, SourceSpan, caret_lines, clip
from ckgen.frontend import load_text
from ckgen.lower import plan_all


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
