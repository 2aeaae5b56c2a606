"""The out-of-place residual (``epilogue = ... -> residual``) and the gated epilogues (``swiglu``, ``geglu``; issue
28 items 1 and 2).

Rung 2: the emulator against the float64 reference at awkward sizes (M, N, K not multiples of the tile, M = 1,
N below one tile, K = 0), outputs poisoned, random inputs: residual with and without bias / activation / beta, in
place (C the very same view as R), integer C exactly, batched, split-K and stream-K, grouped and masked; gated
ones whole, in split-K and stream-K pieces (halves, interleaved, atomic), grouped and masked.
Bad input: a residual of the wrong dtype or shape is a CkgenError naming the argument; chains with residual not
last are located DSL errors.
"""

from __future__ import annotations

import numpy as np
import pytest

from ckgen.errors import CkgenError, SpecError
from ckgen.frontend import load_text
from ckgen.ir.arrays import poison, to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.registry import get_op
from ckgen.runtime.api import Kernel, plan_for
from tests.ops.gemm.helpers import (
    RUNG1_ARCHES,
    amd_library,
    assert_entries_clean,
    emu_kernels,
    needs_clang,
    sm90_library,
)

# name -> (arch, body): small tiles, so the sizes below cover several tiles and edge tiles
KERNELS = {
    "res_bias_gelu": ("gfx942", "A = f16 row B = f16 col C = f16 row tile = 32x32x16 waves = 1x1 "
                                "epilogue = bias(col) -> gelu -> residual"),
    "res_beta_col": ("gfx90a", "A = bf16 col B = bf16 row C = f32 col beta = 0.5 alpha = 2.0 tile = 32x32x16 "
                               "waves = 1x1 epilogue = residual"),
    "res_i8": ("gfx950", "A = i8 row B = i8 col C = i32 row tile = 32x32x32 waves = 1x1 epilogue = residual"),
    "res_batched": ("gfx942", "A = f16 col B = f16 row C = f16 col tile = 32x32x16 waves = 1x1 batched = true "
                              "epilogue = bias(row) -> relu -> residual"),
    "res_splitk": ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 32x32x16 waves = 1x1 "
                             "schedule = splitk(3) epilogue = silu -> residual"),
    "res_streamk": ("gfx90a", "A = f16 row B = f16 row C = f32 row tile = 32x32x16 waves = 1x1 "
                              "schedule = streamk epilogue = residual"),
    "res_grouped": ("gfx942", "A = f16 row B = f16 row C = f16 row tile = 32x32x16 waves = 1x1 mode = grouped "
                              "epilogue = bias(col) -> silu -> residual"),
    "res_masked": ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 16x32x32 waves = 1x2 mode = masked "
                             "epilogue = residual"),
    # gated: B has 2 N columns (gate, up), C N
    "glu_halves": ("gfx942", "A = f16 row B = f16 col C = f16 row tile = 32x64x16 waves = 1x1 epilogue = swiglu"),
    "glu_rowb_il16": ("gfx942", "A = f16 row B = f16 row C = f16 row tile = 32x64x16 waves = 1x1 gate = interleaved(16) "
                                "epilogue = bias(col) -> geglu -> residual"),
    "glu_waves": ("gfx90a", "A = bf16 col B = bf16 row C = f32 col tile = 64x64x32 waves = 2x2 instr = 16x16x16 "
                            "epilogue = bias(row) -> swiglu"),
    "glu_il64": ("gfx950", "A = bf16 row B = bf16 col C = bf16 row alpha = 0.5 tile = 32x128x32 waves = 1x2 "
                           "gate = interleaved(64) epilogue = geglu"),
    # gated pieces (split-K / stream-K: raw gate and up sums, paired by the tile's finisher)
    "glu_splitk": ("gfx942", "A = f16 row B = f16 col C = f16 row tile = 32x64x16 waves = 1x1 schedule = splitk(3) "
                             "epilogue = bias(col) -> swiglu -> residual"),
    "glu_streamk_waves": ("gfx90a", "A = bf16 col B = bf16 row C = f32 col tile = 64x64x32 waves = 2x2 "
                                    "instr = 16x16x16 schedule = streamk epilogue = bias(row) -> swiglu"),
    "glu_splitk_il16": ("gfx942", "A = f16 row B = f16 row C = f16 row tile = 32x64x16 waves = 1x1 "
                                  "gate = interleaved(16) schedule = splitk(2, atomic) epilogue = geglu"),
    "glu_fp8": ("gfx942", "A = e4m3fnuz row B = e4m3fnuz col C = bf16 row tile = 32x64x32 waves = 1x1 scale_a = row "
                          "scale_b = tensor epilogue = swiglu"),
    "glu_grouped": ("gfx942", "A = f16 row B = f16 row C = f16 row tile = 32x64x16 waves = 1x1 mode = grouped "
                              "epilogue = bias(col) -> swiglu"),
    "glu_masked": ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 16x64x32 waves = 1x2 mode = masked "
                             "gate = interleaved(8) epilogue = geglu -> residual"),
}
SHAPES = [(1, 1, 1), (37, 45, 19), (70, 20, 0), (1, 100, 70), (65, 7, 33)]
GROUPS = [[0, 37, 1, 0, 20], [5], [0, 0]]


