"""The cuda backend of the JIT API on a real NVIDIA GPU (marked ``gpu``: runs on the lent device).

Every generated kernel below runs on edge shapes (not multiples of the tile, 1x1x1, K below the
tile's K, primes) against a float64 reference, through torch tensors (poisoned outputs allocated by the
backend), CuPy arrays and numpy arrays, with padded leading dimensions, on a side stream; and the
API's errors are checked. ``bench/nv_prebuild.py`` builds these kernels into a cache ahead of a run.
"""

from __future__ import annotations

import numpy as np
import pytest

from ckgen.errors import RuntimeFailure
from tests.runtime.gpu_helpers import launched

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel gpu_bf16_rr { A = bf16 row  B = bf16 row  C = bf16 row  tile = 128x128x32  waves = 2x2  lds_buffers = 4 }
kernel gpu_f16_cc_gelu { A = f16 col  B = f16 col  C = f16 row  tile = 64x128x32  waves = 2x2  lds_buffers = 3
  epilogue = bias(col) -> gelu -> cast(f16) }
kernel gpu_bf16_cr_beta { A = bf16 col  B = bf16 row  C = bf16 col  tile = 64x64x16  waves = 2x2  lds_buffers = 2
  alpha = 0.5  beta = 1.0 }
kernel gpu_f16_rc_rowbias_relu { A = f16 row  B = f16 col  C = f32 row  tile = 128x256x64  waves = 2x4  lds_buffers = 3
  epilogue = bias(row) -> relu -> cast(f32) }
kernel gpu_i8_rc { A = i8 row  B = i8 col  C = i32 row  acc = i32  tile = 64x64x64  waves = 2x2  lds_buffers = 3 }
kernel gpu_i8_rr_i8out { A = i8 row  B = i8 row  C = i8 row  acc = i32  tile = 64x64x64  waves = 2x2  lds_buffers = 3 }
kernel gpu_f32_rr { A = f32 row  B = f32 row  C = f32 row  tile = 64x64x32  waves = 2x2  lds_buffers = 3 }
kernel gpu_bf16_rc_wgmma { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4 }
kernel gpu_f16_rc_wgmma_gelu { A = f16 row  B = f16 col  C = f16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 3
  epilogue = bias(col) -> gelu -> cast(f16) }
kernel gpu_bf16_rr_hopper { A = bf16 row  B = bf16 row  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4 }
kernel gpu_f16_cc_hopper_beta { A = f16 col  B = f16 col  C = f16 col  tile = 128x256x64  waves = 4x2  lds_buffers = 2
  alpha = 0.5  beta = 1.0 }
kernel gpu_bf16_bmm { A = bf16 row  B = bf16 row  C = bf16 row  tile = 128x128x32  waves = 2x2  lds_buffers = 3
  batched = true  epilogue = bias(col) }
kernel gpu_f16_bmm_hopper { A = f16 row  B = f16 col  C = f16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  batched = true }
kernel gpu_bf16_bmm_hopper_mn { A = bf16 col  B = bf16 row  C = f32 row  tile = 128x256x64  waves = 2x4
  lds_buffers = 4  batched = true  beta = 1.0 }
kernel gpu_bf16_rc_hopper64x128 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 64x128x64  waves = 2x2
  lds_buffers = 4 }
kernel gpu_f16_cr_hopper128x128 { A = f16 col  B = f16 row  C = f32 row  tile = 128x128x64  waves = 2x4
  lds_buffers = 4  epilogue = bias(row) -> relu -> cast(f32) }
kernel gpu_bf16_rr_hopper64x256_gelu { A = bf16 row  B = bf16 row  C = bf16 col  tile = 64x256x64  waves = 1x4
  lds_buffers = 3  prefetch = 0  epilogue = bias(col) -> gelu -> cast(bf16) }
kernel gpu_bf16_bmm_hopper128x128 { A = bf16 row  B = bf16 row  C = bf16 row  tile = 128x128x64  waves = 2x4
  lds_buffers = 4  batched = true }
