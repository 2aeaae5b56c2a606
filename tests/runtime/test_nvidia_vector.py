"""The GEMM's vector body (``instr = none``) on a real NVIDIA GPU (marked ``gpu``: the lent device; issues 23 / 26).

bf16 with a bias, and e4m3 with tensor, row / column and block(128) scales, nn.Linear's layout (x row-major, the
weight as is), at edge shapes: M = 1, M past the tile's rows, N inside one wave, K = 0, K with a tail, odd K
(unaligned rows: element loads), and a decode projection; against a float64 reference (outputs poisoned by the
backend).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel gpu_vec_bf16 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 4x8x512  waves = 1x4  instr = none
  epilogue = bias(col) }
kernel gpu_vec_f8_tensor { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 1x8x2048  waves = 1x4  instr = none
  scale_a = tensor  scale_b = tensor }
kernel gpu_vec_f8_rowcol { A = e4m3fn row  B = e4m3fn col  C = f32 row  tile = 4x8x1024  waves = 1x4  instr = none
  scale_a = row  scale_b = col }
kernel gpu_vec_f8_block { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 2x8x1024  waves = 1x4  instr = none
  scale_a = block(128)  scale_b = block(128) }
"""
NAMES = ["gpu_vec_bf16", "gpu_vec_f8_tensor", "gpu_vec_f8_rowcol", "gpu_vec_f8_block"]
SHAPES = [(1, 1, 1), (1, 4096, 4096), (3, 33, 7), (5, 257, 1031), (9, 1000, 300), (2, 70, 0), (4, 4608, 3584)]


def kernel(name):
    from ckgen.runtime.api import jit

    return jit(SPEC, kernel=name, target="sm_90")


def operands(name, M, N, K, gen):
    g = kernel(name).plan.spec.params.gemm
    dt = torch.bfloat16 if g.a.dtype.value == "bf16" else torch.float8_e4m3fn
    a = (torch.randn(M, K, device="cuda", generator=gen) * 2).to(dt)
    w = (torch.randn(N, K, device="cuda", generator=gen) * 2).to(dt)
    named = {}
    if g.scale_a == "block":
        kb = -(-K // 128)
        named["scale_a"] = torch.rand(M, kb, device="cuda", generator=gen) + 0.05
        named["scale_b"] = torch.rand(-(-N // 128), kb, device="cuda", generator=gen) + 0.05
    elif g.scaled:
        named["scale_a"] = torch.rand(M if g.scale_a == "row" else 1, device="cuda", generator=gen) + 0.05
        named["scale_b"] = torch.rand(N if g.scale_b == "col" else 1, device="cuda", generator=gen) + 0.05
    if g.has_bias:
        named["bias"] = torch.randn(N, device="cuda", generator=gen).to(torch.bfloat16)
    return g, a, w, named


def reference(g, a, w, named):
    if g.scale_a == "block":
        K = a.shape[1]
        sa = named["scale_a"].double().repeat_interleave(128, dim=1)[:, :K]
        sb = named["scale_b"].double().repeat_interleave(128, dim=0)[: w.shape[0]].repeat_interleave(128, dim=1)[:, :K]
        return torch.einsum("mk,nk,mk,nk->mn", a.double(), w.double(), sa, sb)
    r = a.double() @ w.double().t()
    if g.scaled:
        r = r * named["scale_a"].double().reshape(-1, 1) * named["scale_b"].double().reshape(1, -1)
    if "bias" in named:
        r = r + named["bias"].double()[None, :]
    return r


def rel(out, ref):
    d = torch.linalg.norm((out.double() - ref).flatten()).item()
    n = torch.linalg.norm(ref.flatten()).item()
    return d / n if n else d


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
@pytest.mark.parametrize("name", NAMES)
def test_against_float64(name, shape):
    gen = torch.Generator(device="cuda").manual_seed(sum(shape))
    g, a, w, named = operands(name, *shape, gen)
    out = kernel(name)(A=a, B=w.t(), **named)
    torch.cuda.synchronize()
    tol = 1e-5 if g.c.dtype.value == "f32" else 1.6e-2
    assert rel(out, reference(g, a, w, named)) <= tol
