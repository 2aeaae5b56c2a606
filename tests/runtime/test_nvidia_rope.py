"""Rung 3 for rotary embeddings (``rope``) on a real NVIDIA GPU (marked ``gpu``: the lead runs them on the lent
device): sm_90 kernels through the JIT with torch CUDA tensors against float64 torch on the device, RoPE applied
in float64 (written here, pair by pair). The serving design end to end: attention_kv_append rotates K into the
cache, op = attention (prefill: Q rotated at ``positions``) or op = attention_decode (Q rotated at seqlens_k - sq +
token) reads it; both styles, partial rotary dims, dense and varlen, split-KV; ``rotate_q``: the append also
rotates the step's queries in place and attention runs without rope; llama3-scaled tables from
``ckgen.rope_table``; bad positions refused by name before a launch. Both NVIDIA bodies rotate Q in shared memory:
the Hopper one (``body = wgmma``; ``auto`` plans it too) and the mma_sync one (``body = mma_sync``): checked here
that the intended kernel runs (torch profiler) and that its results match float64.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.runtime.gpu_helpers import launched

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel gr_append_bf16_d128_neox64 { op = attention_kv_append  dtype = bf16  head_dim = 128  rope = neox(64) }
kernel gr_prefill_bf16_d128_neox64 { op = attention  dtype = bf16  head_dim = 128  mask = causal  rope = neox(64)
  body = mma_sync }
kernel gr_prefill_bf16_d128_neox64_wgmma { op = attention  dtype = bf16  head_dim = 128  mask = causal
  rope = neox(64)  body = wgmma }
kernel gr_prefill_f16_d64_gptj_wgmma { op = attention  dtype = f16  head_dim = 64  rope = gptj(48)  body = wgmma }
kernel gr_prefill_bf16_d128_neox_wgmma { op = attention  dtype = bf16  head_dim = 128  mask = causal  rope = neox
  body = wgmma }
kernel gr_prefill_bf16_d128_neox40_wgmma { op = attention  dtype = bf16  head_dim = 128  mask = causal
  rope = neox(40)  body = wgmma }
kernel gr_prefill_f16_d64_gptj_varlen { op = attention  dtype = f16  head_dim = 64  mask = causal  varlen = true
  rope = gptj }
kernel gr_append_f16_d128_p16_gptj { op = attention_kv_append  dtype = f16  head_dim = 128  page_size = 16
  rope = gptj }
kernel gr_decode_f16_d128_p16_gptj { op = attention_decode  dtype = f16  head_dim = 128  page_size = 16
  mask = causal  rope = gptj }
kernel gr_appendq_bf16_d128_neox64 { op = attention_kv_append  dtype = bf16  head_dim = 128  rope = neox(64)
  rotate_q = true }
kernel gr_appendq_f16_d64_p16_gptj40 { op = attention_kv_append  dtype = f16  head_dim = 64  page_size = 16
  rope = gptj(40)  rotate_q = true }
kernel gr_prefill_bf16_d128_plain { op = attention  dtype = bf16  head_dim = 128  mask = causal }
"""
TOL = {torch.float16: 5e-3, torch.bfloat16: 2.5e-2}
_cache: dict = {}


def kernel(name):
    from ckgen.runtime.api import jit

    if name not in _cache:
        _cache[name] = jit(SPEC, kernel=name, target="sm_90")
    return _cache[name]


def table(n, rot):
    import ckgen

    cs = ckgen.rope_table(n, rot, theta=500000.0, scaling={"type": "llama3", "factor": 8.0,
                                                           "original_max_position": 256})
    return torch.from_numpy(cs).cuda()


def rope(x, cs, style, rot):
    """x [..., d] float64 rotated by table rows cs [..., rot] (broadcast); dims past rot unchanged."""
    out, h = x.clone(), rot // 2
    i = torch.arange(h, device=x.device)
    xi, yi = (i, i + h) if style == "neox" else (2 * i, 2 * i + 1)
    c, s = cs[..., :h].double(), cs[..., h:].double()
    a, b = x[..., xi], x[..., yi]
    out[..., xi], out[..., yi] = a * c - b * s, b * c + a * s
    return out


