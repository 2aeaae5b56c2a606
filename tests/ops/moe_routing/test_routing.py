"""MoE routing (op = moe_routing; issue 24): top-k, sort by expert, permute, weighted un-permute.

Rung 2: each stage on the emulator against the float64 reference (ids and sort outputs exactly), with one token,
no tokens, top_k = experts, ids dropped (-1 / out of range), DeepSeek-V3 grouped top-k with a correction bias,
sigmoid and softmax, renormalized or not; the sort leaves its workspace zero-filled and gives the same bits with
workgroups on two threads; the stages chained into the grouped GEMM's offsets reproduce a float64 MoE layer's
routing. Bad input (top_k > experts, a key the stage does not take, groups not dividing experts): a SpecError naming
it. Rung 1: every stage compiles for gfx90a / gfx942 / gfx950 without spills or scratch; nvcc builds them for sm_90.
"""

from __future__ import annotations

import concurrent.futures as cf
import shutil

import numpy as np
import pytest

from ckgen import driver
from ckgen.backends import emu
from ckgen.errors import CkgenError, SpecError
from ckgen.frontend import load_text
from ckgen.ir.arrays import to_bf16, to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.registry import get_op
from ckgen.lower import plan_kernel
from ckgen.runtime.api import Kernel, get_backend, plan_for

needs_clang = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")

KERNELS = {
    "mr_soft": "stage = topk experts = 16 top_k = 4 renormalize = true",
    "mr_soft_all": "stage = topk experts = 6 top_k = 6 logits = f16",
    "mr_sig_v3": "stage = topk experts = 32 top_k = 6 score = sigmoid expert_groups = 8 top_groups = 3 "
                 "correction = true renormalize = true logits = bf16",
    "mr_sig_groups": "stage = topk experts = 12 top_k = 2 score = sigmoid expert_groups = 4 top_groups = 2",
    "mr_sort": "stage = sort experts = 16 top_k = 4",
    "mr_sort_wide": "stage = sort experts = 300 top_k = 2",   # more experts than the sort's 256 threads
    "mr_perm": "stage = permute top_k = 4 x = bf16",
    "mr_unperm": "stage = unpermute top_k = 4 x = f16",
}


def _source(name: str) -> str:
    return f"target gfx942\nkernel {name} {{ op = moe_routing {KERNELS[name]} }}\n"


@pytest.fixture(scope="module")
def kernels() -> dict[str, Kernel]:
    backend = get_backend("emu")
    plans = {n: plan_for(_source(n), n, "amd", "gfx942") for n in KERNELS}
    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        futs = {n: pool.submit(Kernel, p, backend) for n, p in plans.items()}
        return {n: f.result() for n, f in futs.items()}


def _check(k: Kernel, sizes: dict, seed: int, **override) -> dict:
    op = get_op("moe_routing")
    arrays = op.random_inputs(k.plan, sizes, np.random.default_rng(seed))
    arrays.update(override)
    before = {n: (v.copy() if v is not None else None) for n, v in arrays.items()}
    kw = {n: v for n, v in arrays.items() if v is not None}
    ws = None
    if k.plan.abi.workspace is not None:
        ws = np.zeros(k.workspace_bytes(**{s: v for s, v in sizes.items() if s in ("tokens",)}), np.uint8)
        kw["workspace"] = ws
    k(**kw)
    ref = op.reference(k.plan, before, sizes)
    for name, want in ref.items():
        got = to_float64(arrays[name], k.plan.abi[name].dtype)
        tol = op.tolerance(k.plan, name)
        if tol == 0.0:
            assert np.array_equal(got, want), f"{k.name} {sizes}: {name} differs\n{got}\n{want}"
        else:
            err = relative_error(got, want)
            assert err <= tol, f"{k.name} {sizes}: {name} relative error {err:.3e} > {tol:.1e}"
    if ws is not None:
        assert not ws.any(), f"{k.name}: the workspace is not zero-filled after the call"
    return arrays


