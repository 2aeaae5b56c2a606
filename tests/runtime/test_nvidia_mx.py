"""MX (OCP microscaling) fp8 GEMM on a real NVIDIA GPU (marked ``gpu``: the lent H200; issue 26).

sm_90 has no block-scaled MMA: its mma.sync body folds the E8M0 scales (``scale_a = mx(32)``, ``scale_b = mx(32)``)
per 32-K block in f32 registers. Kernels run on torch float8 operands and uint8 E8M0 scale tensors (exponents
120..134) at edge shapes (M = 1, K not a multiple of 32, ragged N) against a float64 reference of the decoded inputs,
C = sum_kb 2^(sa[m, kb] - 127) 2^(sb[n, kb] - 127) A[m, kb] . B[kb, n] (outputs poisoned by the backend); a CUDA
graph replayed after the scale tensors changed in place gives the new result.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel gpu_mx_e4m3 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 64x64x32  waves = 2x2
  scale_a = mx(32)  scale_b = mx(32) }
kernel gpu_mx_e5m2_bias { A = e5m2 col  B = e5m2 row  C = f32 row  tile = 64x64x32  waves = 2x2
  scale_a = mx(32)  scale_b = mx(32)  epilogue = bias(col) -> relu }
"""
SHAPES = [(1, 1, 1), (1, 70, 100), (17, 33, 7), (129, 257, 65), (300, 200, 1000), (1000, 1100, 300)]
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
    kb = -(-K // 32)
    sa = torch.randint(120, 135, (M, kb), device="cuda", generator=gen, dtype=torch.int32).to(torch.uint8)
    sb = torch.randint(120, 135, (N, kb), device="cuda", generator=gen, dtype=torch.int32).to(torch.uint8)
    bias = torch.randn(N, device="cuda", generator=gen) if g.has_bias else None
    return g, a, b, sa, sb, bias


def reference(a, b, sa, sb, bias):
    K = a.shape[1]
    r = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float64, device="cuda")
    for kb in range(-(-K // 32)):
        ks = slice(32 * kb, min(K, 32 * kb + 32))
        r += (a[:, ks].double() @ b[ks, :].double()) * torch.exp2(sa[:, kb].double() - 127)[:, None] \
            * torch.exp2(sb[:, kb].double() - 127)[None, :]
    if bias is not None:
        r = torch.clamp(r + bias.double()[None, :], min=0)
    return r


def rel(out, ref):
    d = torch.linalg.norm((out.double() - ref).flatten()).item()
    n = torch.linalg.norm(ref.flatten()).item()
    return d / n if n else d


def call(name, a, b, sa, sb, bias):
    named = {"scale_a": sa, "scale_b": sb, **({"bias": bias} if bias is not None else {})}
    return kernel(name)(A=a, B=b, **named)


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
@pytest.mark.parametrize("name", ["gpu_mx_e4m3", "gpu_mx_e5m2_bias"])
def test_against_float64(name, shape):
    gen = torch.Generator(device="cuda").manual_seed(sum(shape))
    g, a, b, sa, sb, bias = operands(name, *shape, gen)
    out = call(name, a, b, sa, sb, bias)
    tol = 1e-4 if g.c.dtype.value == "f32" else 1.6e-2
    assert rel(out, reference(a, b, sa, sb, bias)) <= tol


def test_graph_replay_reads_new_scales():
    gen = torch.Generator(device="cuda").manual_seed(5)
    g, a, b, sa, sb, bias = operands("gpu_mx_e4m3", 96, 80, 200, gen)
    k = kernel("gpu_mx_e4m3")
    c = torch.empty(96, 80, dtype=torch.bfloat16, device="cuda")
    k(A=a, B=b, scale_a=sa, scale_b=sb, C=c)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        k(A=a, B=b, scale_a=sa, scale_b=sb, C=c)
    sa[5:9, 2] += 3
    sb[:, 0] -= 2
    c.view(torch.int16).fill_(-1)
    graph.replay()
    torch.cuda.synchronize()
    assert rel(c, reference(a, b, sa, sb, None)) <= 1.6e-2


def test_bad_scale_tensor_is_refused():
    from ckgen.errors import CkgenError

    gen = torch.Generator(device="cuda").manual_seed(1)
    g, a, b, sa, sb, bias = operands("gpu_mx_e4m3", 8, 8, 64, gen)
    with pytest.raises(CkgenError, match="scale_a"):
        call("gpu_mx_e4m3", a, b, sa.float(), sb, None)
