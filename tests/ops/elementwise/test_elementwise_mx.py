"""Element-wise kernels writing an MX y (``quant = mx(32)``: OCP fp8, or fp4 pairs ``e2m1fn_x2``, with one E8M0 scale
per 32 columns of a row; ckgen/blocks/mx_quant.h): rung 2 on the emulator against the float64 reference of
ckgen.ir.quant.mx_quantized_values (the same block exponent, round to nearest even, saturation) at awkward widths
(2 columns, a block and a pair more, widths that leave a last vector short, misaligned rows that go element by
element), a zero row, outputs poisoned; the quantized activations and weights fed to the MXFP4 GEMM on the
emulator against float64; rung 1 (gfx950, gfx942: no spills). The refusals: test_elementwise_quant.py.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ckgen.backends import emu
from ckgen.backends.amd import compiler as amd_compiler
from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.ir.arrays import to_bf16, to_float64, unpack_fp4
from ckgen.ir.op import relative_error
from ckgen.ir.quant import MX_GROUP, mx_quantized_values
from ckgen.ir.types import DType
from ckgen.lower import plan_kernel
from ckgen.ops.elementwise.fns import evaluate
from ckgen.runtime import api
from ckgen.targets import get_target

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")

SPEC = """
target gfx950
kernel swiglu_mxfp4 { op = elementwise a = bf16 b = bf16 y = e2m1fn_x2 expr = silu(a) -> mul(b) }
kernel copy_mxfp8   { op = elementwise a = f32 y = e4m3fn quant = mx(32) expr = copy(a) unroll = 3 threads = 64 }
kernel copy_mxfp4   { op = elementwise a = bf16 y = e2m1fn_x2 quant = mx(32) expr = copy(a) vec = 2 }
"""
GEMM = """
target gfx950
kernel mxfp4_linear { A = e2m1fn_x2 row B = e2m1fn_x2 col C = f32 row tile = 64x64x128 waves = 2x2
                      scale_a = mx(32) scale_b = mx(32) }
"""


@pytest.fixture(scope="module")
def kernels():
    plans = [plan_kernel(s, get_target("gfx950")) for s in load_text(SPEC + GEMM.split("\n", 2)[2], "ewmx.ck")]
    return api.emu_kernels(plans, "ewmx_tests")


def _inputs(k, rows: int, cols: int, seed: int) -> dict:
    p, rng = k.plan.spec.params, np.random.default_rng(seed)
    out = {}
    for n in ("a", "b"):
        d = p.dtype_of(n)
        if d is not None:
            x = rng.standard_normal((rows, cols)) * np.exp2(rng.integers(-6, 7, (rows, 1)))  # rows of other ranges
            out[n] = to_bf16(x.astype(np.float32)) if d == DType.BF16 else x.astype(np.dtype(d.numpy))
    return out


def _check(k, ins: dict, y: np.ndarray, s: np.ndarray, what: str) -> None:
    """Scales exactly the reference's; codes equal but for values the f32 expression puts across a rounding
    boundary (at most one in a thousand); dequantized within the element's rounding of the block's range."""
    p = k.plan.spec.params
    ref = evaluate(p.steps, {n: to_float64(v, p.dtype_of(n)) for n, v in ins.items()}) * np.ones((y.shape[0], 1))
    ref = ref[:, : y.shape[1] * p.y.pack]
    want_s, want_q = mx_quantized_values(ref, p.y)
    assert s.dtype == np.uint8 and s.shape == want_s.shape, what
    assert np.array_equal(to_float64(s, DType.E8M0), want_s), f"{what}: y_scale"
    got = to_float64(y, p.y)
    assert got.shape == ref.shape and np.all(np.isfinite(got)), f"{what}: y unwritten"
    assert np.count_nonzero(got != want_q) <= max(1, got.size // 1000), f"{what}: codes differ"
    deq = got * np.repeat(to_float64(s, DType.E8M0), MX_GROUP, axis=-1)[:, : ref.shape[1]]
    bound = 0.25 if p.y == DType.E2M1FN_X2 else 0.05  # (fp4: a step is a third of a value near 1.5 of 6)
    assert relative_error(deq, ref) <= bound, f"{what}: dequantized y"


@pytest.mark.parametrize("name", ["swiglu_mxfp4", "copy_mxfp8", "copy_mxfp4"])
@pytest.mark.parametrize("rows,cols", [(1, 2), (3, 34), (2, 330), (2, 1000), (1, 4098)])
def test_mx_output_on_the_emulator(kernels, name: str, rows: int, cols: int) -> None:
    k = kernels[name]
    ins = _inputs(k, rows, cols, seed=rows * 7 + cols)
    y, s = k(*ins.values())
    _check(k, ins, y, s, f"{name} {rows}x{cols}")


def test_misaligned_halves_and_a_zero_row(kernels) -> None:
    """a and b are the halves of one gate-up matrix at an odd element offset (element by element); row 1 is all
    zero: its scales are 127 (2^0) and its codes 0; each block's largest magnitude saturates at most to 6."""
    k = kernels["swiglu_mxfp4"]
    gu = to_bf16(np.random.default_rng(3).standard_normal((3, 2 * 330 + 1)).astype(np.float32))
    gu[1] = 0
    a, b = gu[:, 1:331], gu[:, 331:661]
    y = np.full((3, 165), 0xFF, np.uint8)
    s = np.full((3, 16), 0xFF, np.uint8)[:, :11]
    k(a, b, y=y, y_scale=s)
    _check(k, {"a": a, "b": b}, y, s, "gate-up halves")
    assert np.all(s[1] == 127) and not np.any(y[1])
    assert np.abs(unpack_fp4(y, -1)).max() == 6.0


