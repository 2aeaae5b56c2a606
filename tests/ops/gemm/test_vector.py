"""The GEMM's vector body (``instr = none``: ckgen/ops/gemm/vector.py, device/gemm_vec.h; issues 23 and 26).

Rung 2: the emulator runs the generated kernels for gfx942 (FNUZ fp8) and gfx950 (OCP fp8) against the float64
reference: bf16 with a bias and an activation, f16 with alpha, beta and a residual, f32 into a column-major C,
batched, and fp8 with tensor, row / column and block(128) scales. Shapes take M = 1, M past the tile's rows (clamped
rows), N ending inside a wave and whole waves past N, K = 0, K past one unrolled step with a tail, and odd K
(unaligned rows: element loads). Outputs are poisoned before each call.
Rung 1: the same kernels compile for gfx942 (clang-19) and gfx950 (clang-22) without a matrix instruction or LDS,
with 16-byte nontemporal loads of B, the target's packed fp8 conversion for fp8, and no spills or scratch.
Planning: each refusal names the parameter and its legal values; the cost model rates the body above a matrix-core
tile for one row of A and below it for 256.
"""

from __future__ import annotations

import shutil

import pytest

from ckgen.backends.amd import compiler as amd_compiler
from ckgen.backends.amd.report import disassemble
from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.ir.registry import get_op
from ckgen.runtime.api import plan_for
from tests.ops.gemm.helpers import (
    assert_refused,
    check_against_float64,
    emu_kernels,
    needs_clang,
    scaled_inputs,
)

# name -> (arch, body); every kernel has instr = none
CONFIGS = {
    "v_bf16_bias_silu": ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 4x8x1024 waves = 1x4 "
                                   "epilogue = bias(col) -> silu"),
    "v_f16_residual": ("gfx950", "A = f16 row B = f16 col C = f16 row alpha = 0.5 beta = 0.25 tile = 3x4x512 "
                                 "waves = 1x2 epilogue = relu -> residual"),
    "v_f32_colc_batched": ("gfx942", "A = f32 row B = f32 col C = f32 col tile = 2x2x256 waves = 1x1 batched = true"),
    "v_f8_tensor": ("gfx942", "A = e4m3fnuz row B = e4m3fnuz col C = bf16 row tile = 8x2x2048 waves = 1x2 "
                              "scale_a = tensor scale_b = tensor"),
    "v_f8_rowcol": ("gfx950", "A = e4m3fn row B = e5m2 col C = f32 row tile = 1x4x1024 waves = 1x4 "
                              "scale_a = row scale_b = col epilogue = bias(row)"),
    "v_f8_block": ("gfx942", "A = e5m2fnuz row B = e5m2fnuz col C = bf16 row tile = 2x8x1024 waves = 1x4 "
                             "scale_a = block(128) scale_b = block(128)"),
}
SHAPES = [(1, 70, 130), (1, 1, 1), (5, 33, 2100), (9, 17, 4100), (3, 9, 0), (2, 40, 1024), (11, 3, 77)]
#: the packed fp8 conversion each arch's code must use (ckgen/blocks/fp8.h: fp8x2_to_floats)
FP8_CVT = {"gfx942": "v_cvt_pk_f32_", "gfx950": "v_cvt_pk_f32_"}


def _source(name: str) -> str:
    arch, body = CONFIGS[name]
    return f"target {arch}\nkernel {name} {{ {body} instr = none }}\n"


@pytest.fixture(scope="module")
def kernels():
    return emu_kernels({n: (c[0], _source(n)) for n, c in CONFIGS.items()})


