"""Split rows (ckgen/ops/rowops/split.py) on a real NVIDIA GPU (marked ``gpu``: ladder rung 3, the lent H200).

Vocabulary-wide rows (32000 .. 256000 columns, primes and tails) of softmax, log-softmax, layer norm and RMS norm
(with residuals) split over several workgroups (softmax also in wide slices of 512 x 6, one workgroup per SM), each
path: the thread-block cluster exchange (sm_90, the default where a cluster fits, also with more CTAs than the
plan's: ``CKGEN_ROWOPS_CLUSTERS=N``) and the workspace exchange (``CKGEN_ROWOPS_CLUSTERS=0``), against the op's
float64 reference and against torch; a caller's workspace reused and left zero-filled; rows past the grid (more rows
than the launch's workgroups hold at once).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

from tests.runtime.test_nvidia_rowops import TOL, _torch_ref, check, operands  # noqa: E402

SPEC = """
target sm_90
kernel gpu_split_softmax   { op = softmax x = bf16 scale = 0.7 max_cols = 128256 }
kernel gpu_split_logsm     { op = softmax log = true x = f16 y = f32 max_cols = 151936 }
kernel gpu_split_ln_res    { op = layernorm x = bf16 residual = true max_cols = 256000 }
kernel gpu_split_rms_res   { op = rmsnorm x = bf16 residual = f32 max_cols = 151936 }
kernel gpu_split_sm_t256     { op = softmax x = bf16 max_cols = 256000 split = 32 threads_per_row = 256 reg_vecs = 4 }
kernel gpu_split_rms_small { op = rmsnorm x = f32 max_cols = 1009 split = 3 }
kernel gpu_split_sm_wide   { op = softmax x = bf16 scale = 0.7 max_cols = 170000 }
"""
NAMES = ["gpu_split_softmax", "gpu_split_logsm", "gpu_split_ln_res", "gpu_split_rms_res", "gpu_split_sm_t256",
         "gpu_split_rms_small", "gpu_split_sm_wide"]
_kernels: dict = {}


def kernel(name):
    from ckgen.runtime.api import jit

    if name not in _kernels:
        _kernels[name] = jit(SPEC, kernel=name, target="sm_90")
    return _kernels[name]


def shapes(k):
    """Few rows at the widths the issue names that the kernel takes, a prime, a row of one slice, one column."""
    mc = k.plan.body.max_cols
    cols = [c for c in (32000, 128256, 151936, 256000, 131071, 1009, 385) if c <= mc] + [1, mc]
    modes = ("tight", "odd", "pad")
    return [(1 + i % 3, c, modes[i % 3]) for i, c in enumerate(sorted(set(cols)))]


@pytest.fixture(params=["clusters", "clusters5", "clusters16", "workspace"])
def path(request, monkeypatch):
    """The exchange: thread-block clusters where they fit (sm_90), of the planned size or of 5 or 16 CTAs wherever
    the row takes that many (CKGEN_ROWOPS_CLUSTERS=N: shorter slices than a tile; rows that do not take N keep the
    planned size), or the workspace (CKGEN_ROWOPS_CLUSTERS=0)."""
    env = {"workspace": "0", "clusters5": "5", "clusters16": "16"}.get(request.param)
    if env is None:
        monkeypatch.delenv("CKGEN_ROWOPS_CLUSTERS", raising=False)
    else:
        monkeypatch.setenv("CKGEN_ROWOPS_CLUSTERS", env)
    return request.param


@pytest.mark.parametrize("name", NAMES)
def test_split_rows_vs_float64(name, path):
    k = kernel(name)
    assert k.plan.body.split > 0
    gen = torch.Generator(device="cuda")
    gen.manual_seed(11)
    rows_most = 3
    ws = torch.zeros(k.workspace_bytes(rows=rows_most, cols=k.plan.body.max_cols), dtype=torch.uint8, device="cuda")
    for rows, cols, mode in shapes(k):
        ins, outs, _ = operands(k, rows, cols, mode, gen)
        k(**ins, **outs, workspace=ws)
        torch.cuda.synchronize()
        check(k, ins, outs, f"{name} {rows}x{cols} ({mode}, {path})")
        assert not ws.any().item(), f"{name} {rows}x{cols} ({path}): the workspace was left non-zero"


@pytest.mark.parametrize("name,rows,cols", [("gpu_split_softmax", 1024, 128256), ("gpu_split_ln_res", 1024, 128256),
                                            ("gpu_split_sm_wide", 1024, 151936),
                                            ("gpu_split_rms_res", 1024, 151936), ("gpu_split_sm_t256", 16500, 32003)])
def test_split_rows_vs_torch(name, rows, cols, path):
    """1024 rows of 128256 / 151936 columns (softmax: the issue's shape), and 16500 rows of the prime 32003 in 4
    slices each (more slices than the grid's 65536 workgroups: rows past the grid), against torch."""
    k = kernel(name)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(12)
    ins, _, _ = operands(k, rows, cols, "tight", gen)
    out = k(**ins)
    y = (out if isinstance(out, tuple) else (out,))[0]
    torch.cuda.synchronize()
    ref = _torch_ref(k, ins)
    err = (torch.linalg.norm((y.float() - ref).flatten()) / torch.linalg.norm(ref.flatten())).item()
    assert err <= TOL[k.plan.spec.params.row.y.value], (name, rows, cols, path, err)
