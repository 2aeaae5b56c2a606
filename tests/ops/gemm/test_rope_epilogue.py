"""The rotary epilogue of the GEMM (``rope = gptj(head_dim[, rot])``; issue 28 item 3): the qkv projection writes
q and k rotated, columns (2i, 2i + 1) of each head a pair, at each row's position.

Rung 2: the emulator against the float64 reference (ckgen/ops/gemm/reference.py, rope_columns) at awkward sizes
(M, N, K off the tile, N odd, K = 0, rope_cols short of N, partial rotary, a bias before the rotation, f32 C), outputs
poisoned, random inputs and positions; the rotation is checked to be there (the unrotated reference is far), a
position outside the table gives NaNs in that row's rotated columns only. ckgen.rope_interleave turns rotate-half
(neox) weights into this order with q.k unchanged. Bad input: refusals name their parameter (DSL spans, plan
legality), rope_cols not a multiple of head_dim and positions outside the table (host arrays) are CkgenErrors.
Rung 1: gfx90a / gfx942 / gfx950 code objects with the MFMA in the main loop and no spills; nvcc sm_90a (not an AMD
rung): both NVIDIA entries without spills, the Hopper one issuing wgmma.
"""

from __future__ import annotations

import numpy as np
import pytest

import ckgen
from ckgen.errors import CkgenError, SpecError
from ckgen.frontend import load_text
from ckgen.ir.arrays import poison, to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.registry import get_op
from ckgen.ir.rope import Rope, apply
from ckgen.runtime.api import Kernel, plan_for
from tests.ops.gemm.helpers import (
    RUNG1_ARCHES,
    amd_library,
    assert_entries_clean,
    emu_kernels,
    needs_clang,
    sm90_library,
)

# name -> (arch, body): head dims that split tiles (64 in a 32-wide wave tile), partial rotary, bias first
KERNELS = {
    "rope_bf16": ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 64x64x32 waves = 2x2 rope = gptj(128)"),
    "rope_bias_f32": ("gfx90a", "A = f16 row B = f16 row C = f32 row tile = 32x32x16 waves = 1x1 instr = 16x16x16 "
                                "epilogue = bias(col) rope = gptj(64, 32)"),
    "rope_gelu_950": ("gfx950", "A = bf16 col B = bf16 col C = f16 row alpha = 0.5 tile = 32x64x32 waves = 1x2 "
                                "epilogue = bias(col) -> gelu rope = gptj(16)"),
}
# (M, N, K, rope_cols)
SHAPES = [(1, 128, 1, 128), (70, 384, 64, 256), (37, 200, 19, 128), (65, 130, 0, 128), (33, 96, 45, 0), (5, 67, 9, 64)]


def _source(name: str) -> str:
    arch, body = KERNELS[name]
    return f"target {arch}\nkernel {name} {{ {body} }}\n"


@pytest.fixture(scope="module")
def kernels() -> dict[str, Kernel]:
    return emu_kernels({n: (KERNELS[n][0], _source(n)) for n in KERNELS})


def _inputs(k: Kernel, sizes: dict, seed: int) -> dict:
    arrays = get_op("gemm").random_inputs(k.plan, sizes, np.random.default_rng(seed))
    poison(arrays["C"])
    return arrays


def _run(k: Kernel, arrays: dict, rope_cols: int) -> tuple[np.ndarray, dict]:
    before = {n: (v.copy() if v is not None else None) for n, v in arrays.items()}
    out = k(**arrays, rope_cols=rope_cols)
    return to_float64(out, k.plan.abi["C"].dtype), before


@needs_clang
@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_rotary_epilogue_against_float64(kernels, name, shape):
    k = kernels[name]
    M, N, K, cols = shape
    head = k.plan.spec.params.gemm.rope_head
    cols = min(cols, N) // head * head
    sizes = {"M": M, "N": N, "K": K, "rope_cols": cols, "rope_positions": 2048}
    got, before = _run(k, _inputs(k, sizes, seed=M + N + K), cols)
    ref = get_op("gemm").reference(k.plan, before, sizes)["C"]
    tol = get_op("gemm").tolerance(k.plan, "C")
    assert relative_error(got, ref) <= tol, (name, shape)
    if cols and K:  # the rotation is there: the unrotated result is far off in the rotated columns
        flat = get_op("gemm").reference(k.plan, before, {**sizes, "rope_cols": 0})["C"]
        assert relative_error(got[:, :cols], flat[:, :cols]) > 10 * tol, (name, shape)
        np.testing.assert_array_equal(ref[:, cols:], flat[:, cols:])


