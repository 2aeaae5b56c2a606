"""Rung 2 for ``op = attention_kv_append`` on the emulator (the gfx942 plans in one emulator library and the sm_90 plans
as warps of 32): the new keys and values land at ``seqlens_k[b] + t`` of a contiguous or paged cache (pages in a
random order, a step crossing page boundaries), exactly, and nothing else of the cache changes; unaligned strides
(element by element); an append followed by ``attention_decode`` over the grown cache against float64; positions
past the capacity and page ids outside the cache trap, bad shapes are refused by name; ``rotate_q``: the step's
queries rotated in place in the same launch (gptj and neox, rot dims below head_dim with a scalar tail, query heads
4x and 1x heads_kv, odd and empty steps, a padded Q row, steps of several blocks of each part), bad Q / heads refused by name.
"""

from __future__ import annotations

import numpy as np
import pytest

import ckgen
from ckgen.errors import CkgenError, EmulationFault, RuntimeFailure, SpecError
from ckgen.ir.arrays import to_float64
from ckgen.ir.types import DType
from ckgen.ops.attention import decode_reference as R
from ckgen.ops.attention import kv_append as A
from ckgen.ops.attention.rope import Rope
from ckgen.runtime.api import plan_for
from tests.ops.attention import harness as H

SOURCE = """
target gfx942
kernel app_bf16_d128_p16 { op = attention_kv_append  dtype = bf16  head_dim = 128  page_size = 16 }
kernel app_f16_d64 { op = attention_kv_append  dtype = f16  head_dim = 64 }
kernel dec_after_append { op = attention_decode  dtype = bf16  head_dim = 128  page_size = 16  mask = causal }
kernel app_rope_f16_d64_p32 { op = attention_kv_append  dtype = f16  head_dim = 64  page_size = 32  rope = true }
kernel app_gptj40_bf16_d128 { op = attention_kv_append  dtype = bf16  head_dim = 128  rope = gptj(40) }
kernel app_neox32_f16_d64_p16 { op = attention_kv_append  dtype = f16  head_dim = 64  page_size = 16  rope = neox(32) }
kernel appq_gptj40_bf16_d128 { op = attention_kv_append  dtype = bf16  head_dim = 128  rope = gptj(40)  rotate_q = true }
kernel appq_neox36_f16_d64_p16 {
  op = attention_kv_append  dtype = f16  head_dim = 64  page_size = 16  rope = neox(36)  rotate_q = true
}
kernel appq_neox_f16_d64 { op = attention_kv_append  dtype = f16  head_dim = 64  rope = neox  rotate_q = true }
"""
NAMES = ("app_bf16_d128_p16", "app_f16_d64", "dec_after_append", "app_rope_f16_d64_p32", "app_gptj40_bf16_d128",
         "app_neox32_f16_d64_p16", "appq_gptj40_bf16_d128", "appq_neox36_f16_d64_p16", "appq_neox_f16_d64")


@pytest.fixture(scope="module")
def all_kernels():
    amd = H.emu_group([plan_for(SOURCE, n, "amd", "gfx942") for n in NAMES], "kv_append_amd_emu")  # one host compile
    out = {("amd", n): k for n, k in amd.items()}
    nv_src = SOURCE.replace("target gfx942", "target sm_90")
    nv = H.emu_group([plan_for(nv_src, n, "nvidia", "sm_90") for n in NAMES], "kv_append_nv_emu")
    out.update({("nv", n): k for n, k in nv.items()})
    return out


@pytest.fixture(params=("amd", "nv"))
def kernels(request, all_kernels):
    return {n: all_kernels[(request.param, n)] for n in NAMES}


def _append(k, inp):
    extra = {"block_table": inp["block_table"]} if k.plan.spec.params.page_size else {}
    return k(inp["K_new"], inp["V_new"], K_cache=inp["K_cache"], V_cache=inp["V_cache"], seqlens_k=inp["seqlens_k"],
             **extra)


@pytest.mark.parametrize("name, sizes, lens", [
    ("app_bf16_d128_p16", dict(batch=3, seqlen_new=5, heads_kv=2, max_pages=4), [0, 13, 59]),
    ("app_f16_d64", dict(batch=2, seqlen_new=3, heads_kv=4, seqlen_k=40), [37, 0]),
    # 1120 items: five blocks of 256 threads, the last short
    ("app_f16_d64", dict(batch=1, seqlen_new=70, heads_kv=4, seqlen_k=80), [9]),
])
def test_append_lands_exactly(kernels, name, sizes, lens):
    """Positions from 0, across a page boundary (13 + 5) and up to the last slot (59 + 5 = 64 of 4 pages x 16)."""
    k = kernels[name]
    inp = A.OP.random_inputs(k.plan, sizes, np.random.default_rng(1))
    inp["seqlens_k"] = np.asarray(lens, np.int32)
    ref = A.OP.reference(k.plan, inp, sizes)
    _append(k, inp)
    for n in ("K_cache", "V_cache"):
        assert np.array_equal(to_float64(inp[n], k.plan.spec.params.dtype), ref[n]), n


