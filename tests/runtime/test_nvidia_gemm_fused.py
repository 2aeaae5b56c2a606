"""Residual and gated GEMM epilogues on a real NVIDIA GPU (marked ``gpu``: the lent device; issue 28 items 1 and 2).

Against a float64 reference computed with torch on the GPU: the residual (``-> residual``, also in place) and the
gated epilogues (``swiglu`` / ``geglu``, ``gate = halves | interleaved(b)``, with a bias and a residual, whole or in
split-K / stream-K pieces) on the
Hopper body (``<name>_tma``: checked to be the kernel that ran, through torch's profiler) and on the mma.sync body
(odd leading dimensions, which the Hopper body refuses), dense, split-K (residual), grouped and masked (the MoE gate-up
projection). Outputs are poisoned (NaN) first; sizes are awkward (M, N, K not multiples of the tile, N below one tile).
Scaled bf16 kernels (``scale_a = row``: an RMSNorm's 1/rms folded into the next GEMM; plain and swiglu) run the Hopper
body where C can be TMA-stored (N a multiple of 8) and the mma.sync body otherwise, both checked through the profiler.
"""

from __future__ import annotations

import pytest

from tests.runtime.gpu_helpers import launched

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel fz_res { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
  epilogue = residual }
kernel fz_res_gelu { A = f16 row B = f16 row C = f32 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
  epilogue = bias(col) -> gelu -> residual }
kernel fz_res_sk { A = bf16 row B = bf16 col C = bf16 row tile = 64x128x64 waves = 1x4 lds_buffers = 4
  schedule = splitk(4) epilogue = residual }
kernel fz_glu { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
  epilogue = swiglu }
kernel fz_glu_il { A = bf16 row B = bf16 row C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
  gate = interleaved(64) epilogue = bias(col) -> geglu -> residual }
kernel fz_glu_il16 { A = f16 row B = f16 col C = f16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
  gate = interleaved(16) epilogue = swiglu }
kernel fz_glu_stk { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
  schedule = streamk epilogue = swiglu }
kernel fz_glu_sk_il { A = bf16 row B = bf16 row C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
  gate = interleaved(64) schedule = splitk epilogue = bias(col) -> swiglu -> residual }
kernel fz_glu_grouped { A = bf16 row B = bf16 col C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
  mode = grouped epilogue = swiglu }
kernel fz_glu_masked { A = bf16 row B = bf16 row C = bf16 row tile = 64x128x64 waves = 1x4 lds_buffers = 4
  mode = masked gate = interleaved(64) epilogue = swiglu -> residual }
kernel fz_rs { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
  scale_a = row }
kernel fz_rs_col { A = bf16 row B = bf16 col C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
  scale_a = row scale_b = col epilogue = bias(col) -> gelu }
kernel fz_rs_glu { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
  scale_a = row scale_b = tensor gate = halves epilogue = swiglu }
kernel fz_rs_glu128 { A = bf16 row B = bf16 col C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
  scale_a = row gate = halves epilogue = swiglu }
kernel fz_res_c2 { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
  epilogue = residual cluster = 2 }
kernel fz_glu_c2 { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
  epilogue = swiglu cluster = 2 }
kernel fz_glu_il_c2 { A = bf16 row B = bf16 row C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
  gate = interleaved(64) epilogue = bias(col) -> geglu -> residual cluster = 2 }
kernel fz_rs_c2 { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
  scale_a = row cluster = 2 }