def attend(q, k, v):
    """float64 causal (bottom-right) attention of one sequence: q [sq, h, d], k / v [sk, hk, d] -> [sq, h, d]."""
    sq, h, d = q.shape
    sk, g = k.shape[0], h // k.shape[1]
    kk, vv = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = torch.einsum("qhd,khd->hqk", q, kk) / d ** 0.5
    mask = torch.arange(sk, device=q.device)[None, :] <= torch.arange(sq, device=q.device)[:, None] + sk - sq
    p = torch.softmax(s.masked_fill(~mask, float("-inf")), -1)
    return torch.einsum("hqk,khd->qhd", p, vv)


@pytest.mark.parametrize("name, tma", [("gr_prefill_bf16_d128_neox64", False),
                                       ("gr_prefill_bf16_d128_neox64_wgmma", True)])
def test_append_then_prefill_dense(name, tma):
    app, att = kernel("gr_append_bf16_d128_neox64"), kernel(name)
    assert (att.plan.body.wgmma is not None) == tma
    g = torch.Generator(device="cuda").manual_seed(1)
    b, n, h, hk, d, dt = 2, 700, 8, 2, 128, torch.bfloat16
    q = torch.randn(b, n, h, d, device="cuda", generator=g).to(dt)
    kn, vn = (torch.randn(b, n, hk, d, device="cuda", generator=g).to(dt) for _ in "kv")
    kc, vc = (torch.empty(b, n, hk, d, device="cuda", dtype=dt).fill_(float("nan")) for _ in "kv")
    cs = table(1024, 64)
    app(kn, vn, seqlens_k=torch.zeros(b, dtype=torch.int32, device="cuda"), cos_sin=cs, K_cache=kc, V_cache=vc)
    pos = torch.arange(n, dtype=torch.int32, device="cuda").repeat(b, 1)
    out = {}
    names = launched(lambda: out.setdefault("o", att(q, kc, vc, positions=pos, cos_sin=cs)[0]))
    assert names is None or ((f"{name}_tma" in names) == tma and (name in names) != tma), names
    o = out["o"]
    for i in range(b):
        rows = cs[:n][:, None]
        want = attend(rope(q[i].double(), rows, "neox", 64), rope(kn[i].double(), rows, "neox", 64), vn[i].double())
        assert float((o[i].double() - want).norm() / want.norm()) < TOL[dt]