@needs_clang
@pytest.mark.parametrize("name", [n for n in KERNELS if KERNELS[n].startswith("stage = topk")])
@pytest.mark.parametrize("tokens", [1, 37, 300])
def test_topk_against_float64(kernels, name, tokens):
    _check(kernels[name], {"tokens": tokens}, seed=tokens)


@needs_clang
def test_topk_scale_and_ties(kernels):
    """Equal logits: the lower expert ids win, in order; weights scaled after renormalization."""
    k = kernels["mr_soft"]
    logits = np.zeros((3, 16), np.float32)
    logits[1, [3, 9, 12]] = 5.0
    ids, w = k(logits, scale=2.5)
    assert ids[0].tolist() == [0, 1, 2, 3] and ids[1].tolist() == [3, 9, 12, 0]
    assert np.allclose(w.sum(axis=1), 2.5, rtol=1e-6)


@needs_clang
def test_topk_ties_keep_id_order_when_a_better_expert_comes_later(kernels):
    """Two equal logits, then a larger one: the larger goes first and the tied pair keeps its id order (the pair
    shifts down together; tools/fuzz_numerics.py found bf16 logits chosen [.., 35, 4, ..] for a tie of 4 and 35)."""
    logits = np.zeros((2, 16), np.float32)
    logits[0, [0, 1, 2]] = [1.0, 1.0, 5.0]
    logits[1, [4, 7, 9, 11]] = [2.0, 2.0, 3.0, 2.0]
    ids, _ = kernels["mr_soft"](logits)
    assert ids[0].tolist() == [2, 0, 1, 3] and ids[1].tolist() == [9, 4, 7, 11]


@needs_clang
@pytest.mark.parametrize("name", ["mr_sort", "mr_sort_wide"])
@pytest.mark.parametrize("tokens", [0, 1, 5, 300])
def test_sort_against_float64(kernels, name, tokens):
    _check(kernels[name], {"tokens": tokens}, seed=tokens)


@needs_clang
def test_sort_drops_ids_out_of_range_and_keeps_bits_with_parallel_threads(kernels):
    k = kernels["mr_sort"]
    rng = np.random.default_rng(4)
    ids = rng.integers(-2, 18, (200, 4)).astype(np.int32)   # -2, -1, 16, 17 are dropped
    _check(k, {"tokens": 200}, seed=4, ids=ids)
    k.handle.library.set_threads(2)
    try:
        outs = [k(ids) for _ in range(2)]
    finally:
        k.handle.library.set_threads(0)
    assert all(np.array_equal(a, b) for a, b in zip(outs[0], outs[1], strict=True))


@needs_clang
@pytest.mark.parametrize("tokens,hidden", [(1, 1), (37, 70), (9, 513), (5, 136)])  # (136: 16-byte vectors)
def test_permute_and_unpermute_against_float64(kernels, tokens, hidden):
    _check(kernels["mr_perm"], {"tokens": tokens, "hidden": hidden}, seed=hidden)
    _check(kernels["mr_unperm"], {"tokens": tokens, "hidden": hidden}, seed=hidden + 1)


@needs_clang
def test_stages_chain_into_a_float64_moe(kernels):
    """topk -> sort -> permute -> (per-expert float64 matmul on the sorted rows by offsets) -> unpermute equals a
    per-token float64 mixture of the same experts."""
    rng = np.random.default_rng(11)
    tokens, hidden, out_dim = 23, 8, 8
    logits = rng.standard_normal((tokens, 16)).astype(np.float32)
    x = to_bf16(rng.uniform(-1, 1, (tokens, hidden)))
    w_exp = rng.uniform(-1, 1, (16, hidden, out_dim))
    ids, weights = kernels["mr_soft"](logits)
    offsets, sorted_token, position = kernels["mr_sort"](ids)
    xs = kernels["mr_perm"](x, sorted_token)
    xs64 = to_float64(xs, kernels["mr_perm"].plan.abi["xs"].dtype).reshape(tokens * 4, hidden)
    ys = np.zeros((tokens * 4, out_dim))
    start = 0
    for e, end in enumerate(offsets):
        ys[start:end] = xs64[start:end] @ w_exp[e]
        start = end
    assert start == tokens * 4
    y = kernels["mr_unperm"](ys.astype(np.float16).reshape(tokens, 4, out_dim), position, weights)
    x64 = to_float64(x, kernels["mr_perm"].plan.abi["x"].dtype)
    want = np.stack([sum(weights[t, j] * (x64[t] @ w_exp[ids[t, j]]) for j in range(4)) for t in range(tokens)])
    assert relative_error(y.astype(np.float64), want) < 5e-3


