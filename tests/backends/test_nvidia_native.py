"""The compiled prepared call's Python side (ckgen/backends/nvidia/native.py), with no GPU: the spec tuple a
Launcher takes is built from a prepared signature as fastcall.cpp reads it, and the switch CKGEN_FASTCALL."""

from __future__ import annotations

import array
import ctypes
import functools
import types

from ckgen.backends.nvidia import native
from ckgen.config import _from_env


def _empty_strided(shape, stride, dtype=None, device=None):  # stands for torch.empty_strided
    raise AssertionError("not called")


def test_spec_layout():
    sig = ("f32", (4, 8), (8, 1), 0, 0)
    key = ((sig, None), (("y", sig), ("eps", 1e-3, float), ("bias", None)))
    raw = functools.partial(_empty_strided, (4,), (1,), dtype="f32", device="cuda:0")
    prep = types.SimpleNamespace(
        spans=[128, 0, 128, 0], fill=[(0, 0, 0), (3, 2, 2)], allocs=[(5, 4, object(), None, raw)],
        ws_slot=7, ws_need=4096, template=array.array("q", range(9)), checks=[(2, ((0, True),))], ret=[2, 4])
    fn = ctypes.CFUNCTYPE(ctypes.c_int)(lambda: 0)
    s = native.spec(fn, key, prep, poison=True)
    addr, device, poison, npos, kwnames, kw, operands, slots, fill, allocs, checks, ret, ws = s
    assert addr == ctypes.cast(fn, ctypes.c_void_p).value and device == 0 and poison is True and npos == 2
    assert kwnames == ("y", "eps", "bias") and kw == (None, 1e-3, None)
    # positional x, None; then the keyword operands y and bias (None), each with its span
    assert operands == (("f32", (4, 8), (8, 1), 0, 0, 128), None, ("f32", (4, 8), (8, 1), 0, 0, 128), None)
    assert slots == array.array("q", range(9)).tobytes() and len(slots) == 72
    assert fill == ((0, 0), (3, 2)) and allocs == ((5, (4,), (1,), "f32"),)
    assert checks == ((2, ((0, True),)),)
    assert ret == (2, -1)  # live 2 is operand 2 (y, given); live 4 is the first allocation
    assert ws == (7, 4096)


def test_fastcall_switch():
    assert _from_env({}).fastcall is True
    assert _from_env({"CKGEN_FASTCALL": "0"}).fastcall is False
    assert _from_env({"CKGEN_FASTCALL": "1"}).fastcall is True
