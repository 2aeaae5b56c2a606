"""examples/moe_layer.py on the emulator (rung 2): router -> sort -> permute -> grouped gate-up (SwiGLU fused) ->
grouped down -> weighted un-permute against a float64 layer, for the DeepSeek-like configuration
(sigmoid + correction, grouped top-k, renormalized, scaled; 64 experts, top-6), at 8 tokens."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from ckgen.backends import emu

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")
def test_moe_layer_example_matches_float64():
    spec = importlib.util.spec_from_file_location("moe_layer", ROOT / "examples" / "moe_layer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.run_emu("deepseek", 8, 3) < 3e-2
