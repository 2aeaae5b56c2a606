"""Split-K, stream-K and small-M schedules on a real NVIDIA GPU (marked ``gpu``: the lent device), and a family's
dispatching callable.

Every kernel runs edge shapes, decode shapes (M = 1, 16) and few-tile shapes against a float64 reference with
its workspace passed explicitly (zero-filled): the output is right, the workspace is zero-filled again after
the call (the ABI's contract, so one buffer serves every call), and the deterministic modes give the same bits
twice. The Hopper-shaped kernels run their TMA + wgmma body when the operands are aligned and the portable
body otherwise (pad 1). ``bench/nv_prebuild.py`` builds these kernels ahead of a run.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel gpu_sched_sk_hopper { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 4
  schedule = splitk }
kernel gpu_sched_stk_hopper_gelu { A = f16 row  B = f16 col  C = f16 row  tile = 128x256x64  waves = 2x4
  lds_buffers = 4  schedule = streamk  epilogue = bias(col) -> gelu -> cast(f16) }
kernel gpu_sched_decode_atomic { A = bf16 row  B = bf16 col  C = bf16 row  tile = 16x128x64  waves = 1x4
  lds_buffers = 6  schedule = splitk(atomic) }
kernel gpu_sched_decode { A = bf16 row  B = bf16 col  C = bf16 row  tile = 16x128x64  waves = 1x4  lds_buffers = 6
  schedule = splitk }
kernel gpu_sched_sk4_f32_beta { A = f32 col  B = f32 row  C = f32 row  tile = 64x64x32  waves = 2x2  lds_buffers = 3
  beta = 1.0  schedule = splitk(4) }
kernel gpu_sched_sk_hopper64 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 64x128x64  waves = 2x2  lds_buffers = 4
  schedule = splitk }
kernel gpu_sched_sk_atomic_hopper128x128 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x128x64  waves = 2x4
  lds_buffers = 4  schedule = splitk(atomic) }
kernel gpu_sched_stk_hopper64x256 { A = bf16 row  B = bf16 col  C = bf16 row  tile = 64x256x64  waves = 1x4
  lds_buffers = 4  prefetch = 0  schedule = streamk }
kernel gpu_sched_stk_i8 { A = i8 row  B = i8 col  C = i32 row  acc = i32  tile = 64x64x64  waves = 2x2
  lds_buffers = 3  schedule = streamk }
"""
NAMES = ["gpu_sched_sk_hopper", "gpu_sched_stk_hopper_gelu", "gpu_sched_decode_atomic", "gpu_sched_decode",
         "gpu_sched_sk4_f32_beta", "gpu_sched_stk_i8", "gpu_sched_sk_hopper64", "gpu_sched_sk_atomic_hopper128x128",
         "gpu_sched_stk_hopper64x256"]
DETERMINISTIC = [n for n in NAMES if "atomic" not in n]
#: the last two: 272 tiles of 128 x 256 (two waves of 132 stream-K workers and 8 tiles more: whole tiles first, the
#: last 8 in 16 parts each), 232 (one wave and 100 tiles: too many for two parts each, each taken whole)
SHAPES = [(1, 1, 1), (17, 33, 7), (1, 4096, 4096), (16, 1000, 3000), (64, 1024, 8192), (129, 264, 520),
          (300, 520, 72), (1000, 1100, 300), (2048, 4352, 300), (1024, 7424, 520)]
TORCH = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "i8": torch.int8, "i32": torch.int32}
TOL = {"f16": 4e-3, "bf16": 1.6e-2, "f32": 5e-3, "i32": 0.0}


def kernel(name):
    from ckgen.runtime.api import jit

    return jit(SPEC, kernel=name, target="sm_90")


def operand(rows, cols, row_major, dt, pad, gen):
    shape = (rows, cols + pad) if row_major else (cols, rows + pad)
    if dt in ("i8", "i32"):
        x = torch.randint(-8, 8, shape, device="cuda", generator=gen, dtype=torch.int32).to(TORCH[dt])
    else:
        x = (torch.randn(shape, device="cuda", generator=gen) * 0.5).to(TORCH[dt])
    return x[:, :cols] if row_major else x[:, :rows].t()


