"""examples/llama_layer.py on the emulator (rung 2): a Llama-style decoder layer, every step a ckgen kernel (norms,
the qkv projection with its bias, RoPE in the K/V append, causal GQA attention, the o / gate-up / down projections
through their one-member families, SwiGLU, the residual adds), and the same with RoPE in the qkv projection's
epilogue and attention on views of its output, against a float64 layer, at a hidden size that is not a power of
two and two sequences of an odd length."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from ckgen.backends import emu

ROOT = Path(__file__).resolve().parents[2]


def _example():
    spec = importlib.util.spec_from_file_location("llama_layer", ROOT / "examples" / "llama_layer.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (its dataclasses look their module up)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")
def test_llama_layer_example_matches_float64():
    """The layer, then the same with the norms folded into the GEMMs (gamma in the weights, rstd scaling the rows,
    the o projection's residual) against the float64 layer of the unfolded weights, the folding's own bf16
    rounding of the weights included; then the layer rotating in its qkv GEMM's epilogue, and the one rotating q in
    attention. (One test: the layers share
    most kernels, built once.) Without the q / k rows in pair order the rotary epilogue's layer is far off."""
    ex = _example()
    assert ex.run_emu(batch=2, seq=9, seed=3) < 8e-3  # (a wrong RoPE theta gives 1.9e-2)
    assert ex.run_emu(batch=2, seq=9, seed=3, fold=True) < 8e-3
    assert ex.run_emu(batch=2, seq=9, seed=3, rope_at="qkv") < 8e-3
    assert ex.run_emu(batch=2, seq=9, seed=3, rope_at="attention") < 8e-3
    real = ex.Weights.interleave_rope
    try:
        ex.Weights.interleave_rope = lambda self, cfg: self
        assert ex.run_emu(batch=2, seq=9, seed=3, rope_at="qkv") > 5e-2
    finally:
        ex.Weights.interleave_rope = real
    w = ex.Weights.random(ex.EMU, 3)
    f = w.fold()
    assert f.folded and f.fold() is f and not (f.qkv == w.qkv).all() and (f.o == w.o).all()
    i = w.interleave_rope(ex.EMU)
    qk = ex.EMU.q_n + ex.EMU.kv_n
    assert i.interleave_rope(ex.EMU) is i and (i.qkv[qk:] == w.qkv[qk:]).all() and (i.qkv[1] == w.qkv[64]).all()
    with pytest.raises(ValueError, match="rope_at"):
        ex.steps({}, ex.EMU, w, 1, 2, {}, rope_at="gemm")


def test_config_refuses_what_the_kernels_cannot_take():
    ex = _example()
    with pytest.raises(ValueError, match="multiple of kv_heads"):
        ex.Config(hidden=256, heads=3, kv_heads=2, inter=512)
    with pytest.raises(ValueError, match="head_dim"):
        ex.Config(hidden=256, heads=2, kv_heads=1, inter=512, head_dim=64)