# ------------------------------------------------------------------------------------------------ bad input
def _plan(body: str, arch: str = "gfx942"):
    (s,) = load_text(f"kernel k {{ op = moe_routing {body} }}", "t.ck", (arch,))
    return plan_kernel(s, arch)


@pytest.mark.parametrize("body,match", [
    ("stage = topk experts = 4 top_k = 5", "top_k = 5: more than experts = 4"),
    ("stage = sort experts = 8 top_k = 9", "top_k = 9: more than experts = 8"),
    ("stage = topk experts = 12 top_k = 2 expert_groups = 5", "expert_groups = 5: does not divide experts = 12"),
    ("stage = topk experts = 12 top_k = 7 expert_groups = 4 top_groups = 2", "fewer than top_k = 7"),
    ("stage = sort experts = 8 top_k = 2 score = sigmoid", "stage = sort takes no score"),
    ("stage = permute top_k = 2", "needs x"),
    ("stage = topk top_k = 2", "needs experts"),
    ("stage = route top_k = 2", "expected one of topk, sort, permute, unpermute"),
    ("stage = topk experts = 8 top_k = 2 logits = i8", "logits = i8: not a dtype this stage takes"),
])
def test_bad_keys_are_spec_errors_naming_the_key(body, match):
    with pytest.raises(SpecError, match=match) as ei:
        _plan(body)
    assert isinstance(ei.value, CkgenError) and "t.ck:1:" in ei.value.render() and "legal" in ei.value.render()


@needs_clang
def test_bad_call_is_refused_before_launch(kernels):
    k = kernels["mr_soft"]
    with pytest.raises(CkgenError, match="logits has shape"):
        k(np.zeros((3, 15), np.float32))
    with pytest.raises(CkgenError, match="logits has dtype int32"):
        k(np.zeros((3, 16), np.int32))


# ------------------------------------------------------------------------------------------------ rung 1
RUNG1 = """
kernel r_top { op = moe_routing stage = topk experts = 256 top_k = 8 score = sigmoid expert_groups = 8
               top_groups = 4 correction = true renormalize = true logits = bf16 }
kernel r_mix { op = moe_routing stage = topk experts = 8 top_k = 2 renormalize = true }
kernel r_sort { op = moe_routing stage = sort experts = 256 top_k = 8 }
kernel r_perm { op = moe_routing stage = permute top_k = 8 x = bf16 }
kernel r_unperm { op = moe_routing stage = unpermute top_k = 8 x = bf16 }
"""


@pytest.mark.parametrize("arch,clang", [("gfx90a", "clang++-19"), ("gfx942", "clang++-19"), ("gfx950", "clang++-22")])
def test_stages_compile_without_spills(tmp_path, arch, clang):
    if shutil.which(clang) is None:
        pytest.skip(f"{clang} is not installed")
    src = tmp_path / "route.ck"
    src.write_text(RUNG1)
    (lib,) = driver.compile_files([src], (arch,), tmp_path / "out", jobs=2)
    for p in lib.plans:
        res = lib.resources[(p.name, arch)]
        assert res["vgpr_spills"] == res["sgpr_spills"] == res["scratch_bytes"] == 0, (p.name, res)


def test_nvidia_build_of_the_stages(tmp_path):
    from ckgen.backends.nvidia import compiler as nvidia

    try:
        nvidia.find_nvcc()
    except CkgenError as exc:
        pytest.skip(str(exc))
    src = tmp_path / "route.ck"
    src.write_text("target sm_90\n" + RUNG1)
    (lib,) = driver.compile_files([src], ("sm_90",), tmp_path / "out", jobs=2)
    for (name, _), res in lib.resources.items():
        assert res["spill_stores"] == 0 and res["stack_bytes"] == 0, (name, res)