def _source(name: str) -> str:
    arch, body = KERNELS[name]
    return f"target {arch}\nkernel {name} {{ {body} }}\n"


@pytest.fixture(scope="module")
def kernels() -> dict[str, Kernel]:
    return emu_kernels({n: (KERNELS[n][0], _source(n)) for n in KERNELS})


def _inputs(k: Kernel, sizes: dict, seed: int, groups: list[int] | None = None) -> dict:
    """Random inputs at ``sizes`` (grouped: ``groups`` rows per group), C poisoned unless beta reads it."""
    g = k.plan.spec.params.gemm
    arrays = get_op("gemm").random_inputs(k.plan, sizes, np.random.default_rng(seed))
    if groups is not None:
        masked = g.mode == "masked"
        arrays["counts" if masked else "offsets"][...] = np.asarray(groups) if masked else np.cumsum(groups)
    if g.beta == 0:
        poison(arrays["C"])
    return arrays


def _check(k: Kernel, arrays: dict, sizes: dict, label: str) -> None:
    before = {n: (v.copy() if v is not None else None) for n, v in arrays.items()}
    out = k(**arrays)
    ref = get_op("gemm").reference(k.plan, before, sizes)["C"]
    err = relative_error(to_float64(out, k.plan.abi["C"].dtype), ref)
    tol = get_op("gemm").tolerance(k.plan, "C")
    assert err <= tol, f"{label}: relative error {err:.3e} > {tol:.1e}"


DENSE = [n for n in KERNELS if n.startswith("res_") and n not in ("res_grouped", "res_masked")]
GATED = [n for n in KERNELS if n.startswith("glu_") and n not in ("glu_grouped", "glu_masked")]
GLU_SHAPES = [(1, 16, 1), (37, 48, 19), (70, 7, 45), (1, 128, 70), (65, 96, 0)]


@needs_clang
@pytest.mark.parametrize("name", DENSE)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_residual_against_float64(kernels, name, shape):
    k = kernels[name]
    M, N, K = shape
    sizes = {"M": M, "N": N, "K": K} | ({"batch": 3} if k.plan.spec.params.gemm.batched else {})
    _check(k, _inputs(k, sizes, seed=M + N + K), sizes, f"{name} {shape}")


@needs_clang
@pytest.mark.parametrize("name", ["res_bias_gelu", "res_splitk", "res_i8"])
def test_residual_in_place(kernels, name):
    """C may be the very same view as R: C = chain(...) + C, each element read before it is written."""
    k = kernels[name]
    sizes = {"M": 45, "N": 38, "K": 21}
    arrays = _inputs(k, sizes, seed=3)
    before = {n: (v.copy() if v is not None else None) for n, v in arrays.items()}
    arrays["C"] = arrays["residual"]
    out = k(**arrays)
    assert out is arrays["residual"]
    ref = get_op("gemm").reference(k.plan, before, sizes)["C"]
    assert relative_error(to_float64(out, k.plan.abi["C"].dtype), ref) <= get_op("gemm").tolerance(k.plan, "C")


