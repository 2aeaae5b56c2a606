"""Element-wise kernels writing a quantized y (fp8 / int8 with one f32 scale per 128 columns of a row): rung 2 on
the emulator against the float64 reference with the same fp8 rounding (ckgen.ir.quant.quantized_values), at awkward sizes
(1 column, cols not a multiple of 128 or of the vector, misaligned rows that go element by element, the two
halves of one gate-up matrix, a zero row, values past the fp8 range), outputs poisoned; rung 1 (gfx942 FNUZ,
gfx950 OCP: no spills) and the nvcc sm_90 build; the refusals.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ckgen.backends import emu
from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.ir.arrays import to_bf16, to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.quant import quantized_values
from ckgen.ir.registry import get_op
from ckgen.ir.types import DType
from ckgen.lower import plan_kernel
from ckgen.ops.elementwise.fns import evaluate
from ckgen.runtime import api
from ckgen.targets import get_target

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")

SPEC = """
target gfx942
kernel swiglu_fp8 { op = elementwise a = bf16 b = bf16 y = e4m3fnuz expr = silu(a) -> mul(b) }
kernel copy_e5    { op = elementwise a = f32 y = e5m2fnuz quant = group(128) expr = copy(a) unroll = 3 threads = 64 }
kernel mul_i8     { op = elementwise a = f16 b = f16 y = i8 expr = mul(a, b) }
"""
SPEC_OCP = """
target gfx950
kernel swiglu_ocp { op = elementwise a = bf16 b = bf16 y = e4m3fn quant = group(128) expr = silu(a) -> mul(b) }
"""
ALL = [(s, "gfx942") for s in load_text(SPEC, "ewq.ck")] + [(s, "gfx950") for s in load_text(SPEC_OCP, "ewq2.ck")]


@pytest.fixture(scope="module")
def kernels():
    out = {}
    for arch in ("gfx942", "gfx950"):  # one emulator library per arch
        plans = [plan_kernel(s, get_target(a)) for s, a in ALL if a == arch]
        out.update(api.emu_kernels(plans, f"ewq_tests_{arch}"))
    return out


def _inputs(k, rows: int, cols: int, seed: int, scale: float = 1.0) -> dict:
    p = k.plan.spec.params
    rng = np.random.default_rng(seed)
    out = {}
    for n in ("a", "b"):
        d = p.dtype_of(n)
        if d is None:
            continue
        x = rng.standard_normal((rows, cols)) * scale
        out[n] = to_bf16(x.astype(np.float32)) if d == DType.BF16 else x.astype(np.dtype(d.numpy))
    return out


def _check(k, ins: dict, y: np.ndarray, s: np.ndarray, what: str) -> None:
    p = k.plan.spec.params
    vals = {n: to_float64(v, p.dtype_of(n)) for n, v in ins.items()}
    ref = evaluate(p.steps, vals) * np.ones(y.shape)
    want_s, want_q = quantized_values(ref, p.y, 128)
    assert s.shape == want_s.shape, what
    assert relative_error(s.astype(np.float64), want_s) <= 1e-5, f"{what}: y_scale"
    got = to_float64(y, p.y)
    assert np.all(np.isfinite(got)), f"{what}: y unwritten"
    if p.y.fp8 is not None:
        assert np.count_nonzero(got != want_q) <= max(2, got.size // 1000), f"{what}: fp8 codes differ"
    else:
        assert np.abs(got - want_q).max(initial=0) <= 0.52, f"{what}: int8 off by more than one rounding"
    assert relative_error(got, want_q) <= get_op("elementwise").tolerance(k.plan, "y"), f"{what}: y"
    # dequantized against float64 y: the fp8 / int8 rounding (e4m3: a half step is at most 1/16 relative)
    deq = got * np.repeat(s.astype(np.float64), 128, axis=-1)[:, : y.shape[1]]
    bound = {DType.I8: 0.02, DType.E4M3FN: 0.05, DType.E4M3FNUZ: 0.05}.get(p.y, 0.1)
    assert relative_error(deq, ref) <= bound, f"{what}: dequantized y"


@pytest.mark.parametrize("name", [s.name for s, _ in ALL])
@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 129), (2, 1000), (2, 4099), (1, 8192)])
def test_quantized_output_on_the_emulator(kernels, name: str, rows: int, cols: int) -> None:
    k = kernels[name]
    ins = _inputs(k, rows, cols, seed=rows * 7 + cols)
    y, s = k(*ins.values())
    _check(k, ins, y, s, f"{name} {rows}x{cols}")


def test_gate_up_halves_misaligned_and_a_zero_row(kernels) -> None:
    """a and b are the halves of one gate-up matrix at an odd element offset (no aligned vector: element by
    element), with a wider y_scale row stride; row 1 is all zero (scale 1, q 0)."""
    k = kernels["swiglu_fp8"]
    rng = np.random.default_rng(3)
    gu = to_bf16(rng.standard_normal((3, 2 * 1000 + 1)).astype(np.float32))
    gu[1] = 0
    a, b = gu[:, 1:1001], gu[:, 1001:2001]
    y = np.full((3, 1000), 0xFF, np.uint8)
    s = np.full((3, 10), np.nan, np.float32)[:, :8]
    k(a, b, y=y, y_scale=s)
    _check(k, {"a": a, "b": b}, y, s, "gate-up halves")
    assert np.all(s[1] == 1.0) and not np.any(to_float64(y[1], DType.E4M3FNUZ))


def test_values_past_the_fp8_range(kernels) -> None:
    """Values up to ~1e6: the group scales bring them into e5m2fnuz's range; each group's largest lands on 57344."""
    k = kernels["copy_e5"]
    ins = _inputs(k, 2, 700, seed=9, scale=1e5)
    y, s = k(*ins.values())
    _check(k, ins, y, s, "copy_e5 x 1e5")
    got = np.abs(to_float64(y, DType.E5M2FNUZ))
    assert np.allclose([got[0, g * 128:(g + 1) * 128].max() for g in range(6)], 57344.0)


@pytest.mark.parametrize("src,arch,param,needle", [
    ("kernel k { op = elementwise a = bf16 y = e4m3fn expr = copy(a) }", "gfx942", "y", "e4m3fnuz"),
    ("kernel k { op = elementwise a = bf16 y = e4m3fnuz expr = copy(a) }", "sm_90", "y", "e4m3fn, e5m2"),
    ("kernel k { op = elementwise a = bf16 y = e4m3fnuz expr = copy(a) }", "gfx90a", "y", "no fp8"),
    ("kernel k { op = elementwise a = bf16 y = e4m3fnuz quant = row expr = copy(a) }", "gfx942", "quant",
     "op = quantize"),
    ("kernel k { op = elementwise a = bf16 quant = group(128) expr = copy(a) }", "gfx942", "quant", "not quantized"),
    ("kernel k { op = elementwise a = bf16 y = e4m3fnuz vec = 1 expr = copy(a) }", "gfx942", "vec", "group(128)"),
    # MX outputs (tests/ops/elementwise/test_elementwise_mx.py)
    ("kernel k { op = elementwise a = bf16 y = e2m1fn_x2 quant = group(128) expr = copy(a) }", "gfx950", "quant",
     "mx(32)"),
    ("kernel k { op = elementwise a = bf16 y = i8 quant = mx(32) expr = copy(a) }", "gfx950", "quant", "no MX form"),
    ("kernel k { op = elementwise a = bf16 y = e4m3fnuz quant = mx(32) expr = copy(a) }", "gfx942", "quant",
     "no MX form"),
    ("kernel k { op = elementwise a = bf16 y = e2m1fn_x2 vec = 1 expr = copy(a) }", "gfx950", "vec", "whole bytes"),
    ("kernel k { op = elementwise a = bf16 y = e4m3fn quant = mx(32) vec = 16 threads = 64 expr = copy(a) }",
     "gfx950", "vec", "mx(32)"),
])
def test_refusals_name_the_parameter(src: str, arch: str, param: str, needle: str) -> None:
    with pytest.raises(CkgenError) as e:
        spec = load_text(f"target {arch}\n{src}", "bad.ck")[0]
        plan_kernel(spec, get_target(arch))
    text = f"{e.value} {getattr(e.value, 'hint', '') or ''}"
    assert param in text and needle in text, text


def test_abi_groups_derived_and_checked(kernels) -> None:
    k = kernels["mul_i8"]
    names = [a.name for a in k.plan.abi.args]
    assert names[4] == "y_scale" and names[-2:] == ["groups", "stride_scale"]
    ins = _inputs(k, 2, 300, seed=1)
    y, s = k(*ins.values())
    assert s.shape == (2, 3)
    with pytest.raises(CkgenError, match="groups"):
        k(*ins.values(), y_scale=np.zeros((2, 4), np.float32))


def test_rung1_no_spills_and_nvcc(tmp_path) -> None:
    """gfx942 / gfx950 code objects with no scratch and no spills; the OCP kernel's sm_90 plan builds with nvcc
    without spills."""
    from ckgen.backends.amd import compiler as amd_compiler

    if not shutil.which("clang++-22"):
        pytest.skip("clang++-22 not installed")
    plans = [plan_kernel(s, get_target(arch)) for s, arch in ALL]
    res = amd_compiler.compile_plans("ewq_r1", plans, tmp_path, 2)
    for p in plans:
        r = res.reports[(p.name, p.arch)]
        assert r.vgpr_spills == 0 and r.sgpr_spills == 0 and r.scratch_bytes == 0, r
    from ckgen.backends.nvidia import compiler as nvidia
    from ckgen.errors import ToolchainError

    nv = [plan_kernel(s, get_target("sm_90")) for s, arch in ALL if arch == "gfx950"]
    try:
        lib = nvidia.build_cuda_library("ewq_nv", nv, tmp_path / "nv")
    except ToolchainError as exc:
        pytest.skip(str(exc))
    for r in nvidia.analyze(lib, nv):
        assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0, r



def test_sm90_plan_on_the_emulator() -> None:
    """The OCP kernel's sm_90 plan on the emulator as a 32-lane wave (the group butterfly over 16 of a warp's
    lanes), at a width with a short last group and a misaligned row."""
    from tests.ops.rowops import harness as H

    nv = [plan_kernel(s, get_target("sm_90")) for s, arch in ALL if arch == "gfx950"]
    k = H.build_nv_on_emu(None, nv, stem="ewq_nv_emu")["swiglu_ocp"]
    for rows, cols, off in ((3, 1000, 0), (2, 4099, 1), (1, 1, 0)):
        rng = np.random.default_rng(cols)
        gu = to_bf16(rng.standard_normal((rows, 2 * cols + off)).astype(np.float32))
        a, b = gu[:, off:off + cols], gu[:, off + cols:off + 2 * cols]
        y, s = k(a, b)
        _check(k, {"a": a, "b": b}, y, s, f"sm_90 plan {rows}x{cols}+{off}")
