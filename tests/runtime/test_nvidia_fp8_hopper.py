"""fp8 GEMM on the sm_90 Hopper body (TMA + wgmma m64nNk32 e4m3 / e5m2) on a real NVIDIA GPU (marked ``gpu``; issue 26).

Each scaling (per-tensor, per-row of A / per-column of B, block(128) pairs) runs on torch float8 tensors against a
float64 reference of the decoded fp8 inputs times the scales (outputs poisoned by the backend), at awkward shapes:
M = 1, N not a multiple of the tile's N, K not a multiple of 128 (the block scales' last block is partial). Shapes
whose operands TMA can address (K a multiple of 16; 16-bit row-major C rows 16-byte aligned) must launch the
``<kernel>_tma`` entry, the others the mma.sync one (checked with the torch profiler), and both must be right: the
mma.sync body folds block scales per K block too. Block scales are read at every launch (a replayed graph sees new
ones). Split-K and stream-K kernels take the Hopper body too (fp8 with every scaling, and a bf16 one with a row
scale): tensor / row / col-scaled parts meet unscaled and the last contributor scales the sum, block-scaled ones
are folded per 128-K tile before they meet; their workspace is zero-filled again after each call and the
deterministic ones give the same bits twice. The Hopper body accumulates whole K in the wgmma accumulators (tensor / row / col scales: like
torch._scaled_mm's use_fast_accum=True), folding each 128-K block in f32 registers only for block scales; the f32-C
tolerance allows the fp8 wgmma accumulator's shorter sums.
"""

from __future__ import annotations

import pytest

from tests.runtime.gpu_helpers import launched

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

from tests.runtime.test_nvidia_fp8 import rel  # noqa: E402  (the relative norm error of the mma.sync fp8 tests)

SPEC = """
target sm_90
kernel gh8_tensor { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 128x256x128  waves = 2x4  lds_buffers = 4
  scale_a = tensor  scale_b = tensor }
kernel gh8_rowwise { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 128x128x128  waves = 2x4  lds_buffers = 4
  scale_a = row  scale_b = col }
kernel gh8_e5m2_col_bias_f32 { A = e5m2 row  B = e5m2 col  C = f32 row  tile = 64x256x128  waves = 1x4  prefetch = 0
  lds_buffers = 4  scale_b = col  epilogue = bias(col) -> relu }
kernel gh8_block { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 128x128x128  waves = 2x4  lds_buffers = 4
  scale_a = block(128)  scale_b = block(128) }
kernel gh8_block_f32 { A = e4m3fn row  B = e4m3fn col  C = f32 row  tile = 64x128x128  waves = 1x4  lds_buffers = 4
  scale_a = block(128)  scale_b = block(128) }
kernel gh8_bmm_rowwise { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 128x128x128  waves = 2x4  lds_buffers = 4
  scale_a = row  scale_b = col  batched = true }
kernel gh8_tensor_splitk { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 64x128x128  waves = 1x4  lds_buffers = 4
  scale_a = tensor  scale_b = tensor  schedule = splitk }
kernel gh8_rowwise_splitk_atomic { A = e4m3fn row  B = e4m3fn col  C = f32 row  tile = 64x256x128  waves = 1x4
  prefetch = 0  lds_buffers = 4  scale_a = row  scale_b = col  schedule = splitk(atomic) }
kernel gh8_rowcol_streamk_bias { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 128x128x128  waves = 2x4
  lds_buffers = 4  scale_a = row  scale_b = col  epilogue = bias(col) -> relu  schedule = streamk }
kernel gh16_row_splitk { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  scale_a = row  schedule = splitk }
kernel gh8_block_splitk { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 64x128x128  waves = 1x4  lds_buffers = 4
  scale_a = block(128)  scale_b = block(128)  schedule = splitk }
kernel gh8_block_streamk_f32 { A = e4m3fn row  B = e4m3fn col  C = f32 row  tile = 128x128x128  waves = 2x4
  lds_buffers = 4  scale_a = block(128)  scale_b = block(128)  schedule = streamk }
kernel gh8_tensor_n64 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 64x64x128  waves = 1x4  lds_buffers = 4
  scale_a = tensor  scale_b = tensor }
kernel gh8_rowwise_n64_splitk { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 64x64x128  waves = 1x4
  lds_buffers = 4  scale_a = row  scale_b = col  schedule = splitk }
kernel gh8_block_n64_f32 { A = e4m3fn row  B = e4m3fn col  C = f32 row  tile = 64x64x128  waves = 1x4  lds_buffers = 4
  scale_a = block(128)  scale_b = block(128) }
kernel gh8_rowwise_n192_streamk { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 128x192x128  waves = 2x4
  lds_buffers = 4  scale_a = row  scale_b = col  epilogue = bias(col) -> relu  schedule = streamk }
kernel gh8_tensor_n192 { A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 128x192x128  waves = 2x4
  lds_buffers = 4  scale_a = tensor  scale_b = tensor }
"""
#: the scheduled kernels (split-K, stream-K; a 16-bit one with its row scale too): their parts meet unscaled and the
#: last contributor scales the sum; block-scaled parts are folded per K tile (one block) before they meet
SCHEDULED = ["gh8_tensor_splitk", "gh8_rowwise_splitk_atomic", "gh8_rowcol_streamk_bias", "gh16_row_splitk",
             "gh8_block_splitk", "gh8_block_streamk_f32", "gh8_rowwise_n64_splitk", "gh8_rowwise_n192_streamk"]
