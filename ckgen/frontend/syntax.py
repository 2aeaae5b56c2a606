"""Where a syntax error really is.

The LALR parser fails at the first token it cannot take, which is often one token late: in
``waves = -2x2`` the lexer reads ``-2`` and ``x2``, the parser takes ``x2`` for the key of a new statement and
fails at the ``}`` after it (the next line, maybe). :func:`locate` looks at the tokens just before the failure
and moves the error to the text at fault:

- a run of value tokens written without spaces between them that is no value (``-2x2``, ``128x128x``,
  ``1.0.0``, ``1e``): "malformed value", spanning the whole run;
- a word after a complete value that starts no statement (``A = f16 rwo``): that word;
- an operator or an open bracket that ends a line (``epilogue = bias(col) ->``, ``bias(col``) when the next
  line cannot continue it: the operator or the last token;
- a ',' between statements: the ',', saying how statements are separated;
- otherwise the token the parser stopped at, as before.

The result is a :class:`DslSyntaxError` with a span over the text at fault and a hint saying what is legal there.
"""

from __future__ import annotations

import difflib
from functools import lru_cache

from lark import Lark, Token
from lark.exceptions import LarkError

from ckgen.errors import DslSyntaxError, SourceSpan

#: token types a value is made of (a run of them with no space between them is one written value)
VALUE_TOKENS = frozenset({"NAME", "SIGNED_NUMBER", "DIMS", "LAYOUT"})
#: tokens after which a statement starts (a NAME right after one of them really is a key)
STATEMENT_STARTS = frozenset({"LBRACE", "SEMICOLON"})
#: tokens that need something after them: when that is missing, the error is at them, not at the next line
OPERATORS = frozenset({"EQUAL", "IN", "__ANON_0", "COMMA", "LPAR", "LSQB"})
#: closing brackets: a line that leaves one open is the error, not the next line
CLOSERS = frozenset({"RPAR", "RSQB"})
VALUE_FORMS = ("a value is a name, a number, dims like 128x128x32, '<dtype> row|col', a call like bias(col), "
               "a chain like bias(col) -> gelu, or a list [a, b]")
LAYOUTS = ("row", "col")


@lru_cache(maxsize=1)
def _lexer(grammar: str) -> Lark:
    """A context-free lexer of the grammar: tokens and their positions, whatever the parser state."""
    return Lark(grammar, parser="lalr", lexer="basic")


def tokens_before(grammar: str, text: str, pos: int) -> list[Token]:
    """The tokens of ``text`` that start before offset ``pos`` (as far as the text lexes)."""
    out: list[Token] = []
    try:
        for tok in _lexer(grammar).lex(text):
            if tok.start_pos >= pos:
                break
            out.append(tok)
    except LarkError:
        pass
    return out


def _glued(a: Token, b: Token) -> bool:
    return a.type in VALUE_TOKENS and b.type in VALUE_TOKENS and a.end_pos == b.start_pos


def _span(path: str, text: str, first: Token, last: Token) -> SourceSpan:
    return SourceSpan(path, first.line, first.column, last.end_line, last.end_column, text)


def _key_of(toks: list[Token]) -> str | None:
    """The key of the statement whose value ends ``toks`` (the name before its last '=' or 'in')."""
    for i in range(len(toks) - 1, 0, -1):
        if toks[i].type in ("EQUAL", "IN") and toks[i - 1].type == "NAME":
            return str(toks[i - 1])
        if toks[i].type in STATEMENT_STARTS:
            return None
    return None


def _malformed(path: str, text: str, run: list[Token], key: str | None) -> DslSyntaxError:
    written = text[run[0].start_pos:run[-1].end_pos]
    head = f"{key} = {written}" if key else repr(written)
    if any(t.type in ("DIMS", "SIGNED_NUMBER") for t in run) and "x" in written.lower():
        hint = "dims are positive integers joined by 'x' with no spaces or signs, e.g. 128x128x32"
    elif all(t.type == "SIGNED_NUMBER" for t in run[:1]):
        hint = "a number is written like 2, -1.5, 1e-5 or .5"
    else:
        hint = VALUE_FORMS
    return DslSyntaxError(f"{head}: malformed value", _span(path, text, run[0], run[-1]), hint)


