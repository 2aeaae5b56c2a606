"""The kind table (ckgen/ops/rowops/kinds.py): what it drives for the package's kinds, and a kind added from
outside the package by one table row plus its math (a numpy reference and a device trait in
meancenter_kind.h), with no package file edited, run on the emulator against float64 at awkward widths."""

from __future__ import annotations

import dataclasses
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import ckgen
from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.ir import registry as ops
from ckgen.lower import plan_kernel
from ckgen.ops.rowops import RowOp, kinds
from ckgen.ops.rowops.reference import op_values
from tests.ops.rowops import harness as H

HEADER = Path(__file__).with_name("meancenter_kind.h")


def _center(v: np.ndarray, scale: float, eps: float) -> np.ndarray:
    return v - v.mean(axis=-1, keepdims=True)


#: the new kind: one row (its device trait: meancenter_kind.h)
MEANCENTER = kinds.RowKind(
    "meancenter", "meancenter", "mean centering", "y = v - mean(v) of each row [* weight] [+ bias]",
    "::ckgen_test::kMeanCenter", 1, "ckgen::rowops::layernorm_entry", _center, {32: 1.8, 64: 4.5},
    weight=True, bias=True, header=str(HEADER))


SOURCE = """
target gfx942
kernel mc_single  { op = meancenter x = bf16 max_cols = 1000 }
kernel mc_looped  { op = meancenter x = f32 bias = none threads_per_row = 32 reg_vecs = 2 looped = true }
kernel mc_i8_lds  { op = meancenter x = f16 y = i8 weight = none bias = none max_cols = 1000 row_in = shared }
"""


@pytest.fixture
def meancenter(monkeypatch):
    """The kind registered and its op served (as ckgen.ir.registry.REGISTRY serves an op: a module whose OP it is), for
    one test; everything undone after."""
    kinds.register(MEANCENTER)
    module = types.ModuleType("ckgen_test_meancenter")
    module.OP = RowOp("meancenter")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(ops.REGISTRY, "meancenter", module.__name__)
    ops.get_op.cache_clear()
    yield
    kinds.unregister("meancenter")
    ops.get_op.cache_clear()


def test_the_table_drives_the_package_kinds() -> None:
    assert kinds.ops() == ("softmax", "layernorm", "rmsnorm", "quantize")
    assert [k.name for k in kinds.of_op("softmax")] == ["softmax", "log_softmax"]
    assert kinds.variants("softmax") == ("log",) and kinds.variants("layernorm") == ()
    for name in kinds.ops():
        op = ops.get_op(name)
        base = kinds.default(name)
        assert op.doc == base.doc
        keys = {k.name for k in op.keys}
        assert ("weight" in keys, "bias" in keys, base.scalar in keys) == (base.weight, base.bias,
                                                                         base.scalar != "none")
    specs = load_text("target gfx942\nkernel a { op = softmax log = true x = f16 }\n"
                      "kernel b { op = rmsnorm x = bf16 max_cols = 512 }\n", "t.ck")
    p = [plan_kernel(s, "gfx942") for s in specs]
    assert (p[0].body.kind, p[0].body.impl) == ("log_softmax", "ckgen::rowops::softmax_entry")
    assert (p[1].body.kind, p[1].body.header) == ("rmsnorm", "rowops_entry.h")
    assert [a.name for a in p[1].abi.args if a.name in ("weight", "bias", "eps", "scale")] == ["weight", "eps"]


def test_a_kind_name_is_added_once() -> None:
    with pytest.raises(ValueError, match="exists"):
        kinds.register(kinds.KINDS["rmsnorm"])
    with pytest.raises(ValueError, match="bias comes with a weight"):
        kinds.RowKind("k", "k", "k", "", "0", 1, "e", _center, {}, bias=True)


def test_an_outside_header_is_an_absolute_path() -> None:
    with pytest.raises(ValueError, match="absolute path"):
        kinds.register(dataclasses.replace(MEANCENTER, header="meancenter_kind.h"))
    assert "meancenter" not in kinds.KINDS


def test_a_new_kind_from_outside_the_package(meancenter) -> None:
    """keys, ABI, plan and reference of the new kind come from its row."""
    op = ops.get_op("meancenter")
    assert {"weight", "bias", "eps"} <= {k.name for k in op.keys} and "scale" not in {k.name for k in op.keys}
    (s,) = load_text("target gfx942\nkernel k { op = meancenter x = f32 max_cols = 1000 }\n", "t.ck")
    p = plan_kernel(s, "gfx942")
    assert (p.body.kind, p.body.header) == ("meancenter", str(HEADER))
    v = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(op_values("meancenter", v, np.full(3, 2.0), np.ones(3), 1.0, 0.0),
                          (v - v.mean(axis=-1, keepdims=True)) * 2.0 + 1.0)
    with pytest.raises(CkgenError, match="scale"):
        load_text("target gfx942\nkernel k { op = meancenter x = f32 scale = 2 }\n", "t.ck")


@pytest.mark.parametrize("name", ["mc_single", "mc_looped", "mc_i8_lds"])
def test_the_new_kind_runs_on_the_emulator(meancenter, name: str) -> None:
    """Single pass, looped (1000 columns: two tiles, the second partial) and the row cache with int8 y, each at
    awkward widths and strides against float64."""
    k = ckgen.jit(SOURCE, kernel=name, target="emu", arch="gfx942")
    for i, (rows, cols, mode) in enumerate([(3, 1000, "odd"), (5, 1000, "tight"), (2, 999, "mixed"),
                                           (9, 7, "pad")]):
        c = H.make_call(k.plan, rows, cols, mode, seed=31 * i + cols)
        H.run(k, c)
        H.check_call(c, f"{name} {rows}x{cols} ({mode})")