@needs_clang
def test_a_position_outside_the_table_gives_nans_in_its_row_only(kernels):
    """A device-resident position past the table (the binding checks host arrays; the emulator's call takes them
    as the device would): that row's rotated columns are NaN, every other output as the reference."""
    k = kernels["rope_bf16"]
    sizes = {"M": 9, "N": 256, "K": 16, "rope_cols": 128}
    arrays = _inputs(k, sizes, seed=4)
    before = {n: (v.copy() if v is not None else None) for n, v in arrays.items()}
    call = k.bind(**arrays, rope_cols=128)
    arrays["positions"][3] = arrays["cos_sin"].shape[0] + 5  # what the binding cannot see for a device array
    k.backend.launch(k.handle, call)
    out = to_float64(arrays["C"], k.plan.abi["C"].dtype)
    ref = get_op("gemm").reference(k.plan, before, sizes)["C"]
    assert np.isnan(out[3, :128]).all() and np.isfinite(out[3, 128:]).all()
    keep = np.ones(out.shape, bool)
    keep[3, :128] = False
    assert relative_error(out[keep], ref[keep]) <= get_op("gemm").tolerance(k.plan, "C")


@needs_clang
def test_bad_rotary_inputs_are_refused(kernels):
    k = kernels["rope_bf16"]
    sizes = {"M": 8, "N": 256, "K": 16, "rope_cols": 128}
    arrays = _inputs(k, sizes, seed=2)
    with pytest.raises(CkgenError, match="rope_cols"):
        k(**arrays, rope_cols=100)  # not whole heads
    with pytest.raises(CkgenError, match="rope_cols"):
        k(**arrays)
    bad = dict(arrays, positions=arrays["positions"].copy())
    bad["positions"][0] = -1
    with pytest.raises(CkgenError, match="positions"):
        k(**bad, rope_cols=128)
    with pytest.raises(CkgenError, match="cos_sin"):
        k(**dict(arrays, cos_sin=arrays["cos_sin"][:, :64]), rope_cols=128)
    with pytest.raises(CkgenError, match="positions"):  # the wrong length
        k(**dict(arrays, positions=arrays["positions"][:5]), rope_cols=128)
    with pytest.raises(CkgenError, match="positions"):  # the wrong dtype
        k(**dict(arrays, positions=arrays["positions"].astype(np.int64)), rope_cols=128)


def test_rope_interleave_keeps_q_dot_k():
    """Rotate-half weights interleaved per head: rotating the interleaved q, k by pairs (2i, 2i + 1) gives the same
    q.k as rotating the originals by (i, i + rot / 2), with partial rotary and the bias rows permuted alike."""
    rng = np.random.default_rng(0)
    heads, hd, rot, hidden = 3, 16, 8, 12
    wq, wk = rng.standard_normal((heads * hd, hidden)), rng.standard_normal((heads * hd, hidden))
    x = rng.standard_normal((5, hidden))
    cs = ckgen.rope_table(5, rot).astype(np.float64)
    neox, gptj = Rope("neox", rot), Rope("gptj", rot)

    def qk(w1, w2, rope):
        q = apply((x @ w1.T).reshape(5, heads, hd), cs[:, None, :], rope)
        k = apply((x @ w2.T).reshape(5, heads, hd), cs[:, None, :], rope)
        return np.einsum("shd,thd->hst", q, k)

    iq, ik = (ckgen.rope_interleave(w, hd, rot) for w in (wq, wk))
    np.testing.assert_allclose(qk(iq, ik, gptj), qk(wq, wk, neox), rtol=1e-12, atol=1e-12)
    assert not np.allclose(iq, wq)
    b = np.arange(heads * hd, dtype=np.float64)
    np.testing.assert_array_equal(ckgen.rope_interleave(b, hd, rot)[:hd], [0, 4, 1, 5, 2, 6, 3, 7, *range(8, 16)])
    with pytest.raises(ValueError, match="head_dim"):
        ckgen.rope_interleave(wq[:10], hd)


def _plan_error(body: str, arch: str = "gfx942"):
    with pytest.raises(CkgenError) as info:
        plan_for(f"target {arch}\nkernel r {{ {body} }}\n", "r", "amd" if arch.startswith("gfx") else "nvidia", arch)
    return info.value


BASE = "A = bf16 row B = bf16 col C = bf16 row tile = 64x64x32 waves = 2x2"


@pytest.mark.parametrize("extra,param", [
    ("rope = gptj(128) schedule = streamk", "schedule"),
    ("rope = gptj(128) schedule = splitk(2)", "schedule"),
    ("rope = gptj(128) epilogue = residual", "epilogue"),
    ("rope = gptj(128) epilogue = swiglu", "epilogue"),
    ("rope = gptj(128) batched = true", "batched"),
    ("rope = gptj(128) mode = grouped", "mode"),
])
def test_illegal_combinations_name_their_parameter(extra, param):
    err = _plan_error(f"{BASE} {extra}")
    assert param in err.render() and "rope = gptj(128)" in err.render()