def run(g, M, N, K, pad, seed):
    gm = g.plan.spec.params.gemm
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    dt, dt_out = gm.a.dtype.value, gm.c.dtype.value
    a = operand(M, K, gm.a.layout.value == "row", dt, pad, gen)
    b = operand(K, N, gm.b.layout.value == "row", dt, pad, gen)
    bias = (torch.randn(N, device="cuda", generator=gen) * 0.5).to(TORCH[dt_out]) if gm.bias_axis else None
    c0 = operand(M, N, True, dt_out, 0, gen) if gm.beta else None
    c = c0.clone() if c0 is not None else None
    ws = torch.zeros(max(1, g.workspace_bytes(M=M, N=N, K=K)), dtype=torch.uint8, device="cuda")
    out = g(a, b, bias=bias, C=c, workspace=ws)
    torch.cuda.synchronize()
    ref = gm.alpha * (a.double() @ b.double())
    if c0 is not None:
        ref = ref + gm.beta * c0.double()
    if bias is not None:
        ref = ref + bias.double()[None, :]
    if any(op.kind == "gelu" for op in gm.epilogue):
        ref = 0.5 * ref * (1 + torch.tanh(0.7978845608028654 * (ref + 0.044715 * ref ** 3)))
    d = torch.linalg.norm((out.double() - ref).flatten()).item()
    n = torch.linalg.norm(ref.flatten()).item()
    return out, (d / n if n else d), ws


@pytest.mark.parametrize("name,pad", [(n, p) for n in NAMES for p in (0, 1)],
                         ids=[f"sched-{n}-pad{p}" for n in NAMES for p in (0, 1)])
def test_schedules_on_the_gpu(name, pad):
    g = kernel(name)
    tol = TOL[g.plan.spec.params.gemm.c.dtype.value]
    for (M, N, K) in SHAPES:
        _, err, ws = run(g, M, N, K, pad, seed=M + N + K)
        assert err == err and err <= tol, (name, M, N, K, pad, err)
        assert int(torch.count_nonzero(ws)) == 0, (name, M, N, K, "workspace not zero-filled after the call")


@pytest.mark.parametrize("name", DETERMINISTIC, ids=[f"sched-det-{n}" for n in DETERMINISTIC])
def test_deterministic_bits(name):
    g = kernel(name)
    outs = [run(g, 64, 1024, 8192, 0, seed=1)[0].clone() for _ in range(3)]
    assert all(torch.equal(outs[0].view(torch.uint8) if outs[0].dtype != torch.int32 else outs[0],
                           o.view(torch.uint8) if o.dtype != torch.int32 else o) for o in outs[1:])


def test_sched_hopper_body_runs_when_aligned():
    from torch.profiler import ProfilerActivity, profile

    g = kernel("gpu_sched_sk_hopper")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run(g, 64, 1024, 8192, 0, seed=3)
    assert "gpu_sched_sk_hopper_tma" in {e.key for e in prof.key_averages()}


def test_sched_missing_workspace_is_an_error():
    from ckgen.errors import RuntimeFailure

    g = kernel("gpu_sched_decode")
    a = torch.zeros(16, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.zeros(1024, 4096, device="cuda", dtype=torch.bfloat16).t()
    with pytest.raises(RuntimeFailure, match="workspace holds 1 bytes"):
        g(a, b, workspace=torch.zeros(1, dtype=torch.uint8, device="cuda"))
    assert g(a, b).abs().max().item() == 0.0  # the callable allocates one when none is given


def test_sched_family_dispatch_on_the_gpu(monkeypatch):
    """The family of bench/dispatch.py through its Python dispatching callable (the cost model alone)."""
    from pathlib import Path

    import ckgen

    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # the path as bench/nv_prebuild.py built it
    d = ckgen.jit("bench/dispatch_nv.ck", kernel="lin", target="sm_90")
    gen = torch.Generator(device="cuda")
    for M, N, K in [(1, 4096, 4096), (64, 1024, 8192), (600, 1000, 512)]:
        a = operand(M, K, True, "bf16", 0, gen)
        w = (torch.randn(N, K, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
        c = d(a, w.t())
        torch.cuda.synchronize()
        ref = a.double() @ w.double().t()
        err = (torch.linalg.norm((c.double() - ref).flatten()) / torch.linalg.norm(ref.flatten())).item()
        assert err <= 1.6e-2, (M, N, K, d.explain(M, N, K).kernel, err)
