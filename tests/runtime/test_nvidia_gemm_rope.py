"""The GEMM's rotary epilogue (``rope = gptj(head_dim[, rot])``, issue 28 item 3) on a real NVIDIA GPU (marked
``gpu``: the lent device).

Against the op's float64 reference computed with torch on the GPU (ckgen/ops/gemm/reference.py): the Hopper body
(``<name>_tma``, checked through torch's profiler to be the kernel that ran) at the layer's tile (128x256, the
qkv projection's widths) and a smaller one with a bias and partial rotary, f32 C; the mma.sync body where the
Hopper body refuses the operands (a leading dimension that is not 16-byte aligned; N not a multiple of 8).
Outputs are poisoned (NaN) first; M, N, K are off the tile; positions are random over a table of 4096 rows;
``rope_cols`` short of N leaves the last columns (v) unrotated. The tests that read torch's profiler are named
``*_runs_wh``: compute-sanitizer's memcheck leaves them out (CUPTI does not start under it).
"""

from __future__ import annotations

import pytest

from tests.runtime.gpu_helpers import launched

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel gr_qkv { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
  rope = gptj(128) }
kernel gr_bias { A = bf16 row B = bf16 col C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
  epilogue = bias(col) rope = gptj(64, 32) }
kernel gr_f32 { A = f16 row B = f16 row C = f32 row tile = 64x128x64 waves = 1x4 lds_buffers = 4 rope = gptj(128) }
"""
TOL = {torch.bfloat16: 2e-2, torch.float16: 4e-3, torch.float32: 2e-3}
DT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def kernel(name):
    from ckgen.runtime.api import jit

    return jit(SPEC, kernel=name, target="sm_90")


def _run(name, M, N, K, cols, ld_pad=0, profile=False):
    """One call on random operands, checked against float64: (the kernels that ran when ``profile``, else None;
    the C it wrote)."""
    import ckgen
    from ckgen.ir.registry import get_op

    k = kernel(name)
    g = k.plan.spec.params.gemm
    gen = torch.Generator(device="cuda")
    gen.manual_seed(M + N + K)
    dt, ct = DT[g.a.dtype.value], DT[g.c.dtype.value]
    a = (torch.randn(M, K + ld_pad, device="cuda", generator=gen) * 0.5).to(dt)[:, :K]
    b = (torch.randn(N, K + ld_pad, device="cuda", generator=gen) * 0.1).to(dt)[:, :K].T if g.b.layout.value == "col" \
        else (torch.randn(K, N + ld_pad, device="cuda", generator=gen) * 0.1).to(dt)[:, :N]
    c = torch.full((M, N + ld_pad), float("nan"), device="cuda", dtype=ct)[:, :N]
    cs = torch.from_numpy(ckgen.rope_table(4096, g.rope.dim, theta=10000.0)).cuda()
    pos = torch.randint(0, 4096, (M,), device="cuda", generator=gen, dtype=torch.int32)
    args = dict(A=a, B=b, C=c, positions=pos, cos_sin=cs, rope_cols=cols)
    if g.has_bias:
        args["bias"] = (torch.randn(N, device="cuda", generator=gen) * 0.1).to(ct)
    ran = None
    if profile:
        ran = launched(lambda: k(**args))
    else:
        k(**args)
    torch.cuda.synchronize()
    want = get_op("gemm").reference_torch(k.plan, args, {"M": M, "N": N, "K": K, "rope_cols": cols})["C"]
    err = (torch.linalg.norm((c.double() - want).flatten()) / torch.linalg.norm(want.flatten())).item()
    assert err < TOL[ct], (name, M, N, K, err)
    return ran, c


SHAPES = [(1, 256, 64, 256), (300, 640, 136, 384), (129, 1032, 520, 1024), (2056, 1536, 264, 1280)]
# shapes the Hopper body refuses (a leading dimension that is not 16-byte aligned, N not a multiple of 8)
MMA_SYNC = [((77, 384, 99, 256), 1), ((130, 203, 136, 128), 0)]


@pytest.mark.parametrize("name", ["gr_qkv", "gr_bias", "gr_f32"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_rotation_against_float64(name, shape):
    _run(name, *shape)


@pytest.mark.parametrize("name", ["gr_qkv", "gr_bias"])
@pytest.mark.parametrize("shape,ld_pad", MMA_SYNC, ids=["ld_odd", "n_ragged"])
def test_rotation_of_refused_operands_against_float64(name, shape, ld_pad):
    """Nothing is written past N (the rows' padding stays NaN)."""
    _, c = _run(name, *shape, ld_pad=ld_pad)
    M, N = shape[:2]
    ld = c.stride(0)
    assert torch.isnan(c.as_strided((M, ld), (ld, 1))[:, N:]).all(), "wrote past N"


@pytest.mark.parametrize("name", ["gr_qkv", "gr_bias", "gr_f32"])
def test_hopper_body_runs_wh(name):
    """The Hopper entry (`<name>_tma`) is the kernel that ran on aligned operands; mma.sync on refused ones."""
    ran, _ = _run(name, *SHAPES[2], profile=True)
    assert f"{name}_tma" in ran, (name, ran)
    if name != "gr_f32":
        for shape, ld_pad in MMA_SYNC:
            ran, _ = _run(name, *shape, ld_pad=ld_pad, profile=True)
            assert f"{name}_tma" not in ran and name in ran, (name, ran)
