"""Where syntax errors are reported (ckgen/frontend/syntax.py): at the text at fault, not at the token after it."""

import pytest

from ckgen.errors import DslSyntaxError
from ckgen.frontend import parse

HEAD = "kernel k {\n  A = f16 row B = f16 col C = f16 row\n"


def where(text: str) -> DslSyntaxError:
    with pytest.raises(DslSyntaxError) as ei:
        parse(text, "s.ck")
    return ei.value


@pytest.mark.parametrize("line3,line4,col,width,words", [
    # the case: a bad value on line 3 was reported at 4:3, the key of the next statement
    ("tile = 128x128x", "waves = 2x2", 10, 8, "tile = 128x128x: malformed value"),
    ("alpha = 1e", "beta = 0", 11, 2, "alpha = 1e: malformed value"),
    ("alpha = 1.0.0", "beta = 0", 11, 5, "alpha = 1.0.0: malformed value"),
    ("tile = 128X128X32", "waves = 2x2", 10, 10, "malformed value"),
    ("A = f16 rwo", "waves = 2x2", 11, 3, "unexpected 'rwo' after the value of 'A'"),
    ("epilogue = bias(col) ->", "waves = 2x2", 24, 2, "expected an operand after '->'"),
    ("epilogue = bias(col) ->", "}", 24, 2, "expected a name after '->'"),
    ("epilogue = bias(col", "waves = 2x2", 19, 3, "expected ')', ',' after 'col'"),
    ("alpha =", "waves = 2x2", 9, 1, "expected a value after '='"),
])
def test_the_error_is_on_the_line_at_fault(line3, line4, col, width, words):
    e = where(f"{HEAD}  {line3}\n  {line4}\n}}\n")
    assert (e.span.line, e.span.col) == (3, col), e.render()
    assert e.span.end_col - e.span.col == width and words in e.message, e.render()


def test_negative_dims_are_refused_by_name_at_the_value():
    """``waves = -2x2`` was reported at the closing brace: '-2' and 'x2' lexed apart."""
    from ckgen.errors import SpecError
    from ckgen.frontend import load_text

    with pytest.raises(SpecError) as ei:
        load_text(f"{HEAD}  tile = 128x128x32 waves = -2x2\n}}\n", "s.ck", ("gfx942",))
    e = ei.value
    assert (e.span.line, e.span.col, e.span.end_col) == (3, 29, 33)
    assert e.message == "waves = -2x2: every extent must be positive"


def test_errors_at_the_failing_token_stay_there():
    """When the token the parser stopped at is the problem, it is still the one reported."""
    e = where(f"{HEAD}  tile = 128x128x32 }} }}")
    assert (e.span.line, e.span.col) == (3, 23) and e.message == "unexpected '}'"
    e = where(f"{HEAD}  arch = [gfx942;]\n}}")
    assert (e.span.line, e.span.col) == (3, 17) and "expected ',', ']'" in e.hint
    e = where("kernel k {\n  A f16 row\n}")
    assert (e.span.line, e.span.col) == (2, 5) and "expected '=', 'in'" in e.hint


def test_a_comma_between_statements_says_how_statements_are_separated():
    e = where(f"{HEAD}  alpha = 1, beta = 0\n}}")
    assert (e.span.line, e.span.col) == (3, 12) and "not ','" in e.hint
    e = where(f"{HEAD}  arch = [gfx942,, gfx90a]\n}}")  # inside a list a ',' is a separator: no such hint
    assert (e.span.line, e.span.col) == (3, 18) and "not ','" not in e.hint


@pytest.mark.parametrize("ch,words", [("×", "letter x"), (":", "set with '='"), ("→", "'->'"), ("−", "'-'")])
def test_look_alike_characters_say_what_to_write(ch, words):
    e = where(f"{HEAD}  alpha {ch} 1\n}}")
    assert (e.span.line, e.span.col) == (3, 9) and words in e.hint
