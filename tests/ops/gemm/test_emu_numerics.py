"""Numerics of generated GEMM kernels on the emulator (ladder rung 2), against the op's float64 reference.

Coverage: every dtype (f16, bf16, f32, i8 -> i32 or i8), every A/B layout pair, each epilogue op (bias row/col,
relu, gelu, silu, alpha/beta), C past its range (f16: inf), integer C's rounding, and several tile / wave /
instruction / pipeline configurations per dtype on gfx908, gfx90a, gfx942 and gfx950. Shapes: fixed edge cases (1x1x1, K smaller than the tile's
K, primes, one large dimension) plus Hypothesis draws. Outputs are poisoned (0xFF bytes) before each
run; padded leading dimensions keep poisoned padding that must survive. Each configuration is compiled
once (through the build cache) and reused for every shape.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ckgen.ir.arrays import to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.registry import get_op
from ckgen.ir.types import DType, Layout
from ckgen.runtime.api import Kernel, numpy_dtype, plan_for
from tests.ops.gemm.helpers import emu_kernels, needs_clang

pytestmark = needs_clang

# name -> (arch, DSL body). Each line of the body is one kernel parameter.
CONFIGS: dict[str, tuple[str, str]] = {
    "f16_rr_db": ("gfx942", "A = f16 row\nB = f16 row\nC = f16 row\ntile = 128x128x32\nwaves = 2x2\n"
                            "instr = 32x32x8\nlds_buffers = 2\nprefetch = 1"),
    "f16_cc_16x16": ("gfx90a", "A = f16 col\nB = f16 col\nC = f32 col\ntile = 64x64x32\nwaves = 2x2\n"
                               "instr = 16x16x16\nlds_buffers = 1\nprefetch = 0"),
    "f16_rc_bias_gelu": ("gfx942", "A = f16 row\nB = f16 col\nC = f16 row\nalpha = 0.5\nbeta = 0.25\n"
                                   "tile = 64x128x32\nwaves = 1x2\nepilogue = bias(col) -> gelu"),
    "f16_cr_biasrow_relu": ("gfx908", "A = f16 col\nB = f16 row\nC = f16 row\ntile = 32x32x16\nwaves = 1x1\n"
                                      "instr = 32x32x8\nepilogue = bias(row) -> relu"),
    "f16_gfx950": ("gfx950", "A = f16 row\nB = f16 col\nC = f16 row\ntile = 64x64x64\nwaves = 2x2\n"
                             "instr = 16x16x32"),
    "bf16_rc_silu": ("gfx942", "A = bf16 row\nB = bf16 col\nC = bf16 row\ntile = 64x64x32\nwaves = 2x2\n"
                               "instr = 32x32x8\nepilogue = silu"),
    "bf16_cr_gfx908": ("gfx908", "A = bf16 col\nB = bf16 row\nC = f32 col\ntile = 64x64x16\nwaves = 2x2\n"
                                 "instr = 32x32x4"),
    "bf16_rr_beta": ("gfx90a", "A = bf16 row\nB = bf16 row\nC = f32 row\nbeta = 1.0\ntile = 64x32x32\n"
                               "waves = 2x1\ninstr = 16x16x16\nlds_buffers = 2"),
    "f32_rr": ("gfx942", "A = f32 row\nB = f32 row\nC = f32 row\ntile = 64x64x16\nwaves = 2x2\ninstr = 16x16x4\n"
                         "lds_buffers = 1\nprefetch = 0\nvec_a = 4\nvec_b = 4"),
    "f32_cc_bias": ("gfx90a", "A = f32 col\nB = f32 col\nC = f32 col\ntile = 64x64x8\nwaves = 1x2\ninstr = 32x32x2\n"
                              "epilogue = bias(col)"),
    "i8_rc": ("gfx942", "A = i8 row\nB = i8 col\nC = i32 row\ntile = 128x128x64\nwaves = 2x2\ninstr = 32x32x16\n"
                        "lds_buffers = 2"),
    "i8_cr_alpha_beta": ("gfx90a", "A = i8 col\nB = i8 row\nC = i32 col\nalpha = 3.0\nbeta = 2.0\n"
                                   "tile = 64x64x32\nwaves = 2x2\ninstr = 16x16x16"),
    # i8 C through the f32 epilogue: alpha = 0.5 makes half of the sums ties, which silu keeps ties in f32 from 17 up
    "i8_i8c_half_silu": ("gfx90a", "A = i8 row\nB = i8 col\nC = i8 row\nalpha = 0.5\ntile = 32x32x32\n"
                                   "waves = 1x1\nepilogue = silu"),
    # f16 C past its range: many products times 30000 pass 65504, stored as inf by the kernel and by the reference
    "f16_overflow": ("gfx942", "A = f16 row\nB = f16 col\nC = f16 row\nalpha = 30000.0\ntile = 32x32x32\n"
                               "waves = 1x1"),
    # CK's CShuffleV2 256x256x32 tuples: 256 accumulators per lane (pinned in the AGPR file on the chip), 64 KiB of LDS
    "f16_rc_ck256": ("gfx942", "A = f16 row\nB = f16 col\nC = f16 row\nacc = f32\ntile = 256x256x32\nwaves = 2x2\n"
                               "instr = 32x32x8"),
    "bf16_rr_ck256": ("gfx90a", "A = bf16 row\nB = bf16 row\nC = bf16 row\nacc = f32\ntile = 256x256x32\nwaves = 2x2\n"
                                "instr = 32x32x8"),
    # strided-batched (issue 10): every operand has a batch dimension and a batch stride
    "f16_batched_bias": ("gfx942", "A = f16 row\nB = f16 col\nC = f16 row\ntile = 64x64x32\nwaves = 2x2\n"
                                   "batched = true\nepilogue = bias(col) -> relu"),
    "bf16_batched_beta": ("gfx90a", "A = bf16 col\nB = bf16 row\nC = f32 col\nbeta = 0.5\ntile = 64x32x32\n"
                                    "waves = 2x1\nbatched = true"),
}


def _source(name: str) -> str:
    arch, body = CONFIGS[name]
    return f"target {arch}\nkernel {name} {{\n" + "\n".join("  " + line for line in body.splitlines()) + "\n}\n"


@pytest.fixture(scope="module")
def kernels() -> dict[str, Kernel]:
    return emu_kernels({n: (CONFIGS[n][0], _source(n)) for n in CONFIGS})


def _padded(arr: np.ndarray, row_major: bool, pad: int) -> np.ndarray:
    """A copy of ``arr`` as a view into a larger buffer whose extra lines/columns are poisoned."""
    rows, cols = arr.shape
    if row_major:
        buf = np.empty((rows, cols + pad), arr.dtype)
        buf.view(np.uint8).fill(0xFF)
        view = buf[:, :cols]
    else:
        buf = np.empty((cols, rows + pad), arr.dtype)
        buf.view(np.uint8).fill(0xFF)
        view = buf[:, :rows].T
    view[...] = arr
    return view


def check_shape(gemm: Kernel, M: int, N: int, K: int, seed: int, pad: int = 0, batch: int = 1,
                broadcast: str = "") -> None:
    """One call at M x N x K (x batch) against the float64 reference. ``pad``: every matrix a view into a
    larger buffer with poisoned padding, which must survive. ``broadcast``: operands passed without their batch
    dimension (batch stride 0)."""
    plan = gemm.plan
    g = plan.spec.params.gemm
    op = get_op("gemm")
    rng = np.random.default_rng(seed)
    sizes = {"M": M, "N": N, "K": K} | ({"batch": batch} if g.batched else {})
    ops = op.random_inputs(plan, sizes, rng)
    for name in broadcast:
        ops[name] = ops[name][0]
    C = ops["C"]
    if pad:
        ops["A"] = _padded(ops["A"], g.a.layout == Layout.ROW, pad)
        ops["B"] = _padded(ops["B"], g.b.layout == Layout.ROW, pad)
        C = _padded(C, g.c.layout == Layout.ROW, pad)
        base = C.base if C.base is not None else C
        pad_before = base.copy()
    else:
        assert g.beta != 0 or np.all(C.ravel(order="K").view(np.uint8) == 0xFF)  # poisoned
    before = {k: (v.copy() if v is not None else None) for k, v in ops.items()} | {"C": C.copy()}
    out = gemm(A=ops["A"], B=ops["B"], C=C, bias=ops["bias"])
    assert out is C
    ref = op.reference(plan, before, sizes)["C"]
    err = relative_error(to_float64(C, g.c.dtype), ref)
    tol = op.tolerance(plan, "C")
    assert err <= tol, f"{gemm.name} {M}x{N}x{K}x{batch} (pad {pad}): relative error {err:.3e} > {tol:.1e}"
    if pad:
        mask = np.ones(base.shape, bool)
        rows, cols = (M, N) if g.c.layout == Layout.ROW else (N, M)
        mask[:rows, :cols] = False
        assert np.array_equal(base.view(np.uint8)[mask.repeat(base.itemsize, axis=-1)],
                              pad_before.view(np.uint8)[mask.repeat(base.itemsize, axis=-1)]), "padding written"


def _edge_shapes(name: str) -> list[tuple[int, int, int]]:
    tile = [int(x) for x in next(line for line in CONFIGS[name][1].splitlines() if line.startswith("tile")).split("=")[1]
            .strip().split("x")]
    tk = tile[2]
    return [(1, 1, 1), (tile[0] + 3, tile[1] - 1, max(1, tk // 2 - 1)),  # edge tiles, K < tile K
            (97, 61, 131), (13, 7, 1031)]                                  # primes, one large dimension (K)


UNBATCHED = [name for name in CONFIGS if "batched" not in name]
BATCHED = [name for name in CONFIGS if "batched" in name]
EDGE = [(name, s) for name in UNBATCHED for s in _edge_shapes(name)]


@pytest.mark.parametrize(("name", "shape"), EDGE, ids=[f"{n}-{s[0]}x{s[1]}x{s[2]}" for n, s in EDGE])
def test_edge_shapes(kernels, name, shape):
    check_shape(kernels[name], *shape, seed=sum(shape))


@pytest.mark.parametrize("name", BATCHED)
@pytest.mark.parametrize("batch", [1, 3, 17])
def test_batched(kernels, name, batch):
    """Batch 1, 3 and 17 with edge tiles in M, N and a K tail."""
    check_shape(kernels[name], 67, 33, 45, seed=batch, batch=batch)


@pytest.mark.parametrize(("name", "broadcast"), [("f16_batched_bias", "A"), ("f16_batched_bias", "B"),
                                                 ("f16_batched_bias", "bias"), ("bf16_batched_beta", "AB")])
def test_batched_broadcast(kernels, name, broadcast):
    """An operand passed without its batch dimension is shared by every item (batch stride 0)."""
    names = ["bias"] if broadcast == "bias" else list(broadcast)
    check_shape(kernels[name], 40, 70, 21, seed=7, batch=5, broadcast=names)


@pytest.mark.parametrize("name", ["f16_rr_db", "bf16_rr_beta", "i8_cr_alpha_beta", "f32_cc_bias"])
def test_padded_leading_dimensions(kernels, name):
    check_shape(kernels[name], 70, 45, 37, seed=1, pad=5)


@pytest.mark.parametrize("name", ["f16_rc_bias_gelu", "i8_rc", "f16_rc_ck256"])
def test_one_large_dimension(kernels, name):
    check_shape(kernels[name], 1100, 9, 40, seed=2)


shapes = st.tuples(st.integers(1, 200), st.integers(1, 200), st.integers(1, 150))


@pytest.mark.parametrize("name", UNBATCHED)
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(shape=shapes, seed=st.integers(0, 2**31 - 1))
def test_hypothesis_shapes(kernels, name, shape, seed):
    check_shape(kernels[name], *shape, seed=seed)


def test_every_dtype_layout_and_epilogue_is_covered():
    plans = {name: plan_for(_source(name), name, "amd", arch) for name, (arch, _) in CONFIGS.items()}
    gemms = {n: p.spec.params.gemm for n, p in plans.items()}
    dtypes = {g.a.dtype for g in gemms.values()}
    assert {DType.F16, DType.BF16, DType.F32, DType.I8} <= dtypes
    for dt in (DType.F16, DType.BF16, DType.F32, DType.I8):
        layouts = {(g.a.layout, g.b.layout) for g in gemms.values() if g.a.dtype == dt}
        configs = {(p.spec.params.config.tile, p.spec.params.config.waves, p.body.instr.shape)
                   for n, p in plans.items() if gemms[n].a.dtype == dt}
        assert len(configs) >= 2, dt
        if dt == DType.F16:
            assert layouts == {(a, b) for a in Layout for b in Layout}
    ops = {(op.kind, op.axis) for g in gemms.values() for op in g.epilogue}
    assert ops >= {("bias", "row"), ("bias", "col"), ("relu", None), ("gelu", None), ("silu", None)}
    assert {p.arch for p in plans.values()} == {"gfx908", "gfx90a", "gfx942", "gfx950"}
    assert numpy_dtype(DType.BF16) == np.uint16


def test_integer_c_rounds_where_the_kernel_does():
    """The reference's integer C: through a float epilogue, the f32 value rounded half to even (silu(20.5) is the
    tie 20.5 in f32, so 20; float64's 21.4999... alone would round 21.5 down to 21, where f32 gives 22); through
    the integer epilogue, the exact sum (17 758 029 = 1101 x 127^2 is not an f32)."""
    op = get_op("gemm")
    half_silu = plan_for(_source("i8_i8c_half_silu"), "i8_i8c_half_silu", "amd", "gfx90a")
    a = np.array([[41], [43], [3]], np.int8)               # 0.5 x A . B = 20.5, 21.5, 1.5
    c = op.reference(half_silu, {"A": a, "B": np.ones((1, 1), np.int8), "C": None, "bias": None},
                     {"M": 3, "N": 1, "K": 1})["C"]
    assert c.ravel().tolist() == [20.0, 22.0, 1.0]          # silu(1.5) = 1.13: 1
    exact = plan_for(_source("i8_rc"), "i8_rc", "amd", "gfx942")
    k = 1101
    c = op.reference(exact, {"A": np.full((1, k), 127, np.int8), "B": np.full((k, 1), 127, np.int8), "C": None,
                             "bias": None}, {"M": 1, "N": 1, "K": k})["C"]
    assert c.ravel().tolist() == [k * 127 * 127]
