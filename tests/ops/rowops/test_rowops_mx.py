"""Row ops writing an MX y (``quant = mx(32)``: OCP fp8 e4m3fn / e5m2 with one E8M0 scale byte per 32 columns of a
row; ckgen/blocks/mx_quant.h, as the element-wise op): rung 2 on the emulator against the float64 reference
(ckgen.ir.quant.mx_quantized_values applied to the float64 op output: the same block exponent, round to nearest
even, saturation) for RMS norm, RMS norm + residual, layer norm, softmax and ``op = quantize``, at awkward widths
(2 columns, a block and a pair more, 96 + 2, widths that leave a last vector short, a few thousand; odd row
strides that go element by element), a zero row, outputs poisoned (NaN codes, NaN scales 0xFF) before each run;
the gfx950 plans and the sm_90 plans (warp32, the CUDA build's tail and scales-after path) both. Known-answer
blocks pin the block exponent. Rung 1: gfx950 code objects (clang-22) and the sm_90 build (nvcc), no spills. The
refusals (DSL, planner).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ckgen.backends import emu
from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.ir.arrays import random_values, to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.quant import MX_GROUP, mx_quantized_values
from ckgen.ir.types import DType
from ckgen.lower import plan_kernel
from ckgen.ops.rowops.reference import reference
from ckgen.runtime.api import emu_kernels
from tests.ops.rowops import harness as H

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")

SOURCE = """
target gfx950
kernel rms_mx        { op = rmsnorm x = bf16 y = e4m3fn quant = mx(32) }
kernel rms_res_mx    { op = rmsnorm x = bf16 residual = true y = e4m3fn quant = mx(32) eps = 1e-6 max_cols = 4096 }
kernel ln_mx         { op = layernorm x = f16 y = e5m2 quant = mx(32) max_cols = 3000 }
kernel sm_mx         { op = softmax x = bf16 y = e4m3fn quant = mx(32) max_cols = 2048 }
kernel quant_mx      { op = quantize x = f32 y = e4m3fn quant = mx(32) }
kernel quant_mx_lds  { op = quantize x = bf16 residual = true y = e5m2 quant = mx(32) max_cols = 20000
                       row_in = shared }
