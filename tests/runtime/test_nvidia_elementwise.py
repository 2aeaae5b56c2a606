"""Generated element-wise kernels on a real NVIDIA GPU (marked ``gpu``: ladder rung 3, runs on the lent H200):
SwiGLU's SiLU(gate) * up on the two halves of one gate-up matrix, a broadcast bias with GELU, three inputs of
three dtypes, misaligned rows, in place, sizes with tails, against float64 torch; and a CUDA graph of the prepared
call. ``bench/elementwise.py`` times them."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel gpu_ew_silu_mul  { op = elementwise a = bf16 b = bf16 expr = silu(a) -> mul(b) }
kernel gpu_ew_bias_gelu { op = elementwise a = f32 b = f32 broadcast = b y = bf16 expr = add(a, b) -> gelu }
kernel gpu_ew_three     { op = elementwise a = f16 b = f32 c = bf16 y = f32 expr = mul(a, b) -> sub(c) -> sigmoid }
"""
_kernels: dict = {}


def kernel(name):
    from ckgen.runtime.api import jit

    if name not in _kernels:
        _kernels[name] = jit(SPEC, kernel=name, target="sm_90")
    return _kernels[name]


def rel(got, want):
    return float((got.double() - want).norm() / want.norm())


@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 7), (5, 4099), (64, 14336), (2, 100003)])
def test_silu_mul_on_the_halves_of_a_gate_up_matrix(rows, cols):
    g = torch.Generator(device="cuda").manual_seed(cols)
    gu = torch.randn(rows, 2 * cols, generator=g, device="cuda").bfloat16()
    a, b = gu[:, :cols], gu[:, cols:]
    y = kernel("gpu_ew_silu_mul")(a, b)
    want = torch.nn.functional.silu(a.double()) * b.double()
    assert y.dtype == torch.bfloat16 and rel(y, want) < 1e-2


def test_misaligned_rows_in_place_and_empty():
    k = kernel("gpu_ew_silu_mul")
    g = torch.Generator(device="cuda").manual_seed(1)
    big = torch.randn(4, 3001, generator=g, device="cuda").bfloat16()
    a, b = big[:, 1:1001], big[:, 2001:3001]
    want = torch.nn.functional.silu(a.double()) * b.double()
    assert rel(k(a, b), want) < 1e-2
    x = torch.randn(3, 1000, generator=g, device="cuda").bfloat16()
    w = torch.randn(3, 1000, generator=g, device="cuda").bfloat16()
    want = torch.nn.functional.silu(x.double()) * w.double()
    assert k(x, w, y=x) is x and rel(x, want) < 1e-2
    assert k(x[:0], w[:0]).shape == (0, 1000)


def test_broadcast_bias_and_three_dtypes():
    g = torch.Generator(device="cuda").manual_seed(2)
    a = torch.randn(33, 1027, generator=g, device="cuda")
    bias = torch.randn(1027, generator=g, device="cuda")
    y = kernel("gpu_ew_bias_gelu")(a, bias)
    want = torch.nn.functional.gelu(a.double() + bias.double(), approximate="tanh")
    assert y.dtype == torch.bfloat16 and rel(y, want) < 1e-2
    x = torch.randn(7, 513, generator=g, device="cuda").half()
    s = torch.randn(7, 513, generator=g, device="cuda")
    c = torch.randn(7, 513, generator=g, device="cuda").bfloat16()
    y = kernel("gpu_ew_three")(x, s, c)
    want = torch.sigmoid(x.double() * s.double() - c.double())
    assert y.dtype == torch.float32 and rel(y, want) < 1e-5


def test_the_prepared_call_captures_in_a_cuda_graph():
    k = kernel("gpu_ew_silu_mul")
    a = torch.randn(256, 4096, device="cuda").bfloat16()
    b = torch.randn(256, 4096, device="cuda").bfloat16()
    k(a, b)
    k(a, b)  # prepared
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        k(a, b)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = k(a, b)
    a.copy_(torch.randn_like(a))
    graph.replay()
    torch.cuda.synchronize()
    want = torch.nn.functional.silu(a.double()) * b.double()
    assert rel(out, want) < 1e-2
