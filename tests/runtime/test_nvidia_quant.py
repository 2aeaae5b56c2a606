"""Quantizing row ops and element-wise kernels on a real NVIDIA GPU (marked ``gpu``: ladder rung 3, the lent H200):
fp8 (OCP e4m3fn / e5m2) y with per-token and per-1x128-group f32 scales, against torch: the scales against float64
amax / fp8_max, the codes against torch's own cast (``torch.float8_e4m3fn``) of the same f32 product, the
dequantized values against float64; a zero row, values past the fp8 range, widths that are not a multiple of 128;
torch._scaled_mm (rowwise) consuming a per-token output. ``bench/quant.py`` times them."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel gq_add_rms_row  { op = rmsnorm x = bf16 residual = true y = e4m3fn eps = 1e-6 }
kernel gq_rms_group    { op = rmsnorm x = bf16 y = e4m3fn quant = group(128) max_cols = 7168 }
kernel gq_quant_row    { op = quantize x = bf16 y = e4m3fn }
kernel gq_quant_group  { op = quantize x = bf16 y = e4m3fn quant = group(128) }
kernel gq_quant_e5     { op = quantize x = f32 y = e5m2 }
kernel gq_swiglu_group { op = elementwise a = bf16 b = bf16 y = e4m3fn expr = silu(a) -> mul(b) }
"""
_kernels: dict = {}


def kernel(name):
    from ckgen.runtime.api import jit

    if name not in _kernels:
        _kernels[name] = jit(SPEC, kernel=name, target="sm_90")
    return _kernels[name]


def rel(got, want) -> float:
    den = want.double().norm()
    return float((got.double() - want.double()).norm() / den) if den > 0 else float(got.double().norm())


def expected(y64: torch.Tensor, fp8, group: int | None):
    """(scales, codes): amax / fp8_max per row or group (1 where 0), and torch's cast of the f32 product y *
    (fp8_max / amax), clamped to +-max (the kernel's arithmetic and saturation)."""
    top = torch.finfo(fp8).max
    rows, cols = y64.shape
    g = group or cols
    n = -(-cols // g)
    pad = torch.zeros(rows, n * g, dtype=torch.float64, device=y64.device)
    pad[:, :cols] = y64
    amax = pad.view(rows, n, g).abs().amax(-1)
    scales = torch.where(amax > 0, amax / top, torch.ones_like(amax))
    mul = torch.where(amax > 0, top / amax.float(), torch.zeros_like(amax, dtype=torch.float32))
    q = (y64.float() * mul.repeat_interleave(g, -1)[:, :cols]).clamp(-top, top).to(fp8)
    return (scales if group else scales[:, 0]), q


def check(y, s, y64, fp8, group, what):
    want_s, want_q = expected(y64, fp8, group)
    assert y.dtype == fp8 and s.dtype == torch.float32, what
    assert rel(s, want_s) < 1e-5, f"{what}: scales"
    same = (y.view(torch.uint8) == want_q.view(torch.uint8)).float().mean().item()
    assert same > 0.999, f"{what}: {100 * (1 - same):.3f}% of the codes differ from torch's cast"
    per = s.double().repeat_interleave(group, -1)[:, : y.shape[1]] if group else s.double()[:, None]
    assert rel(y.double() * per, y64) < (0.05 if fp8 == torch.float8_e4m3fn else 0.1), f"{what}: dequantized"


def rmsnorm64(x, w, eps):
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w.double()


@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 1000), (7, 4096), (64, 7168), (2, 40001)])
def test_add_rmsnorm_per_token(rows, cols):
    g = torch.Generator(device="cuda").manual_seed(cols)
    x = torch.randn(rows, cols, generator=g, device="cuda").bfloat16()
    r = torch.randn(rows, cols, generator=g, device="cuda").bfloat16()
    w = torch.randn(cols, generator=g, device="cuda").bfloat16()
    if rows > 1:
        x[1], r[1] = 0, 0
    y, s_out, s = kernel("gq_add_rms_row")(x, r, w)
    h = (x.float() + r.float()).bfloat16()
    assert torch.equal(s_out, h)
    check(y, s, rmsnorm64(h, w, 1e-6), torch.float8_e4m3fn, None, f"add+rms {rows}x{cols}")
    if rows > 1:
        assert s[1].item() == 1.0 and not y[1].float().any()


