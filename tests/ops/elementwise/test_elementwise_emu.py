"""Rung 2: element-wise kernels on the emulator against float64, at awkward sizes, through views with row
strides (the two halves of one matrix, misaligned rows that fall back to elements), broadcast rows, in place and
empty calls; outputs poisoned by the binding before every call."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ckgen.backends import emu
from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.ir.arrays import from_bf16, to_bf16
from ckgen.ir.op import relative_error
from ckgen.lower import plan_kernel
from ckgen.ops.elementwise import OP
from ckgen.ops.elementwise.fns import evaluate
from ckgen.runtime import api
from ckgen.targets import get_target

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")

SPEC = """
target gfx942
kernel ew_silu_mul { op = elementwise a = bf16 b = bf16 expr = silu(a) -> mul(b) }
kernel ew_bias_gelu { op = elementwise a = f32 b = f32 broadcast = b y = bf16 expr = add(a, b) -> gelu }
kernel ew_three { op = elementwise a = f16 b = f32 c = bf16 y = f32 expr = mul(a, b) -> sub(c) -> tanh -> max(-0.5) }
kernel ew_scale { op = elementwise a = f32 y = f16 expr = mul(a, 0.25) -> exp unroll = 3 threads = 64 }
"""


@pytest.fixture(scope="module")
def kernels():
    plans = [plan_kernel(s, get_target("gfx942")) for s in load_text(SPEC, "ew.ck")]
    return api.emu_kernels(plans, "ew_tests")


def _bf16(rng, shape):
    return to_bf16(rng.standard_normal(shape).astype(np.float32))


@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 7), (5, 1001), (2, 4099), (1, 8192)])
def test_silu_mul_on_the_two_halves_of_one_matrix(kernels, rows, cols):
    """a and b are the halves of one rows x 2*cols matrix (row stride 2*cols), as SwiGLU's gate-up output."""
    rng = np.random.default_rng(rows * 10007 + cols)
    gu = _bf16(rng, (rows, 2 * cols))
    a, b = gu[:, :cols], gu[:, cols:]
    y = kernels["ew_silu_mul"](a, b)
    ref = evaluate(kernels["ew_silu_mul"].plan.spec.params.steps, {"a": from_bf16(a), "b": from_bf16(b)})
    assert relative_error(from_bf16(y), ref) < 1e-2


def test_misaligned_rows_go_element_by_element(kernels):
    rng = np.random.default_rng(1)
    big = _bf16(rng, (4, 3001))
    a, b = big[:, 1:1001], big[:, 2001:3001]  # odd element offsets: no 16-byte vector is aligned
    y = kernels["ew_silu_mul"](a, b)
    ref = evaluate(kernels["ew_silu_mul"].plan.spec.params.steps, {"a": from_bf16(a), "b": from_bf16(b)})
    assert relative_error(from_bf16(y), ref) < 1e-2


@pytest.mark.parametrize("rows,cols", [(3, 5), (7, 1027)])
def test_a_broadcast_row(kernels, rows, cols):
    rng = np.random.default_rng(cols)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    bias = rng.standard_normal(cols).astype(np.float32)
    k = kernels["ew_bias_gelu"]
    for b in (bias, bias[None, :]):  # the rows dim left out, or 1
        y = k(a, b)
        ref = evaluate(k.plan.spec.params.steps, {"a": a.astype(np.float64), "b": bias.astype(np.float64)})
        assert relative_error(from_bf16(y), ref) < 1e-2


def test_three_inputs_of_three_dtypes_and_a_constant(kernels):
    rng = np.random.default_rng(3)
    rows, cols = 6, 333
    a = rng.standard_normal((rows, cols)).astype(np.float16)
    b = rng.standard_normal((rows, cols)).astype(np.float32)
    c = _bf16(rng, (rows, cols))
    k = kernels["ew_three"]
    y = k(a, b, c)
    ref = evaluate(k.plan.spec.params.steps, {"a": a.astype(np.float64), "b": b.astype(np.float64),
                                              "c": from_bf16(c)})
    assert y.dtype == np.float32 and relative_error(y, ref) < 1e-5
    assert (y >= -0.5).all()


def test_constants_exp_and_a_small_workgroup(kernels):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((9, 3 * 64 * 4 + 5)).astype(np.float32)  # three chunks of 64 x 4 x 3, and a tail
    k = kernels["ew_scale"]
    y = k(a)
    ref = np.exp(a.astype(np.float64) * 0.25)
    assert y.dtype == np.float16 and relative_error(y, ref) < 5e-3


def test_results_past_the_output_range_are_inf_in_the_reference_too(kernels):
    """exp(a / 4) into f16 at a up to 400: past 65504 (from a = 44.4) the kernel's f16 is inf, and from a = 355 its
    f32 step already is; the op's float64 reference holds those elements as the output type does (the numerics fuzz
    found an overflowing exp compared against finite float64 values)."""
    a = np.linspace(-400.0, 400.0, 3 * 1001, dtype=np.float32).reshape(3, 1001)
    k = kernels["ew_scale"]
    y = k(a)
    ref = OP.reference(k.plan, {"a": a}, {"rows": 3, "cols": 1001})["y"]
    assert np.isposinf(y).sum() == np.isposinf(ref).sum() > 0
    assert relative_error(y, ref) < OP.tolerance(k.plan, "y")


def test_in_place_and_empty(kernels):
    rng = np.random.default_rng(5)
    k = kernels["ew_silu_mul"]
    a, b = _bf16(rng, (3, 100)), _bf16(rng, (3, 100))
    want = evaluate(k.plan.spec.params.steps, {"a": from_bf16(a), "b": from_bf16(b)})
    out = k(a, b, y=a)
    assert out is a and relative_error(from_bf16(a), want) < 1e-2
    assert k(_bf16(rng, (0, 100)), _bf16(rng, (0, 100))).shape == (0, 100)


def test_bad_calls_name_the_argument(kernels):
    rng = np.random.default_rng(6)
    k = kernels["ew_silu_mul"]
    with pytest.raises(CkgenError, match="b"):
        k(_bf16(rng, (3, 100)), _bf16(rng, (3, 99)))
    with pytest.raises(CkgenError, match="dtype"):
        k(_bf16(rng, (3, 100)), rng.standard_normal((3, 100)).astype(np.float32))
    with pytest.raises(CkgenError, match="overlaps"):  # y over b but not the same view
        a = _bf16(rng, (3, 200))
        k(a[:, :100], a[:, 50:150], y=a[:, 60:160])