def test_hopper_body_gptj_partial_offsets():
    """The Hopper body (no mask, 3 query tiles of 128 with a partial last one): interleaved rotation of the first 48
    of 64 dims at positions from per-sequence offsets; K given rotated."""
    att = kernel("gr_prefill_f16_d64_gptj_wgmma")
    g = torch.Generator(device="cuda").manual_seed(4)
    b, sq, sk, h, hk, d, dt = 2, 300, 260, 4, 2, 64, torch.float16
    q = torch.randn(b, sq, h, d, device="cuda", generator=g).to(dt)
    k0, v = (torch.randn(b, sk, hk, d, device="cuda", generator=g).to(dt) for _ in "kv")
    pos = torch.stack([7 + torch.arange(sq, device="cuda"), 40 + torch.arange(sq, device="cuda")]).to(torch.int32)
    cs = table(512, 48)
    kpos = torch.arange(sk, device="cuda")
    k = rope(k0.double(), cs[kpos][None, :, None], "gptj", 48).to(dt)
    out = {}
    names = launched(lambda: out.setdefault("o", att(q, k, v, positions=pos, cos_sin=cs)[0]))
    assert names is None or "gr_prefill_f16_d64_gptj_wgmma_tma" in names, names
    for i in range(b):
        qr = rope(q[i].double(), cs[pos[i].long()][:, None], "gptj", 48)
        s = torch.einsum("qhd,khd->hqk", qr, k[i].double().repeat_interleave(h // hk, 1)) / d ** 0.5
        want = torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), v[i].double().repeat_interleave(h // hk, 1))
        assert float((out["o"][i].double() - want).norm() / want.norm()) < TOL[dt]


@pytest.mark.parametrize("name, rot, stride, offset", [
    ("gr_prefill_bf16_d128_neox_wgmma", 128, 128, 0),    # 16-byte chunks, table rows read 16 bytes at a time
    ("gr_prefill_bf16_d128_neox_wgmma", 128, 130, 1),    # 16-byte chunks, table rows not 16-byte aligned
    ("gr_prefill_bf16_d128_neox40_wgmma", 40, 40, 0)])   # rot / 2 = 20: pair by pair (attn::RopeBatch)
def test_hopper_body_rotation_paths(name, rot, stride, offset):
    """The Hopper body's two ways of rotating Q (by 16-byte chunks where the rotary dim allows, else pair by pair), a
    table whose rows are or are not 16-byte aligned, a last query tile cut short (rows past the sequence are not
    rotated), positions from per-sequence offsets; K given rotated."""
    att = kernel(name)
    g = torch.Generator(device="cuda").manual_seed(5)
    b, n, h, hk, d, dt = 2, 200, 4, 2, 128, torch.bfloat16
    q = torch.randn(b, n, h, d, device="cuda", generator=g).to(dt)
    k0, v = (torch.randn(b, n, hk, d, device="cuda", generator=g).to(dt) for _ in "kv")
    pos = torch.stack([3 + torch.arange(n, device="cuda"), 90 + torch.arange(n, device="cuda")]).to(torch.int32)
    cs = table(512, rot)
    store = torch.full((512 * stride + offset,), float("nan"), device="cuda")
    cs_view = store[offset:].as_strided((512, rot), (stride, 1))
    cs_view.copy_(cs)
    out = {}
    names = launched(lambda: out.setdefault("o", att(q, rope(k0.double(), cs[pos.long()][:, :, None], "neox", rot)
                                                      .to(dt), v, positions=pos, cos_sin=cs_view)[0]))
    assert names is None or f"{name}_tma" in names, names
    for i in range(b):
        rows = cs[pos[i].long()][:, None]
        want = attend(rope(q[i].double(), rows, "neox", rot), rope(k0[i].double(), rows, "neox", rot), v[i].double())
        assert float((out["o"][i].double() - want).norm() / want.norm()) < TOL[dt]


def test_prefill_varlen_gptj_from_offsets():
    """Packed sequences whose rows start at position 100 (a chunk after a prefix): K given rotated (float64 here,
    rounded once)."""
    att = kernel("gr_prefill_f16_d64_gptj_varlen")
    g = torch.Generator(device="cuda").manual_seed(2)
    lq, h, d, dt = [130, 1, 77], 4, 64, torch.float16
    cu = torch.tensor(np.r_[0, np.cumsum(lq)], dtype=torch.int32, device="cuda")
    q, k0, v = (torch.randn(sum(lq), hh, d, device="cuda", generator=g).to(dt) for hh in (h, 2, 2))
    pos = torch.cat([100 + torch.arange(n, device="cuda") for n in lq]).to(torch.int32)
    cs = table(512, 64)
    k = rope(k0.double(), cs[pos.long()][:, None], "gptj", 64).to(dt)
    o, _ = att(q, k, v, cu_seqlens_q=cu, cu_seqlens_k=cu, positions=pos, cos_sin=cs)
    torch.cuda.synchronize()
    for i in range(len(lq)):
        sl = slice(int(cu[i]), int(cu[i + 1]))
        want = attend(rope(q[sl].double(), cs[pos[sl].long()][:, None], "gptj", 64), k[sl].double(), v[sl].double())
        assert float((o[sl].double() - want).norm() / want.norm()) < TOL[dt]


@pytest.mark.parametrize("splits", [1, 4])
def test_append_then_decode_paged(splits):
    """A 2-token step appended (rotated) to a paged cache holding a rotated prefix, then decoded with the grown
    lengths: every key of the cache and the queries rotated at their own positions, in float64."""
    app, dec = kernel("gr_append_f16_d128_p16_gptj"), kernel("gr_decode_f16_d128_p16_gptj")
    g = torch.Generator(device="cuda").manual_seed(3)
    b, h, hk, d, t, mp, dt = 3, 16, 4, 128, 2, 20, torch.float16
    cs = table(mp * 16, 128)
    lens0 = torch.tensor([0, 77, 300], dtype=torch.int32, device="cuda")
    pool = b * mp
    kc, vc = (torch.zeros(pool, 16, hk, d, device="cuda", dtype=dt) for _ in "kv")
    bt = torch.randperm(pool, device="cuda", generator=g)[: b * mp].reshape(b, mp).to(torch.int32)
    raw_k = torch.randn(b, mp * 16, hk, d, device="cuda", generator=g).to(dt)  # every key before rotation
    raw_v = torch.randn(b, mp * 16, hk, d, device="cuda", generator=g).to(dt)
    # the prefix, rotated by the append kernel from position 0 ...
    for i in range(b):
        n = int(lens0[i])
        if n:
            app(raw_k[i:i + 1, :n], raw_v[i:i + 1, :n], seqlens_k=torch.zeros(1, dtype=torch.int32, device="cuda"),
                block_table=bt[i:i + 1], cos_sin=cs, K_cache=kc, V_cache=vc)
    # ... then the step's tokens at lens0[b] + t
    step_k = torch.stack([raw_k[i, int(lens0[i]):int(lens0[i]) + t] for i in range(b)])
    step_v = torch.stack([raw_v[i, int(lens0[i]):int(lens0[i]) + t] for i in range(b)])
    app(step_k, step_v, seqlens_k=lens0, block_table=bt, cos_sin=cs, K_cache=kc, V_cache=vc)
    lens = lens0 + t
    q = torch.randn(b, t, h, d, device="cuda", generator=g).to(dt)
    o, _ = dec(q, kc, vc, seqlens_k=lens, block_table=bt, cos_sin=cs, num_splits=splits)
    torch.cuda.synchronize()
    for i in range(b):
        n = int(lens[i])
        rows = cs[:n][:, None]
        want = attend(rope(q[i].double(), cs[n - t:n][:, None], "gptj", 128),
                      rope(raw_k[i, :n].double(), rows, "gptj", 128), raw_v[i, :n].double())
        assert float((o[i].double() - want).norm() / want.norm()) < TOL[dt]


def test_bad_positions_refused():
    from ckgen.errors import CkgenError

    att = kernel("gr_prefill_bf16_d128_neox64")
    q = torch.randn(1, 8, 2, 128, device="cuda").to(torch.bfloat16)
    cs = table(16, 64)
    good = torch.arange(8, dtype=torch.int32, device="cuda")[None]
    with pytest.raises(CkgenError, match="positions"):
        att(q, q, q, positions=good.long(), cos_sin=cs)
    with pytest.raises(CkgenError, match="positions"):
        att(q, q, q, positions=good[:, :5], cos_sin=cs)
    with pytest.raises(CkgenError, match="cos_sin"):
        att(q, q, q, positions=good, cos_sin=table(16, 128))


def test_append_rotate_q_then_plain_prefill():
    """rotate_q: K into the cache and Q (a view of a packed qkv buffer, as the llama layer passes it) rotated in
    place by one launch, then attention without rope: Q and O against float64."""
    app, att = kernel("gr_appendq_bf16_d128_neox64"), kernel("gr_prefill_bf16_d128_plain")
    g = torch.Generator(device="cuda").manual_seed(5)
    b, n, h, hk, d, dt = 2, 333, 8, 2, 128, torch.bfloat16
    qkv = torch.randn(b * n, (h + 2 * hk) * d, device="cuda", generator=g).to(dt)
    q = qkv[:, :h * d].reshape(b, n, h, d)
    kn = qkv[:, h * d:(h + hk) * d].reshape(b, n, hk, d)
    vn = qkv[:, (h + hk) * d:].reshape(b, n, hk, d)
    q0 = q.double().clone()
    kc, vc = (torch.empty(b, n, hk, d, device="cuda", dtype=dt).fill_(float("nan")) for _ in "kv")
    cs = table(1024, 64)
    app(kn, vn, seqlens_k=torch.zeros(b, dtype=torch.int32, device="cuda"), cos_sin=cs, K_cache=kc, V_cache=vc, Q=q)
    o, _ = att(q, kc, vc)
    torch.cuda.synchronize()
    rows = cs[:n][:, None]
    for i in range(b):
        qr = rope(q0[i], rows, "neox", 64)
        assert float((q[i].double() - qr).norm() / qr.norm()) < TOL[dt]
        assert torch.equal(q[i, ..., 64:].double(), q0[i, ..., 64:])
        want = attend(qr, rope(kn[i].double(), rows, "neox", 64), vn[i].double())
        assert float((o[i].double() - want).norm() / want.norm()) < TOL[dt]


@pytest.mark.parametrize("h, t", [(16, 5), (4, 1), (4, 0)])
def test_append_rotate_q_paged_gptj_partial(h, t):
    """rotate_q, interleaved over 40 of 64 dims (a run of 4 pairs after two of 8), a paged cache, sequences at
    different lengths, query heads 4x and 1x the key heads, odd and empty steps: Q, K against float64, V exact."""
    app = kernel("gr_appendq_f16_d64_p16_gptj40")
    g = torch.Generator(device="cuda").manual_seed(6)
    b, hk, d, mp, dt = 3, 4, 64, 8, torch.float16
    cs = table(mp * 16, 40)
    lens = torch.tensor([0, 17, 100], dtype=torch.int32, device="cuda")
    kc, vc = (torch.zeros(b * mp, 16, hk, d, device="cuda", dtype=dt) for _ in "kv")
    bt = torch.randperm(b * mp, device="cuda", generator=g).reshape(b, mp).to(torch.int32)
    q, kn, vn = (torch.randn(b, t, hh, d, device="cuda", generator=g).to(dt) for hh in (h, hk, hk))
    q0 = q.double().clone()
    app(kn, vn, seqlens_k=lens, block_table=bt, cos_sin=cs, K_cache=kc, V_cache=vc, Q=q)
    torch.cuda.synchronize()
    if t == 0:
        assert not kc.any() and not vc.any()
        return
    for i in range(b):
        pos = int(lens[i]) + torch.arange(t, device="cuda")
        rows = cs[pos][:, None]
        qr = rope(q0[i], rows, "gptj", 40)
        assert float((q[i].double() - qr).norm() / qr.norm()) < TOL[dt]
        assert torch.equal(q[i, ..., 40:].double(), q0[i, ..., 40:])
        kr = rope(kn[i].double(), rows, "gptj", 40)
        pg, sl = bt[i, pos // 16].long(), pos % 16
        assert float((kc[pg, sl].double() - kr).norm() / kr.norm()) < TOL[dt]
        assert torch.equal(vc[pg, sl], vn[i])


def test_rotate_q_bad_input_refused():
    from ckgen.errors import CkgenError

    app = kernel("gr_appendq_f16_d64_p16_gptj40")
    kn = torch.randn(1, 2, 2, 64, device="cuda").to(torch.float16)
    call = dict(seqlens_k=torch.zeros(1, dtype=torch.int32, device="cuda"),
                block_table=torch.zeros(1, 1, dtype=torch.int32, device="cuda"), cos_sin=table(16, 40),
                K_cache=torch.zeros(1, 16, 2, 64, device="cuda", dtype=torch.float16),
                V_cache=torch.zeros(1, 16, 2, 64, device="cuda", dtype=torch.float16))
    with pytest.raises(CkgenError, match="Q has dtype"):
        app(kn, kn, Q=torch.zeros(1, 2, 4, 64, device="cuda"), **call)
    with pytest.raises(CkgenError, match="heads = 3 must be a multiple of heads_kv"):
        app(kn, kn, Q=torch.zeros(1, 2, 3, 64, device="cuda", dtype=torch.float16), **call)