#: (the _n64 kernels: the narrow 64 x 64 tile for few rows of A; block scales: half of one 128-column block; the _n192
#: ones: 128 x 192, wgmma m64n192k32)
NAMES = ["gh8_tensor", "gh8_rowwise", "gh8_e5m2_col_bias_f32", "gh8_block", "gh8_block_f32", "gh8_tensor_n64",
         "gh8_block_n64_f32", "gh8_tensor_n192", *SCHEDULED]
#: TMA-addressable: K % 16 == 0, N % 8 == 0 (bf16 C rows for the TMA store); M = 1, N and K off the tiles
HOPPER_SHAPES = [(1, 264, 128), (1, 4096, 4096), (17, 200, 208), (129, 264, 400), (300, 1000, 1008),
                 (1000, 1104, 320), (2048, 1024, 4000)]
#: not TMA-addressable (K odd: A's rows are not 16-byte aligned): the mma.sync body
PORTABLE_SHAPES = [(1, 1, 1), (17, 33, 7), (129, 257, 201)]
DTYPES = {"e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "bf16": torch.bfloat16, "f16": torch.float16,
          "f32": torch.float32}
BLK = 128


def kernel(name):
    from ckgen.runtime.api import jit

    return jit(SPEC, kernel=name, target="sm_90")


