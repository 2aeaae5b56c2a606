"""Grouped / masked GEMM and MoE routing on a real NVIDIA GPU (marked ``gpu``: the lent device; issue 24).

Grouped kernels (bf16, B per expert as nn.Linear weights (col) or row-major, fused bias + SiLU, int64 offsets)
against a float64 per-group reference and against ``torch._grouped_mm`` where torch has it, with balanced, skewed,
empty-expert and single-token routings; rows past the last offset stay poisoned; the call captures in a CUDA graph
whose replays follow offsets changed on the device; kernels of the Hopper body's tiles run it (`<name>_tma`) when the
rows are 16-byte aligned and the portable body otherwise (K = 100). The masked layout the same with counts. The routing stages
against the float64 reference of ckgen.ops.moe_routing, then chained with the grouped GEMMs into a MoE layer. An fp8
grouped kernel with per-row / per-expert-column scales against float64 on its dequantized operands, on both bodies, and a
bf16 one with per-tensor / per-expert scales on the Hopper body.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel gpu_moe_g_col { A = bf16 row B = bf16 col C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
  mode = grouped }
kernel gpu_moe_g_row_silu { A = bf16 row B = bf16 row C = bf16 row tile = 64x128x64 waves = 2x2 lds_buffers = 4
  mode = grouped index = i64 epilogue = bias(col) -> silu }
kernel gpu_moe_g_decode { A = bf16 row B = bf16 col C = bf16 row tile = 16x128x64 waves = 1x4 lds_buffers = 6
  mode = grouped }
kernel gpu_moe_m_col { A = bf16 row B = bf16 col C = bf16 row tile = 64x128x64 waves = 2x2 lds_buffers = 4
  mode = masked }
kernel gpu_moe_g_fp8 { A = e4m3fn row B = e4m3fn col C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
  mode = grouped scale_a = row scale_b = col epilogue = bias(col) }
kernel gpu_moe_g_fp8_h { A = e4m3fn row B = e4m3fn col C = bf16 row tile = 128x128x128 waves = 2x4 lds_buffers = 4
  mode = grouped scale_a = row scale_b = col epilogue = bias(col) }
kernel gpu_moe_g_s16_h { A = bf16 row B = bf16 col C = f32 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
  mode = grouped scale_a = tensor scale_b = tensor epilogue = bias(row) }
kernel gpu_moe_topk { op = moe_routing stage = topk experts = 64 top_k = 6 score = sigmoid expert_groups = 8
  top_groups = 3 correction = true renormalize = true logits = f32 }
kernel gpu_moe_sort { op = moe_routing stage = sort experts = 64 top_k = 6 }
kernel gpu_moe_perm { op = moe_routing stage = permute top_k = 6 x = bf16 }
kernel gpu_moe_unperm { op = moe_routing stage = unpermute top_k = 6 x = bf16 }
"""
GROUPED = ["gpu_moe_g_col", "gpu_moe_g_row_silu", "gpu_moe_g_decode"]
# rows per expert
ROUTINGS = {
    "balanced": [64] * 8,
    "skewed": [1000, 3, 0, 17, 1, 0, 200, 40],
    "empty": [0, 0, 300, 0, 0, 0, 0, 5],
    "single_token": [0, 0, 0, 1, 0, 0, 0, 0],
    "no_tokens": [0] * 8,
}


def kernel(name):
    from ckgen.runtime.api import jit

    return jit(SPEC, kernel=name, target="sm_90")


def _b(G, K, N, col: bool, gen):
    w = (torch.randn(G, N, K, device="cuda", generator=gen) * 0.1).to(torch.bfloat16)
    return w.transpose(-2, -1) if col else w.transpose(-2, -1).contiguous()


def _grouped_ref(a, b, ends, bias, silu, masked=False):
    out = []
    start = 0
    for g, end in enumerate(ends):
        rows = a[g, :end] if masked else a[start:end]
        r = rows.double() @ b[g].double()
        if bias is not None:
            r = r + bias[g].double()[None, :]
        if silu:
            r = r / (1 + torch.exp(-r))
        out.append(r)
        start = end
    return out