@needs_clang
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
@pytest.mark.parametrize("name", [n for n in CONFIGS if "batched" not in n])
def test_emu_against_float64(kernels, name, shape):
    gemm = kernels[name]
    m, n, k = shape
    sizes = {"M": m, "N": n, "K": k}
    if gemm.plan.spec.params.gemm.block_scaled:
        sizes |= {"kb": -(-k // 128), "nb": -(-n // 128)}
    check_against_float64(gemm, scaled_inputs(gemm, sizes, seed=m + 3 * n + 7 * k), sizes)


@needs_clang
@pytest.mark.parametrize("batch", [1, 3])
def test_emu_batched(kernels, batch):
    sizes = {"M": 3, "N": 5, "K": 300, "batch": batch}
    check_against_float64(kernels["v_f32_colc_batched"], scaled_inputs(kernels["v_f32_colc_batched"], sizes, batch), sizes)


@pytest.mark.parametrize("arch,clang", [("gfx942", "clang++-19"), ("gfx950", "clang++-22")])
def test_code_object(tmp_path, arch, clang):
    """No matrix instruction, no LDS, 16-byte nontemporal loads of B, the packed fp8 conversion, no spills or scratch."""
    if shutil.which(clang) is None:
        pytest.skip(f"{clang} is not installed")
    plans = [plan_for(_source(n), n, "amd", arch) for n, (a, _) in CONFIGS.items() if a == arch]
    result = amd_compiler.compile_plans(f"vector_{arch}", plans, tmp_path, 2)
    funcs = disassemble(result.toolchains[arch].objdump, result.code_objects[arch])
    for p in plans:
        ops = [i.mnemonic for i in funcs[p.name]]
        rep = result.reports[(p.name, arch)]
        assert not rep.mfma and not any(o.startswith(("v_mfma", "v_smfmac")) for o in ops), (p.name, rep.mfma)
        assert "global_load_dwordx4" in ops, f"{p.name}: 16-byte loads of B"
        assert any(i.mnemonic == "global_load_dwordx4" and "nt" in i.operands.split() for i in funcs[p.name]), \
            f"{p.name}: B's loads nontemporal (read once)"
        if p.spec.params.gemm.a.dtype.fp8 is not None:
            assert any(o.startswith(FP8_CVT[arch]) for o in ops), f"{p.name}: the hardware's fp8 conversion"
        assert not any(o.startswith(("scratch_", "buffer_store", "buffer_load")) for o in ops), "scratch access"
        assert rep.vgpr_spills == rep.sgpr_spills == rep.scratch_bytes == rep.lds_bytes == 0, rep


@pytest.mark.parametrize("arch,body,param,legal", [
    ("gfx942", "A = bf16 col B = bf16 col C = bf16 row tile = 4x8x1024 waves = 1x4", "A", "bf16 row"),
    ("gfx942", "A = bf16 row B = bf16 row C = bf16 row tile = 4x8x1024 waves = 1x4", "B", "bf16 col"),
    ("gfx942", "A = i8 row B = i8 col C = i32 row tile = 4x8x2048 waves = 1x4", "acc", "f32"),
    ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 4x8x1024 waves = 2x2", "waves", "1x2"),
    ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 4x6x1024 waves = 1x4", "tile", "waves_n x 1..8"),
    ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 4x64x1024 waves = 1x4", "tile", "waves_n x 1..8"),
    ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 16x4x1024 waves = 1x4", "tile", "tile M in 1..8"),
    ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 8x32x1024 waves = 1x4", "tile", "tile M in 1..4"),
    ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 4x8x1000 waves = 1x4", "tile", "512, 1024, 2048"),
    ("sm_90", "A = bf16 row B = bf16 col C = bf16 row tile = 4x8x1000 waves = 1x4", "tile", "256, 512, 1024"),
    ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 4x8x1024 waves = 1x4 schedule = splitk", "schedule",
     "tile"),
    ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 4x8x1024 waves = 1x4 epilogue = swiglu", "epilogue",
     "without swiglu"),
    ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 4x8x1024 waves = 1x4 vec_b = 4", "vec_b",
     "leave it out"),
    ("gfx950", "A = e4m3fn row B = e4m3fn col C = bf16 row tile = 4x8x2048 waves = 1x4 scale_a = mx(32) "
               "scale_b = mx(32)", "scale_a", "block(128)"),
    ("gfx942", "A = e4m3fnuz row B = e4m3fnuz col C = bf16 row tile = 4x8x2048 waves = 1x4 scale_a = block(128) "
               "scale_b = col", "scale_b", "block(128)"),
])
def test_refusals(arch, body, param, legal):
    assert_refused(arch, f"{body} instr = none", param, legal)


def test_instr_word_is_checked():
    with pytest.raises(CkgenError, match="auto or none") as ei:
        load_text("kernel k { A = f16 row B = f16 col C = f16 row tile = 4x8x512 waves = 1x4 instr = vector }",
                  "v.ck", ("gfx942",))
    assert ei.value.render().startswith("v.ck:1:")


def test_model_takes_the_vector_body_for_skinny_products_only():
    """At one row of A the vector body reads B once with no padded rows: the model rates it above the 16-row
    matrix-core tile; at 256 rows its multiply-adds on the vector ALUs cost more than the matrix core's."""
    op = get_op("gemm")
    body = "A = e4m3fn row B = e4m3fn col C = bf16 row scale_a = tensor scale_b = tensor"
    src = (f"target sm_90\nkernel vec {{ {body} tile = 4x8x2048 waves = 1x4 instr = none }}\n"
           f"kernel mma {{ {body} tile = 16x128x64 waves = 1x4 lds_buffers = 6 }}\n")
    vec, mma = (plan_for(src, n, "nvidia", "sm_90") for n in ("vec", "mma"))

    def est(p, m):
        return op.estimate(op.model_traits(p), (m, 4096, 4096))

    assert est(vec, 1) < est(mma, 1)
    assert est(vec, 256) > est(mma, 256)
