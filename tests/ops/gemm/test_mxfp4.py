"""MXFP4 GEMM: A and B of OCP FP4 (E2M1) values packed two per byte along K (``e2m1fn_x2``) with ``mx(32)`` scales
on gfx950 (issue 26; ckgen/ops/gemm/fp4.py).

Rung 2: the emulator runs the generated kernels (the block-scaled MFMA with format 4, its fp4 lane layout checked
by tests/runtime/test_emu_mfma_scale.py) against the float64 reference (every fp4 code, random E8M0 scales) at
awkward sizes: M = 1, K = 2 (one byte of values), K = 66 (a partial last 32-K block and K tile), K not a multiple
of the tile's K, ragged N, K = 0; outputs poisoned. An odd K is refused naming K.
Rung 1: the kernels compile for gfx950 with clang-22: the scaled MFMA with fp4 operands (``cbsz:4 blgp:4``, four
registers per operand) in the main loop, no spills or scratch.
Refusals (every illegal combination names its parameter and the legal values): test_mx.py's table.
"""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest

from ckgen.backends.amd import compiler as amd_compiler
from ckgen.backends.amd.report import disassemble
from ckgen.errors import CkgenError
from ckgen.ir.arrays import FP4_VALUES, unpack_fp4
from ckgen.ir.registry import get_op
from ckgen.targets.amd import MX_INSTRUCTIONS
from tests.ops.gemm.helpers import check_against_float64, emu_kernels, needs_clang, plan_for

FP4 = "A = e2m1fn_x2 row\nB = e2m1fn_x2 col\n"
MX = "scale_a = mx(32)\nscale_b = mx(32)\n"
CONFIGS = {
    "fp4_bias": FP4 + "C = bf16 row\ntile = 128x128x128\nwaves = 2x2\nepilogue = bias(col)\n" + MX,
    # one wave tile of 32x64, a K tile of one instruction, one LDS buffer, f32 C read (beta) with alpha
    "fp4_f32": FP4 + "C = f32 row\ntile = 32x128x64\nwaves = 1x2\nlds_buffers = 1\nalpha = 0.5\nbeta = 0.25\n" + MX,
}
SHAPES = [(1, 70, 128), (1, 1, 2), (67, 33, 200), (40, 97, 66), (17, 9, 0), (130, 129, 320)]


def _source(name: str) -> str:
    return f"target gfx950\nkernel {name} {{\n" + "\n".join("  " + x for x in CONFIGS[name].splitlines()) + "\n}\n"


@pytest.fixture(scope="module")
def kernels():
    return emu_kernels({n: ("gfx950", _source(n)) for n in CONFIGS})


def _sizes(m: int, n: int, k: int) -> dict:
    return {"M": m, "N": n, "K": k, "kb": -(-k // 32)}


def test_unpack_fp4_reads_the_low_nibble_first():
    b = np.array([[0x21, 0xF8]], np.uint8)   # codes (1, 2), (8, 15): 0.5, 1.0, -0.0, -6.0
    v = unpack_fp4(b, -1)
    assert v.shape == (1, 4) and list(v[0]) == [0.5, 1.0, 0.0, -6.0] and np.signbit(v[0, 2])
    assert np.array_equal(unpack_fp4(b.T, 0), v.T)
    assert sorted(set(np.abs(FP4_VALUES))) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]


@needs_clang
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_emu_against_float64(kernels, name, shape):
    m, n, k = shape
    sizes = _sizes(m, n, k)
    ops = get_op("gemm").random_inputs(kernels[name].plan, sizes, np.random.default_rng(sum(shape) + 11 * m))
    assert ops["A"].dtype == np.uint8 and ops["A"].shape == (m, k // 2)    # bytes of two values along K
    assert ops["B"].shape == (k // 2, n) and (k == 0 or ops["B"].strides[0] == 1)  # column-major: K contiguous
    check_against_float64(kernels[name], ops, sizes)


@needs_clang
def test_each_nibble_is_its_own_k(kernels):
    """One value of A changed in the high nibble of a byte: only that K's product changes (a swapped nibble order
    or a shared scale block would move other outputs or miss this one)."""
    gemm = kernels["fp4_bias"]
    sizes = _sizes(3, 40, 66)
    ops = get_op("gemm").random_inputs(gemm.plan, sizes, np.random.default_rng(3))
    ops["A"][1, 32] = (ops["A"][1, 32] & 0x0F) | 0x70    # K = 65 (the last block, 64..65) of row 1: value 6
    check_against_float64(gemm, ops, sizes)


@needs_clang
def test_odd_k_is_refused_naming_k(kernels):
    gemm = kernels["fp4_bias"]
    ops = get_op("gemm").random_inputs(gemm.plan, _sizes(2, 8, 64), np.random.default_rng(1))
    with pytest.raises(CkgenError, match="K must be a multiple of 2"):
        gemm(**ops, K=63)
    # past the binding (a C caller): the host entry returns CKGEN_ERROR_INVALID_VALUE (1) and launches nothing
    call = gemm.bind(**ops)
    values = list(call.values)
    values[[a.name for a in gemm.plan.abi.args].index("K")] = 63
    with pytest.raises(CkgenError, match="status 1"):
        gemm.backend.launch(gemm.handle, dataclasses.replace(call, values=tuple(values)))
    assert np.all(ops["C"].view(np.uint16) == 0xFFFF)    # still the poison


def test_rung1_fp4_scaled_mfma_no_spills(tmp_path):
    if shutil.which("clang++-22") is None:
        pytest.fail("clang++-22 is missing (tools/install.sh installs it)")
    (ins,) = MX_INSTRUCTIONS["gfx950"]
    plans = [plan_for(_source(n), n, "amd", "gfx950") for n in CONFIGS]
    result = amd_compiler.compile_plans("mxfp4", plans, tmp_path, 2)
    funcs = disassemble(result.toolchains["gfx950"].objdump, result.code_objects["gfx950"])
    for p in plans:
        rep = result.reports[(p.name, "gfx950")]
        assert dict(rep.mfma).keys() == {ins.mnemonic} and rep.mfma_in_main_loop > 0, (p.name, rep.mfma)
        assert rep.vgpr_spills == rep.sgpr_spills == rep.scratch_bytes == 0, rep
        scaled = [i.operands for i in funcs[p.name] if i.mnemonic == ins.mnemonic]
        # format 4 (fp4) for both operands, each operand four VGPRs (v[a:a+3]): the fp4 register form
        assert scaled and all("cbsz:4" in o and "blgp:4" in o for o in scaled), scaled[:2]
        a_reg = scaled[0].split(",")[1].strip()
        lo, hi = (int(x) for x in a_reg.strip("v[]").split(":"))
        assert hi - lo == 3, scaled[0]