"""
TOL = {torch.bfloat16: 2e-2, torch.float16: 4e-3, torch.float32: 2e-3}


def kernel(name):
    from ckgen.runtime.api import jit

    return jit(SPEC, kernel=name, target="sm_90")


def _err(got, ref):
    d = torch.linalg.norm((got.double() - ref).flatten()).item()
    n = torch.linalg.norm(ref.flatten()).item()
    return d / n if n else d


def _mat(rows, cols, dt, col_major, gen, ld_pad=0):
    """A rows x cols matrix (col-major: a transposed view), leading dimension padded by ld_pad."""
    if col_major:
        base = torch.randn(cols, rows + ld_pad, device="cuda", generator=gen).to(dt)
        return base[:, :rows].T
    base = torch.randn(rows, cols + ld_pad, device="cuda", generator=gen).to(dt)
    return base[:, :cols]


def _act(kind, x):
    if kind == "swiglu":
        return x / (1 + torch.exp(-x))
    return 0.5 * x * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (x + 0.044715 * x ** 3)))


def _gate_cols(g, n):
    o = torch.arange(n, device="cuda")
    if g.gate == "interleaved":
        b = g.gate_block
        gate = (o // b) * 2 * b + o % b
        return gate, gate + b
    return o, o + n


def _ref(k, a, b, bias, res, sa=None, sb=None):
    """float64 reference of one dense / per-group GEMM: scales, chain, gate, residual."""
    g = k.plan.spec.params.gemm
    r = a.double() @ b.double()
    if sa is not None:
        r = r * sa.double().reshape(-1, 1)
    if sb is not None:
        r = r * sb.double().reshape(1, -1)
    if bias is not None:
        r = r + bias.double()[None, :]
    if g.gated:
        gi, ui = _gate_cols(g, r.shape[-1] // 2)
        r = _act(g.gated, r[:, gi]) * r[:, ui]
    elif any(op.kind == "gelu" for op in g.epilogue):
        r = _act("geglu", r)
    if res is not None:
        r = r + res.double()
    return r


def _dense(name, M, N, K, ld_pad=0, in_place=False, workspace=False):
    k = kernel(name)
    g = k.plan.spec.params.gemm
    gen = torch.Generator(device="cuda")
    gen.manual_seed(M + N + K)
    dt = {"bf16": torch.bfloat16, "f16": torch.float16}[g.a.dtype.value]
    ct = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[g.c.dtype.value]
    nb = 2 * N if g.gated else N
    a = _mat(M, K, dt, False, gen, ld_pad).mul_(0.5)  # (in place: the views keep their padded leading dimension)
    b = _mat(K, nb, dt, g.b.layout.value == "col", gen, ld_pad).mul_(0.1)
    bias = (torch.randn(nb, device="cuda", generator=gen) * 0.1).to(ct) if g.has_bias else None
    res = torch.randn(M, N, device="cuda", generator=gen).to(ct) if g.residual else None
    c = res if in_place else torch.full((M, N), float("nan"), device="cuda", dtype=ct)
    # scales: positive, over about two decades (scale_b: per column of B, as many as B's columns when gated)
    sizes = {"row": M, "col": nb, "tensor": 1}
    sa, sb = (torch.rand(sizes[kind], device="cuda", generator=gen) * 4 + 0.05 if kind else None
              for kind in (g.scale_a, g.scale_b))
    want = _ref(k, a, b, bias, None if res is None else res.clone(), sa, sb)
    args = dict(A=a, B=b, C=c) | ({"bias": bias} if bias is not None else {})
    args |= {"residual": res} if g.residual else {}
    args |= {n: x for n, x in (("scale_a", sa), ("scale_b", sb)) if x is not None}
    ws = None
    if workspace:  # (given, so that the call's zero-on-exit contract can be checked)
        ws = torch.zeros(max(1, k.workspace_bytes(M=M, N=N, K=K)), dtype=torch.uint8, device="cuda")
        args["workspace"] = ws
    ran = launched(lambda: k(**args))
    assert _err(c, want) < TOL[ct], name
    assert ws is None or int(torch.count_nonzero(ws)) == 0, (name, "workspace not zero-filled after the call")
    return ran


@pytest.mark.parametrize("name", ["fz_res", "fz_res_gelu", "fz_glu", "fz_glu_il", "fz_glu_il16",
                                  "fz_res_c2", "fz_glu_c2", "fz_glu_il_c2"])
@pytest.mark.parametrize("shape", [(1, 64, 64), (300, 200, 136), (129, 1000, 520), (2056, 1032, 264)],
                         ids=lambda s: "x".join(map(str, s)))
def test_hopper_body_against_float64(name, shape):
    M, N, K = shape
    if kernel(name).plan.spec.params.gemm.gate == "interleaved":
        N = -(-N // 64) * 64
    ran = _dense(name, M, N, K)
    assert ran is None or f"{name}_tma" in ran, (name, ran)


@pytest.mark.parametrize("name", ["fz_res", "fz_glu", "fz_glu_il"])
def test_portable_body_against_float64(name):
    """Leading dimensions that are not 16-byte aligned: the Hopper body refuses them, mma.sync runs."""
    ran = _dense(name, 77, 128, 99, ld_pad=1)
    assert ran is None or f"{name}_tma" not in ran


SCALED = ["fz_rs", "fz_rs_col", "fz_rs_glu", "fz_rs_glu128", "fz_rs_c2"]


@pytest.mark.parametrize("name", SCALED)
@pytest.mark.parametrize("shape", [(1, 64, 64), (77, 200, 72), (300, 1000, 520), (129, 264, 136), (2048, 4096, 1024)],
                         ids=lambda s: "x".join(map(str, s)))
def test_scaled_hopper_body_against_float64(name, shape):
    """Row scales of A (and col / tensor of B) applied in the Hopper body's epilogue: M ragged, N a multiple of 8."""
    assert kernel(name).plan.body.tma is not None, kernel(name).plan.body.why
    ran = _dense(name, *shape)
    assert ran is None or f"{name}_tma" in ran, (name, ran)


@pytest.mark.parametrize("name", SCALED)
@pytest.mark.parametrize("shape", [(77, 203, 72), (130, 97, 64), (5, 1001, 136)], ids=lambda s: "x".join(map(str, s)))
def test_scaled_ragged_columns_run_mma_sync(name, shape):
    """N % 8 != 0: C's rows are not 16-byte aligned for the TMA store, so the mma.sync body runs (same results)."""
    ran = _dense(name, *shape)
    assert ran is None or (f"{name}_tma" not in ran and name in ran), (name, ran)