def test_append_rope(kernels):
    """RoPE on the way (rotate-half, a cos / sin table of theta 10000 up to position 96): K against float64 rotation
    (rounded once), V exact, the rest of the cache untouched; a position past the table traps."""
    k = kernels["app_rope_f16_d64_p32"]
    sizes = dict(batch=3, seqlen_new=4, heads_kv=2, max_pages=3)
    inp = A.OP.random_inputs(k.plan, sizes, np.random.default_rng(5))
    inp["seqlens_k"] = np.array([0, 30, 92], np.int32)
    ref = A.OP.reference(k.plan, inp, sizes)
    k(inp["K_new"], inp["V_new"], inp["seqlens_k"], inp["block_table"], inp["cos_sin"], K_cache=inp["K_cache"],
      V_cache=inp["V_cache"])
    got = to_float64(inp["K_cache"], k.plan.spec.params.dtype)
    assert np.linalg.norm(got - ref["K_cache"]) / np.linalg.norm(ref["K_cache"]) < A.OP.tolerance(k.plan, "K_cache")
    assert np.array_equal(to_float64(inp["V_cache"], k.plan.spec.params.dtype), ref["V_cache"])
    rotated = np.zeros(got.shape[:2], bool)
    for b, n in enumerate(inp["seqlens_k"]):
        for t in range(4):
            rotated[inp["block_table"][b, (n + t) // 32], (n + t) % 32] = True
    assert np.array_equal(got[~rotated], ref["K_cache"][~rotated])  # untouched rows are bit-equal
    assert not np.array_equal(got[rotated], to_float64(inp["K_new"], k.plan.spec.params.dtype).reshape(-1, 2, 64))
    short = inp["cos_sin"][:90]  # positions 92..95 are past it: refused before the launch, trapped on the device
    with pytest.raises(RuntimeFailure, match=r"seqlens_k: every entry must lie in 0\.\.86"):
        k(inp["K_new"], inp["V_new"], inp["seqlens_k"], inp["block_table"], short, K_cache=inp["K_cache"],
          V_cache=inp["V_cache"])
    lens = np.array([0, 0, 0], np.int32)
    call = k.bind(inp["K_new"], inp["V_new"], lens, inp["block_table"], short, K_cache=inp["K_cache"],
                  V_cache=inp["V_cache"])
    lens[2] = 92
    with pytest.raises(EmulationFault, match="cos_sin"):
        k.backend.launch(k.handle, call)


@pytest.mark.parametrize("name, sizes, rope", [
    ("app_gptj40_bf16_d128", dict(batch=2, seqlen_new=3, heads_kv=3, seqlen_k=21), Rope("gptj", 40)),
    ("app_neox32_f16_d64_p16", dict(batch=3, seqlen_new=5, heads_kv=2, max_pages=3), Rope("neox", 32)),
])
def test_append_partial_rope(kernels, name, sizes, rope):
    """Interleaved and rotate-half over the first rot dims only (a table of rot columns from ckgen.rope_table with
    theta 500000 and llama3 scaling): K against a float64 rotation written here pair by pair (dims past rot copied
    exactly), V exact."""
    k = kernels[name]
    p = k.plan.spec.params
    assert p.rope == rope
    inp = A.OP.random_inputs(k.plan, sizes, np.random.default_rng(6))
    table = ckgen.rope_table(64, rope.dim, theta=500000.0, scaling={"type": "llama3", "factor": 8.0,
                                                                     "original_max_position": 32})
    kn = to_float64(inp["K_new"], p.dtype)
    want = kn.copy()
    for b, n in enumerate(inp["seqlens_k"]):
        for t in range(sizes["seqlen_new"]):
            cs = table[n + t].astype(np.float64)
            for i in range(rope.dim // 2):
                x, y = (i, i + rope.dim // 2) if rope.style == "neox" else (2 * i, 2 * i + 1)
                c, s = cs[i], cs[rope.dim // 2 + i]
                want[b, t, :, x] = kn[b, t, :, x] * c - kn[b, t, :, y] * s
                want[b, t, :, y] = kn[b, t, :, y] * c + kn[b, t, :, x] * s
    extra = {"block_table": inp["block_table"]} if p.page_size else {}
    k(inp["K_new"], inp["V_new"], seqlens_k=inp["seqlens_k"], cos_sin=table, K_cache=inp["K_cache"],
      V_cache=inp["V_cache"], **extra)
    got = to_float64(inp["K_cache"], p.dtype)
    for b, n in enumerate(inp["seqlens_k"]):
        for t in range(sizes["seqlen_new"]):
            pos = n + t
            row = got[inp["block_table"][b, pos // 16], pos % 16] if p.page_size else got[b, pos]
            err = np.linalg.norm(row - want[b, t]) / np.linalg.norm(want[b, t])
            assert err < A.OP.tolerance(k.plan, "K_cache"), (b, t, err)
            assert np.array_equal(row[:, rope.dim:], kn[b, t, :, rope.dim:])  # past rot: copied exactly
    with pytest.raises(CkgenError, match="cos_sin"):  # a table of head_dim columns for a partial rotary dim
        k(inp["K_new"], inp["V_new"], seqlens_k=inp["seqlens_k"], cos_sin=ckgen.rope_table(64, p.head_dim),
          K_cache=inp["K_cache"], V_cache=inp["V_cache"], **extra)


def test_append_unaligned(kernels):
    """New keys with rows padded by 3 elements: the per-element path."""
    k = kernels["app_f16_d64"]
    rng = np.random.default_rng(2)
    sizes = dict(batch=2, seqlen_new=2, heads_kv=2, seqlen_k=9)
    inp = A.OP.random_inputs(k.plan, sizes, rng)
    for n in ("K_new", "V_new"):
        buf = rng.standard_normal((2, 2, 2 * 64 + 3)).astype(np.float16)
        inp[n] = np.lib.stride_tricks.as_strided(buf, (2, 2, 2, 64), (buf.strides[0], buf.strides[1], 128, 2))
    ref = A.OP.reference(k.plan, inp, sizes)
    _append(k, inp)
    assert np.array_equal(to_float64(inp["K_cache"], k.plan.spec.params.dtype), ref["K_cache"])


def test_append_then_decode(kernels):
    """A step of 3 tokens appended to a paged cache, then decoded with the grown lengths (causal over the step)."""
    app, dec = kernels["app_bf16_d128_p16"], kernels["dec_after_append"]
    rng = np.random.default_rng(3)
    sizes = dict(batch=2, heads=8, heads_kv=2, seqlen_q=3, max_pages=4)
    inp = R.random_inputs(dec.plan, sizes, rng, lengths=[30, 0])
    new = {n: rng.standard_normal((2, 3, 2, 128)) for n in ("K_new", "V_new")}
    from ckgen.ir.arrays import to_bf16
    new = {n: to_bf16(x) for n, x in new.items()}
    app(new["K_new"], new["V_new"], K_cache=inp["K"], V_cache=inp["V"], seqlens_k=inp["seqlens_k"],
        block_table=inp["block_table"])
    grown = (inp["seqlens_k"] + 3).astype(np.int32)
    o, lse = dec(inp["Q"], inp["K"], inp["V"], seqlens_k=grown, block_table=inp["block_table"], num_splits=2)
    ref = R.reference(dec.plan, {**inp, "seqlens_k": grown, "O": o, "LSE": lse}, sizes)
    got = to_float64(o, dec.plan.spec.params.attn.dtype)
    assert np.linalg.norm(got - ref["O"]) / np.linalg.norm(ref["O"]) < 2.5e-2
    assert np.abs(lse - ref["LSE"]).max() < 2e-3


def test_bad_input(kernels):
    k = kernels["app_bf16_d128_p16"]
    sizes = dict(batch=2, seqlen_new=4, heads_kv=2, max_pages=2)
    inp = A.OP.random_inputs(k.plan, sizes, np.random.default_rng(4))
    with pytest.raises(RuntimeFailure, match=r"seqlens_k: every entry must lie in 0\.\.28"):
        _append(k, {**inp, "seqlens_k": np.array([29, 0], np.int32)})  # 29 + 4 > 2 x 16: refused, no launch
    lens = np.array([0, 0], np.int32)
    extra = {"block_table": inp["block_table"]}
    call = k.bind(inp["K_new"], inp["V_new"], K_cache=inp["K_cache"], V_cache=inp["V_cache"], seqlens_k=lens, **extra)
    lens[0] = 29  # what the binding cannot see for a device array: the kernel traps
    with pytest.raises(EmulationFault, match="capacity"):
        k.backend.launch(k.handle, call)
    with pytest.raises(EmulationFault, match="block_table"):
        _append(k, {**inp, "seqlens_k": np.array([0, 0], np.int32), "block_table": np.full((2, 2), -1, np.int32)})
    with pytest.raises(CkgenError, match="block_table"):
        _append(k, {**inp, "block_table": np.zeros((2, 2, 1), np.int32)})
    with pytest.raises(SpecError, match="page_size = 8"):
        plan_for("kernel ap { op = attention_kv_append  dtype = f16  head_dim = 64  page_size = 8  arch = [gfx942] }",
                 "ap", "amd", "gfx942")


def _rel(got, want):
    return np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)


@pytest.mark.parametrize("name, sizes", [
    ("appq_gptj40_bf16_d128", dict(batch=2, seqlen_new=3, heads_kv=2, heads=8, seqlen_k=21)),
    ("appq_neox36_f16_d64_p16", dict(batch=3, seqlen_new=5, heads_kv=3, heads=3, max_pages=3)),
    ("appq_neox_f16_d64", dict(batch=2, seqlen_new=1, heads_kv=1, heads=4, seqlen_k=17)),
    ("appq_neox_f16_d64", dict(batch=3, seqlen_new=7, heads_kv=2, heads=2, seqlen_k=9)),
    # 1120 K / V items and 2240 Q items: 14 blocks of 256 threads, the KV part ending inside the fifth
    ("appq_neox_f16_d64", dict(batch=2, seqlen_new=70, heads_kv=4, heads=8, seqlen_k=75)),
])
def test_append_rotate_q(kernels, name, sizes):
    """Q rotated in place against float64 (dims past rot bit-equal), K rotated and V copied as without rotate_q."""
    k = kernels[name]
    p = k.plan.spec.params
    inp = A.OP.random_inputs(k.plan, sizes, np.random.default_rng(7))
    assert inp["Q"].shape == (sizes["batch"], sizes["seqlen_new"], sizes["heads"], p.head_dim)
    q0 = to_float64(inp["Q"], p.dtype).copy()
    ref = A.OP.reference(k.plan, inp, sizes)
    extra = {"block_table": inp["block_table"]} if p.page_size else {}
    k(inp["K_new"], inp["V_new"], seqlens_k=inp["seqlens_k"], cos_sin=inp["cos_sin"], K_cache=inp["K_cache"],
      V_cache=inp["V_cache"], Q=inp["Q"], **extra)
    got = to_float64(inp["Q"], p.dtype)
    assert _rel(got, ref["Q"]) < A.OP.tolerance(k.plan, "Q")
    assert _rel(got[..., : p.rope.dim], q0[..., : p.rope.dim]) > 0.05  # (rotated at all)
    assert np.array_equal(got[..., p.rope.dim:], q0[..., p.rope.dim:])
    assert _rel(to_float64(inp["K_cache"], p.dtype), ref["K_cache"]) < A.OP.tolerance(k.plan, "K_cache")
    assert np.array_equal(to_float64(inp["V_cache"], p.dtype), ref["V_cache"])


def test_rotate_q_padded_empty_and_bad(kernels):
    """A Q with padded head rows (the element path of the full-rot kernel), an empty step (nothing written), and
    bad Q / heads refused by name before a launch."""
    k = kernels["appq_neox_f16_d64"]
    sizes = dict(batch=2, seqlen_new=3, heads_kv=2, heads=4, seqlen_k=12)
    rng = np.random.default_rng(8)
    inp = A.OP.random_inputs(k.plan, sizes, rng)
    buf = rng.standard_normal((2, 3, 4 * 64 + 3)).astype(np.float16)
    inp["Q"] = np.lib.stride_tricks.as_strided(buf, (2, 3, 4, 64), (buf.strides[0], buf.strides[1], 128, 2))
    ref = A.OP.reference(k.plan, inp, sizes)
    call = dict(seqlens_k=inp["seqlens_k"], cos_sin=inp["cos_sin"], K_cache=inp["K_cache"], V_cache=inp["V_cache"])
    k(inp["K_new"], inp["V_new"], Q=inp["Q"], **call)
    assert _rel(to_float64(inp["Q"], DType.F16), ref["Q"]) < A.OP.tolerance(k.plan, "Q")
    q = inp["Q"].copy()
    k(inp["K_new"][:, :0], inp["V_new"][:, :0], Q=q[:, :0], **call)  # seqlen_new = 0: a no-op
    assert np.array_equal(q, inp["Q"])
    with pytest.raises(CkgenError, match="Q has dtype float32"):
        k(inp["K_new"], inp["V_new"], Q=q.astype(np.float32), **call)
    with pytest.raises(CkgenError, match="Q has shape"):
        k(inp["K_new"], inp["V_new"], Q=q[:, :2], **call)
    with pytest.raises(CkgenError, match="heads = 3 must be a multiple of heads_kv"):
        k(inp["K_new"], inp["V_new"], Q=np.zeros((2, 3, 3, 64), np.float16), **call)


def test_rotate_q_needs_rope():
    src = "kernel ap { op = attention_kv_append  dtype = f16  head_dim = 64  rotate_q = true  arch = [gfx942] }"
    with pytest.raises(SpecError, match=r"rotate_q = true.*needs rope") as e:
        plan_for(src, "ap", "amd", "gfx942")
    assert "<string>:1:" in str(e.value) and "legal: rotate_q = false" in str(e.value)
