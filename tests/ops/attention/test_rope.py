"""The rotary embedding's host side (ckgen/ops/attention/rope.py, ckgen/ir/rope.py): the DSL key ``rope`` (styles,
partial rotary dims, located refusals), ``ckgen.rope_table`` (theta, linear and llama3 scaling) and the float64
rotation the references use, against complex multiplication."""

from __future__ import annotations

import numpy as np
import pytest

import ckgen
from ckgen.errors import SpecError
from ckgen.ops.attention.rope import Rope, apply
from ckgen.runtime.api import plan_for


def _plan(rope: str, op: str = "attention_kv_append", extra: str = ""):
    src = f"kernel k {{ op = {op}  dtype = f16  head_dim = 64  rope = {rope}{extra}  arch = [gfx942] }}"
    return plan_for(src, "k", "amd", "gfx942")


@pytest.mark.parametrize("text, want", [("true", Rope("neox", 64)), ("neox", Rope("neox", 64)),
                                        ("gptj", Rope("gptj", 64)), ("neox(32)", Rope("neox", 32)),
                                        ("gptj(2)", Rope("gptj", 2)), ("false", None)])
def test_rope_values(text, want):
    assert _plan(text).spec.params.rope == want


@pytest.mark.parametrize("text, match", [
    ("neox(33)", r"rope = neox\(33\): the rotary dim must be an even integer in 2\.\.64"),
    ("gptj(66)", r"rope = gptj\(66\): the rotary dim must be an even integer in 2\.\.64"),
    ("neox(0)", "the rotary dim"), ("neox(x)", "the rotary dim"), ("neox(16, 2)", "not a rotary embedding"),
    ("yarn", "not a rotary embedding"),
])
def test_rope_refused_located(text, match):
    with pytest.raises(SpecError, match=match) as e:
        _plan(text)
    assert ":1:" in str(e.value) and "legal:" in str(e.value)


def test_canonical_json_keeps_old_keys():
    """rope = true is the kernel it was (rope: true); a style or partial dim is spelled out."""
    assert _plan("true").spec.params.to_json()["rope"] is True
    assert _plan("neox").spec.params.to_json()["rope"] is True
    assert _plan("false").spec.params.to_json()["rope"] is False
    assert _plan("gptj(32)").spec.params.to_json()["rope"] == {"style": "gptj", "dim": 32}


def test_table_theta_and_scaling():
    t = ckgen.rope_table(50, 16, theta=10000.0)
    assert t.shape == (50, 16) and t.dtype == np.float32
    f = 10000.0 ** (-np.arange(8) * 2 / 16)
    assert np.allclose(t[7, :8], np.cos(7 * f), atol=1e-7) and np.allclose(t[7, 8:], np.sin(7 * f), atol=1e-7)
    lin = ckgen.rope_table(50, 16, scaling={"type": "linear", "factor": 4.0})
    assert np.array_equal(lin[8], t[2])  # position 8 / 4
    l3 = ckgen.rope_table(40, 16, theta=500000.0, scaling={"rope_type": "llama3", "factor": 8.0,
                                                           "original_max_position": 64})
    base = ckgen.rope_table(40, 16, theta=500000.0)
    fl = 500000.0 ** (-np.arange(8) * 2 / 16)
    wavelen = 2 * np.pi / fl
    short, long_ = wavelen < 64 / 4.0, wavelen > 64 / 1.0  # kept / divided by the factor
    assert short.any() and long_.any()
    assert np.allclose(l3[:, :8][:, short], base[:, :8][:, short])
    assert np.allclose(l3[:, :8][:, long_], np.cos(np.arange(40)[:, None] * fl[long_] / 8.0), atol=1e-6)


@pytest.mark.parametrize("kw, match", [
    (dict(positions=-1, rot=8), "positions"), (dict(positions=4, rot=7), "rot"), (dict(positions=4, rot=8, theta=1.0),
                                                                                   "theta"),
    (dict(positions=4, rot=8, scaling={"type": "yarn", "factor": 2}), "scaling type"),
    (dict(positions=4, rot=8, scaling={"type": "linear"}), "scaling factor"),
])
def test_table_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        ckgen.rope_table(**kw)


@pytest.mark.parametrize("style", ["neox", "gptj"])
def test_apply_is_a_complex_rotation(style):
    """Each pair (x, y) times exp(i angle) as a complex number; dims past rot unchanged."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 64))
    cs = ckgen.rope_table(3, 24).astype(np.float64)
    got = apply(x, cs, Rope(style, 24))
    i = np.arange(12)
    xi, yi = (i, i + 12) if style == "neox" else (2 * i, 2 * i + 1)
    z = (x[:, xi] + 1j * x[:, yi]) * (cs[:, :12] + 1j * cs[:, 12:])
    assert np.allclose(got[:, xi], z.real) and np.allclose(got[:, yi], z.imag)
    assert np.array_equal(got[:, 24:], x[:, 24:])
