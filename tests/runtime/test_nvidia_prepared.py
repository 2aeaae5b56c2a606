"""Prepared calls on the cuda backend (marked ``gpu``: runs on the lent device): the second call with a signature
skips binding, computes the same as the float64 reference, falls back to the full checks on aliasing or a view
that breaks alignment, and a CUDA graph captures and replays it."""

from __future__ import annotations

import numpy as np
import pytest

from ckgen.errors import RuntimeFailure

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel prep_f16_rc { A = f16 row  B = f16 col  C = f32 row  tile = 64x64x32  waves = 2x2  lds_buffers = 3
  epilogue = bias(col) }
kernel prep_rms { op = rmsnorm x = f32 max_cols = 1024 }
"""


@pytest.fixture(scope="module")
def kernels():
    import ckgen

    return {n: ckgen.jit(SPEC, kernel=n, target="cuda") for n in ("prep_f16_rc", "prep_rms")}



def _gemm_ops(M=100, N=72, K=48, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.rand((M, K), device="cuda", generator=g).half() - 0.5
    B = (torch.rand((N, K), device="cuda", generator=g).half() - 0.5).t()  # col-major K x N
    bias = torch.rand(N, device="cuda", generator=g) - 0.5
    return A, B, bias


def _rel(got, ref):
    return float(torch.linalg.norm(got.double() - ref) / torch.linalg.norm(ref))


def test_gemm_second_call_skips_bind(kernels, binds):
    g = kernels["prep_f16_rc"]
    for seed in range(3):
        A, B, bias = _gemm_ops(seed=seed)
        C = g(A, B, bias=bias)
        assert _rel(C, A.double() @ B.double() + bias.double()) < 1e-5
    assert binds[0] == 1


def test_rms_fast_path_and_fallbacks(kernels, binds):
    r = kernels["prep_rms"]
    x = torch.randn(33, 512, device="cuda")
    w = torch.rand(512, device="cuda") + 0.5
    for _ in range(3):
        y = r(x, weight=w)
    x64 = x.double()
    ref = x64 / torch.sqrt((x64 ** 2).mean(dim=1, keepdim=True) + 1e-5) * w.double()
    assert float((y.double() - ref).abs().max()) < 1e-4
    assert binds[0] == 1
    with pytest.raises(RuntimeFailure, match="x has dtype"):
        r(x.half(), weight=w)
    buf = torch.randn(34, 512, device="cuda")
    xa, sep = buf[:33], torch.empty(33, 512, device="cuda")
    r(xa, weight=w, y=sep)
    r(xa, weight=w, y=sep)  # prepared with a given y; then y overlapping x (not the same view) on that signature
    with pytest.raises(RuntimeFailure, match="overlaps x"):
        r(xa, weight=w, y=buf[1:])
    before = xa.double() / torch.sqrt((xa.double() ** 2).mean(dim=1, keepdim=True) + 1e-5) * w.double()
    r(xa, weight=w, y=xa)  # in place: the same view, as the ABI allows
    r(xa, weight=w, y=xa)
    assert float((xa.double() - before / torch.sqrt((before ** 2).mean(dim=1, keepdim=True) + 1e-5)
                  * w.double()).abs().max()) < 1e-3
    y2 = r(x[:, 1:257], weight=w[:256])  # another shape, unaligned view: full checks, correct either way
    ref2 = x64[:, 1:257] / torch.sqrt((x64[:, 1:257] ** 2).mean(dim=1, keepdim=True) + 1e-5) * w[:256].double()
    assert float((y2.double() - ref2).abs().max()) < 1e-4


def test_graph_capture_of_prepared_calls(kernels):
    g, r = kernels["prep_f16_rc"], kernels["prep_rms"]
    A, B, bias = _gemm_ops()
    w = torch.rand(72, device="cuda") + 0.5
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            r(g(A, B, bias=bias), weight=w)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = r(g(A, B, bias=bias), weight=w)
    A.copy_(A * 2)
    graph.replay()
    torch.cuda.synchronize()
    C = A.double() @ B.double() + bias.double()
    ref = C / torch.sqrt((C ** 2).mean(dim=1, keepdim=True) + 1e-5) * w.double()
    assert float((out.double() - ref).abs().max()) < 1e-3
    assert np.isfinite(out.cpu().numpy()).all()
