"""Scaled fp8 GEMM on a real NVIDIA GPU (marked ``gpu``: the lent H200; issue 26).

OCP e4m3 / e5m2 kernels (sm_90, the portable mma.sync body) with per-tensor and per-row / per-column scales run on
torch float8 tensors at edge shapes (M = 1, K not a multiple of the tile's K, primes) against a float64 reference of
the decoded inputs times the scales (outputs poisoned by the backend), and agree with torch._scaled_mm where torch
takes the shape (dimensions multiples of 16). Scales are read at launch: a CUDA graph captured once and replayed
after the scale tensors changed in place gives the new result.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel gpu_f8_tensor { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 128x128x64  waves = 2x4
  lds_buffers = 3  scale_a = tensor  scale_b = tensor }
kernel gpu_f8_rowwise { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 64x128x64  waves = 4x4
  lds_buffers = 3  scale_a = row  scale_b = col }
kernel gpu_f8_e5m2_rowonly_bias { A = e5m2 col  B = e5m2 row  C = f32 col  tile = 64x64x64  waves = 2x2
  scale_a = row  epilogue = bias(col) -> relu }
"""
SHAPES = [(1, 1, 1), (1, 4096, 4096), (17, 33, 7), (129, 257, 65), (300, 200, 1000), (1000, 1100, 300)]
TORCH_SHAPES = [(16, 4096, 4096), (256, 512, 640), (2048, 1024, 4096)]
FP8 = {"e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def kernel(name):
    from ckgen.runtime.api import jit

    return jit(SPEC, kernel=name, target="sm_90")


def operands(name, M, N, K, gen):
    g = kernel(name).plan.spec.params.gemm
    dt = FP8[g.a.dtype.value]
    a = (torch.randn(M, K, device="cuda", generator=gen) * 2).to(dt)
    b = (torch.randn(N, K, device="cuda", generator=gen) * 2).to(dt)
    a = a if g.a.layout.value == "row" else a.t().contiguous().t()
    b = b.t() if g.b.layout.value == "col" else b.t().contiguous()
    sa = (torch.rand(M if g.scale_a == "row" else 1, device="cuda", generator=gen) + 0.05) if g.scale_a else None
    sb = (torch.rand(N if g.scale_b == "col" else 1, device="cuda", generator=gen) + 0.05) if g.scale_b else None
    bias = torch.randn(N, device="cuda", generator=gen) if g.has_bias else None
    return g, a, b, sa, sb, bias


def reference(g, a, b, sa, sb, bias):
    r = a.double() @ b.double()
    if sa is not None:
        r = r * sa.double().reshape(-1, 1)
    if sb is not None:
        r = r * sb.double().reshape(1, -1)
    if bias is not None:
        r = torch.clamp(r + bias.double()[None, :], min=0)
    return r


def rel(out, ref):
    d = torch.linalg.norm((out.double() - ref).flatten()).item()
    n = torch.linalg.norm(ref.flatten()).item()
    return d / n if n else d


def call(name, a, b, sa, sb, bias):
    named = {k: v for k, v in (("scale_a", sa), ("scale_b", sb), ("bias", bias)) if v is not None}
    return kernel(name)(A=a, B=b, **named)


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
@pytest.mark.parametrize("name", ["gpu_f8_tensor", "gpu_f8_rowwise", "gpu_f8_e5m2_rowonly_bias"])
def test_against_float64(name, shape):
    gen = torch.Generator(device="cuda").manual_seed(sum(shape))
    g, a, b, sa, sb, bias = operands(name, *shape, gen)
    out = call(name, a, b, sa, sb, bias)
    tol = 1e-4 if g.c.dtype.value == "f32" else 1.6e-2
    assert rel(out, reference(g, a, b, sa, sb, bias)) <= tol


@pytest.mark.parametrize("shape", TORCH_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in TORCH_SHAPES])
@pytest.mark.parametrize("name", ["gpu_f8_tensor", "gpu_f8_rowwise"])
def test_agrees_with_scaled_mm(name, shape):
    gen = torch.Generator(device="cuda").manual_seed(1)
    g, a, b, sa, sb, _ = operands(name, *shape, gen)
    ta, tb = (sa.reshape(-1, 1), sb.reshape(1, -1)) if g.scale_a == "row" else (sa, sb)
    want = torch._scaled_mm(a, b, scale_a=ta, scale_b=tb, out_dtype=torch.bfloat16)
    got = call(name, a, b, sa, sb, None)
    ref = reference(g, a, b, sa, sb, None)
    assert rel(got, ref) <= 1.6e-2 and rel(want, ref) <= 1.6e-2
    assert rel(got, want.double()) <= 1.6e-2


def test_graph_replay_reads_new_scales():
    gen = torch.Generator(device="cuda").manual_seed(2)
    g, a, b, sa, sb, _ = operands("gpu_f8_rowwise", 256, 384, 512, gen)
    k = kernel("gpu_f8_rowwise")
    c = torch.empty(256, 384, device="cuda", dtype=torch.bfloat16)
    k(a, b, sa, sb, C=c)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        k(a, b, sa, sb, C=c)
    sa.mul_(3.0)
    sb.copy_(sb.flip(0))
    c.view(torch.int16).fill_(-1)
    graph.replay()
    torch.cuda.synchronize()
    assert rel(c, reference(g, a, b, sa, sb, None)) <= 1.6e-2


@pytest.mark.parametrize("where", ["torch_cpu", "numpy"])
@pytest.mark.parametrize("which", ["scale_a", "scale_b"])
def test_scales_on_the_wrong_device_are_refused(which, where):
    """Issue 26's bad input, a scale on the wrong device: a torch CPU tensor, or a numpy array beside CUDA operands,
    is refused naming it before any launch, on a first call and on a call whose other operands hit the prepared
    signature of an earlier good call; the output is left as it was."""
    from ckgen.errors import RuntimeFailure

    gen = torch.Generator(device="cuda").manual_seed(3)
    g, a, b, sa, sb, _ = operands("gpu_f8_rowwise", 64, 128, 256, gen)
    k = kernel("gpu_f8_rowwise")
    c = torch.empty(64, 128, device="cuda", dtype=torch.bfloat16)
    scales = {"scale_a": sa, "scale_b": sb}
    bad = scales[which].cpu() if where == "torch_cpu" else scales[which].cpu().numpy()
    message = f"{which}: a torch tensor on cpu" if where == "torch_cpu" else f"operands {which} are numpy"
    for first in (True, False):
        if not first:
            k(a, b, sa, sb, C=c)  # a good call: the next one's other operands match its prepared signature
            torch.cuda.synchronize()
        c.fill_(float("nan"))
        with pytest.raises(RuntimeFailure, match=message):
            k(a, b, **{**scales, which: bad}, C=c)
        torch.cuda.synchronize()
        assert torch.isnan(c).all()
