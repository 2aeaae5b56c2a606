"""Rung 2 for ``rope`` on ``op = attention`` (Q rotated as it is loaded; K comes rotated): the AMD body (gfx942) and
the NVIDIA mma_sync body (sm_90 plans as warps of 32) on the emulator against float64 (Q rotated in float64 at its
positions, ckgen/ops/attention/rope.py's rotation, itself checked against complex multiplication in test_rope.py).
Both styles, partial rotary dims, head dims 64 and 128, dense and varlen batches, positions from random offsets and a
decode-like step (one query row at position = length - 1); a kv_append with rope followed by a prefill over its
cache against both rotated in float64 (the serving design). Bad positions are refused by name (no launch) or trap.
"""

from __future__ import annotations

import numpy as np
import pytest

import ckgen
from ckgen.errors import CkgenError, EmulationFault, RuntimeFailure
from ckgen.ir.arrays import poison, to_float64
from ckgen.ops.attention import OP
from ckgen.ops.attention.decode import OP as DEC
from ckgen.ops.attention.reference import attend
from ckgen.ops.attention.rope import Rope, apply
from ckgen.runtime.api import plan_for
from tests.ops.attention import harness as H

AMD_SRC = """
target gfx942
kernel ra_f16_d64_neox32_causal { op = attention  dtype = f16  head_dim = 64  mask = causal  rope = neox(32) }
kernel ra_bf16_d128_gptj_varlen { op = attention  dtype = bf16  head_dim = 128  mask = causal  varlen = true
  rope = gptj }
kernel ra_bf16_d128_neox_one_key { op = attention  dtype = bf16  head_dim = 128  mask = window  window = [0, 0]
  rope = neox }
kernel ra_append_f16_d64_neox32 { op = attention_kv_append  dtype = f16  head_dim = 64  rope = neox(32) }
kernel rd_bf16_d128_p16_neox_causal { op = attention_decode  dtype = bf16  head_dim = 128  page_size = 16
  mask = causal  rope = neox }
kernel rd_f16_d64_gptj32 { op = attention_decode  dtype = f16  head_dim = 64  rope = gptj(32) }
"""
NV_SRC = """
target sm_90
kernel rn_f16_d64_gptj48 { op = attention  dtype = f16  head_dim = 64  rope = gptj(48)  body = mma_sync }
kernel rn_bf16_d128_neox_varlen_qsmem { op = attention  dtype = bf16  head_dim = 128  mask = causal  varlen = true
  rope = neox  q_in_regs = false  tile = 64x64  waves = 4 }
kernel rdn_f16_d64_p32_gptj { op = attention_decode  dtype = f16  head_dim = 64  page_size = 32  mask = causal
  rope = gptj }
kernel rdn_bf16_d128_neox96_qsmem { op = attention_decode  dtype = bf16  head_dim = 128  rope = neox(96)
  q_in_regs = false }
"""
AMD = ("ra_f16_d64_neox32_causal", "ra_bf16_d128_gptj_varlen", "ra_bf16_d128_neox_one_key", "ra_append_f16_d64_neox32",
       "rd_bf16_d128_p16_neox_causal", "rd_f16_d64_gptj32")
NV = ("rn_f16_d64_gptj48", "rn_bf16_d128_neox_varlen_qsmem", "rdn_f16_d64_p32_gptj", "rdn_bf16_d128_neox96_qsmem")


@pytest.fixture(scope="module")
def kernels():
    out = H.emu_group([plan_for(AMD_SRC, n, "amd", "gfx942") for n in AMD], "rope_amd_emu")
    out.update(H.emu_group([plan_for(NV_SRC, n, "nvidia", "sm_90") for n in NV], "rope_nv_emu"))
    return out


def _check(k, inp, sizes):
    ref = OP.reference(k.plan, inp, sizes)
    a = k.plan.spec.params.attn
    o, lse = k(**{n: v for n, v in inp.items() if v is not None})
    got = to_float64(o, a.dtype)
    err = np.linalg.norm(got - ref["O"]) / np.linalg.norm(ref["O"])
    assert err < H.TOL[a.dtype], err
    fin = np.isfinite(ref["LSE"])
    assert np.abs(lse[fin] - ref["LSE"][fin]).max(initial=0) < H.LSE_TOL
    return got, ref