def test_quantized_operands_feed_the_mxfp4_gemm(kernels) -> None:
    """x (M x K) and W (N x K) quantized by the element-wise kernel, then C = x W^T by the MXFP4 GEMM: the bytes and
    scales go in as written (W's N x K/2 bytes are B column-major as its transpose), and C matches float64 on the
    dequantized operands."""
    q, gemm = kernels["copy_mxfp4"], kernels["mxfp4_linear"]
    rng = np.random.default_rng(11)
    m, n, k = 37, 70, 330
    xa, xs = q(to_bf16(rng.standard_normal((m, k)).astype(np.float32)))
    wa, ws = q(to_bf16(rng.standard_normal((n, k)).astype(np.float32)))
    c = gemm(xa, wa.T, scale_a=xs, scale_b=ws)
    deq = [unpack_fp4(v, -1) * np.repeat(to_float64(sc, DType.E8M0), MX_GROUP, axis=-1)[:, :k]
           for v, sc in ((xa, xs), (wa, ws))]
    assert relative_error(c.astype(np.float64), deq[0] @ deq[1].T) <= 1e-5


def test_odd_cols_are_refused_naming_cols(kernels) -> None:
    k = kernels["copy_mxfp4"]
    with pytest.raises(CkgenError, match="cols = 33 must be a multiple of 2"):
        k(to_bf16(np.ones((2, 33), np.float32)))


def test_rung1_no_spills(tmp_path) -> None:
    """gfx950 (clang-22) and gfx942 (fp4 pairs converted in software there too) code objects: no scratch, no
    spills."""
    if not shutil.which("clang++-22"):
        pytest.fail("clang++-22 is missing (tools/install.sh installs it)")
    specs = load_text(SPEC, "ewmx.ck")
    plans = [plan_kernel(s, get_target(a)) for s in specs for a in ("gfx950", "gfx942")
             if a == "gfx950" or s.params.y == DType.E2M1FN_X2]
    res = amd_compiler.compile_plans("ewmx_r1", plans, tmp_path, 2)
    for p in plans:
        r = res.reports[(p.name, p.arch)]
        assert r.vgpr_spills == 0 and r.sgpr_spills == 0 and r.scratch_bytes == 0, r