"""
SPECS = {s.name: s for s in load_text(SOURCE, "mx.ck")}
#: 2 columns; a block and a pair; 96 + 2; short last vectors (37, 1001); a few thousand
WIDTHS = (2, 34, 98, 37, 1001, 3001, 4096)


@pytest.fixture(scope="module")
def kernels():
    return emu_kernels([plan_kernel(s, "gfx950") for s in SPECS.values()], "rowops_mx_emu", jobs=2)


def _call(k, rows: int, cols: int, seed: int, odd: bool = False, zero_row: int | None = None,
          x: np.ndarray | None = None) -> tuple[dict, dict]:
    """Random inputs (or ``x``; rows of other ranges; row ``zero_row`` all zero), poisoned outputs (y 0xFF: NaN
    codes; y_scale 0xFF: the NaN scale, with a wider row stride); runs k; returns (inputs, outputs)."""
    r = k.plan.spec.params.row
    rng = np.random.default_rng(seed)
    stride = cols + 3 if odd else cols
    # (spread: rows of other ranges; softmax's y is in (0, 1] whatever the range)
    ins = H.row_inputs(r, rows, cols, stride, rng, x=x, spread=r.kind != "softmax", zero_row=zero_row)
    outs = {"y": H.matrix(rows, cols, stride, r.y, poison=0xFF)}
    if r.residual is not None:
        outs["s_out"] = H.matrix(rows, cols, stride, r.residual, poison=0xFF)
    groups = -(-cols // MX_GROUP)
    outs["y_scale"] = np.full((rows, groups + 2), 0xFF, np.uint8)[:, :groups]
    k(*[ins[n] for n in ("x", "residual", "weight", "bias") if n in ins], **outs)
    return ins, outs


def _check(k, ins: dict, outs: dict, what: str) -> None:
    """Scales exactly the reference's; codes equal but for values the f32 op puts across a rounding boundary (at
    most one in a thousand); dequantized within the element's rounding of the block's range; s_out exact."""
    p, r = k.plan, k.plan.spec.params.row
    ref = reference(p, {**ins, **outs})
    H.assert_mx_scales_and_s_out(outs, ref, r.residual, what)
    s = outs["y_scale"]
    got = to_float64(outs["y"], r.y)
    assert np.all(np.isfinite(got)), f"{what}: a NaN in y (unwritten?)"
    assert np.count_nonzero(got != ref["y"]) <= max(1, got.size // 1000), f"{what}: codes differ"
    cols = got.shape[1]
    deq = got * np.repeat(to_float64(s, DType.E8M0), MX_GROUP, axis=-1)[:, :cols]
    # the float64 op output before quantization: y_scale * q of the reference is within an fp8 step of it
    y64 = ref["y"] * np.repeat(ref["y_scale"], MX_GROUP, axis=-1)[:, :cols]
    assert relative_error(deq, y64) <= 1e-2, f"{what}: dequantized y"


@pytest.mark.parametrize("name", list(SPECS))
def test_mx_rows_on_the_emulator(kernels, name: str) -> None:
    k = kernels[name]
    for i, cols in enumerate(H.capped_widths(k, WIDTHS)):
        for odd in (False, True):
            rows = 1 + (i + odd) % 3
            ins, outs = _call(k, rows, cols, seed=i * 31 + odd, odd=odd, zero_row=rows - 1 if rows > 1 else None)
            _check(k, ins, outs, f"{name} {rows}x{cols} odd={odd}")
            if rows > 1 and k.plan.spec.params.row.op in ("rmsnorm", "quantize"):  # a zero row: scale 2^0, q 0
                assert np.all(outs["y_scale"][rows - 1] == 127), name
                assert not np.any(to_float64(outs["y"][rows - 1], k.plan.spec.params.row.y)), name


def test_sm90_plans_on_the_emulator() -> None:
    """The same kernels' sm_90 plans (warp32 rows, the CUDA build's predicated tails and group scales stored after
    the tile: CKGEN_ROWOPS_GROUP_SCALES_AFTER) on the emulator."""

    plans = [plan_kernel(s, "sm_90") for s in SPECS.values()]
    ks = H.build_nv_on_emu(None, plans, stem="rowops_mx_nv_emu")
    for name, k in ks.items():
        assert k.plan.body.wave_size == 32
        for i, cols in enumerate(H.capped_widths(k, WIDTHS)):
            rows = 1 + i % 3
            ins, outs = _call(k, rows, cols, seed=100 + i, odd=i % 2 == 1, zero_row=0 if rows > 1 else None)
            _check(k, ins, outs, f"{name} (sm_90 plan) {rows}x{cols}")


def test_known_block_exponents(kernels) -> None:
    """op = quantize (y = x) on blocks whose amax is known: e = floor(log2 amax) - 8 + 127 (e4m3fn's emax 8), so a
    block of amax 1 gets code 119 (2^-8, q = 256), amax 448 code 127 (q = 448), amax 500 still 127 (q saturates
    at 448), amax 2^-3 code 116 (q = 256), amax 0 code 127 (q = 0); a block off by one exponent scales every q
    by two and fails."""
    k = kernels["quant_mx"]
    x = np.zeros((1, 5 * MX_GROUP), np.float32)
    x[0, 0:32] = 1.0
    x[0, 32], x[0, 33] = 448.0, -3.0
    x[0, 64], x[0, 65] = -500.0, 0.5
    x[0, 96:128] = 0.125
    _, outs = _call(k, 1, x.shape[1], seed=0, x=x)
    assert list(outs["y_scale"][0]) == [119, 127, 127, 116, 127]
    q = to_float64(outs["y"], DType.E4M3FN)[0]
    assert np.all(q[0:32] == 256.0) and q[32] == 448.0 and q[33] == -3.0
    assert q[64] == -448.0 and q[65] == 0.5 and np.all(q[96:128] == 256.0) and not np.any(q[128:])
    s, qr = mx_quantized_values(x.astype(np.float64), DType.E4M3FN)
    assert np.array_equal(to_float64(outs["y_scale"], DType.E8M0), s) and np.array_equal(q, qr[0])


def test_mx_abi_and_size_derivation(kernels) -> None:
    """MX kernels take (groups, stride_scale) last; y_scale is E8M0 bytes [rows, ceil(cols / 32)]; the binding
    derives groups and allocates y_scale when left out, and refuses a wrong shape or dtype by name."""
    k = kernels["quant_mx"]
    names = [a.name for a in k.plan.abi.args]
    assert names[-2:] == ["groups", "stride_scale"]
    assert next(a for a in k.plan.abi.args if a.name == "y_scale").dtype == DType.E8M0
    x = random_values(np.random.default_rng(1), (3, 70), DType.F32)
    y, s = k(x)
    assert s.shape == (3, 3) and s.dtype == np.uint8 and y.shape == (3, 70)
    with pytest.raises(CkgenError, match="groups"):
        k(x, y_scale=np.zeros((3, 2), np.uint8))
    with pytest.raises(CkgenError, match="y_scale"):
        k(x, y_scale=np.zeros((3, 3), np.float32))


@pytest.mark.parametrize("src,param,needle", [
    ("target gfx950\nkernel k { op = rmsnorm x = bf16 y = i8 quant = mx(32) }", "quant", "no MX form"),
    ("target gfx950\nkernel k { op = rmsnorm x = bf16 y = f16 quant = mx(32) }", "quant", "not quantized"),
    ("target gfx942\nkernel k { op = quantize x = bf16 y = e4m3fnuz quant = mx(32) }", "quant", "e4m3fn, e5m2"),
    ("target gfx950\nkernel k { op = quantize x = bf16 y = e4m3fn quant = mx(64) }", "quant", "mx(32)"),
    ("target gfx942\nkernel k { op = rmsnorm x = bf16 y = e4m3fn quant = mx(32) }", "y",
     "legal: f16, bf16, f32, i8, e4m3fnuz"),
    ("target gfx950\nkernel k { op = rmsnorm x = bf16 y = e4m3fn quant = mx(32) max_cols = 100000 split = 4 }", "y",
     "split"),
    ("target gfx950\nkernel k { op = quantize x = bf16 y = e4m3fn quant = mx(32) threads_per_row = 16 }",
     "threads_per_row", "mx(32)"),
])
def test_refusals_name_the_parameter(src: str, param: str, needle: str) -> None:
    H.assert_refused(src, param, needle)


def test_rung1_no_spills(tmp_path) -> None:
    """gfx950 (clang-22) code objects of the MX kernels: no scratch, no VGPR or SGPR spills."""
    from ckgen.backends.amd import compiler as amd_compiler

    if not shutil.which("clang++-22"):
        pytest.skip("clang++-22 (gfx950) not installed")
    plans = [plan_kernel(s, "gfx950") for s in SPECS.values()]
    res = amd_compiler.compile_plans("rowops_mx_r1", plans, tmp_path, 2)
    for p in plans:
        r = res.reports[(p.name, p.arch)]
        assert r.vgpr_spills == 0 and r.sgpr_spills == 0 and r.scratch_bytes == 0, (p.name, r)


def test_nvcc_build_no_spills(tmp_path) -> None:
    """The sm_90 builds of the same kernels (nvcc, the MX scale bytes as uint8_t through every entry): no spills or
    stack frame, or a spill ptxas traded for occupancy: left to bound RMS norm's looped kernel itself, ptxas fits it
    in 64 registers for a fourth workgroup per SM with a 4-byte spill; bounded for one workgroup fewer it spills
    nothing (the kernel fits; the trade is ptxas's)."""
    H.nvcc_spill_free("rowops_mx_nv", [plan_kernel(s, "sm_90") for s in SPECS.values()], tmp_path)


def test_mx_scales_feed_an_mxfp8_gemm(kernels) -> None:
    """The layout contract: RMS norm's e4m3fn y and its E8M0 scales are an MXFP8 GEMM's A and scale_a as written
    (gfx950 plans, emulator): C = A B against float64 of the dequantized operands; K = 330 (a short last block). A
    transposed or shifted scale layout fails."""
    from ckgen.runtime.api import Kernel, get_backend, plan_for

    src = ("target gfx950\nkernel g { A = e4m3fn row B = e4m3fn col C = f32 row tile = 64x64x128 waves = 2x2 "
           "scale_a = mx(32) scale_b = mx(32) }\n")
    gemm = Kernel(plan_for(src, "g", "amd", "gfx950"), get_backend("emu"))
    norm = kernels["rms_mx"]
    rng = np.random.default_rng(11)
    m, k_, n = 37, 330, 70
    ins, outs = _call(norm, m, k_, seed=11)
    b = np.asfortranarray(random_values(rng, (k_, n), DType.E4M3FN))
    sb = rng.integers(120, 134, (n, -(-k_ // MX_GROUP))).astype(np.uint8)
    c = gemm(A=outs["y"], B=b, scale_a=np.ascontiguousarray(outs["y_scale"]), scale_b=sb)
    deq_a = to_float64(outs["y"], DType.E4M3FN) * np.repeat(to_float64(outs["y_scale"], DType.E8M0), MX_GROUP,
                                                             axis=1)[:, :k_]
    deq_b = to_float64(b, DType.E4M3FN) * np.repeat(to_float64(sb, DType.E8M0), MX_GROUP, axis=1)[:, :k_].T
    assert relative_error(c.astype(np.float64), deq_a @ deq_b) <= 1e-5
