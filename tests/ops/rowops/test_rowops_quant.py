"""Quantizing row ops (rung 2): RMS norm (+ residual) and ``op = quantize`` writing fp8 (or int8) y with per-row or
per-128-column-group f32 scales, run on the emulator (the gfx942 plans: FNUZ; one gfx950 plan: OCP) against the
float64 reference with the same fp8 rounding (ckgen.ir.quant.quantized_values: nearest fp8 value, ties to even, saturating).

Awkward sizes: 1 row and 1 column, cols not a multiple of 128 or of the vector (odd strides: the per-element path),
a row of zeros (scale 1, q 0), values far past the fp8 range (the scales bring them in), a group-scale row stride
wider than the groups. Outputs are poisoned (NaN codes, NaN scales) before each call; padding must stay untouched.
Also: the planner's and the DSL's refusals (an encoding the target lacks, quant on an unquantized y, threads).
"""

from __future__ import annotations

import numpy as np
import pytest

import ckgen
from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.ir.arrays import random_values, to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.quant import qmax, quantized_values
from ckgen.ir.types import DType
from ckgen.lower import plan_kernel
from ckgen.ops.rowops.reference import reference
from ckgen.runtime.api import emu_kernels
from tests.ops.rowops import harness as H

SOURCE = """
target gfx942
kernel rms_res_fp8      { op = rmsnorm x = bf16 residual = true y = e4m3fnuz eps = 1e-6 }
kernel rms_fp8_grp      { op = rmsnorm x = bf16 y = e4m3fnuz quant = group(128) max_cols = 4096 }
kernel rms_res_i8_grp   { op = rmsnorm x = f16 residual = true y = i8 quant = group(128) max_cols = 700 }
kernel quant_grp        { op = quantize x = bf16 y = e4m3fnuz quant = group(128) }
kernel quant_row_e5     { op = quantize x = f32 y = e5m2fnuz max_cols = 300 }
kernel quant_grp_lds    { op = quantize x = bf16 residual = true y = e4m3fnuz quant = group(128) max_cols = 20000
                          row_in = shared }
kernel ln_fp8_grp       { op = layernorm x = f16 y = e4m3fnuz quant = group(128) max_cols = 3000 }
kernel sm_e5_row        { op = softmax x = bf16 y = e5m2fnuz scale = 0.5 max_cols = 2048 }
"""
SOURCE_OCP = """
target gfx950
kernel rms_ocp_grp      { op = rmsnorm x = bf16 residual = true y = e4m3fn quant = group(128) }
kernel quant_ocp_row    { op = quantize x = bf16 y = e4m3fn max_cols = 8192 }
kernel ln_ocp_grp       { op = layernorm x = f16 y = e4m3fn quant = group(128) max_cols = 3000 }
kernel rms_ocp_grp_4096 { op = rmsnorm x = bf16 residual = true y = e4m3fn quant = group(128) max_cols = 4096 }
"""
SPECS = {s.name: (s, "gfx942") for s in load_text(SOURCE, "quant.ck")} | \
    {s.name: (s, "gfx950") for s in load_text(SOURCE_OCP, "quant_ocp.ck")}
SHAPES = ((1, 1), (3, 129), (2, 1000), (4, 4096), (2, 4097), (1, 20000))


@pytest.fixture(scope="module")
def kernels():
    return emu_kernels([plan_kernel(spec, arch) for spec, arch in SPECS.values()], "rowops_quant_emu", jobs=2)


