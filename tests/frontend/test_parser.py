"""Parser: positions, error messages, and the property that no input raises anything but CkgenError."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ckgen.errors import CkgenError, DslSyntaxError
from ckgen.frontend import load_text, parse

GOOD = """target gfx942  // comment
# another comment
/* block
   comment */
kernel k1 {
  A = f16 row; B = f16 col
  C = f16 row
  tile = 128x128x32 waves = 2x2
  epilogue = bias(col) -> gelu -> cast(f16)
}
family fam { A = bf16 row B = bf16 col C = f32 row tile in [64x64x32, 128x128x32] waves = 2x2 }
"""


def test_parse_keeps_positions():
    mod = parse(GOOD, "good.ck")
    k1 = mod.blocks[0]
    assert (k1.name, k1.span.line, k1.span.col) == ("k1", 5, 8)
    tile = next(s for s in k1.stmts if s.key == "tile")
    assert tile.values[0].data == (128, 128, 32)
    assert (tile.values[0].span.line, tile.values[0].span.col) == (8, 10)
    ep = next(s for s in k1.stmts if s.key == "epilogue").values[0]
    assert ep.kind == "chain" and [c.data[0] for c in ep.data] == ["bias", "gelu", "cast"]
    assert mod.targets[0].names[0][0] == "gfx942"


def test_layout_is_a_whole_word():
    """``x = bf16`` followed by a key that starts with row/col is two statements, not ``bf16 row`` + ``s_...``."""
    mod = parse("kernel k { x = bf16\n rows_per_workgroup = 2 y = f16 columns = 3 A = f16 col B = f16 row }", "t.ck")
    got = [(s.key, s.values[0].text) for s in mod.blocks[0].stmts]
    assert got == [("x", "bf16"), ("rows_per_workgroup", "2"), ("y", "f16"), ("columns", "3"), ("A", "f16 col"),
                   ("B", "f16 row")]


@pytest.mark.parametrize("text,line,col,words", [
    ("kernel k { A = f16 row ", 1, 23, "end of file"),  # just after the last token
    ("kernel k {\n  A @ f16\n}", 2, 5, "unexpected character '@'"),
    ("kernel 9k {}", 1, 8, "unexpected '9'"),
    ("kernel k { tile = 128x128x32 } }", 1, 32, "unexpected '}'"),
    ("kernal k {}", 1, 1, "unexpected 'kernal'"),
])
def test_syntax_errors_point_at_the_problem(text, line, col, words):
    with pytest.raises(DslSyntaxError) as ei:
        parse(text, "bad.ck")
    err = ei.value
    assert (err.span.line, err.span.col) == (line, col)
    rendered = err.render()
    assert rendered.startswith(f"bad.ck:{line}:{col}: error: ")
    assert words in rendered
    lines = rendered.splitlines()
    assert lines[2].index("^") - 4 == col - 1  # the caret sits under the column


def test_expected_tokens_are_named():
    with pytest.raises(DslSyntaxError) as ei:
        parse("kernel k { A f16 }", "x.ck")
    assert "expected '=', 'in'" in ei.value.render()


_ALPHABET = st.sampled_from(list("kernel family target { } [ ] ( ) = , ; -> x 1 2 8 32 128 f16 row col A B C tile "
                                 "in bias gelu # / * \n \t . - + e @ é 0x"))


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map(" ".join))
def test_random_token_soup_raises_only_ckgen_errors(text):
    try:
        load_text(text, "fuzz.ck", ("gfx942",))
    except CkgenError as exc:
        assert exc.render()


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(GOOD) - 1), st.integers(0, len(GOOD)), st.text(max_size=6))
def test_mutated_good_input_raises_only_ckgen_errors(start, length, insert):
    text = GOOD[:start] + insert + GOOD[start + length:]
    try:
        load_text(text, "mut.ck")
    except CkgenError as exc:
        assert exc.render()


def test_deep_nesting_is_an_error_not_a_crash():
    text = "kernel k { tile = " + "[" * 5000 + "1" + "]" * 5000 + " }"
    with pytest.raises(CkgenError):
        load_text(text, "deep.ck", ("gfx942",))