@pytest.mark.parametrize("shape", [(130, 203, 136), (257, 261, 64)], ids=lambda s: "x".join(map(str, s)))
def test_residual_ragged_columns(shape):
    """N not a multiple of 8 inside a 16-byte aligned leading dimension: nothing is written past N (the TMA store
    of C writes a row's last 16-byte chunk whole on the H200, so such an N runs on the mma.sync body)."""
    M, N, K = shape
    k = kernel("fz_res")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(N)
    a = torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16) * 0.5
    b = (torch.randn(N, K, device="cuda", generator=gen) * 0.1).to(torch.bfloat16).t()
    ld = -(-N // 8) * 8 + 8
    res = torch.randn(M, ld, device="cuda", generator=gen).to(torch.bfloat16)[:, :N]
    c = torch.full((M, ld), float("nan"), device="cuda", dtype=torch.bfloat16)[:, :N]
    want = _ref(k, a, b, None, res.clone())
    ran = launched(lambda: k(A=a, B=b, C=c, residual=res))
    assert ran is None or "fz_res_tma" not in ran, ran
    assert _err(c, want) < TOL[torch.bfloat16]
    assert torch.isnan(c.as_strided((M, ld), (ld, 1))[:, N:]).all(), "wrote past N"


@pytest.mark.parametrize("name", ["fz_glu_stk", "fz_glu_sk_il"])
@pytest.mark.parametrize("shape", [(1, 64, 64), (300, 200, 136), (16, 1000, 4096), (1024, 3712, 520),
                                   (2048, 4352, 304), (77, 128, 99)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("pad", [0, 1])
def test_gated_split_and_stream_k(name, shape, pad):
    """Gated tiles in split-K / stream-K pieces: raw gate and up sums in the slots, paired by the tile's finisher;
    the Hopper body where the leading dimensions are 16-byte aligned (K a multiple of 8, no padding), mma.sync
    otherwise, the workspace zero after. With 128 x 256 tiles, 1024 x 3712 makes 132 + 100 tiles (one stream-K wave,
    then the last 100 whole) and 2048 x 4352 two waves and 8 tiles (in 16 parts at the same K)."""
    M, N, K = shape
    if kernel(name).plan.spec.params.gemm.gate == "interleaved":
        N = -(-N // 64) * 64
    ran = _dense(name, M, N, K, ld_pad=pad, workspace=True)
    assert ran is None or (f"{name}_tma" in ran) == (pad == 0 and K % 8 == 0), (name, ran)


@pytest.mark.parametrize("name", ["fz_res", "fz_res_gelu", "fz_res_sk"])
def test_residual_in_place(name):
    _dense(name, 200, 300, 256, in_place=True)


def test_split_k_residual():
    _dense("fz_res_sk", 16, 1000, 4096)


@pytest.mark.parametrize("name", ["fz_glu_grouped", "fz_glu_masked"])
@pytest.mark.parametrize("rows", [[0, 300, 1, 0, 77], [5], [0, 0, 0]], ids=lambda r: "-".join(map(str, r)))
def test_grouped_and_masked_gate_up(name, rows):
    """The MoE gate-up projection: B per expert (groups x K x 2N), empty experts, a single token."""
    k = kernel(name)
    g = k.plan.spec.params.gemm
    gen = torch.Generator(device="cuda")
    gen.manual_seed(len(rows))
    G, N, K = len(rows), 192, 256
    masked = g.mode == "masked"
    cap = max(rows)
    a = (torch.randn(*((G, cap) if masked else (sum(rows) + 3,)), K, device="cuda", generator=gen) * 0.5)
    a = a.to(torch.bfloat16)
    w = (torch.randn(G, 2 * N, K, device="cuda", generator=gen) * 0.1).to(torch.bfloat16)  # nn.Linear's
    b = w.transpose(1, 2) if g.b.layout.value == "col" else w.transpose(1, 2).contiguous()
    ends = [sum(rows[:i + 1]) for i in range(G)]
    index = torch.tensor(rows if masked else ends, device="cuda", dtype=torch.int32)
    res = torch.randn(*a.shape[:-1], N, device="cuda", generator=gen).to(torch.bfloat16) if g.residual else None
    c = torch.full((*a.shape[:-1], N), float("nan"), device="cuda", dtype=torch.bfloat16)
    args = dict(A=a, B=b, C=c) | ({"residual": res} if res is not None else {})
    args["counts" if masked else "offsets"] = index
    ran = launched(lambda: k(**args))
    assert ran is None or max(rows) == 0 or f"{name}_tma" in ran
    start = 0
    for e, n in enumerate(rows):
        sl = (e, slice(0, n)) if masked else (slice(start, start + n),)
        if n:
            want = _ref(k, a[sl], b[e], None, None if res is None else res[sl])
            assert _err(c[sl], want) < TOL[torch.bfloat16], (name, e)
        start += 0 if masked else n