def _run_back(toks: list[Token]) -> list[Token]:
    """The glued run of value tokens that ends ``toks``."""
    i = len(toks) - 1
    while i > 0 and _glued(toks[i - 1], toks[i]):
        i -= 1
    return toks[i:]


def locate(grammar: str, text: str, path: str, pos: int, expected: set[str], expected_text: str) -> DslSyntaxError | None:
    """A better-placed error for a parse that failed at offset ``pos`` (``len(text)`` at the end) expecting one
    of the terminals ``expected`` (``expected_text`` in words); None when the token at ``pos`` is itself the
    problem and the caller's "unexpected <token>" says it best."""
    toks = tokens_before(grammar, text, pos + 1)
    after = toks.pop() if toks and toks[-1].start_pos == pos else None
    if not toks:
        return None
    last = toks[-1]
    if expected and expected <= {"EQUAL", "IN"} and last.type == "NAME" and len(toks) >= 2 \
            and toks[-2].type not in STATEMENT_STARTS:
        # the parser took ``last`` for the key of a new statement; it is not one: it follows a value
        if _glued(toks[-2], last):
            return _malformed(path, text, _run_back(toks), _key_of(toks[:len(toks) - len(_run_back(toks))]))
        key = _key_of(toks[:-1])
        word = str(last)
        close = difflib.get_close_matches(word, LAYOUTS, n=1) if toks[-2].type == "NAME" else []
        if close:
            hint = f"did you mean '{close[0]}'? a tensor is '<dtype> row' or '<dtype> col'"
        else:
            hint = f"a statement is 'name = value'; {VALUE_FORMS}"
        what = f"after the value of '{key}'" if key else "after a value"
        return DslSyntaxError(f"unexpected {word!r} {what}", _span(path, text, last, last), hint)
    if after is not None and _glued(last, after):
        run = _run_back(toks) + [after]
        rest = tokens_before(grammar, text, len(text))
        for tok in rest[len(toks) + 1:]:
            if not _glued(run[-1], tok):
                break
            run.append(tok)
        return _malformed(path, text, run, _key_of(toks[:len(toks) - len(run) + 1]))
    if after is not None and after.type == "EQUAL" and last.type == "NAME" and len(toks) >= 2 \
            and toks[-2].type in OPERATORS and toks[-2].end_line < last.line:
        # ``alpha =`` and ``waves = 2x2`` on the next line: the parser took 'waves' for alpha's value
        op = toks[-2]
        wanted = "a value" if op.type in ("EQUAL", "IN") else "an operand"
        return DslSyntaxError(f"expected {wanted} after {str(op)!r}", _span(path, text, op, op),
                              f"{str(last)!r} on line {last.line} starts the next statement")
    if (last.type in OPERATORS or expected & CLOSERS) and after is not None and after.line > last.end_line:
        # ``epilogue = bias(col) ->`` or ``bias(col`` and a '}' on the next line: what the line needs is missing
        wanted = "a value" if last.type in ("EQUAL", "IN") else expected_text
        return DslSyntaxError(f"expected {wanted} after {str(last)!r}", _span(path, text, last, last),
                              f"found {str(after)!r} on line {after.line}")
    depth = sum((t.type in ("LSQB", "LPAR")) - (t.type in ("RSQB", "RPAR")) for t in toks)
    if after is not None and after.type == "COMMA" and "COMMA" not in expected and depth == 0:
        return DslSyntaxError("unexpected ','", _span(path, text, after, after),
                              f"statements are separated by white space or ';', not ','; expected {expected_text}")
    return None