def test_one_key_rows_lse_within_the_op_tolerance(kernels):
    """A window of one key: each LSE is one score, so the rounding of the rotated Q to bf16 shows in full (1.5-1.8e-3
    here, over LSE_TOLERANCE alone); the op's tolerance for a rotating kernel covers it (the numerics fuzz found it)."""
    k = kernels["ra_bf16_d128_neox_one_key"]
    sizes = dict(batch=2, heads=2, heads_kv=2, seqlen_q=40, seqlen_k=40)
    inp = OP.random_inputs(k.plan, sizes, np.random.default_rng(1))
    ref = OP.reference(k.plan, inp, sizes)
    _, lse = k(**{n: v for n, v in inp.items() if v is not None})
    assert OP.error(k.plan, "LSE", lse, ref["LSE"]) <= OP.tolerance(k.plan, "LSE")


@pytest.mark.parametrize("name, sizes", [
    ("ra_f16_d64_neox32_causal", dict(batch=2, heads=4, heads_kv=2, seqlen_q=37, seqlen_k=70)),
    ("ra_bf16_d128_gptj_varlen", dict(batch=3, heads=2, heads_kv=1, seqlen_q=45, seqlen_k=60)),
    ("rn_f16_d64_gptj48", dict(batch=2, heads=2, heads_kv=2, seqlen_q=70, seqlen_k=33)),
    ("rn_bf16_d128_neox_varlen_qsmem", dict(batch=3, heads=4, heads_kv=2, seqlen_q=70, seqlen_k=90)),
])
def test_prefill_rope(kernels, name, sizes):
    """Random positions (consecutive from a random offset per sequence); the rotation matters: the reference
    without it is far off."""
    k = kernels[name]
    inp = OP.random_inputs(k.plan, sizes, np.random.default_rng(11))
    got, ref = _check(k, inp, sizes)
    plain = {**inp, "cos_sin": np.tile(np.r_[np.ones(k.plan.spec.params.attn.rope.dim // 2, np.float32),
                                             np.zeros(k.plan.spec.params.attn.rope.dim // 2, np.float32)],
                                       (inp["cos_sin"].shape[0], 1))}
    unrotated = OP.reference(k.plan, plain, sizes)["O"]
    assert np.linalg.norm(got - unrotated) / np.linalg.norm(unrotated) > 20 * H.TOL[k.plan.spec.params.attn.dtype]


@pytest.mark.parametrize("name", ["ra_f16_d64_neox32_causal", "rn_f16_d64_gptj48"])
def test_prefill_rope_unaligned_q(kernels, name):
    """Q rows padded by 3 elements (not 16-byte aligned: the NVIDIA body's per-element copies) and positions with
    a batch stride of their own."""
    k = kernels[name]
    sizes = dict(batch=2, heads=2, heads_kv=2, seqlen_q=29, seqlen_k=41)
    rng = np.random.default_rng(17)
    inp = OP.random_inputs(k.plan, sizes, rng)
    buf = np.zeros((2, 29, 2 * 64 + 3), np.float16)
    buf[..., :128] = inp["Q"].reshape(2, 29, 128)
    inp["Q"] = np.lib.stride_tricks.as_strided(buf, (2, 29, 2, 64), (buf.strides[0], buf.strides[1], 128, 2))
    wide = np.zeros((2, 40), np.int32)
    wide[:, :29] = inp["positions"]
    inp["positions"] = wide[:, :29]
    _check(k, inp, sizes)


@pytest.mark.parametrize("name", ["ra_f16_d64_neox32_causal", "rn_f16_d64_gptj48"])
def test_decode_step_positions(kernels, name):
    """One query row per sequence at position length - 1 (a decode step through the prefill kernel)."""
    k = kernels[name]
    sizes = dict(batch=3, heads=2, heads_kv=2, seqlen_q=1, seqlen_k=50)
    inp = OP.random_inputs(k.plan, sizes, np.random.default_rng(12))
    inp["positions"] = np.array([[49], [49], [49]], np.int32)
    inp["cos_sin"] = ckgen.rope_table(50, k.plan.spec.params.attn.rope.dim, theta=1e6)
    _check(k, inp, sizes)


@pytest.mark.parametrize("name, sizes, splits", [
    ("rd_bf16_d128_p16_neox_causal", dict(batch=3, heads=8, heads_kv=2, seqlen_q=1, max_pages=4), 1),
    ("rd_bf16_d128_p16_neox_causal", dict(batch=2, heads=4, heads_kv=2, seqlen_q=3, max_pages=5), 3),
    ("rd_f16_d64_gptj32", dict(batch=3, heads=4, heads_kv=1, seqlen_q=2, seqlen_k=77), 2),
    ("rdn_f16_d64_p32_gptj", dict(batch=3, heads=8, heads_kv=2, seqlen_q=1, max_pages=3), 2),
    ("rdn_bf16_d128_neox96_qsmem", dict(batch=2, heads=4, heads_kv=4, seqlen_q=3, seqlen_k=70), 1),
])
def test_decode_rope(kernels, name, sizes, splits):
    """A decode step (and a 2-3 token step) over a contiguous or paged cache, split-KV: Q rotated at
    seqlens_k - seqlen_q + token against float64; the rotation matters (an identity table gives another answer)."""
    k = kernels[name]
    dec = k.plan.spec.params.attn
    inp = DEC.random_inputs(k.plan, sizes, np.random.default_rng(15))
    o, lse = k(**{n: v for n, v in inp.items() if v is not None}, num_splits=splits)
    ref = DEC.reference(k.plan, {**inp, "O": o, "LSE": lse}, sizes)
    got = to_float64(o, dec.dtype)
    err = np.linalg.norm(got - ref["O"]) / np.linalg.norm(ref["O"])
    assert err < H.TOL[dec.dtype], err
    fin = np.isfinite(ref["LSE"])
    assert np.abs(lse[fin] - ref["LSE"][fin]).max(initial=0) < H.LSE_TOL
    ident = np.tile(np.r_[np.ones(dec.rope.dim // 2), np.zeros(dec.rope.dim // 2)], (inp["cos_sin"].shape[0], 1))
    plain = DEC.reference(k.plan, {**inp, "O": o, "LSE": lse, "cos_sin": ident}, sizes)["O"]
    assert np.linalg.norm(got - plain) / np.linalg.norm(plain) > 20 * H.TOL[dec.dtype]


def test_decode_rope_bad_lengths(kernels):
    """A length past the table is refused by name before the launch; one shorter than the step's tokens (a
    negative position) traps on the device."""
    k = kernels["rd_f16_d64_gptj32"]
    sizes = dict(batch=2, heads=2, heads_kv=1, seqlen_q=2, seqlen_k=40)
    inp = {n: v for n, v in DEC.random_inputs(k.plan, sizes, np.random.default_rng(16)).items() if v is not None}
    with pytest.raises(RuntimeFailure, match=r"seqlens_k: every entry must lie in 0\.\.30"):
        k(**{**inp, "cos_sin": inp["cos_sin"][:30]})
    with pytest.raises(EmulationFault, match="cos_sin"):
        k(**{**inp, "seqlens_k": np.array([1, 40], np.int32)})


def test_decode_rope_random_inputs_refuse_a_cache_shorter_than_the_step():
    """``ckgen run`` sizes whose cache holds fewer keys than the step's tokens (every length would give a negative
    position) are refused by name, not drawn into a call that traps (found by tools/fuzz_numerics.py)."""
    plan = plan_for(AMD_SRC, "rd_f16_d64_gptj32", "amd", "gfx942")
    sizes = dict(batch=2, heads=5, heads_kv=1, seqlen_q=16, seqlen_k=1, num_pages=0, max_pages=0)
    with pytest.raises(CkgenError, match="at least seqlen_q = 16 keys"):
        DEC.random_inputs(plan, sizes, np.random.default_rng(0))
    assert DEC.random_inputs(plan, {**sizes, "batch": 0}, np.random.default_rng(0))["seqlens_k"].size == 0


def test_varlen_rope_random_inputs_of_an_empty_batch():
    """``ckgen run --size batch=0`` of a varlen rope kernel: no positions, not a ValueError from numpy (found by
    tools/fuzz_numerics.py)."""
    plan = plan_for(AMD_SRC, "ra_bf16_d128_gptj_varlen", "amd", "gfx942")
    sizes = dict(batch=0, heads=2, heads_kv=1, seqlen_q=64, seqlen_k=33)
    assert OP.random_inputs(plan, sizes, np.random.default_rng(0))["positions"].shape == (0,)


def test_append_then_prefill(kernels):
    """The serving design: attention_kv_append rotates K into a contiguous cache at positions 0..n-1, the prefill
    rotates Q at the same positions: equal to float64 attention of both rotated (RoPE applied in float64)."""
    app, att = kernels["ra_append_f16_d64_neox32"], kernels["ra_f16_d64_neox32_causal"]
    rng = np.random.default_rng(13)
    b, n, hk, h, d = 2, 40, 2, 4, 64
    rope = Rope("neox", 32)
    table = ckgen.rope_table(64, 32, theta=10000.0, scaling={"type": "linear", "factor": 2.0})
    q, kn, vn = (rng.standard_normal(s).astype(np.float16) for s in ((b, n, h, d), (b, n, hk, d), (b, n, hk, d)))
    kc, vc = (poison(np.zeros((b, n, hk, d), np.float16)) for _ in range(2))
    app(kn, vn, seqlens_k=np.zeros(b, np.int32), cos_sin=table, K_cache=kc, V_cache=vc)
    pos = np.tile(np.arange(n, dtype=np.int32), (b, 1))
    o, _ = att(q, kc, vc, positions=pos, cos_sin=table)
    cs = table.astype(np.float64)[:n]
    for s in range(b):
        qr = apply(q[s].astype(np.float64), cs[:, None, :], rope)
        kr = apply(kn[s].astype(np.float64), cs[:, None, :], rope)
        want, _ = attend(qr, kr, vn[s].astype(np.float64), "causal", 1 / 8.0)
        got = o[s].astype(np.float64)
        assert np.linalg.norm(got - want) / np.linalg.norm(want) < H.TOL[att.plan.spec.params.attn.dtype]


def test_bad_positions(kernels):
    k = kernels["ra_f16_d64_neox32_causal"]
    sizes = dict(batch=2, heads=2, heads_kv=2, seqlen_q=5, seqlen_k=9)
    inp = {n: v for n, v in OP.random_inputs(k.plan, sizes, np.random.default_rng(14)).items() if v is not None}
    n_rows = inp["cos_sin"].shape[0]
    with pytest.raises(RuntimeFailure, match=rf"positions: every entry must lie in 0\.\.{n_rows - 1}"):
        k(**{**inp, "positions": inp["positions"] + n_rows})  # past the table: refused, no launch
    with pytest.raises(CkgenError, match="positions"):
        k(**{**inp, "positions": inp["positions"][:, :4]})  # the wrong length
    with pytest.raises(CkgenError, match="positions"):
        k(**{**inp, "positions": inp["positions"].astype(np.int64)})  # the wrong dtype
    with pytest.raises(CkgenError, match="cos_sin"):
        k(**{**inp, "cos_sin": ckgen.rope_table(n_rows, 64)})  # head_dim columns for rot 32
    pos = np.zeros_like(inp["positions"])
    call = k.bind(**{**inp, "positions": pos})
    pos[1, 2] = n_rows  # what the binding cannot see for a device array: the kernel traps
    with pytest.raises(EmulationFault, match="positions"):
        k.backend.launch(k.handle, call)


def test_hopper_body_with_rope():
    """rope with body = auto plans the Hopper body too (its rotation of Q in shared memory: rung 3,
    tests/runtime/test_nvidia_rope.py); a wgmma_* parameter is taken; varlen still refuses it."""
    src = "kernel k {{ op = attention  dtype = f16  head_dim = 64  rope = neox  {}arch = [sm_90] }}"
    assert plan_for(src.format(""), "k", "nvidia", "sm_90").body.wgmma is not None
    assert plan_for(src.format("body = mma_sync  "), "k", "nvidia", "sm_90").body.wgmma is None
    assert plan_for(src.format("wgmma_stages = 3  "), "k", "nvidia", "sm_90").body.wgmma.stages == 3
    with pytest.raises(CkgenError, match="varlen"):
        plan_for(src.format("varlen = true  body = wgmma  "), "k", "nvidia", "sm_90")


def test_no_rope_keeps_its_abi_and_keys():
    src = "kernel k { op = attention  dtype = f16  head_dim = 64  arch = [gfx942] }"
    p = plan_for(src, "k", "amd", "gfx942")
    assert "rope" not in p.spec.params.to_json()["attention"]
    names = [a.name for a in p.abi.args]
    assert not {"positions", "cos_sin", "rope_positions", "pos_batch_stride", "cs_pos_stride"} & set(names)