def test_column_major_c_is_refused():
    err = _plan_error("A = bf16 row B = bf16 col C = bf16 col tile = 64x64x32 waves = 2x2 rope = gptj(64)")
    assert "row-major" in err.render()


@pytest.mark.parametrize("value,needle", [("neox(128)", "rope_interleave"), ("gptj(127)", "head_dim must be"),
                                          ("gptj(64, 80)", "2..64"), ("gptj", "expected gptj"), ("yes", "expected")])
def test_bad_rope_values_are_located(value, needle):
    with pytest.raises(SpecError) as info:
        load_text(f"target gfx942\nkernel r {{ {BASE} rope = {value} }}\n")
    text = info.value.render()
    assert needle in text and ":2:" in text


def test_unrotated_kernels_keep_their_abi_and_json():
    plain = plan_for(f"target gfx942\nkernel p {{ {BASE} }}", "p", "amd", "gfx942")
    names = [a.name for a in plain.abi.args]
    assert "positions" not in names and "rope" not in str(plain.spec.params.to_json())
    rot = plan_for(f"target gfx942\nkernel p {{ {BASE} rope = gptj(128, 64) }}", "p", "amd", "gfx942")
    names = [a.name for a in rot.abi.args]
    # (the sizes after K: the dispatcher and the cost model read M, N, K first)
    assert names[4:11] == ["positions", "cos_sin", "M", "N", "K", "rope_positions", "rope_cols"]
    assert names[11:15] == ["lda", "ldb", "ldc", "cs_pos_stride"]
    assert rot.spec.params.to_json()["gemm"]["rope"] == {"style": "gptj", "dim": 64, "head": 128}


def test_the_dispatcher_reads_m_n_k_of_a_rotary_family():
    """A rotary family's dispatcher and cost model see M, N, K as the shape's first sizes (the rotary sizes come
    after them): at the Llama-3-8B qkv shape the model picks the member the plain family picks."""
    from pathlib import Path

    from ckgen.frontend import load_file
    from ckgen.ops.gemm.cost_model import estimate, traits
    from ckgen.runtime.family import family_plans

    ex = load_file(Path(__file__).resolve().parents[3] / "examples" / "llama_layer.ck")
    values = {"M": 2048, "N": 6144, "K": 4096, "rope_positions": 2048, "rope_cols": 5120}
    best = {}
    for fam in ("llama_qkv", "llama_qkv_rope"):
        plans = [p for p in family_plans(ex, fam, "nvidia", "sm_90") if p.body.schedule is None]
        times = {p.spec.params.config.tile: estimate(traits(p), tuple(values[a.name] for a in p.abi.sizes))
                 for p in plans}  # (the sizes in the ABI's order, as the dispatcher passes them)
        best[fam] = min(times, key=times.get)
    assert best["llama_qkv_rope"] == best["llama_qkv"], best


RUNG1_CK = """
kernel r1_rope { A = bf16 row B = bf16 col C = bf16 row tile = 64x64x32 waves = 2x2 epilogue = bias(col) rope = gptj(128) }
kernel r1_rope16 { A = f16 row B = f16 col C = f16 row tile = 64x64x32 waves = 2x2 instr = 16x16x16 rope = gptj(64, 32) }
"""


@pytest.mark.parametrize("arch,clang", RUNG1_ARCHES)
def test_rotary_kernels_compile_with_their_mfma_and_no_spills(tmp_path, arch, clang):
    """Rung 1: the rotary epilogue in AMD code objects, the planned MFMA in the main loop, no spills."""
    amd_library(tmp_path, "rot", RUNG1_CK, arch, clang)
    header = (tmp_path / "out" / "rot.h").read_text()
    assert ("const void* positions, const void* cos_sin, int64_t M, int64_t N, int64_t K, int64_t rope_positions, "
            "int64_t rope_cols, int64_t lda, int64_t ldb, int64_t ldc, int64_t cs_pos_stride, void* stream") in header


NV_CK = """
target sm_90
kernel hop_rope { A = bf16 row B = bf16 col C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
                  epilogue = bias(col) rope = gptj(128) }
kernel hop_rope_f32 { A = f16 row B = f16 col C = f32 row tile = 64x128x64 waves = 1x4 lds_buffers = 4
                      rope = gptj(64, 32) }
"""


def test_nvidia_build_of_rotary_kernels(tmp_path):
    """nvcc (sm_90), compile only: both entries (mma.sync, and the Hopper body's `<name>_tma` with wgmma) build
    without spills."""
    assert_entries_clean(sm90_library(tmp_path, "nvr", NV_CK))
