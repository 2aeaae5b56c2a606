"""The prepared call (ckgen.runtime.prepared) on the emu backend: a second call with one signature skips binding,
anything the signature cannot vouch for takes the full checks again, and the fast path computes the same."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ckgen.backends import emu
from ckgen.errors import RuntimeFailure
from ckgen.runtime import api

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")

SRC = """target gfx942
kernel pg {
  A = f16 row
  B = f16 col
  C = f32 row
  tile = 64x64x32
  waves = 2x2
  epilogue = bias(col)
}
kernel prms { op = rmsnorm x = f32 max_cols = 256 }
family pfam {
  A = f16 row  B = f16 col  C = f32 row
  tile in [32x32x32]  waves = 1x2
  schedule in [splitk(2)]
}
"""


@pytest.fixture(scope="module")
def gemm() -> api.Kernel:
    return api.jit(SRC, kernel="pg", target="emu")


@pytest.fixture(scope="module")
def rms() -> api.Kernel:
    return api.jit(SRC, kernel="prms", target="emu")



def _ops(M=40, N=24, K=20, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    B = np.asfortranarray(rng.uniform(-1, 1, (K, N)).astype(np.float16))
    bias = rng.uniform(-1, 1, N).astype(np.float32)
    return A, B, bias


def _ref(A, B, bias):
    return A.astype(np.float64) @ B.astype(np.float64) + bias


def test_second_call_skips_bind_and_is_correct(gemm, binds):
    gemm._prepared.clear()
    A, B, bias = _ops()
    gemm(A, B, bias=bias)
    assert binds[0] == 1
    for seed in (1, 2):
        A, B, bias = _ops(seed=seed)
        C = gemm(A, B, bias=bias)
        ref = _ref(A, B, bias)
        assert np.linalg.norm(C - ref) / np.linalg.norm(ref) < 1e-5
    assert binds[0] == 1
    Cout = np.zeros((40, 24), np.float32)
    got = gemm(A, B, bias=bias, C=Cout)  # another signature (C given): full once, then prepared
    got = gemm(A, B, bias=bias, C=Cout)
    assert got is Cout and binds[0] == 2
    assert np.linalg.norm(Cout - _ref(A, B, bias)) / np.linalg.norm(_ref(A, B, bias)) < 1e-5


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda A, B, b: (A.astype(np.float32), B, b), "A has dtype float32, the kernel takes f16"),
    (lambda A, B, b: (A, np.ascontiguousarray(B), b), "B must be col-major"),
    (lambda A, B, b: (A[:, :10], B, b), "their K differ"),
    (lambda A, B, b: (A, B, None), "pass bias"),
])
def test_changed_signature_takes_the_full_checks(gemm, binds, mutate, message):
    A, B, bias = _ops()
    gemm(A, B, bias=bias)
    gemm(A, B, bias=bias)
    before = binds[0]
    with pytest.raises(RuntimeFailure, match=message):
        gemm(*mutate(A, B, bias)[:2], bias=mutate(A, B, bias)[2])
    assert binds[0] == before + 1


def test_other_shape_and_alignment_rebind(gemm, binds):
    A, B, bias = _ops()
    gemm(A, B, bias=bias)
    gemm(A, B, bias=bias)
    n = binds[0]
    A2, B2, bias2 = _ops(M=56, seed=3)
    C = gemm(A2, B2, bias=bias2)
    assert binds[0] == n + 1 and np.linalg.norm(C - _ref(A2, B2, bias2)) / np.linalg.norm(_ref(A2, B2, bias2)) < 1e-5
    raw = np.zeros(24 + 1, np.float32)[1:]  # the same bias at another alignment class: a new signature
    raw[:] = bias
    gemm(A, B, bias=raw)
    assert binds[0] == n + 2


def test_aliasing_on_the_fast_path_falls_back(gemm, binds):
    A, B, bias = _ops(N=24, K=24, M=24)
    C = np.zeros((24, 24), np.float32)
    gemm(A, B, bias=bias, C=C)
    gemm(A, B, bias=bias, C=C)
    n = binds[0]
    mem = np.zeros(24 * 24 + 24, np.float32)
    bias2 = mem[:24]
    bias2[:] = bias
    C3 = np.zeros((24, 24), np.float32)
    gemm(A, B, bias=bias2, C=C3)  # same signatures as C2 / bias2 but disjoint: prepare once
    gemm(A, B, bias=bias2, C=C3)
    n = binds[0]
    over = mem[23:23 + 24 * 24].reshape(24, 24)  # overlaps bias2 (another alignment class: the full checks)
    with pytest.raises(RuntimeFailure, match="overlaps bias"):
        gemm(A, B, bias=bias2, C=over)
    assert binds[0] == n + 1
    mem2 = np.zeros(24 * 24 + 4, np.float32)  # C starting inside bias's span at the same alignment class
    bias4 = mem2[:24]
    bias4[:] = bias
    C4 = np.zeros((24, 24), np.float32)
    gemm(A, B, bias=bias4, C=C4)
    gemm(A, B, bias=bias4, C=C4)
    n = binds[0]
    inside = mem2[4:4 + 24 * 24].reshape(24, 24)
    assert inside.__array_interface__["data"][0] % 16 == bias4.__array_interface__["data"][0] % 16
    with pytest.raises(RuntimeFailure, match="overlaps bias"):
        gemm(A, B, bias=bias4, C=inside)
    assert binds[0] == n + 1


def test_readonly_output_is_in_the_signature(gemm, binds):
    A, B, bias = _ops()
    C = np.zeros((40, 24), np.float32)
    gemm(A, B, bias=bias, C=C)
    gemm(A, B, bias=bias, C=C)
    C.setflags(write=False)
    with pytest.raises(RuntimeFailure, match="read-only"):
        gemm(A, B, bias=bias, C=C)


def test_row_op_fast_path_against_float64(rms, binds):
    rng = np.random.default_rng(5)
    w = rng.uniform(0.5, 1.5, 96).astype(np.float32)
    for i in range(3):
        x = rng.uniform(-2, 2, (7, 96)).astype(np.float32)
        y = rms(x, weight=w)
        x64 = x.astype(np.float64)
        ref = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + 1e-5) * w
        assert np.abs(y - ref).max() < 1e-4, i
    assert binds[0] == 1


def test_stream_or_workspace_arguments_use_the_full_path(gemm, binds):
    A, B, bias = _ops()
    gemm(A, B, bias=bias)
    gemm(A, B, bias=bias)
    n = binds[0]
    with pytest.raises(RuntimeFailure, match="takes no workspace"):
        gemm(A, B, bias=bias, workspace=np.zeros(16, np.uint8))
    assert binds[0] == n + 1


def test_dispatcher_caches_its_choice_and_the_member_workspace(binds):
    d = api.jit(SRC, kernel="pfam", target="emu")
    for seed in range(4):
        A, B, _ = _ops(M=24, N=40, K=96, seed=seed)
        C = d(A, B)
        ref = A.astype(np.float64) @ B.astype(np.float64)
        assert np.linalg.norm(C - ref) / np.linalg.norm(ref) < 1e-5, seed  # a dirty workspace would show here
    assert binds[0] == 2  # the first call: the dispatcher's checks, then the member's
    member = next(iter(d._kernels.values()))
    assert member.abi.workspace is not None and len(member._prepared) == 1
    A, B, _ = _ops(M=24, N=40, K=64)
    with pytest.raises(RuntimeFailure, match="their K differ"):
        d(A, B[:32])



@pytest.mark.parametrize("poison", ["1", "0"])
def test_prepared_outputs_poisoned_only_under_ckgen_poison(rms, monkeypatch, poison):
    """The outputs a prepared call allocates are 0xFF bytes (NaN) when CKGEN_POISON=1 (the suite's setting) and left
    as allocated otherwise: seen through a prepared launch that writes nothing."""
    from ckgen import config

    monkeypatch.setenv("CKGEN_POISON", poison)
    config.reload()
    try:
        monkeypatch.setattr(rms.backend, "fast_launcher", lambda handle, plan, call: lambda args, live: None)
        k = api.Kernel(rms.plan, rms.backend)  # a fresh cache, prepared under this setting
        x = np.random.default_rng(3).uniform(-1, 1, (5, 200)).astype(np.float32)
        w = np.ones(200, np.float32)
        first = k(x, weight=w)  # binds, runs, prepares
        assert np.isfinite(first).all()
        y = k(x, weight=w)  # the prepared path, whose launch writes nothing
        assert y.shape == (5, 200) and y is not first
        assert np.isnan(y).all() == (poison == "1")
    finally:
        monkeypatch.setenv("CKGEN_POISON", "1")
        config.reload()