@pytest.mark.parametrize("rows,cols", [(1, 128), (5, 1000), (33, 7168)])
def test_rmsnorm_group_scales(rows, cols):
    g = torch.Generator(device="cuda").manual_seed(cols + 1)
    x = torch.randn(rows, cols, generator=g, device="cuda").bfloat16()
    w = torch.randn(cols, generator=g, device="cuda").bfloat16()
    y, s = kernel("gq_rms_group")(x, w)
    assert s.shape == (rows, -(-cols // 128))
    check(y, s, rmsnorm64(x, w, 1e-5), torch.float8_e4m3fn, 128, f"rms group {rows}x{cols}")


@pytest.mark.parametrize("rows,cols", [(1, 1), (4, 129), (128, 4096), (3, 100003)])
def test_quantize_row_and_group(rows, cols):
    g = torch.Generator(device="cuda").manual_seed(cols + 2)
    x = (torch.randn(rows, cols, generator=g, device="cuda") * 1000).bfloat16()  # far past 448
    y, s = kernel("gq_quant_row")(x)
    check(y, s, x.double(), torch.float8_e4m3fn, None, f"quant row {rows}x{cols}")
    y, s = kernel("gq_quant_group")(x)
    check(y, s, x.double(), torch.float8_e4m3fn, 128, f"quant group {rows}x{cols}")


def test_quantize_e5m2():
    g = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn(9, 3000, generator=g, device="cuda") * 1e6
    y, s = kernel("gq_quant_e5")(x)
    check(y, s, x.double(), torch.float8_e5m2, None, "quant e5m2")


@pytest.mark.parametrize("rows,cols", [(1, 1), (5, 1000), (64, 14336)])
def test_swiglu_group_scales_on_gate_up_halves(rows, cols):
    g = torch.Generator(device="cuda").manual_seed(cols + 3)
    gu = torch.randn(rows, 2 * cols, generator=g, device="cuda").bfloat16()
    a, b = gu[:, :cols], gu[:, cols:]
    y, s = kernel("gq_swiglu_group")(a, b)
    y64 = torch.nn.functional.silu(a.double()) * b.double()
    check(y, s, y64, torch.float8_e4m3fn, 128, f"swiglu {rows}x{cols}")


def test_scaled_mm_consumes_per_token_output():
    """torch._scaled_mm (rowwise scales) on the kernel's per-token fp8 output and a per-channel fp8 weight gives
    x @ w within fp8 error."""
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.randn(64, 4096, generator=g, device="cuda").bfloat16()
    w = torch.randn(2048, 4096, generator=g, device="cuda").bfloat16()
    q, s = kernel("gq_quant_row")(x)
    wmax = w.float().abs().amax(-1, keepdim=True) / 448.0
    wq = (w.float() / wmax).to(torch.float8_e4m3fn)
    out = torch._scaled_mm(q, wq.t(), scale_a=s[:, None], scale_b=wmax.t().contiguous(), out_dtype=torch.bfloat16)
    want = x.double() @ w.double().t()
    assert rel(out, want) < 0.06


def test_graph_capture_of_a_quantizing_call():
    k = kernel("gq_quant_group")
    x = torch.randn(16, 4096, device="cuda").bfloat16()
    y, s = k(x)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        k(x, y=y, y_scale=s)
    x.mul_(2.0)
    graph.replay()
    torch.cuda.synchronize()
    check(y, s, x.double(), torch.float8_e4m3fn, 128, "graph replay")