def _err(got, ref):
    d = torch.linalg.norm((got.double() - ref).flatten()).item()
    n = torch.linalg.norm(ref.flatten()).item()
    return d / n if n else d


@pytest.mark.parametrize("name", GROUPED)
@pytest.mark.parametrize("routing", list(ROUTINGS))
@pytest.mark.parametrize("K", [512, 100])   # 100: rows not 16-byte aligned, so the portable body runs
def test_grouped_gemm_on_the_gpu(name, routing, K):
    k = kernel(name)
    gm = k.plan.spec.params.gemm
    gen = torch.Generator(device="cuda")
    gen.manual_seed(len(routing))
    rows = ROUTINGS[routing]
    G, N = len(rows), 384
    M = sum(rows) + 7                                    # 7 rows past the last offset
    a = (torch.randn(M, K, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
    b = _b(G, K, N, gm.b.layout.value == "col", gen)
    idx = torch.int64 if gm.index.value == "i64" else torch.int32
    offs = torch.tensor(np.cumsum(rows), device="cuda", dtype=idx)
    bias = (torch.randn(G, N, device="cuda", generator=gen) * 0.5).to(torch.bfloat16) if gm.has_bias else None
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    k(a, b, bias, offs, C=c) if bias is not None else k(a, b, offs, C=c)
    torch.cuda.synchronize()
    refs = _grouped_ref(a, b, offs.tolist(), bias, silu=bias is not None)
    got = c[:sum(rows)]
    if sum(rows):
        assert _err(got, torch.cat(refs)) < 1.6e-2, (name, routing)
    assert torch.isnan(c[sum(rows):].float()).all(), "rows past the last offset were written"
    # torch._grouped_mm's own constraints: 16-byte aligned rows, B K-major (nn.Linear weights transposed)
    if hasattr(torch, "_grouped_mm") and bias is None and sum(rows) and K % 8 == 0 and gm.b.layout.value == "col":
        theirs = torch._grouped_mm(a[:sum(rows)], b, offs=offs.to(torch.int32))
        assert _err(got, theirs.double()) < 1.6e-2


@pytest.mark.parametrize("routing", ["balanced", "skewed", "empty"])
@pytest.mark.parametrize("name,entry", [("gpu_moe_g_fp8", None), ("gpu_moe_g_fp8_h", "_tma"),
                                        ("gpu_moe_g_s16_h", "_tma")])
def test_scaled_grouped_gemm_on_the_gpu(name, entry, routing):
    """Grouped kernels with torch._scaled_grouped_mm's scales against float64 on the dequantized operands: fp8 with A
    per token row and B per expert and column plus a bias per expert (the mma.sync body; the Hopper body at a K tile
    of 128), and bf16 with one scale per tensor and per expert plus a bias per row (the Hopper body, f32 out). Rows
    past the last offset stay poisoned; ``entry``: the entry that must have run (aligned rows)."""
    from tests.runtime.gpu_helpers import launched

    k = kernel(name)
    gm = k.plan.spec.params.gemm
    f8 = gm.a.dtype.value == "e4m3fn"
    gen = torch.Generator(device="cuda")
    gen.manual_seed(5)
    rows = ROUTINGS[routing]
    G, K, N = len(rows), 256, 320
    M = sum(rows) + 5
    dt = torch.float8_e4m3fn if f8 else torch.bfloat16
    a = (torch.randn(M, K, device="cuda", generator=gen) * 2).to(dt)
    b = (torch.randn(G, N, K, device="cuda", generator=gen) * 2).to(dt).transpose(-2, -1)
    sa = torch.rand(M if gm.scale_a == "row" else 1, device="cuda", generator=gen) + 0.05
    sb = torch.rand(*((G, N) if gm.scale_b == "col" else (G,)), device="cuda", generator=gen) + 0.05
    bias = (torch.randn(*((G, N) if gm.bias_axis == "col" else (M,)), device="cuda", generator=gen) * 0.5).to(
        torch.bfloat16 if gm.c.dtype.value == "bf16" else torch.float32)
    offs = torch.tensor(np.cumsum(rows), device="cuda", dtype=torch.int32)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16 if f8 else torch.float32)
    ran = launched(lambda: k(A=a, B=b, bias=bias, scale_a=sa, scale_b=sb, offsets=offs, C=c))
    if entry is not None:
        assert ran is None or f"{name}{entry}" in ran, ran
    start, refs = 0, []
    for g, end in enumerate(offs.tolist()):
        s_a = sa[start:end, None] if gm.scale_a == "row" else sa
        s_b = sb[g][None, :] if gm.scale_b == "col" else sb[g]
        r = (a[start:end].double() @ b[g].double()) * s_a.double() * s_b.double()
        refs.append(r + (bias[g].double()[None, :] if gm.bias_axis == "col" else bias[start:end, None].double()))
        start = end
    if sum(rows):
        assert _err(c[:sum(rows)], torch.cat(refs)) < (1.6e-2 if f8 else 5e-3), routing
    assert torch.isnan(c[sum(rows):].float()).all(), "rows past the last offset were written"


@pytest.mark.parametrize("name,hopper", [("gpu_moe_g_col", True), ("gpu_moe_g_row_silu", True),
                                         ("gpu_moe_m_col", True), ("gpu_moe_g_decode", False)])
def test_grouped_hopper_body_runs_when_aligned(name, hopper):
    from torch.profiler import ProfilerActivity, profile

    k = kernel(name)
    gm = k.plan.spec.params.gemm
    gen = torch.Generator(device="cuda")
    gen.manual_seed(2)
    G, K, N = 4, 256, 256
    masked = gm.mode == "masked"
    a = (torch.randn(*((G, 64) if masked else (200,)), K, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
    b = _b(G, K, N, gm.b.layout.value == "col", gen)
    idx = torch.int64 if gm.index.value == "i64" else torch.int32
    index = torch.tensor([10, 64, 0, 33] if masked else [10, 150, 150, 200], device="cuda", dtype=idx)
    bias = torch.zeros(G, N, device="cuda", dtype=torch.bfloat16) if gm.has_bias else None
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        k(a, b, bias, index) if bias is not None else k(a, b, index)
        torch.cuda.synchronize()
    assert (f"{name}_tma" in {e.key for e in prof.key_averages()}) == hopper


@pytest.mark.parametrize("name", ["gpu_moe_g_col", "gpu_moe_m_col"])
@pytest.mark.parametrize("N", [300, 392])  # 300: C's rows not 16-byte aligned (no tensor map: kNoTmaC)
def test_grouped_hopper_body_stores_the_rows_a_box_cannot(name, N):
    """The Hopper body stores C by TMA from the warps whose 16 rows lie in their group; the group's last rows, and
    every row of a C no tensor map takes, by the warp's own stores: the same numbers, nothing written past a group
    (the rows after the last offset, a masked group's rows past its count stay poisoned)."""
    from tests.runtime.gpu_helpers import launched

    k = kernel(name)
    masked = k.plan.spec.params.gemm.mode == "masked"
    gen = torch.Generator(device="cuda")
    gen.manual_seed(N)
    rows = [1000, 3, 0, 17, 129, 0, 200, 40]
    G, K, cap = len(rows), 256, 1024
    b = _b(G, K, N, True, gen)
    if masked:
        counts = [min(r, cap) for r in rows]
        a = (torch.randn(G, cap, K, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
        index = torch.tensor(counts, device="cuda", dtype=torch.int32)
        c = torch.full((G, cap, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    else:
        M = sum(rows) + 7
        a = (torch.randn(M, K, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
        index = torch.tensor(np.cumsum(rows), device="cuda", dtype=torch.int32)
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    ran = launched(lambda: k(a, b, index, C=c))
    assert ran is None or f"{name}_tma" in ran, ran
    refs = _grouped_ref(a, b, index.tolist(), None, False, masked=masked)
    if masked:
        for g, n in enumerate(counts):
            if n:
                assert _err(c[g, :n], refs[g]) < 1.6e-2, g
            assert torch.isnan(c[g, n:].float()).all(), g
    else:
        assert _err(c[:sum(rows)], torch.cat(refs)) < 1.6e-2
        assert torch.isnan(c[sum(rows):].float()).all(), "rows past the last offset were written"


def test_grouped_gemm_replays_in_a_cuda_graph_with_new_offsets():
    k = kernel("gpu_moe_g_col")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(5)
    G, K, N, M = 8, 256, 256, 512
    a = (torch.randn(M, K, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
    b = _b(G, K, N, True, gen)
    offs = torch.tensor(np.cumsum([64] * 8), device="cuda", dtype=torch.int32)
    c = torch.zeros(M, N, device="cuda", dtype=torch.bfloat16)
    k(a, b, offs, C=c)                                   # first call outside capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        k(a, b, offs, C=c)
    for rows in ([64] * 8, [500, 0, 0, 0, 0, 0, 0, 12], [0, 0, 0, 0, 0, 0, 0, 512]):
        offs.copy_(torch.tensor(np.cumsum(rows), dtype=torch.int32))
        graph.replay()
        torch.cuda.synchronize()
        assert _err(c, torch.cat(_grouped_ref(a, b, offs.tolist(), None, False))) < 1.6e-2, rows


def test_masked_gemm_on_the_gpu():
    k = kernel("gpu_moe_m_col")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(9)
    counts = [0, 1, 64, 17, 0, 100, 3, 128]
    G, cap, K, N = len(counts), 128, 384, 256
    a = (torch.randn(G, cap, K, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
    b = _b(G, K, N, True, gen)
    cnt = torch.tensor(counts, device="cuda", dtype=torch.int32)
    c = torch.full((G, cap, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    k(a, b, cnt, C=c)
    torch.cuda.synchronize()
    refs = _grouped_ref(a, b, counts, None, False, masked=True)
    for g, n in enumerate(counts):
        if n:
            assert _err(c[g, :n], refs[g]) < 1.6e-2, g
        assert torch.isnan(c[g, n:].float()).all(), g


def test_routing_stages_and_a_moe_layer_on_the_gpu():
    from ckgen.ir.registry import get_op

    op = get_op("moe_routing")
    topk, sort, perm, unperm = (kernel(n) for n in ("gpu_moe_topk", "gpu_moe_sort", "gpu_moe_perm", "gpu_moe_unperm"))
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    tokens, E, hidden, inter = 777, 64, 256, 128
    logits = torch.randn(tokens, E, device="cuda", generator=gen)
    corr = torch.randn(E, device="cuda", generator=gen) * 0.1
    ids, w = topk(logits, corr, scale=2.5)
    ref = op.reference(topk.plan, {"logits": logits.cpu().numpy(), "correction": corr.cpu().numpy()},
                       {"tokens": tokens, "scale": 2.5})
    # the GPU's exp is approximate (__expf): a near-tie of two experts' scores may order differently than in float64
    # (about 1e-6 apart); such tokens are rare, every other token has exactly the float64 choices and weights
    same = (ids.cpu().numpy() == ref["ids"]).all(axis=1)
    assert (~same).sum() <= tokens // 100, f"{(~same).sum()} of {tokens} tokens chose other experts"
    assert np.allclose(w.cpu().numpy()[same], ref["weights"][same], rtol=1e-4)
    offsets, sorted_token, position = sort(ids)
    want = op.reference(sort.plan, {"ids": ids.cpu().numpy()}, {"tokens": tokens})
    for name, got in (("offsets", offsets), ("sorted_token", sorted_token), ("position", position)):
        assert np.array_equal(got.cpu().numpy(), want[name]), name
    x = (torch.randn(tokens, hidden, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
    xs = perm(x, sorted_token).reshape(tokens * 6, hidden)
    w_up = _b(E, hidden, inter, True, gen)
    g_up = kernel("gpu_moe_g_col")
    h = g_up(xs, w_up, offsets)
    ys = h.reshape(tokens, 6, inter)
    y = unperm(ys, position, w)
    torch.cuda.synchronize()
    x64, wu = x.double(), w_up.double()
    want_y = torch.stack([sum(w[t, j].double() * (x64[t] @ wu[ids[t, j]]) for j in range(6)) for t in range(tokens)])
    assert _err(y, want_y) < 2e-2