@needs_clang
@pytest.mark.parametrize("name", GATED)
@pytest.mark.parametrize("shape", GLU_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gated_against_float64(kernels, name, shape):
    """Awkward sizes: M = 1, N below one tile (N = 7: the tile's N / 2 outputs mostly past N), K tails and K = 0."""
    k = kernels[name]
    M, N, K = shape
    if k.plan.spec.params.gemm.gate == "interleaved" and N % k.plan.spec.params.gemm.gate_block:
        N = k.plan.spec.params.gemm.gate_block  # (whole blocks)
    sizes = {"M": M, "N": N, "K": K}
    arrays = _inputs(k, sizes, seed=M * 7 + N + K)
    assert arrays["B"].shape == (K, 2 * N) and arrays["C"].shape == (M, N)
    _check(k, arrays, sizes, f"{name} {M}x{N}x{K}")


@needs_clang
@pytest.mark.parametrize("name", ["glu_splitk", "glu_streamk_waves", "glu_splitk_il16"])
def test_gated_pieces_leave_the_workspace_zero(kernels, name):
    """Split-K / stream-K pieces of a gated tile write the raw gate and up sums of every column of B's tile; the
    tile's finisher pairs them and zeroes them all, those of outputs past N (a row's last tile) too."""
    k = kernels[name]
    for M, N, K in [(37, 48, 19), (70, 16, 45), (5, 80, 130)]:
        sizes = {"M": M, "N": N, "K": K}
        arrays = _inputs(k, sizes, seed=M + N + K)
        ws = np.zeros(max(1, k.workspace_bytes(**sizes)), np.uint8)
        before = {n: (v.copy() if v is not None else None) for n, v in arrays.items()}
        out = k(**arrays, workspace=ws)
        ref = get_op("gemm").reference(k.plan, before, sizes)["C"]
        err = relative_error(to_float64(out, k.plan.abi["C"].dtype), ref)
        assert err <= get_op("gemm").tolerance(k.plan, "C"), (name, M, N, K, err)
        assert not ws.any(), (name, M, N, K, "workspace not zero-filled after the call")
    # an infinity in A: B's zero-filled columns past N then sum to NaN in the slots (inf * 0); still zero after
    sizes = {"M": 9, "N": 16, "K": 20}
    arrays = _inputs(k, sizes, seed=5)
    arrays["A"][0, 0] = 0x7F80 if arrays["A"].dtype == np.uint16 else np.inf  # (bf16 arrays hold their bits)
    ws = np.zeros(max(1, k.workspace_bytes(**sizes)), np.uint8)
    k(**arrays, workspace=ws)
    assert not ws.any(), (name, "workspace not zero-filled after a call with an infinity in A")


@needs_clang
@pytest.mark.parametrize("name", ["res_grouped", "res_masked", "glu_grouped", "glu_masked"])
@pytest.mark.parametrize("groups", GROUPS, ids=lambda g: "-".join(map(str, g)) or "none")
def test_grouped_and_masked(kernels, name, groups):
    """MoE layouts: B per group (gated: groups x K x 2 N), empty groups, a single group, rows past the last offset."""
    k = kernels[name]
    masked = k.plan.spec.params.gemm.mode == "masked"
    sizes = {"M": max(groups, default=0) if masked else sum(groups) + 3, "N": 40, "K": 37, "groups": len(groups)}
    arrays = _inputs(k, sizes, seed=len(groups), groups=groups)
    before = {n: (v.copy() if v is not None else None) for n, v in arrays.items()}
    out = k(**arrays)
    ref = get_op("gemm").reference(k.plan, before, sizes)["C"]
    got = to_float64(out, k.plan.abi["C"].dtype)
    covered = ~np.isnan(ref) if ref.dtype.kind == "f" else np.ones(ref.shape, bool)
    assert relative_error(got[covered], ref[covered]) <= get_op("gemm").tolerance(k.plan, "C"), (name, groups)


@needs_clang
def test_residual_of_the_wrong_dtype_or_shape_is_refused(kernels):
    k = kernels["res_bias_gelu"]
    sizes = {"M": 20, "N": 30, "K": 10}
    arrays = _inputs(k, sizes, seed=1)
    bad = dict(arrays, residual=arrays["residual"].astype(np.float32))
    with pytest.raises(CkgenError, match="residual has dtype float32"):
        k(**bad)
    bad = dict(arrays, residual=arrays["residual"][:19])
    with pytest.raises(CkgenError, match="residual"):
        k(**bad)
    bad = {n: v for n, v in arrays.items() if n != "residual"}
    with pytest.raises(CkgenError, match="pass residual"):
        k(**bad)


@needs_clang
def test_gated_bad_shapes_are_refused(kernels):
    """B's columns must be twice C's (an odd count, or a mismatch, names B / C); interleaved(b) needs N a multiple of
    b. Nothing is launched: C keeps its poison."""
    k = kernels["glu_rowb_il16"]
    arrays = _inputs(k, {"M": 5, "N": 32, "K": 9}, seed=2)
    rng = np.random.default_rng(0)
    odd = dict(arrays, B=rng.standard_normal((9, 63)).astype(np.float16))
    with pytest.raises(CkgenError, match=r"B has shape \(9, 63\): its dim 2\*N must be a multiple of 2"):
        k(**odd)
    wide = dict(arrays, B=rng.standard_normal((9, 66)).astype(np.float16))
    with pytest.raises(CkgenError, match="N differ"):
        k(**wide)
    k24 = _inputs(k, {"M": 5, "N": 24, "K": 9}, seed=3)
    before = k24["C"].copy()
    with pytest.raises(CkgenError, match="N = 24 must be a multiple of 16"):
        k(**k24)
    assert np.array_equal(k24["C"].view(np.uint8), before.view(np.uint8))


GLU = "A = f16 row B = f16 col C = f16 row tile = 32x64x16 waves = 1x1"


@pytest.mark.parametrize("body,match,where", [
    (f"{GLU} gate = interleaved(48)\n epilogue = swiglu", "the block must be a power of two", "gate"),
    (f"{GLU} gate = halves\n epilogue = gelu", "only a gated epilogue", "gate"),
    (f"{GLU} beta = 1.0\n epilogue = swiglu", "a gated epilogue takes beta = 0", "beta"),
    (f"{GLU} epilogue = swiglu -> relu", "only a residual may follow a gated op", "relu"),
    (f"{GLU} epilogue = relu -> swiglu", "only a bias may come before a gated op", "swiglu"),
    (f"{GLU} gate = interleave(64)\n epilogue = swiglu", "did you mean 'interleaved'", "gate"),
])
def test_gated_dsl_errors_are_located(body, match, where):
    with pytest.raises(SpecError, match=match) as exc:
        load_text(f"kernel k {{ {body} }}", "t.ck", ("gfx942",))
    assert "t.ck:" in exc.value.render() and where in exc.value.render()


@pytest.mark.parametrize("arch,body,param,match", [
    ("gfx942", "A = f16 row B = f16 col C = f16 row tile = 32x96x16 waves = 1x1 gate = interleaved(32) "
               "epilogue = swiglu", "gate", "half a wave's N extent"),
    ("gfx942", "A = f16 row B = f16 col C = f16 row tile = 32x32x16 waves = 1x1 instr = 32x32x8 epilogue = swiglu",
     "tile", "gate and up fragments"),
    ("sm_90", "A = bf16 row B = bf16 row C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4 "
              "gate = interleaved(32) epilogue = swiglu", "gate", "boxes of 64 columns"),
])
def test_gated_plan_errors_name_the_parameter(arch, body, param, match):
    from ckgen.errors import ValidationError
    from ckgen.lower import plan_kernel

    (spec,) = load_text(f"kernel k {{ {body} }}", "t.ck", (arch,))
    with pytest.raises(ValidationError, match=match) as exc:
        plan_kernel(spec, arch)
    assert exc.value.param == param


def test_gated_abi_and_launch():
    """B is K x 2*N (its leading dimension at least 2 N when row-major), bias(col) 2 N; the grid walks C's N in
    tiles of half the tile's N; auto picks one workgroup per tile; ungated kernels keep their JSON."""
    plan = plan_for(_source("glu_rowb_il16"), "glu_rowb_il16", "amd", "gfx942")
    abi = plan.abi
    assert abi["B"].dims == ("K", "2*N") and abi["bias"].dims == ("2*N",) and abi["C"].dims == ("M", "N")
    assert abi["ldb"].at_least == ("2*N",) and abi.divides == ((16, "N"),)
    assert plan.launch.grid[0].size == "N" and plan.launch.grid[0].per == 32
    auto = plan_for("target gfx942\nkernel a { A = f16 row B = f16 col C = f16 row tile = 32x64x16 waves = 1x1 "
                    "schedule = auto epilogue = swiglu }", "a", "amd", "gfx942")
    assert auto.body.schedule is None and auto.abi.workspace is None
    assert plan.spec.params.gemm.to_json()["gate"] == {"form": "interleaved", "block": 16}


@pytest.mark.parametrize("chain,match", [
    ("residual -> gelu", "residual takes no arguments and ends the chain"),
    ("residual(col)", "residual takes no arguments"),
    ("bias(col) -> resid", "did you mean 'residual'"),
])
def test_residual_chain_errors_are_located(chain, match):
    with pytest.raises(SpecError, match=match) as exc:
        load_text(f"kernel k {{ A = f16 row B = f16 col C = f16 row tile = 32x32x16 waves = 1x1\n"
                  f"  epilogue = {chain} }}", "t.ck", ("gfx942",))
    assert "t.ck:2:" in exc.value.render()


def test_residual_abi_follows_c():
    """R is an input after the bias (and scales), with C's dtype, dims and strides (ldc, stride_c); C may alias it."""
    plan = plan_for(_source("res_batched"), "res_batched", "amd", "gfx942")
    names = [a.name for a in plan.abi.args]
    assert names[:6] == ["A", "B", "C", "bias", "residual", "M"]
    r, c = plan.abi["residual"], plan.abi["C"]
    assert (r.dtype, r.dims, r.strides, r.role) == (c.dtype, c.dims, c.strides, "in")
    assert c.aliases == ("residual",)
    plain = plan_for("target gfx942\nkernel p { A = f16 row B = f16 col C = f16 row tile = 32x32x16 waves = 1x1 }",
                     "p", "amd", "gfx942")
    assert "residual" not in [a.name for a in plain.abi.args] and "residual" not in str(plain.spec.params.to_json())


RUNG1_CK = """
kernel r1_res { A = f16 row B = f16 col C = f16 row tile = 64x64x32 waves = 2x2 epilogue = bias(col) -> gelu -> residual }
kernel r1_glu_sk { A = bf16 row B = bf16 col C = bf16 row tile = 64x128x32 waves = 2x2 schedule = splitk
                   epilogue = swiglu -> residual }
kernel r1_glu_stk { A = f16 row B = f16 row C = f16 row tile = 64x128x32 waves = 2x2 schedule = streamk
                    gate = interleaved(32) epilogue = bias(col) -> geglu }
kernel r1_glu { A = bf16 row B = bf16 row C = bf16 row tile = 64x128x32 waves = 2x2 mode = grouped
                gate = interleaved(32) epilogue = bias(col) -> swiglu -> residual }
"""


@pytest.mark.parametrize("arch,clang", RUNG1_ARCHES)
def test_fused_kernels_compile_with_their_mfma_and_no_spills(tmp_path, arch, clang):
    """Rung 1: the residual and gated epilogues in AMD code objects, the planned MFMA in the main loop, no spills."""
    amd_library(tmp_path, "fused", RUNG1_CK, arch, clang)
    header = (tmp_path / "out" / "fused.h").read_text()
    assert "const void* residual" in header


NV_CK = """
target sm_90
kernel hop_glu { A = bf16 row B = bf16 col C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
                 epilogue = bias(col) -> swiglu -> residual }
kernel hop_glu_m { A = f16 row B = f16 row C = f16 row tile = 64x128x64 waves = 1x4 lds_buffers = 4 mode = masked
                   gate = interleaved(64) epilogue = geglu }
kernel hop_glu_stk { A = bf16 row B = bf16 col C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
                     schedule = streamk epilogue = swiglu }
kernel hop_glu_sk { A = bf16 row B = bf16 col C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
                    schedule = splitk epilogue = bias(col) -> swiglu -> residual }
"""


def test_nvidia_build_of_fused_kernels(tmp_path):
    """nvcc (sm_90), compile only: both entries of gated / residual kernels (mma.sync, and the Hopper body's
    `<name>_tma` with wgmma) build without spills."""
    assert_entries_clean(sm90_library(tmp_path, "nvf", NV_CK))


def test_multiplied_dims_of_the_abi():
    """``k*NAME`` dims (a gated B's ``2*N``): parts, values, and what the older form readers refuse."""
    from ckgen.ir.abi import dim_parts, dim_value, split_dim

    assert dim_parts("2*N") == ("N", 2, 0) and dim_parts("batch+1") == ("batch", 1, 1) and dim_parts(64) == (None, 0, 64)
    assert dim_value("2*N", {"N": 7}) == 14 and dim_value("M", {"M": 3}) == 3
    for bad in ("N*2", "1*N", "x*N"):
        with pytest.raises(ValueError):
            dim_parts(bad)
    with pytest.raises(ValueError, match="dim_parts"):
        split_dim("2*N")


@needs_clang
def test_gated_family_dispatches_on_the_output_n():
    """A family of gated kernels: one dispatcher whose call takes C's N (B has 2 N columns)."""
    import ckgen

    text = ("target gfx942\nfamily fg { A = f16 row B = f16 col C = f16 row waves = 1x1 epilogue = swiglu -> residual\n"
            "  tile in [32x64x16, 16x32x32] }\n")
    f = ckgen.jit(text, kernel="fg", target="emu")
    rng = np.random.default_rng(5)
    M, N, K = 19, 40, 23
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = np.asfortranarray(rng.standard_normal((K, 2 * N)).astype(np.float16))
    r = rng.standard_normal((M, N)).astype(np.float16)
    c = f(A=a, B=b, residual=r)
    h = a.astype(np.float64) @ b.astype(np.float64)
    want = h[:, :N] / (1 + np.exp(-h[:, :N])) * h[:, N:] + r
    assert c.shape == (M, N) and relative_error(c.astype(np.float64), want) < 5e-3


@pytest.mark.parametrize("epilogue,per_warp", [
    ("swiglu", 2 * 2048),                    # 128 columns of C per tile: 2 TMA-store boxes of 16 x 64 per warp
    ("residual", 4 * 2048),                  # 256 columns and a residual: TMA stores, R copied into the boxes
    ("swiglu -> residual", 2 * 2048),        # 128 columns with a residual: the same
    ("none", 4 * 2048),
])
def test_hopper_body_plans_the_epilogue_staging(epilogue, per_warp):
    """The Hopper body's shared memory (kTmaSmemBytes, checked against the body by a static_assert): the staging of
    the TMA-store epilogue follows C's columns per tile (half the tile's N when gated), with or without a
    residual."""
    from ckgen.lower import plan_kernel

    (spec,) = load_text("kernel k { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 "
                        f"lds_buffers = 4 epilogue = {epilogue} }}", "t.ck", ("sm_90",))
    p = plan_kernel(spec, "sm_90")
    tma = p.body.tma
    stage = (128 + 256) * 64 * 2 + 16
    bars_end = tma.stages * stage
    epi_offset = -(-bars_end // 1024) * 1024
    assert tma.smem_bytes == 1024 + epi_offset + 8 * per_warp
