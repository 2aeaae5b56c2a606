"""Row ops writing fp4 pairs (``y = e2m1fn_x2``, ``quant = mx(32)``: two OCP FP4 E2M1 values a byte, the even column
in the low nibble, one E8M0 scale byte per 32 columns of a row; ckgen/blocks/mx_quant.h's fp4_pack, shared with the
element-wise op): rung 2 on the emulator against the float64 reference (ckgen.ir.quant.mx_quantized_values on the
float64 op output) for RMS norm (single pass; looped with a residual), layer norm, softmax and ``op = quantize``
(looped; the row cache) at even awkward widths (2, a block and a pair, 96 + 2, 1002, 4096), odd row strides (y's
in bytes: element by element), a zero row, outputs poisoned (and the bytes past each row of y checked untouched);
the gfx950 plans and the sm_90 plans (warp32, predicated tails, scales after the tile). A known-answer byte pins
the nibble order; odd cols are refused (binding and host entry); RMS norm's fp4 y and scales feed the MXFP4 GEMM
as A / scale_a. Rung 1: gfx950 and gfx942 code objects (clang++-22) and the sm_90 nvcc build, no spills. The
refusals.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ckgen.backends import emu
from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.ir.arrays import random_values, to_float64, unpack_fp4
from ckgen.ir.op import relative_error
from ckgen.ir.quant import MX_GROUP, mx_quantized_values
from ckgen.ir.types import DType
from ckgen.lower import plan_kernel
from ckgen.ops.rowops.reference import reference, tolerance
from ckgen.runtime.api import emu_kernels
from tests.ops.rowops import harness as H

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")

FP4 = DType.E2M1FN_X2
SOURCE = """
target gfx950
kernel rms_fp4       { op = rmsnorm x = bf16 y = e2m1fn_x2 max_cols = 4096 }
kernel rms_res_fp4   { op = rmsnorm x = bf16 residual = true y = e2m1fn_x2 quant = mx(32) eps = 1e-6 }
kernel ln_fp4        { op = layernorm x = f16 y = e2m1fn_x2 max_cols = 4096 }
kernel sm_fp4        { op = softmax x = bf16 y = e2m1fn_x2 max_cols = 2048 }
kernel quant_fp4     { op = quantize x = f32 y = e2m1fn_x2 }
kernel quant_fp4_lds { op = quantize x = bf16 residual = true y = e2m1fn_x2 max_cols = 20000 row_in = shared }
"""
SPECS = {s.name: s for s in load_text(SOURCE, "mxfp4.ck")}
#: 2 columns; a block and a pair; 96 + 2; a short last vector and block; a few thousand (all even: pairs)
WIDTHS = (2, 34, 98, 1002, 4096)
#: the bytes of padding after each row of y (odd strides) and of y_scale, poisoned and checked untouched
PAD = 3


@pytest.fixture(scope="module")
def kernels():
    return emu_kernels([plan_kernel(s, "gfx950") for s in SPECS.values()], "rowops_mxfp4_emu", jobs=2)


def _call(k, rows: int, cols: int, seed: int, odd: bool = False, zero_row: int | None = None,
          x: np.ndarray | None = None) -> tuple[dict, dict, np.ndarray]:
    """Random inputs (or ``x``; rows of other ranges; row ``zero_row`` all zero), outputs poisoned with 0xFF (y:
    codes -6, -6; y_scale: the NaN scale; s_out: NaN) in buffers wider than a row (odd: x's rows too, and y's
    row stride odd); runs k; returns (inputs, outputs, y's whole buffer, padding included)."""
    r = k.plan.spec.params.row
    rng = np.random.default_rng(seed)
    stride = cols + PAD if odd else cols
    ins = H.row_inputs(r, rows, cols, stride, rng, x=x, spread=r.kind != "softmax", zero_row=zero_row)
    # y's row stride in bytes: odd (cols / 2 + 2 or 3: no row but the first aligned for a vector) or cols / 2
    ybuf = np.full((rows, cols // 2 + PAD - (cols // 2) % 2), 0xFF, np.uint8)
    outs = {"y": ybuf[:, : cols // 2] if odd else np.ascontiguousarray(ybuf[:, : cols // 2])}
    if r.residual is not None:
        outs["s_out"] = np.full((rows, stride * r.residual.bytes), 0xFF, np.uint8).view(
            np.dtype(r.residual.numpy))[:, :cols]  # (NaN)
    groups = -(-cols // MX_GROUP)
    outs["y_scale"] = np.full((rows, groups + PAD), 0xFF, np.uint8)[:, :groups]
    k(*[ins[n] for n in ("x", "residual", "weight", "bias") if n in ins], **outs)
    return ins, outs, ybuf if odd else outs["y"]


def _check(k, ins: dict, outs: dict, ybuf: np.ndarray, what: str) -> None:
    """y's bytes exactly (rows x cols / 2) and nothing past them; scales exactly the reference's; fp4 values equal
    but for values the f32 op puts across a rounding boundary (at most one in a thousand); s_out exact; the
    checker's own comparison (the op's reference and tolerance, y compared as values) passes."""
    p, r = k.plan, k.plan.spec.params.row
    ref = reference(p, {**ins, **outs})
    y = outs["y"]
    cols = 2 * y.shape[1]
    assert y.dtype == np.uint8 and ref["y"].shape == (y.shape[0], cols), what
    H.assert_mx_scales_and_s_out(outs, ref, r.residual, what)
    if ybuf.shape[1] > y.shape[1]:
        assert np.all(ybuf[:, y.shape[1]:] == 0xFF), f"{what}: bytes past a row of y written"
    got = to_float64(y, FP4)
    assert np.count_nonzero(got != ref["y"]) <= max(1, got.size // 1000), f"{what}: fp4 values differ"
    assert relative_error(got, ref["y"]) <= tolerance(p, "y"), f"{what}: the checker's tolerance"


@pytest.mark.parametrize("name", list(SPECS))
def test_fp4_rows_on_the_emulator(kernels, name: str) -> None:
    k = kernels[name]
    r = k.plan.spec.params.row
    for i, cols in enumerate(H.capped_widths(k, WIDTHS)):
        for odd in (False, True):
            rows = 1 + (i + odd) % 3
            zero = rows - 1 if rows > 1 else None
            ins, outs, ybuf = _call(k, rows, cols, seed=i * 31 + odd, odd=odd, zero_row=zero)
            _check(k, ins, outs, ybuf, f"{name} {rows}x{cols} odd={odd}")
            if zero is not None and r.op in ("rmsnorm", "quantize"):  # a zero row: scale 2^0, every value +-0
                assert np.all(outs["y_scale"][zero] == 127), name
                assert not np.any(to_float64(outs["y"][zero], FP4)) and np.all(outs["y"][zero] & 0x77 == 0), name


def test_sm90_plans_on_the_emulator() -> None:
    """The sm_90 plans (warp32 rows, predicated tails, group scales stored after the tile) on the emulator."""

    plans = [plan_kernel(s, "sm_90") for s in SPECS.values()]
    ks = H.build_nv_on_emu(None, plans, stem="rowops_mxfp4_nv_emu")
    for name, k in ks.items():
        assert k.plan.body.wave_size == 32
        for i, cols in enumerate(H.capped_widths(k, WIDTHS)):
            rows = 1 + i % 3
            ins, outs, ybuf = _call(k, rows, cols, seed=100 + i, odd=i % 2 == 1, zero_row=0 if rows > 1 else None)
            _check(k, ins, outs, ybuf, f"{name} (sm_90 plan) {rows}x{cols}")


def test_nibble_order_and_known_codes(kernels) -> None:
    """op = quantize (y = x) on blocks whose codes are known: block 0 has amax 6 (e = floor(log2 6) - 2 + 127 =
    127: q = x), so column 0 = 0.5 (code 1) and column 1 = 6 (code 7) make byte 0x71 (the even column in the low
    nibble; swapped: 0x17), -1.5 / 3 -> 0x53 | 0x08 = 0x5B; block 1 (amax 12: e 128, q = x / 2) 12 -> 6 (7), 2.5 ->
    1.25 (a tie: to the even code 2, 1.0) -> 0x27; block 2 all zero: 127 and code 0."""
    k = kernels["quant_fp4"]
    x = np.zeros((1, 3 * MX_GROUP), np.float32)
    x[0, 0:4] = [0.5, 6.0, -1.5, 3.0]
    x[0, 32:34] = [12.0, 2.5]
    _, outs, _ = _call(k, 1, x.shape[1], seed=0, x=x)
    assert list(outs["y_scale"][0]) == [127, 128, 127]
    assert list(outs["y"][0, :2]) == [0x71, 0x5B] and outs["y"][0, 16] == 0x27
    assert not np.any(outs["y"][0, 2:16]) and not np.any(outs["y"][0, 17:])
    s, q = mx_quantized_values(x.astype(np.float64), FP4)
    assert np.array_equal(to_float64(outs["y_scale"], DType.E8M0), s)
    assert np.array_equal(unpack_fp4(outs["y"], -1), q)


def test_fp4_abi_and_odd_cols_refused(kernels) -> None:
    """y is rows x cols/2 bytes (stride_y in bytes, at least cols / 2); the binding allocates it and y_scale when
    left out; odd cols: the binding names cols, and the host entry (a C caller) returns CKGEN_ERROR_INVALID_VALUE
    and writes nothing, where the same call with even cols succeeds."""
    k = kernels["quant_fp4"]
    y_arg = next(a for a in k.plan.abi.args if a.name == "y")
    assert y_arg.dims == ("rows", "cols/2") and y_arg.dtype == FP4 and (2, "cols") in k.plan.abi.divides
    x = random_values(np.random.default_rng(1), (3, 70), DType.F32)
    y, s = k(x)
    assert y.shape == (3, 35) and y.dtype == np.uint8 and s.shape == (3, 3) and s.dtype == np.uint8
    with pytest.raises(CkgenError, match="cols = 33 must be a multiple of 2"):
        k(random_values(np.random.default_rng(2), (2, 33), DType.F32))
    with pytest.raises(CkgenError, match="cols must be a multiple of 2"):
        k(random_values(np.random.default_rng(2), (2, 33), DType.F32), y=np.zeros((2, 16), np.uint8))
    xo = random_values(np.random.default_rng(3), (2, 34), DType.F32)
    yo = np.full((2, 17), 0xFF, np.uint8)
    so = np.full((2, 2), 0xFF, np.uint8)
    lib = k.handle.library
    lib.clear_buffers()
    for a, n in ((xo, "x"), (yo, "y"), (so, "y_scale")):
        lib.register(a, n)
    # x, residual, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y, stride_s, groups, stride_scale
    args = [xo.ctypes.data, None, yo.ctypes.data, None, so.ctypes.data, 2, 33, 34, 34, 17, 34, 2, 2, None]
    assert k.handle.entry(*args) == 1
    assert np.all(yo == 0xFF) and np.all(so == 0xFF)
    args[6] = 34
    assert k.handle.entry(*args) == 0, lib.last_fault()
    lib.clear_buffers()
    assert np.array_equal(to_float64(so, DType.E8M0), mx_quantized_values(xo.astype(np.float64), FP4)[0])


def test_rmsnorm_fp4_feeds_the_mxfp4_gemm(kernels) -> None:
    """The layout contract: RMS norm's fp4 y and E8M0 scales are the MXFP4 GEMM's A and scale_a as written, and a
    weight W (N x K) quantized by op = quantize is B (column-major: W's rows of K/2 bytes) with scale_b (gfx950
    plans, emulator): C = A B^T against float64 of the dequantized operands, K = 330 (a short last block). y
    addressed by column instead of byte, or a transposed or shifted scale layout, fails (the nibble order is
    test_nibble_order_and_known_codes's: producer and GEMM reading the same bytes cannot see it here)."""
    from ckgen.runtime.api import Kernel, get_backend, plan_for

    src = ("target gfx950\nkernel g { A = e2m1fn_x2 row B = e2m1fn_x2 col C = f32 row tile = 64x64x128 waves = 2x2 "
           "scale_a = mx(32) scale_b = mx(32) }\n")
    gemm = Kernel(plan_for(src, "g", "amd", "gfx950"), get_backend("emu"))
    norm, quant = kernels["rms_fp4"], kernels["quant_fp4"]
    m, k_, n = 37, 330, 70
    _, outs, _ = _call(norm, m, k_, seed=11)
    wa, ws = quant(random_values(np.random.default_rng(12), (n, k_), DType.F32))
    c = gemm(A=outs["y"], B=wa.T, scale_a=np.ascontiguousarray(outs["y_scale"]), scale_b=ws)
    deq = [unpack_fp4(v, -1) * np.repeat(to_float64(sc, DType.E8M0), MX_GROUP, axis=-1)[:, :k_]
           for v, sc in ((outs["y"], outs["y_scale"]), (wa, ws))]
    assert relative_error(c.astype(np.float64), deq[0] @ deq[1].T) <= 1e-5


@pytest.mark.parametrize("src,param,needle", [
    ("target gfx950\nkernel k { op = quantize x = bf16 y = e2m1fn_x2 quant = row }", "quant", "mx(32)"),
    ("target gfx950\nkernel k { op = rmsnorm x = bf16 y = e2m1fn_x2 quant = group(128) }", "quant", "mx(32)"),
    ("target gfx950\nkernel k { op = rmsnorm x = bf16 y = e2m1fn_x2 vec = 1 }", "vec", "2, 4, 8"),
    ("target gfx950\nkernel k { op = rmsnorm x = bf16 y = e2m1fn_x2 max_cols = 100000 split = 4 }", "y", "split"),
    ("target gfx950\nkernel k { op = quantize x = bf16 y = e2m1fn_x2 threads_per_row = 16 }",
     "threads_per_row", "mx(32)"),
])
def test_refusals_name_the_parameter(src: str, param: str, needle: str) -> None:
    H.assert_refused(src, param, needle)


def test_rung1_no_spills(tmp_path) -> None:
    """gfx950 and gfx942 (clang++-22; fp4 codes are made in software on every target) code objects of the fp4
    kernels: no scratch, no VGPR or SGPR spills."""
    from ckgen.backends.amd import compiler as amd_compiler

    if not shutil.which("clang++-22"):
        pytest.skip("clang++-22 (gfx950) not installed")
    plans = [plan_kernel(s, a) for s in SPECS.values() for a in ("gfx950", "gfx942")]
    res = amd_compiler.compile_plans("rowops_mxfp4_r1", plans, tmp_path, 2)
    for p in plans:
        r = res.reports[(p.name, p.arch)]
        assert r.vgpr_spills == 0 and r.sgpr_spills == 0 and r.scratch_bytes == 0, (p.name, r)


def test_nvcc_build_no_spills(tmp_path) -> None:
    """The sm_90 builds (nvcc) of the fp4 kernels: no spills or stack frame, or a spill ptxas traded for occupancy
    (as test_rowops_mx.py's: bounded for one workgroup fewer per SM it spills nothing)."""
    H.nvcc_spill_free("rowops_mxfp4_nv", [plan_kernel(s, "sm_90") for s in SPECS.values()], tmp_path)
