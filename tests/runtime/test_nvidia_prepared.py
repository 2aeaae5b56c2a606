"""Prepared calls on the cuda backend (marked ``gpu``: runs on the lent device): the second call with a signature
skips binding, computes the same as the float64 reference, falls back to the full checks on aliasing or a view
that breaks alignment, and a CUDA graph captures and replays it.

They are served by the compiled prepared call (ckgen/backends/nvidia/fastcall.cpp): the extension builds; a repeated
signature is launched by it (its ``hits`` count, no binding); every change the signature records (dtype, shape,
strides, alignment, a keyword, a scalar's value) and an output overlapping an input fall back to the Python path's
checks; outputs passed by name are returned as given; a workspace kernel runs on two streams; a family's members are
served by the family; ``CKGEN_FASTCALL=0`` leaves the Python path."""

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
kernel prep_splitk { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  schedule = splitk }
family prep_fam { A = f16 row  B = f16 col  C = f32 row  tile in [64x64x32, 128x128x32]  waves = 2x2
  lds_buffers = 3 }
"""


@pytest.fixture(scope="module")
def kernels():
    import ckgen

    return {n: ckgen.jit(SPEC, kernel=n, target="cuda") for n in ("prep_f16_rc", "prep_rms", "prep_splitk", "prep_fam")}



def _gemm_ops(M=100, N=72, K=48, seed=0, dtype=torch.half):
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = (torch.rand((M, K), device="cuda", generator=g) - 0.5).to(dtype)
    B = (torch.rand((N, K), device="cuda", generator=g) - 0.5).to(dtype).t()  # col-major K x N
    bias = torch.rand(N, device="cuda", generator=g) - 0.5
    return A, B, bias


def _rms_ref(x, w, eps=1e-5):
    x64 = x.double()
    return x64 / torch.sqrt((x64 ** 2).mean(dim=1, keepdim=True) + eps) * w.double()


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
    hits = g.hits
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = r(g(A, B, bias=bias), weight=w)
    assert g.hits == hits + 1  # captured through the compiled prepared call
    A.copy_(A * 2)
    graph.replay()
    torch.cuda.synchronize()
    C = A.double() @ B.double() + bias.double()
    ref = C / torch.sqrt((C ** 2).mean(dim=1, keepdim=True) + 1e-5) * w.double()
    assert float((out.double() - ref).abs().max()) < 1e-3
    assert np.isfinite(out.cpu().numpy()).all()


def test_the_extension_builds_and_serves_repeated_calls(kernels, binds):
    g = kernels["prep_f16_rc"]
    assert g._native is not None, "fastcall.cpp did not build (see the RuntimeWarning)"
    hits = g.hits
    for seed in range(4):
        A, B, bias = _gemm_ops(seed=seed)
        C = g(A, B, bias=bias)
        assert _rel(C, A.double() @ B.double() + bias.double()) < 1e-5
    assert binds[0] <= 1 and g.hits == hits + 4 - binds[0]  # (bound here unless an earlier test prepared it)


def test_changed_signatures_take_the_full_checks(kernels, binds):
    r = kernels["prep_rms"]
    x = torch.randn(33, 512, device="cuda")
    w = torch.rand(512, device="cuda") + 0.5
    r(x, weight=w)
    hits = r.hits
    y = r(x, weight=w)
    assert r.hits == hits + 1 and float((y.double() - _rms_ref(x, w)).abs().max()) < 1e-4
    with pytest.raises(RuntimeFailure, match="x has dtype"):
        r(x.half(), weight=w)
    y2 = r(x[:, 1:257], weight=w[:256])  # another shape, a view that breaks alignment: full checks, correct
    assert float((y2.double() - _rms_ref(x[:, 1:257], w[:256])).abs().max()) < 1e-4
    bindings, hits = binds[0], r.hits
    xs = torch.randn(33, 1024, device="cuda")[:, :512]  # the same shape, another row stride
    ys = r(xs, weight=w)
    assert float((ys.double() - _rms_ref(xs, w)).abs().max()) < 1e-4
    r(x, w)  # weight positional: another call form, bound once, then served
    r(x, w)
    r(x, weight=w, eps=1e-3)  # a keyword scalar: bound once, then served while its value stays
    r(x, weight=w, eps=1e-3)
    y4 = r(x, weight=w, eps=1e-2)  # another value: bound
    assert binds[0] == bindings + 4 and r.hits == hits + 2
    x64 = x.double()
    assert float((y4.double() - x64 / torch.sqrt((x64 ** 2).mean(dim=1, keepdim=True) + 1e-2) * w.double())
                 .abs().max()) < 1e-4


def test_outputs_by_name_overlap_and_in_place(kernels):
    r = kernels["prep_rms"]
    w = torch.rand(512, device="cuda") + 0.5
    buf = torch.randn(34, 512, device="cuda")
    xa, sep = buf[:33], torch.empty(33, 512, device="cuda")
    r(xa, weight=w, y=sep)
    hits = r.hits
    out = r(xa, weight=w, y=sep)
    assert out is sep and r.hits == hits + 1
    assert float((sep.double() - _rms_ref(xa, w)).abs().max()) < 1e-4
    with pytest.raises(RuntimeFailure, match="overlaps x"):
        r(xa, weight=w, y=buf[1:])  # the signature matches; the overlap sends it to the full checks
    before = _rms_ref(xa, w)
    r(xa, weight=w, y=xa)  # in place: the same view, as the ABI allows
    hits = r.hits
    r(xa, weight=w, y=xa)
    assert r.hits == hits + 1
    assert float((xa.double() - _rms_ref(before, w)).abs().max()) < 1e-3


def test_workspace_kernel_on_two_streams(kernels):
    k = kernels["prep_splitk"]
    A, B, _ = _gemm_ops(M=64, N=256, K=4096, dtype=torch.bfloat16)
    ref = A.double() @ B.double()
    k(A, B)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    outs = []
    with torch.cuda.stream(side):
        for _ in range(2):
            outs.append(k(A, B))
    torch.cuda.current_stream().wait_stream(side)
    outs.append(k(A, B))
    torch.cuda.synchronize()
    for C in outs:
        assert _rel(C, ref) < 1e-2


def test_family_members_served_by_the_family(kernels, binds):
    d = kernels["prep_fam"]
    for M in (100, 2000):
        A, B, _ = _gemm_ops(M=M, N=384, K=96)
        for _ in range(3):
            C = d(A, B)
        assert _rel(C, A.double() @ B.double()) < 1e-5
    assert d.hits >= 4 and d.size == 2


def test_fastcall_off(kernels, monkeypatch):
    from ckgen import config
    from ckgen.backends.nvidia import native
    from ckgen.runtime import api

    r = kernels["prep_rms"]
    monkeypatch.setenv("CKGEN_FASTCALL", "0")
    config.reload()
    native.module.cache_clear()
    try:
        k = api.Kernel(r.plan, r.backend)
        assert k._native is None
        x = torch.randn(7, 300, device="cuda")
        w = torch.rand(300, device="cuda") + 0.5
        for _ in range(2):
            y = k(x, weight=w)
        assert float((y.double() - _rms_ref(x, w)).abs().max()) < 1e-4
    finally:
        monkeypatch.delenv("CKGEN_FASTCALL")
        config.reload()
        native.module.cache_clear()
    assert native.module() is not None
