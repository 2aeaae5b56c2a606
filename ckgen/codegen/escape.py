"""Making user text safe for generated C and C++ (Jinja filters of every template).

Text a user typed (paths, names, doc strings) only ever reaches generated code through these filters:

- :func:`comment`: printable ASCII for a ``//`` or ``/* */`` comment. Every character outside 0x20..0x7e, a
  backslash (a line continuation at the end of a ``//`` comment) and ``?`` (trigraphs such as ``??/``) become
  ``\\xNN`` / ``\\uNNNN`` escapes, and ``*/`` is broken up, so no text can end the comment or add a line.
- :func:`c_string`: the body of a C string literal (octal escapes for everything else, ``\\``, ``"`` and ``?``).

- :func:`f32_literal`: a float as a C++ ``float`` literal that denotes exactly its f32 value (the shortest
  decimal that parses back to it; never ``inf`` or ``nan``: the frontend bounds scalars).
- :func:`bool_literal`: a truth value as ``true`` / ``false`` (the ops' kernel views, for their Cfg constants).

Identifiers are never escaped: the frontend refuses kernel names that are not safe C identifiers
(:mod:`ckgen.frontend.names`).
"""

from __future__ import annotations

import math

import numpy as np


def _escape(text: str, extra: str) -> str:
    out = []
    for ch in str(text):
        o = ord(ch)
        if ch == "\\" or ch == "?" or ch in extra or not 0x20 <= o <= 0x7E:
            out.append(f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}")
        else:
            out.append(ch)
    return "".join(out)


def comment(text: str) -> str:
    """``text`` as printable ASCII that cannot end a C/C++ comment or continue it onto the next line."""
    return _escape(text, "").replace("*/", "*\\x2f").replace("/*", "\\x2f*")


def c_string(text: str) -> str:
    """``text`` (UTF-8) escaped for the inside of a C string literal: three-digit octal escapes, which cannot
    run into the next character as hex escapes can."""
    out = []
    for byte in str(text).encode():
        ch = chr(byte)
        out.append(ch if 0x20 <= byte <= 0x7E and ch not in '\\"?' else f"\\{byte:03o}")
    return "".join(out)


def f32_literal(x: float) -> str:
    """``x`` rounded to f32, as the shortest decimal ``float`` literal with exactly that value (``0.1f``,
    ``-1.0f``, ``1e-10f``). ValueError for values f32 cannot hold (inf, nan, beyond its range)."""
    with np.errstate(over="ignore"):
        v = np.float32(x)
    if not math.isfinite(x) or not np.isfinite(v):
        raise ValueError(f"{x!r} is not a finite f32 value")
    text = np.format_float_positional(v, unique=True, trim="0") if 1e-4 <= abs(v) < 1e16 or v == 0 \
        else np.format_float_scientific(v, unique=True, trim="0")
    if not any(c in text for c in ".eE"):
        text += ".0"
    return f"{text}f"


def bool_literal(x: bool) -> str:
    """``x`` as the C++ literal ``true`` or ``false``."""
    return "true" if x else "false"
