"""Rotary position embedding (RoPE) of the attention ops: the DSL key ``rope``, its run-time cos / sin table and
its float64 reference.

A rotary embedding is a :class:`Rope`: a style and a rotary dim ``rot`` (even, 2 <= rot <= head_dim; dims past
``rot`` pass through unchanged). Dim pair ``i`` (``i < rot / 2``) of a row at position ``pos`` is rotated by the
angle of row ``pos`` of the table: ``x' = x cos - y sin, y' = y cos + x sin`` where (x, y) are the elements

* ``neox`` (rotate-half; Llama, GPT-NeoX): ``i`` and ``i + rot / 2``;
* ``gptj`` (interleaved; GPT-J): ``2 i`` and ``2 i + 1``.

The table (``cos_sin``, f32 ``[rope_positions, rot]``) is vLLM's ``cos_sin_cache`` layout: per position the
``rot / 2`` cosines, then the ``rot / 2`` sines, for both styles. :func:`rope_table` builds it in float64 (theta,
linear or llama3 frequency scaling) and rounds it to f32 once: theta and scaling are run-time choices, never part
of a kernel (:func:`rope_table` lives in ``ckgen.ir.rope``, exported as ``ckgen.rope_table``). The device side is
``device/attention_rope.h``.

DSL: ``rope = false`` (default), ``rope = neox`` / ``rope = gptj`` (rot = head_dim), ``rope = neox(64)`` /
``rope = gptj(32)`` (partial), ``rope = true`` (the same as ``neox``, kept from before the styles).
"""

from __future__ import annotations

from ckgen.frontend import values as V
from ckgen.ir.rope import STYLES, Rope, apply, pair_index, rope_table
from ckgen.ir.spec import Value

__all__ = ["STYLES", "Rope", "apply", "pair_index", "parse", "rope_table"]

LEGAL = "false, true (= neox), neox, gptj, neox(rot) or gptj(rot) with rot even, 2..head_dim"


def parse(v: Value, head_dim: int, param: str = "rope") -> Rope | None:
    """The ``rope`` value of a kernel of head dim ``head_dim`` (None: no rotary embedding)."""
    if v.kind == "call" and not v.data[1] and v.data[0] in ("true", "false"):
        return Rope("neox", head_dim) if v.data[0] == "true" else None
    if v.kind != "call" or v.data[0] not in STYLES or len(v.data[1]) > 1:
        raise V.err(f"{param} = {v.text}: not a rotary embedding", v.span, f"legal: {LEGAL}")
    style, args = v.data
    if not args:
        return Rope(style, head_dim)
    a = args[0]  # the argument's spelling (a name or a number)
    rot = int(a) if a.isdigit() and len(a) <= 6 else None
    if rot is None or rot % 2 or not 2 <= rot <= head_dim:
        raise V.err(f"{param} = {v.text}: the rotary dim must be an even integer in 2..{head_dim} (head_dim)",
                    v.span, f"e.g. {style}({head_dim // 2}); legal: {LEGAL}")
    return Rope(style, rot)