def _call(k, rows: int, cols: int, seed: int, odd: bool = False, zero_row: int | None = None,
          big: float = 1.0) -> tuple[dict, dict]:
    """Random inputs (x scaled by ``big``; row ``zero_row`` all zero), poisoned outputs; runs k; returns
    (inputs, outputs)."""
    r = k.plan.spec.params.row
    rng = np.random.default_rng(seed)
    stride = cols + 3 if odd else cols
    ins = H.row_inputs(r, rows, cols, stride, rng, zero_row=zero_row)
    if big != 1.0 and r.x == DType.F32:
        ins["x"][...] = (to_float64(ins["x"], r.x) * big).astype(np.float32)
    outs = {"y": H.matrix(rows, cols, stride, r.y, poison=H.poison_byte(r.y))}
    if r.residual is not None:
        outs["s_out"] = H.matrix(rows, cols, stride, r.residual, poison=0xFF)
    if r.quant_group:
        groups = -(-cols // r.quant_group)
        outs["y_scale"] = np.full((rows, groups + 2), np.nan, np.float32)[:, :groups]  # a wider row stride
    else:
        outs["y_scale"] = np.full(rows, np.nan, np.float32)
    args = [ins[n] for n in ("x", "residual", "weight", "bias") if n in ins]
    k(*args, **outs)
    return ins, outs


def _check(k, ins: dict, outs: dict, what: str) -> None:
    p, r = k.plan, k.plan.spec.params.row
    ref = reference(p, {**ins, **outs})
    scale = outs["y_scale"].astype(np.float64)
    assert np.all(np.isfinite(scale)), f"{what}: a scale unwritten"
    assert relative_error(scale, ref["y_scale"]) <= 1e-6, f"{what}: y_scale"
    got = to_float64(outs["y"], r.y)
    assert np.all(np.isfinite(got)), f"{what}: a NaN in y (unwritten?)"
    if r.y.fp8 is not None:
        assert np.abs(got).max(initial=0) <= r.y.fp8.max
        # the same fp8 rounding as the reference: exact but for a rare element at a rounding boundary
        assert np.count_nonzero(got != ref["y"]) <= max(2, got.size // 2000), f"{what}: fp8 codes differ"
    err = relative_error(got, ref["y"])
    assert err <= ckgen.ir.registry.get_op(p.op).tolerance(p, "y"), f"{what}: y relative error {err:.3e}"
    if "s_out" in outs:
        assert relative_error(to_float64(outs["s_out"], r.residual), ref["s_out"]) == 0.0, f"{what}: s_out"


@pytest.mark.parametrize("name", list(SPECS))
def test_quantized_rows_on_the_emulator(kernels, name: str) -> None:
    k = kernels[name]
    mc = k.plan.body.max_cols
    for i, (rows, cols) in enumerate(SHAPES):
        cols = min(cols, mc) if mc else cols
        for odd in (False, True):
            ins, outs = _call(k, rows, cols, seed=i * 31 + odd, odd=odd, zero_row=rows - 1 if rows > 1 else None)
            _check(k, ins, outs, f"{name} {rows}x{cols} odd={odd}")
            if rows > 1 and k.plan.spec.params.row.op in ("rmsnorm", "quantize"):  # y of a zero row is 0: scale 1
                assert np.all(outs["y_scale"][rows - 1] == 1.0) and not np.any(to_float64(outs["y"][rows - 1],
                                                                                          k.plan.spec.params.row.y))


def test_sm90_plans_on_the_emulator() -> None:
    """The OCP kernels' sm_90 plans (warp32 rows, the CUDA build's predicated tails; single passes with group scales
    reading their weights a vector at a time: ln_ocp_grp, rms_ocp_grp_4096) on the emulator."""

    plans = [plan_kernel(s, "sm_90") for s, arch in SPECS.values() if arch == "gfx950"]
    ks = H.build_nv_on_emu(None, plans, stem="rowops_quant_nv_emu")
    for name, k in ks.items():
        assert k.plan.body.wave_size == 32
        for i, (rows, cols) in enumerate(SHAPES):
            cols = min(cols, k.plan.body.max_cols or cols)
            ins, outs = _call(k, rows, cols, seed=100 + i, odd=i % 2 == 1, zero_row=0 if rows > 1 else None)
            _check(k, ins, outs, f"{name} (sm_90 plan) {rows}x{cols}")


def test_values_far_past_the_fp8_range(kernels) -> None:
    """x up to ~1e6 (f32): the per-row scale brings every row into e5m2's range; the largest element of a row
    lands on the largest finite value (saturating at most by an ulp)."""
    k = kernels["quant_row_e5"]
    ins, outs = _call(k, 3, 300, seed=5, big=1e6)
    _check(k, ins, outs, "quant_row_e5 x 1e6")
    got = to_float64(outs["y"], DType.E5M2FNUZ)
    assert np.allclose(np.abs(got).max(axis=1), 57344.0)
    assert np.all(outs["y_scale"] > 1.0)


def test_reference_quantize_layout() -> None:
    """The reference's group scales: one per 128 columns, the last group shorter; amax 0 gives scale 1."""
    y = np.zeros((2, 300))
    y[0, 5], y[0, 299], y[1, 130] = -448.0, 2.0, 10.0
    s, q = quantized_values(y, DType.E4M3FN, 128)
    assert s.shape == (2, 3)
    assert np.allclose(s[0], [1.0, 1.0, 2.0 / 448]) and np.allclose(s[1], [1.0, 10.0 / 448, 1.0])
    assert q[0, 5] == -448.0 and q[0, 299] == 448.0 and q[1, 130] == 448.0


@pytest.mark.parametrize("dt", [DType.E4M3FN, DType.E5M2, DType.E4M3FNUZ, DType.E5M2FNUZ])
def test_reference_keeps_a_nan_row_nan(dt) -> None:
    """A row whose y is NaN (layer norm with eps = 0 on one column: 0 / 0) quantizes to NaN codes in the reference,
    as the kernels' from_float makes it, so the comparison takes the two as equal (the numerics fuzz found the
    reference writing a finite code there: 49152 for e5m2)."""
    y = np.array([[np.nan], [2.0]])
    s, q = quantized_values(y, dt, 128)
    assert np.isnan(q[0, 0]) and q[1, 0] == qmax(dt)
    assert relative_error(q, q.copy()) == 0.0


@pytest.mark.parametrize("src,param,needle", [
    ("target gfx942\nkernel k { op = rmsnorm x = bf16 y = e4m3fn }", "y", "legal: f16, bf16, f32, i8, e4m3fnuz"),
    ("target gfx950\nkernel k { op = quantize x = bf16 y = e5m2fnuz }", "y", "e4m3fn, e5m2"),
    ("target gfx90a\nkernel k { op = quantize x = bf16 y = e4m3fnuz }", "y", "no fp8"),
    ("target gfx942\nkernel k { op = quantize x = bf16 y = bf16 }", "y", "writes a quantized y"),
    ("target gfx942\nkernel k { op = rmsnorm x = bf16 quant = group(128) }", "quant", "not quantized"),
    ("target gfx942\nkernel k { op = rmsnorm x = bf16 y = i8 quant = group(64) }", "quant", "group(128)"),
    ("target gfx942\nkernel k { op = quantize x = bf16 y = e4m3fnuz quant = group(128) threads_per_row = 16 }",
     "threads_per_row", "wave"),
    ("target gfx942\nkernel k { op = quantize x = f32 y = e4m3fnuz quant = group(128) vec = 1 }", "vec", "group"),
])
def test_refusals_name_the_parameter(src: str, param: str, needle: str) -> None:
    H.assert_refused(src, param, needle)


def test_group_scale_abi_and_size_derivation(kernels) -> None:
    """Group kernels take (groups, stride_scale) last; the binding derives groups = ceil(cols / 128) and
    allocates y_scale [rows, groups] when the caller leaves it out; a wrong y_scale shape is refused by name."""
    k = kernels["quant_grp"]
    names = [a.name for a in k.plan.abi.args]
    assert names[-2:] == ["groups", "stride_scale"]
    x = random_values(np.random.default_rng(1), (3, 300), DType.BF16)
    y, s = k(x)
    assert s.shape == (3, 3) and y.shape == (3, 300)
    with pytest.raises(CkgenError, match="groups"):
        k(x, y_scale=np.zeros((3, 2), np.float32))
    with pytest.raises(CkgenError, match="y_scale"):
        k(x, y_scale=np.zeros((3, 3), np.float64))


def test_per_row_scales_of_the_wrong_length_or_dtype_are_refused(kernels) -> None:
    k = kernels["quant_row_e5"]
    x = np.ones((4, 100), np.float32)
    for bad in (np.zeros(5, np.float32), np.zeros(4, np.float64), np.zeros((4, 1), np.float32)):
        with pytest.raises(CkgenError, match="y_scale"):
            k(x, y_scale=bad)
    with pytest.raises(CkgenError, match="y"):
        k(x, y=np.zeros((4, 100), np.int8))  # fp8 codes travel as uint8


# ------------------------------------------------------------------------------------------ rung 1
@pytest.fixture(scope="module")
def amd_objects(tmp_path_factory):
    """The FNUZ kernels for gfx942 and the OCP ones for gfx950, one library (ckgen's toolchain and flags)."""
    import shutil

    from ckgen.backends.amd import compiler as amd_compiler
    from ckgen.backends.amd.report import disassemble

    if not shutil.which("clang++-22"):
        pytest.skip("clang++-22 (gfx950) not installed")
    plans = [plan_kernel(s, arch) for s, arch in SPECS.values()]
    res = amd_compiler.compile_plans("rowops_quant", plans, tmp_path_factory.mktemp("quant_amd"), 2)
    out = {}
    for arch in ("gfx942", "gfx950"):
        funcs = disassemble(res.toolchains[arch].objdump, res.code_objects[arch])
        for p in plans:
            if p.arch == arch:
                out[p.name] = ({i.mnemonic for i in funcs.get(p.name, [])}, res.reports[(p.name, arch)], p)
    return out


@pytest.mark.parametrize("name", list(SPECS))
def test_code_objects_have_no_spills(amd_objects, name: str) -> None:
    """gfx942 (FNUZ) / gfx950 (OCP): no scratch, no VGPR or SGPR spills; y stored as vectors of vec fp8 / int8
    bytes (8: global_store_dwordx2; 4: global_store_dword)."""
    ops, rep, p = amd_objects[name]
    assert ops, f"{name} missing from the disassembly"
    assert rep.vgpr_spills == 0 and rep.sgpr_spills == 0 and rep.scratch_bytes == 0, rep
    assert not any(o.startswith(("scratch_", "buffer_store", "buffer_load")) for o in ops), "scratch access"
    store = {4: "global_store_dword", 8: "global_store_dwordx2", 16: "global_store_dwordx4"}[p.body.vec]
    assert store in ops, f"vector stores of {p.body.vec} bytes of y"


def test_nvcc_sm90_builds_the_ocp_kernels(tmp_path) -> None:
    """The OCP (e4m3fn) kernels' sm_90 plans build with nvcc: no spills, no stack frame (or ptxas's trade for
    occupancy: harness.assert_nv_spill_free)."""
    from ckgen.backends.nvidia import compiler as nvidia
    from ckgen.errors import ToolchainError

    plans = [plan_kernel(s, "sm_90") for s, arch in SPECS.values() if arch == "gfx950"]
    try:
        lib = nvidia.build_cuda_library("rowops_quant_nv", plans, tmp_path)
    except ToolchainError as exc:
        pytest.skip(str(exc))
    reports = {r.name: r for r in nvidia.analyze(lib, plans)}
    # (a spill ptxas traded for occupancy: checked by building the plan bounded for it)
    H.assert_nv_entries_spill_free(plans, reports, tmp_path)


def test_group_scales_feed_a_block_scaled_fp8_gemm(kernels) -> None:
    """The layout contract: RMS norm's fp8 y and its group scales are a block(128)-scaled GEMM's A and scale_a as
    they are (gfx942, emulator): C = A.B against float64 of the dequantized operands, and against float64 of the
    unquantized y within fp8 error; K = 300 (a short last block). A transposed or shifted scale layout fails."""
    from ckgen.ops.rowops.reference import op_values
    from ckgen.runtime.api import Kernel as K
    from ckgen.runtime.api import get_backend, plan_for

    gemm_src = ("target gfx942\nkernel gq { A = e4m3fnuz row B = e4m3fnuz col C = f32 row tile = 64x64x64 "
                "waves = 2x2 scale_a = block(128) scale_b = block(128) }\n")
    gemm = K(plan_for(gemm_src, "gq", "amd", "gfx942"), get_backend("emu"))
    norm = kernels["rms_fp8_grp"]
    rng = np.random.default_rng(11)
    m, k_, n = 37, 300, 70
    ins, outs = _call(norm, m, k_, seed=11)
    a, sa = outs["y"], outs["y_scale"]
    b = random_values(rng, (k_, n), DType.E4M3FNUZ)
    b = np.asfortranarray(b)
    sb = rng.uniform(0.5, 2.0, (-(-n // 128), -(-k_ // 128))).astype(np.float32)
    c = gemm(A=a, B=b, scale_a=np.ascontiguousarray(sa), scale_b=sb)
    deq_a = to_float64(a, DType.E4M3FNUZ) * np.repeat(sa.astype(np.float64), 128, axis=1)[:, :k_]
    deq_b = to_float64(b, DType.E4M3FNUZ) * np.repeat(np.repeat(sb.astype(np.float64), 128, axis=0)[:n], 128,
                                                      axis=1)[:, :k_].T
    assert relative_error(c.astype(np.float64), deq_a @ deq_b) <= 1e-5
    w = to_float64(ins["weight"], DType.BF16)
    # y before quantization
    y = op_values("rmsnorm", to_float64(ins["x"], DType.BF16), w, None, 1.0, norm.plan.spec.params.row.eps)
    assert relative_error(c.astype(np.float64), y @ deq_b) <= 0.05