def operands(name, M, N, K, gen):
    g = kernel(name).plan.spec.params.gemm
    dt = DTYPES[g.a.dtype.value]
    a = (torch.randn(M, K, device="cuda", generator=gen) * 2).to(dt)
    b = (torch.randn(N, K, device="cuda", generator=gen) * 2).to(dt).t()  # K x N column-major
    kb, nb = -(-K // BLK), -(-N // BLK)
    sizes = {"tensor": (1,), "row": (M,), "col": (N,), "block": None, None: None}
    sa = sb = None
    if g.scale_a == "block":
        sa = torch.rand(M, kb, device="cuda", generator=gen) + 0.05
        sb = torch.rand(nb, kb, device="cuda", generator=gen) + 0.05
    else:
        if g.scale_a:
            sa = torch.rand(*sizes[g.scale_a], device="cuda", generator=gen) + 0.05
        if g.scale_b:
            sb = torch.rand(*sizes[g.scale_b], device="cuda", generator=gen) + 0.05
    bias = torch.randn(N, device="cuda", generator=gen).to(DTYPES[g.c.dtype.value]) if g.has_bias else None  # C's dtype
    return g, a, b, sa, sb, bias


def reference(g, a, b, sa, sb, bias):
    """float64: the decoded fp8 inputs (their rounding is the inputs themselves) times the scales (every SPEC kernel
    with a bias has ``epilogue = bias(col) -> relu``)."""
    M, K = a.shape
    N = b.shape[1]
    ad, bd = a.double(), b.double()
    if g.scale_a == "block":  # A's 1 x 128 and B's 128 x 128 blocks, each element times its block's scale
        ad = ad * sa.double().repeat_interleave(BLK, 1)[:, :K]
        bd = bd * sb.double().repeat_interleave(BLK, 0)[:N].repeat_interleave(BLK, 1)[:, :K].t()
        r = ad @ bd
    else:
        r = ad @ bd
        if sa is not None:
            r = r * sa.double().reshape(-1, 1)
        if sb is not None:
            r = r * sb.double().reshape(1, -1)
    if bias is not None:
        r = torch.clamp(r + bias.double()[None, :], min=0)
    return r


def call(name, a, b, sa, sb, bias, **extra):
    named = {k: v for k, v in (("scale_a", sa), ("scale_b", sb), ("bias", bias)) if v is not None}
    return kernel(name)(A=a, B=b, **named, **extra)


def tolerance(g) -> float:
    """f32 C: fp8 wgmma sums in less than f32 precision, and the tensor- and row-scaled bodies keep their sums in the
    wgmma accumulator over all of K (as `_scaled_mm`'s fast accumulation does): 1.3e-3 measured at K = 4000 on the
    H200 (2026-12-05), so 4e-3; block-scaled ones fold each 128-K block into f32 sums, 1e-3. bf16 C adds its own
    rounding."""
    if g.c.dtype.value != "f32":
        return 1.6e-2
    return 1e-3 if g.scale_a == "block" else 4e-3


def test_every_kernel_has_the_hopper_body():
    for name in NAMES:
        p = kernel(name).plan
        assert p.body.tma is not None, (name, p.body.why)


@pytest.mark.parametrize("shape", HOPPER_SHAPES + PORTABLE_SHAPES,
                         ids=[f"{m}x{n}x{k}" for m, n, k in HOPPER_SHAPES + PORTABLE_SHAPES])
@pytest.mark.parametrize("name", NAMES)
def test_against_float64_on_the_intended_body(name, shape):
    gen = torch.Generator(device="cuda").manual_seed(sum(shape))
    g, a, b, sa, sb, bias = operands(name, *shape, gen)
    out = {}
    names = launched(lambda: out.setdefault("c", call(name, a, b, sa, sb, bias)))
    hopper = shape in HOPPER_SHAPES
    assert names is None or ((f"{name}_tma" in names) == hopper and (name in names) != hopper), names
    err = rel(out["c"], reference(g, a, b, sa, sb, bias))
    assert err <= tolerance(g), f"{name} {shape}: relative error {err:.2e}"


@pytest.mark.parametrize("name", ["gh8_tensor", "gh8_rowwise"])
def test_agrees_with_scaled_mm(name):
    gen = torch.Generator(device="cuda").manual_seed(1)
    g, a, b, sa, sb, _ = operands(name, 2048, 1024, 4096, gen)
    ta, tb = (sa.reshape(-1, 1), sb.reshape(1, -1)) if g.scale_a == "row" else (sa, sb)
    want = torch._scaled_mm(a, b, scale_a=ta, scale_b=tb, out_dtype=torch.bfloat16)
    got = call(name, a, b, sa, sb, None)
    ref = reference(g, a, b, sa, sb, None)
    assert rel(got, ref) <= 1.6e-2 and rel(want, ref) <= 1.6e-2
    assert rel(got, want.double()) <= 1.6e-2


@pytest.mark.parametrize("name", SCHEDULED)
def test_scheduled_workspace_and_bits(name):
    """A scheduled kernel's workspace (passed explicitly, zero-filled) is zero-filled again after the call, on a
    decode shape (M = 16: split over the K range) and a few-tile one; split-K without atomics and stream-K give the
    same bits twice."""
    k = kernel(name)
    for shape in [(16, 4096, 4096), (256, 1024, 8192)]:
        gen = torch.Generator(device="cuda").manual_seed(shape[0])
        g, a, b, sa, sb, bias = operands(name, *shape, gen)
        sizes = {"M": shape[0], "N": shape[1], "K": shape[2], "kb": -(-shape[2] // BLK), "nb": -(-shape[1] // BLK)}
        ws = torch.zeros(max(1, k.workspace_bytes(**{a.name: sizes[a.name] for a in k.abi.sizes})),
                         dtype=torch.uint8, device="cuda")
        outs = [call(name, a, b, sa, sb, bias, workspace=ws).clone() for _ in range(2)]
        torch.cuda.synchronize()
        assert int(torch.count_nonzero(ws)) == 0, (name, shape)
        assert rel(outs[0], reference(g, a, b, sa, sb, bias)) <= tolerance(g), (name, shape)
        if "atomic" not in name:
            assert torch.equal(outs[0].view(torch.uint8), outs[1].view(torch.uint8)), (name, shape)


def test_graph_replay_reads_new_block_scales():
    gen = torch.Generator(device="cuda").manual_seed(2)
    g, a, b, sa, sb, _ = operands("gh8_block", 256, 384, 520, gen)
    k = kernel("gh8_block")
    c = torch.empty(256, 384, device="cuda", dtype=torch.bfloat16)
    k(A=a, B=b, scale_a=sa, scale_b=sb, C=c)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        k(A=a, B=b, scale_a=sa, scale_b=sb, C=c)
    sa.mul_(3.0)
    sb.copy_(sb.flip(0))
    c.view(torch.int16).fill_(-1)
    graph.replay()
    torch.cuda.synchronize()
    assert rel(c, reference(g, a, b, sa, sb, None)) <= 1.6e-2


@pytest.mark.parametrize("batch,M,N,K,broadcast", [(3, 200, 264, 400, ""), (4, 129, 1000, 256, "B"),
                                                  (2, 17, 33, 7, "")])
def test_batched_rowwise_shares_the_scales(batch, M, N, K, broadcast):
    """A batched fp8 kernel: every item scaled by the same row / column scales; B broadcast (2-D: batch stride 0);
    the Hopper body for TMA-addressable operands, mma.sync for the last (K odd)."""
    gen = torch.Generator(device="cuda").manual_seed(batch * 100 + M)
    a = (torch.randn(batch, M, K, device="cuda", generator=gen) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(1 if broadcast else batch, N, K, device="cuda", generator=gen) * 2).to(torch.float8_e4m3fn)
    b = b.transpose(1, 2)[0] if broadcast else b.transpose(1, 2)
    sa = torch.rand(M, device="cuda", generator=gen) + 0.05
    sb = torch.rand(N, device="cuda", generator=gen) + 0.05
    k = kernel("gh8_bmm_rowwise")
    out = {}
    names = launched(lambda: out.setdefault("c", k(A=a, B=b, scale_a=sa, scale_b=sb)))
    hopper = K % 16 == 0
    assert names is None or (("gh8_bmm_rowwise_tma" in names) == hopper and ("gh8_bmm_rowwise" in names) != hopper), \
        names
    ref = torch.matmul(a.double(), b.double()) * sa.double()[:, None] * sb.double()[None, :]
    assert rel(out["c"], ref) <= 1.6e-2