kernel gpu_bf16_rc_hopper_n64 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 64x64x64  waves = 1x4
  lds_buffers = 4  epilogue = bias(col) }
kernel gpu_f16_cr_hopper_n64 { A = f16 col  B = f16 row  C = f32 row  tile = 64x64x64  waves = 1x4  lds_buffers = 4 }
kernel gpu_bf16_rc_hopper_n192 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x192x64  waves = 2x4
  lds_buffers = 4  epilogue = bias(col) }
kernel gpu_f16_cc_hopper_n192_streamk { A = f16 col  B = f16 col  C = f32 row  tile = 128x192x64  waves = 2x4
  lds_buffers = 4  beta = 1.0  schedule = streamk }
kernel gpu_bf16_rc_wgmma_c2 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  cluster = 2 }
kernel gpu_bf16_rr_hopper_c2 { A = bf16 row  B = bf16 row  C = bf16 row  tile = 128x256x64  waves = 2x4
  lds_buffers = 4  cluster = 2 }
kernel gpu_f16_cc_hopper_beta_c2 { A = f16 col  B = f16 col  C = f16 col  tile = 128x256x64  waves = 4x2
  lds_buffers = 2  alpha = 0.5  beta = 1.0  cluster = 2 }
kernel gpu_bf16_rc_hopper64x128_c2 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 64x128x64  waves = 2x2
  lds_buffers = 4  cluster = 2 }
kernel gpu_f16_cr_hopper128x128_c2 { A = f16 col  B = f16 row  C = f32 row  tile = 128x128x64  waves = 2x4
  lds_buffers = 4  epilogue = bias(row) -> relu -> cast(f32)  cluster = 2 }
