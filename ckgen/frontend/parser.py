"""Text → syntax tree. Wraps Lark so that every failure becomes a :class:`DslSyntaxError`
with a ``file:line:col`` span and the tokens that would have been legal.

The tree is reduced to plain frozen nodes (:class:`Block`, :class:`Stmt`, :class:`Value`)
that keep their source spans; :mod:`ckgen.frontend.specs` gives them meaning.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from ckgen.errors import CkgenError, DslSyntaxError, SourceSpan, SpecError
from ckgen.frontend.syntax import locate
from ckgen.ir.spec import Value
from ckgen.resources import GRAMMAR_DIR

GRAMMAR_FILE = GRAMMAR_DIR / "ckgen.lark"

# Friendly names for Lark's terminal names in "expected ..." messages.
_TERMINAL_TEXT = {
    "NAME": "a name", "DIMS": "dimensions like 128x128x32", "SIGNED_NUMBER": "a number",
    "LAYOUT": "row or col", "EQUAL": "'='", "IN": "'in'", "LBRACE": "'{'", "RBRACE": "'}'",
    "LSQB": "'['", "RSQB": "']'", "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "SEMICOLON": "';'",
    "__ANON_0": "'->'", "KERNEL": "'kernel'", "FAMILY": "'family'", "TARGET": "'target'", "$END": "end of file",
}
#: characters that look like DSL punctuation but are not, and what to write instead
_LOOKALIKES = {"\u00d7": "dims are joined by the letter x (128x128x32)", ":": "a parameter is set with '='",
               "\u2192": "a chain is written with '->'", "\u2212": "a minus sign is '-'",
               "\uff1d": "a parameter is set with '='"}
#: the halves of a block comment, where the lexer stops at one: (text, message, hint)
_COMMENT_MARKS = (("/*", "a comment that is never closed", "end it with */"),
                  ("*/", "'*/' ends no comment", "a comment is /* ... */ (no nesting) or // to the end of the line"))
#: most digits of one extent of a dims value (``128x128x32``); no extent of any op comes near 10**9
MAX_DIM_DIGITS = 9


@dataclass(frozen=True)
class Stmt:
    key: str
    values: tuple[Value, ...]   # one for '=', the alternatives for 'in'
    is_choice: bool
    span: SourceSpan            # the key


@dataclass(frozen=True)
class Block:
    kind: str                   # kernel | family
    name: str
    stmts: tuple[Stmt, ...]
    span: SourceSpan            # the name


@dataclass(frozen=True)
class TargetDecl:
    names: tuple[tuple[str, SourceSpan], ...]


@dataclass(frozen=True)
class Module:
    path: str
    text: str
    targets: tuple[TargetDecl, ...]
    blocks: tuple[Block, ...]


@lru_cache(maxsize=1)
def _grammar() -> str:
    return GRAMMAR_FILE.read_text()


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(_grammar(), parser="lalr", propagate_positions=True, maybe_placeholders=False)


def _tok_span(path: str, text: str, tok: Token) -> SourceSpan:
    return SourceSpan(path, tok.line, tok.column, tok.end_line, tok.end_column, text)


def _meta_span(path: str, text: str, meta) -> SourceSpan:
    return SourceSpan(path, meta.line, meta.column, meta.end_line, meta.end_column, text)


class _ToNodes(Transformer):
    def __init__(self, path: str, text: str):
        super().__init__()
        self.path, self.text = path, text

    def _span(self, item) -> SourceSpan:
        if isinstance(item, Token):
            return _tok_span(self.path, self.text, item)
        return item.span

    @v_args(meta=True)
    def dims(self, meta, items):
        tok = items[0]
        span = _tok_span(self.path, self.text, tok)
        parts = str(tok).split("x")
        longest = max(len(p.lstrip("+-").lstrip("0")) for p in parts)
        if longest > MAX_DIM_DIGITS:  # int() of 4300+ digits raises; no extent is that large anyway
            raise SpecError(f"an extent with {longest} digits is out of range", span,
                            f"extents have at most {MAX_DIM_DIGITS} digits")
        return Value("dims", tuple(int(p) for p in parts), span, str(tok))

    def number(self, items):
        tok = items[0]
        return Value("number", float(tok), _tok_span(self.path, self.text, tok), str(tok))

    @v_args(meta=True)
    def tensor(self, meta, items):
        return Value("tensor", (str(items[0]), str(items[1])), _meta_span(self.path, self.text, meta),
                     f"{items[0]} {items[1]}")

    @v_args(meta=True)
    def call(self, meta, items):
        name, args = str(items[0]), tuple(str(a) for a in items[1:])
        text = f"{name}({', '.join(args)})" if len(items) > 1 else name
        return Value("call", (name, args), _meta_span(self.path, self.text, meta), text)

    @v_args(meta=True)
    def chain(self, meta, items):
        return Value("chain", tuple(items), _meta_span(self.path, self.text, meta), " -> ".join(v.text for v in items))

    @v_args(meta=True)
    def list(self, meta, items):
        return Value("list", tuple(items), _meta_span(self.path, self.text, meta),
                     "[" + ", ".join(v.text for v in items) + "]")

    def assign(self, items):
        key = items[0]
        return Stmt(str(key), (items[1],), False, _tok_span(self.path, self.text, key))

    def choice(self, items):
        key = items[0]
        return Stmt(str(key), tuple(items[1:]), True, _tok_span(self.path, self.text, key))

    def _block(self, kind, items):
        name = items[0]
        return Block(kind, str(name), tuple(items[1:]), _tok_span(self.path, self.text, name))

    def kernel(self, items):
        return self._block("kernel", items)

    def family(self, items):
        return self._block("family", items)

    def target_decl(self, items):
        return TargetDecl(tuple((str(t), _tok_span(self.path, self.text, t)) for t in items))

    def start(self, items):
        return Module(self.path, self.text,
                      tuple(i for i in items if isinstance(i, TargetDecl)),
                      tuple(i for i in items if isinstance(i, Block)))


def _expected(exc: UnexpectedInput) -> str:
    names = sorted(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ())
    words = sorted({_TERMINAL_TEXT.get(n, n.lower()) for n in names})
    return ", ".join(words)


def parse(text: str, path: str = "<string>") -> Module:
    """Parse DSL text. Raises :class:`DslSyntaxError` (never a Lark error) located at the text at fault
    (:func:`ckgen.frontend.syntax.locate`), not merely where the parser stopped. Line ends may be CRLF or a lone
    CR (old Mac files): both count as a new line, as editors show them."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        tree = _parser().parse(text)
    except UnexpectedCharacters as exc:
        ch = text[exc.pos_in_stream] if 0 <= exc.pos_in_stream < len(text) else "?"
        span = SourceSpan(path, exc.line, exc.column, exc.line, exc.column + 1, text)
        for mark, message, hint in _COMMENT_MARKS:  # a whole comment lexes, so these are what is left of one
            if text.startswith(mark, exc.pos_in_stream):
                span = SourceSpan(path, exc.line, exc.column, exc.line, exc.column + 2, text)
                raise DslSyntaxError(message, span, hint) from None
        exp = _expected(exc)
        hint = f"expected {exp}" if exp else None
        if ch in _LOOKALIKES:
            hint = f"{_LOOKALIKES[ch]}; {hint}" if hint else _LOOKALIKES[ch]
        raise DslSyntaxError(f"unexpected character {ch!r}", span, hint) from None
    except UnexpectedToken as exc:
        tok = exc.token
        at_end = tok.type == "$END"
        better = locate(_grammar(), text, path, len(text) if at_end else tok.start_pos, set(exc.expected or ()),
                        _expected(exc))
        if better is not None:
            raise better from None
        if at_end:
            line, col = _end_position(text)
            span = SourceSpan(path, line, col, line, col + 1, text)
            raise DslSyntaxError("unexpected end of file", span, f"expected {_expected(exc)}") from None
        span = SourceSpan(path, tok.line, tok.column, tok.end_line, tok.end_column, text)
        raise DslSyntaxError(f"unexpected {str(tok)!r}", span, f"expected {_expected(exc)}") from None
    except UnexpectedEOF as exc:
        line, col = _end_position(text)
        raise DslSyntaxError("unexpected end of file", SourceSpan(path, line, col, text=text),
                             f"expected {_expected(exc)}") from None
    except (LarkError, RecursionError) as exc:  # pragma: no cover - defensive
        raise DslSyntaxError(f"cannot parse: {exc.__class__.__name__}", SourceSpan(path, 1, 1, text=text)) from None
    try:
        return _ToNodes(path, text).transform(tree)
    except VisitError as exc:  # Lark wraps what a transformer method raises
        if isinstance(exc.orig_exc, CkgenError):
            raise exc.orig_exc from None
        if isinstance(exc.orig_exc, RecursionError):
            raise DslSyntaxError("nesting too deep", SourceSpan(path, 1, 1, text=text)) from None
        raise
    except RecursionError:
        raise DslSyntaxError("nesting too deep", SourceSpan(path, 1, 1, text=text)) from None


def _end_position(text: str) -> tuple[int, int]:
    """Just after the last character that is not white space (where a missing token belongs)."""
    lines = text.rstrip().split("\n")
    return len(lines), len(lines[-1]) + 1
