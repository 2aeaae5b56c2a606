"""A grid over the launch limits (65535 workgroups along y or z) runs as consecutive sub-problems: checked on the
emulator with the limits lowered to 2 (the same generated code as for the real limits), in the generic Python
rule the HIP JIT uses, and with real sizes on a GPU (marked gpu)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ckgen.backends import emu
from ckgen.frontend import load_text
from ckgen.ir import plan as ir_plan
from ckgen.ir.plan import split_launch
from ckgen.lower import plan_kernel
from ckgen.runtime import api

SRC = """target gfx942
kernel rows { A = f32 col B = f32 row C = f32 row beta = 0.5 tile = 32x32x8 waves = 1x1 epilogue = bias(row) -> relu }
kernel items { A = f32 row B = f32 row C = f32 col tile = 32x32x8 waves = 1x1 batched = true epilogue = bias(col) }
"""


def test_split_rule_moves_each_tensor_by_its_stride():
    (spec,) = [s for s in load_text(SRC, "g.ck") if s.name == "rows"]
    p = plan_kernel(spec, "gfx942")
    values = {"A": 1000, "B": 2000, "C": 3000, "bias": 4000, "M": 100, "N": 40, "K": 7, "lda": 128, "ldb": 40,
              "ldc": 48}
    subs = split_launch(p.abi, p.launch, values, limits=(2**31 - 1, 2, 2))
    assert [s["M"] for s in subs] == [64, 36]  # 2 workgroups of 32 rows per launch
    second = subs[1]
    assert second["A"] == 1000 + 64 * 4          # A is column-major: rows are contiguous
    assert second["C"] == 3000 + 64 * 48 * 4     # C row-major: ldc per row
    assert second["bias"] == 4000 + 64 * 4 and second["B"] == 2000
    assert split_launch(p.abi, p.launch, values) == [values]  # the real limits: one launch


@pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")
def test_the_binding_lets_a_split_axis_exceed_the_real_limit():
    """With the real limits: M of 65535 tiles + 7 rows binds (it runs as 2 launches), as it must on a GPU; the
    arrays are never touched (np.empty, C passed in), so only their address space is taken."""
    rows = api.jit(SRC, kernel="rows", target="emu")
    M, N, K = 65535 * 32 + 7, 40, 9
    A, B, C = np.empty((K, M), np.float32).T, np.empty((K, N), np.float32), np.empty((M, N), np.float32)
    call = rows.bind(A, B, np.empty(M, np.float32), C=C)
    assert call.sizes["M"] == M
    values = {a.name: 0 if a.is_tensor else v for a, v in zip(rows.plan.abi.args, call.values, strict=True)}
    assert [s["M"] for s in split_launch(rows.plan.abi, rows.plan.launch, values)] == [65535 * 32, 7]


@pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")
def test_over_the_limit_grids_compute_the_right_numbers_on_the_emulator(monkeypatch):
    monkeypatch.setattr(ir_plan, "GRID_LIMITS", (2**31 - 1, 2, 2))
    rng = np.random.default_rng(1)
    rows = api.jit(SRC, kernel="rows", target="emu")
    assert "over the launch limit: consecutive sub-problems along M" in emu.emu_sources(rows.plan)[2]
    M, N, K = 5 * 32 + 7, 40, 9  # 6 workgroups along y: 3 sub-problems
    A = np.asfortranarray(rng.uniform(-1, 1, (M, K)).astype(np.float32))
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    C0 = rng.uniform(-1, 1, (M, N)).astype(np.float32)
    bias = rng.uniform(-1, 1, M).astype(np.float32)
    C = rows(A, B, bias, C=C0.copy())
    ref = np.maximum(A.astype(np.float64) @ B + 0.5 * C0 + bias[:, None], 0)
    assert np.abs(C - ref).max() < 1e-4

    items = api.jit(SRC, kernel="items", target="emu")
    batch = 5  # 5 workgroups along z: 3 sub-problems; B broadcast (stride 0)
    A = rng.uniform(-1, 1, (batch, 33, 9)).astype(np.float32)
    B = rng.uniform(-1, 1, (9, 70)).astype(np.float32)
    bias = rng.uniform(-1, 1, (batch, 70)).astype(np.float32)
    C = items(A, B, bias)
    ref = A.astype(np.float64) @ B + bias[:, None, :]
    assert C.shape == (batch, 33, 70) and np.abs(C - ref).max() < 1e-4


@pytest.mark.gpu
def test_over_65535_tiles_along_m_on_a_gpu():  # pragma: no cover - runs on the lent H200
    torch = pytest.importorskip("torch")
    k = api.jit("kernel tall { A = f16 row B = f16 row C = f16 row tile = 64x64x32 waves = 2x2 }",
                target="sm_90")
    M, N, K = 65535 * 64 + 100, 64, 32
    A = torch.randn(M, K, device="cuda", dtype=torch.float16)
    B = torch.randn(K, N, device="cuda", dtype=torch.float16)
    C = k(A, B)
    ref = (A.float() @ B.float()).half()
    assert torch.allclose(C[-200:], ref[-200:], atol=1e-1, rtol=1e-2)
    assert torch.allclose(C[:200], ref[:200], atol=1e-1, rtol=1e-2)