kernel gpu_f16_bmm_hopper_c2 { A = f16 row  B = f16 col  C = f16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  batched = true  cluster = 2 }
"""

SHAPES = [(1, 1, 1), (17, 33, 7), (129, 257, 65), (300, 200, 1000), (1000, 1100, 300), (256, 512, 640)]
TORCH = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "i8": torch.int8, "i32": torch.int32}
TOL = {"f16": 4e-3, "bf16": 1.6e-2, "f32": 5e-3, "i32": 0.0, "i8": 0.0}


def kernel(name):
    from ckgen.runtime.api import jit

    return jit(SPEC, kernel=name, target="sm_90")


def operand(rows, cols, row_major, dt, pad=0, gen=None):
    shape = (rows, cols + pad) if row_major else (cols, rows + pad)
    if dt in ("i8", "i32"):
        x = torch.randint(-8, 8, shape, device="cuda", generator=gen, dtype=torch.int32).to(TORCH[dt])
    else:
        x = (torch.randn(shape, device="cuda", generator=gen) * 0.5).to(TORCH[dt])
    return x[:, :cols] if row_major else x[:, :rows].t()


def reference(g, plan, a, b, c0, bias):
    gm = plan.spec.params.gemm
    r = g.plan.spec.params.gemm.alpha * (a.double() @ b.double())
    if gm.beta:
        r = r + gm.beta * c0.double()
    for op in gm.epilogue:
        if op.kind == "bias":
            r = r + (bias.double()[None, :] if op.axis == "col" else bias.double()[:, None])
        elif op.kind == "gelu":
            r = 0.5 * r * (1 + torch.tanh(0.7978845608028654 * (r + 0.044715 * r ** 3)))
        elif op.kind == "relu":
            r = torch.clamp(r, min=0)
    if gm.c.dtype.value == "i8":
        r = torch.clamp(torch.round(r), -128, 127)
    return r


def rel(out, ref):
    d = torch.linalg.norm((out.double() - ref).flatten()).item()
    n = torch.linalg.norm(ref.flatten()).item()
    return d / n if n else d


#: the kernels with the Hopper TMA + wgmma body (all four A/B layouts between them)
TMA_NAMES = ["gpu_bf16_rc_wgmma", "gpu_f16_rc_wgmma_gelu", "gpu_bf16_rr_hopper", "gpu_f16_cc_hopper_beta",
             # the smaller Hopper tiles: wgmma m64n128 (TMA-stored C; f32 C through the staged stores, MN-major A
             # and B) and one consumer warpgroup of m64n256 (column-major C)
             "gpu_bf16_rc_hopper64x128", "gpu_f16_cr_hopper128x128", "gpu_bf16_rr_hopper64x256_gelu",
             # the narrow tile for few rows of A: wgmma m64n64 (TMA-stored C with a bias; MN-major A and B, f32 C)
             "gpu_bf16_rc_hopper_n64", "gpu_f16_cr_hopper_n64",
             # 128 x 192 (wgmma m64n192; TMA-stored C with a bias; MN-major A, f32 C with beta = 1, stream-K)
             "gpu_bf16_rc_hopper_n192", "gpu_f16_cc_hopper_n192_streamk",
             # clusters of two M-adjacent tiles sharing B by TMA multicast (K-major B in half-tile boxes, MN-major
             # B in 64-column boxes; the shapes below give odd M tile counts, whose last cluster's second tile
             # lies past M)
             "gpu_bf16_rc_wgmma_c2", "gpu_bf16_rr_hopper_c2", "gpu_f16_cc_hopper_beta_c2",
             "gpu_bf16_rc_hopper64x128_c2", "gpu_f16_cr_hopper128x128_c2"]
NAMES = ["gpu_bf16_rr", "gpu_f16_cc_gelu", "gpu_bf16_cr_beta", "gpu_f16_rc_rowbias_relu", "gpu_i8_rc",
         "gpu_i8_rr_i8out", "gpu_f32_rr", *TMA_NAMES]
#: shapes whose leading dimensions are 16-byte multiples (M, N, K multiples of 8), which the TMA body takes: M, N and
#: K tails, K below one K tile, and more 128 x 256 tiles than the H200 has SMs (the persistent loop; with fewer and
#: with more K tiles per tile than pipeline stages)
TMA_SHAPES = [(8, 8, 8), (129, 264, 72), (200, 520, 8), (385, 776, 1000), (2056, 4104, 136), (2056, 4104, 1000)]


def check_shapes(name, shapes, pad):
    g = kernel(name)
    gm = g.plan.spec.params.gemm
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    dt_in, dt_out = gm.a.dtype.value, gm.c.dtype.value
    for (M, N, K) in shapes:
        a = operand(M, K, gm.a.layout.value == "row", dt_in, pad, gen)
        b = operand(K, N, gm.b.layout.value == "row", dt_in, pad, gen)
        bias = None
        if gm.bias_axis:
            bias = (torch.randn(M if gm.bias_axis == "row" else N, device="cuda", generator=gen) * 0.5).to(TORCH[dt_out])
        c0 = None
        if gm.beta:
            c0 = operand(M, N, gm.c.layout.value == "row", dt_out, pad, gen)
            c = c0.clone() if gm.c.layout.value == "row" else c0.t().clone().t()
            out = g(a, b, bias=bias, C=c)
            assert out is c
        else:
            out = g(a, b, bias=bias)   # the backend allocates a poisoned C
        torch.cuda.synchronize()
        err = rel(out, reference(g, g.plan, a, b, c0, bias))
        assert err == err and err <= TOL[dt_out], (name, M, N, K, pad, err)


@pytest.mark.parametrize("name,pad", [(n, p) for n in NAMES for p in (0, 8, 1)],
                         ids=[f"{n}-pad{p}" for n in NAMES for p in (0, 8, 1)])
def test_torch_edge_shapes(name, pad):
    check_shapes(name, SHAPES, pad)


@pytest.mark.parametrize("name,pad", [(n, p) for n in TMA_NAMES for p in (0, 8)],
                         ids=[f"{n}-pad{p}" for n in TMA_NAMES for p in (0, 8)])
def test_tma_edge_shapes(name, pad):
    check_shapes(name, TMA_SHAPES, pad)


@pytest.mark.parametrize("name", TMA_NAMES)
def test_tma_body_runs_when_aligned(name):
    g = kernel(name)
    assert g.plan.body.tma is not None
    gm = g.plan.spec.params.gemm
    dt = gm.a.dtype.value
    a = operand(264, 136, gm.a.layout.value == "row", dt)
    b = operand(136, 520, gm.b.layout.value == "row", dt)
    n_bias = 264 if gm.bias_axis == "row" else 520
    bias = torch.randn(n_bias, device="cuda").to(TORCH[gm.c.dtype.value]) if gm.bias_axis else None
    c = torch.zeros(264, 520, device="cuda", dtype=TORCH[gm.c.dtype.value])
    c = c if gm.c.layout.value == "row" else c.t().contiguous().t()
    assert f"{name}_tma" in launched(lambda: g(a, b, bias=bias, C=c))
    # an odd leading dimension (not 16-byte aligned): the portable body
    a_odd = operand(264, 136, gm.a.layout.value == "row", dt, pad=1)
    assert name in launched(lambda: g(a_odd, b, bias=bias, C=c))


def test_side_stream_and_padded_output():
    g = kernel("gpu_bf16_rr")
    a = operand(300, 200, True, "bf16")
    b = operand(200, 500, True, "bf16")
    big = torch.full((300, 520), float("nan"), device="cuda", dtype=torch.bfloat16)
    c = big[:, :500]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        g(a, b, C=c)
    g(a, b, C=c, stream=s)          # explicit stream object too
    s.synchronize()
    assert rel(c, a.double() @ b.double()) < 1.6e-2
    assert torch.isnan(big[:, 500:].float()).all()   # padding untouched


def test_numpy_round_trip():
    from ckgen.runtime.api import from_bf16, to_bf16

    g = kernel("gpu_bf16_rr")
    rng = np.random.default_rng(3)
    a = to_bf16(rng.standard_normal((129, 70)).astype(np.float32))
    b = to_bf16(rng.standard_normal((70, 33)).astype(np.float32))
    c = g(a, b)
    assert isinstance(c, np.ndarray) and c.dtype == np.uint16
    ref = from_bf16(a).astype(np.float64) @ from_bf16(b).astype(np.float64)
    got = from_bf16(c).astype(np.float64)
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1.6e-2


def test_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    g = kernel("gpu_f32_rr")
    a = cupy.random.standard_normal((257, 129), dtype=cupy.float32)
    b = cupy.random.standard_normal((129, 65), dtype=cupy.float32)
    c = g(a, b)
    assert isinstance(c, cupy.ndarray)
    ref = cupy.asnumpy(a).astype(np.float64) @ cupy.asnumpy(b).astype(np.float64)
    assert np.linalg.norm(cupy.asnumpy(c) - ref) / np.linalg.norm(ref) < 5e-3


def test_dlpack_object():
    g = kernel("gpu_f32_rr")
    a = torch.randn(40, 30, device="cuda")
    b = torch.randn(30, 20, device="cuda")

    class Wrapped:  # only __dlpack__ / __dlpack_device__
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__()

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    c = torch.empty(40, 20, device="cuda")
    g(Wrapped(a), Wrapped(b), C=c)
    torch.cuda.synchronize()
    assert rel(c, a.double() @ b.double()) < 5e-3


def test_errors_are_clear():
    g = kernel("gpu_bf16_rr")
    a = operand(64, 32, True, "bf16")
    b = operand(32, 48, True, "bf16")
    with pytest.raises(RuntimeFailure, match="torch tensor on cpu"):
        g(a.cpu(), b.cpu())
    with pytest.raises(RuntimeFailure, match="dtype"):
        g(a.half(), b.half())
    with pytest.raises(RuntimeFailure, match="row-major"):
        g(a.t().contiguous().t(), b)
    with pytest.raises(RuntimeFailure, match="their K differ"):
        g(a, operand(33, 48, True, "bf16"))
    with pytest.raises(RuntimeFailure, match="numpy"):
        g(a, b, C=np.zeros((64, 48), np.uint16))
    gb = kernel("gpu_f16_cc_gelu")
    with pytest.raises(RuntimeFailure, match="bias"):
        gb(operand(64, 32, False, "f16"), operand(32, 48, False, "f16"))


# ------------------------------------------------------------------------------ strided-batched GEMM
BMM_NAMES = ["gpu_bf16_bmm", "gpu_f16_bmm_hopper", "gpu_bf16_bmm_hopper_mn", "gpu_bf16_bmm_hopper128x128",
             "gpu_f16_bmm_hopper_c2"]


def batched(batch, rows, cols, row_major, dt, gen):
    """A (batch, rows, cols) tensor whose matrices are row- or column-major, random."""
    x = (torch.randn((batch, rows, cols) if row_major else (batch, cols, rows), device="cuda", generator=gen) * 0.5)
    x = x.to(TORCH[dt])
    return x if row_major else x.transpose(1, 2)


@pytest.mark.parametrize("name", BMM_NAMES)
@pytest.mark.parametrize("batch,M,N,K,broadcast", [(1, 136, 264, 72, ""), (3, 200, 520, 1000, ""),
                                                  (17, 8, 264, 136, ""), (5, 129, 257, 65, ""),
                                                  (4, 264, 136, 200, "A"), (4, 264, 136, 200, "B")])
def test_batched_against_torch(name, batch, M, N, K, broadcast):
    """Batched GEMM vs a float64 batched reference, with edge tiles, K tails, aligned and unaligned shapes (the
    Hopper body takes the aligned ones), and A or B broadcast (passed 2-D: batch stride 0)."""
    g = kernel(name)
    gm = g.plan.spec.params.gemm
    gen = torch.Generator(device="cuda")
    gen.manual_seed(batch * 1000 + M)
    dt, dt_out = gm.a.dtype.value, gm.c.dtype.value
    a = batched(batch, M, K, gm.a.layout.value == "row", dt, gen)
    b = batched(batch, K, N, gm.b.layout.value == "row", dt, gen)
    if broadcast == "A":
        a = a[0]
    if broadcast == "B":
        b = b[0]
    bias = (torch.randn(batch, N, device="cuda", generator=gen) * 0.5).to(TORCH[dt_out]) if gm.bias_axis else None
    c0 = (torch.randn(batch, M, N, device="cuda", generator=gen) * 0.5).to(TORCH[dt_out]) if gm.beta else None
    c = c0.clone() if c0 is not None else None
    out = g(a, b, bias=bias, C=c)
    torch.cuda.synchronize()
    ref = gm.alpha * torch.matmul(a.double(), b.double())
    if c0 is not None:
        ref = ref + gm.beta * c0.double()
    if bias is not None:
        ref = ref + bias.double()[:, None, :]
    ref = ref.expand(batch, M, N)
    err = rel(out, ref)
    assert err == err and err <= TOL[dt_out], (name, batch, M, N, K, broadcast, err)


@pytest.mark.parametrize("name", ["gpu_f16_bmm_hopper", "gpu_bf16_bmm_hopper_mn", "gpu_bf16_bmm_hopper128x128"])
def test_batched_hopper_body_runs_when_aligned(name):
    g = kernel(name)
    assert g.plan.body.tma is not None
    gm = g.plan.spec.params.gemm
    gen = torch.Generator(device="cuda")
    a = batched(3, 264, 136, gm.a.layout.value == "row", gm.a.dtype.value, gen)
    b = batched(3, 136, 520, gm.b.layout.value == "row", gm.b.dtype.value, gen)
    c = torch.zeros(3, 264, 520, device="cuda", dtype=TORCH[gm.c.dtype.value])
    assert f"{name}_tma" in launched(lambda: g(a, b, C=c))
