"""Numbers in a spec: any literal is either refused with a caret under it, or reaches generated code as exactly the
value the kernel computes with (f32 scalars; exact integers)."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ckgen.codegen.escape import f32_literal
from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.frontend.values import F32_MAX, F32_MIN_NORMAL

BODY = "A = f16 row B = f16 col C = f16 row tile = 128x128x32 waves = 2x2"
PREFIX = f"kernel k {{ {BODY} "


def load(extra: str):
    (spec,) = load_text(PREFIX + extra + " }", "n.ck", ("gfx942",))
    return spec


def caret_col(e: CkgenError) -> int:
    lines = e.render().splitlines()
    return lines[2].index("^") - 4 + 1


LITERAL = st.one_of(
    st.from_regex(r"[+-]?(\d{1,60}\.?\d{0,60}|\.\d{1,60})([eE][+-]?\d{1,6})?", fullmatch=True),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)


@settings(max_examples=400, deadline=None)
@given(LITERAL, st.sampled_from(["alpha", "beta"]))
def test_scalars_are_f32_or_refused_at_the_value(text, param):
    stmt = f"{param} = {text}"
    try:
        spec = load(stmt)
    except CkgenError as e:
        assert e.span is not None and e.span.col == len(PREFIX) + len(param) + 4, e.render()
        assert caret_col(e) == e.span.col
        from decimal import Decimal

        x = Decimal(text)
        assert not (x == 0 or F32_MIN_NORMAL <= abs(x) <= F32_MAX), e.render()
        return
    value = getattr(spec.params.gemm, param)
    assert value == float(np.float32(float(text)))  # the spec holds the value the kernel computes with
    lit = f32_literal(value)
    assert np.float32(lit[:-1]) == np.float32(value) and lit.endswith("f")


@settings(max_examples=300, deadline=None)
@given(st.one_of(LITERAL, st.from_regex(r"\d{1,6000}", fullmatch=True)),
       st.sampled_from([("lds_buffers", 1, 8), ("prefetch", 0, 8), ("vec_a", 1, 64)]))
def test_integers_are_exact_or_refused_at_the_value(text, key):
    param, lo, hi = key
    try:
        spec = load(f"{param} = {text}")
    except CkgenError as e:
        assert e.span.col == len(PREFIX) + len(param) + 4, e.render()
        assert f"expected an integer in {lo}..{hi}" in e.render()
        return
    from decimal import Decimal

    got = getattr(spec.params.config, param)
    assert Decimal(text) == got and lo <= got <= hi


@settings(max_examples=100, deadline=None)
@given(st.from_regex(r"[0-9]{1,6000}", fullmatch=True), st.integers(0, 2))
def test_long_extents_are_refused_with_a_caret(digits, where):
    dims = ["128", "128", "32"]
    dims[where] = digits
    text = "x".join(dims)
    try:
        spec = load_text(f"kernel k {{ A = f16 row B = f16 col C = f16 row tile = {text} waves = 2x2 }}",
                         "n.ck", ("gfx942",))[0]
    except CkgenError as e:
        assert e.span.col == len("kernel k { A = f16 row B = f16 col C = f16 row tile = ") + 1, e.render()
        assert caret_col(e) == e.span.col or e.render().splitlines()[1].strip().startswith("...")
        return
    assert spec.params.config.tile[where] == int(digits) <= 1 << 16


@pytest.mark.parametrize("text", ["1e39", "-1e39", "1e999", "3.5e38", "1e-39", "-1e-45", "1e-400"])
def test_out_of_range_scalars(text):
    with pytest.raises(CkgenError, match=f"alpha = {text}"):
        load(f"alpha = {text}")


def test_f32_literals_compile_to_the_exact_bits(tmp_path):
    """A batch of literals through clang: each equals the f32 the spec holds, bit for bit."""
    import shutil

    cxx = shutil.which("clang++-19") or shutil.which("clang++")
    if cxx is None:  # pragma: no cover
        pytest.skip("no clang++")
    rng = np.random.default_rng(7)
    values = [0.1, -0.0, 1.0, F32_MAX, -F32_MAX, F32_MIN_NORMAL, 1 / 3, 2 / 3, 16777217.0, 0.30000001192092896]
    values += list(rng.standard_normal(40) * 10.0 ** rng.integers(-30, 30, 40))
    lines = []
    for i, v in enumerate(values):
        bits = int(np.float32(v).view(np.uint32))
        lines.append(f"static_assert(__builtin_bit_cast(unsigned, {f32_literal(v)}) == {bits}u, \"{i}\");")
    (tmp_path / "t.cpp").write_text("\n".join(lines) + "\n")
    proc = subprocess.run([cxx, "-std=c++20", "-fsyntax-only", str(tmp_path / "t.cpp")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
