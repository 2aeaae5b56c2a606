"""Rung 3 for ``op = attention_decode`` on a real NVIDIA GPU (marked ``gpu``: runs on the lent device): sm_90
kernels (device/attention_decode_nv.h) called through the JIT with torch CUDA tensors against a float64 reference
on the device: split-KV with 1, several, more splits than key tiles and the automatic choice; GQA 32/8, MQA;
lengths 0, 1, page boundaries +-1 and different lengths in one batch; contiguous and paged K/V (pages in a random
order; 16, 64 and 256 tokens; long walks and many splits; a thread's rows further apart than a page);
causal decode with several query tokens and a chunked prefill (seqlen_q < the keys,
bottom-right causal); outputs poisoned first; bitwise repeatable results with a split (the combine's order is
fixed); a call captured in a CUDA graph and replayed (the workspace is left zero-filled by each call); a step
appended to the paged cache (op = attention_kv_append) and then decoded; per-sequence query lengths
(seqlens_q) mixing decode steps and prefill chunks; the warps splitting each tile's keys (warp_split = keys: GQA
32/8 with 1 and 4 tokens, contiguous and paged, causal chunks, the warps' states merged; bitwise repeatable; 32-row
tiles with MQA packing: 32/1 and 16/1 x 2 and 3 tokens, contiguous and paged causal); the Hopper prefill entry
(body = wgmma: TMA + wgmma on the cache) on prefill chunks, contiguous and paged (pages of 16 and 32 smaller than
its key tile, 256 larger), GQA / MHA / MQA, d64 / d128 / d256, lengths 0, 1, page boundaries +-1, every K/V row past
a sequence's keys NaN-poisoned, and the calls it leaves to the decode body (a split, seqlens_q, a short chunk).
"""

from __future__ import annotations

import pytest

from tests.runtime.gpu_helpers import launched

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel gpu_dec_bf16_d128 { op = attention_decode  dtype = bf16  head_dim = 128 }
kernel gpu_dec_f16_d128_causal_p16 { op = attention_decode  dtype = f16  head_dim = 128  mask = causal  page_size = 16 }
kernel gpu_dec_bf16_d64_p64 { op = attention_decode  dtype = bf16  head_dim = 64  page_size = 64 }
kernel gpu_dec_bf16_d256_p256 { op = attention_decode  dtype = bf16  head_dim = 256  page_size = 256 }
kernel gpu_append_f16_d128_p16 { op = attention_kv_append  dtype = f16  head_dim = 128  page_size = 16 }
kernel gpu_append_rope_bf16_d128 { op = attention_kv_append  dtype = bf16  head_dim = 128  rope = true }
kernel gpu_prefill_bf16_d128_causal_p64 { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal
  page_size = 64  tile = 64x64  waves = 4 }
kernel gpu_dec_f16_d64_p16_w8 { op = attention_decode  dtype = f16  head_dim = 64  page_size = 16  tile = 128x64
  waves = 8 }
kernel gpu_dec_bf16_d128_keys { op = attention_decode  dtype = bf16  head_dim = 128  warp_split = keys }
kernel gpu_dec_f16_d128_causal_p16_keys { op = attention_decode  dtype = f16  head_dim = 128  mask = causal
  page_size = 16  warp_split = keys  lds_buffers = 3 }
kernel gpu_dec_bf16_d128_keys_m32 { op = attention_decode  dtype = bf16  head_dim = 128  warp_split = keys
  tile = 32x64  waves = 4 }
kernel gpu_dec_bf16_d128_causal_p16_keys_m32 { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal
  page_size = 16  warp_split = keys  tile = 32x64  waves = 4 }
kernel gpu_pre_bf16_d128_causal_p16_wg { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal
  page_size = 16  body = wgmma }
kernel gpu_pre_f16_d64_wg { op = attention_decode  dtype = f16  head_dim = 64  body = wgmma }
kernel gpu_pre_bf16_d256_causal_p256_wg { op = attention_decode  dtype = bf16  head_dim = 256  mask = causal
  page_size = 256  body = wgmma }
kernel gpu_pre_bf16_d128_p32_wg64 { op = attention_decode  dtype = bf16  head_dim = 128  page_size = 32  body = wgmma
  wgmma_tile = 128x64 }
"""
TORCH = {"f16": torch.float16, "bf16": torch.bfloat16}
TOL = {"f16": 5e-3, "bf16": 2.5e-2}
LSE_TOL = 5e-3
_cache: dict = {}


def kernel(name):
    from ckgen.runtime.api import jit

    if name not in _cache:
        _cache[name] = jit(SPEC, kernel=name, target="sm_90")
    return _cache[name]


def problem(kern, batch, heads, heads_kv, sq, lens, seed=0, max_pages=None):
    """Q, K, V, seqlens_k and (paged) block_table on the device: pages of each sequence drawn in a random order
    from a pool with spare pages."""
    a, page = kern.plan.spec.params.attn, kern.plan.spec.params.page_size
    dt, d = TORCH[a.dtype.value], a.head_dim
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(batch, sq, heads, d, device="cuda", generator=g).to(dt)
    out = {"Q": q, "seqlens_k": torch.tensor(lens, dtype=torch.int32, device="cuda")}
    if page:
        mp = max_pages or max(1, -(-max(lens) // page))
        pool = batch * mp + 3
        out["K"], out["V"] = (torch.randn(pool, page, heads_kv, d, device="cuda", generator=g).to(dt) for _ in "kv")
        perm = torch.randperm(pool, device="cuda", generator=g)[: batch * mp]
        out["block_table"] = perm.reshape(batch, mp).to(torch.int32)
    else:
        sk = max(max(lens), 1)
        out["K"], out["V"] = (torch.randn(batch, sk, heads_kv, d, device="cuda", generator=g).to(dt) for _ in "kv")
    return out


def reference(kern, p, causal):
    """float64 (O [b, sq, h, d], LSE [b, h, sq]); a row that sees no key: O = 0, LSE = -inf."""
    page = kern.plan.spec.params.page_size
    q = p["Q"].double()
    b, sq, h, d = q.shape
    scale = d ** -0.5
    o = torch.zeros_like(q)
    lse = torch.full((b, h, sq), float("-inf"), dtype=torch.float64, device="cuda")
    for i in range(b):
        n = int(p["seqlens_k"][i])
        if page:
            pages = p["block_table"][i, : -(-n // page)].long()
            k, v = (p[x][pages].reshape(-1, *p[x].shape[2:])[:n].double() for x in "KV")
        else:
            k, v = (p[x][i, :n].double() for x in "KV")
        g = h // k.shape[1]
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        s = torch.einsum("qhd,khd->hqk", q[i], k) * scale
        if causal:
            vis = torch.arange(n, device="cuda")[None, :] <= torch.arange(sq, device="cuda")[:, None] + n - sq
            s = s.masked_fill(~vis[None], float("-inf"))
        m = s.amax(-1, keepdim=True) if n else torch.full((h, sq, 1), float("-inf"), device="cuda", dtype=torch.float64)
        m0 = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        e = torch.exp(s - m0)
        den = e.sum(-1, keepdim=True)
        ok = den > 0
        lse[i] = torch.where(ok, m0 + torch.log(den.clamp_min(1e-300)), torch.full_like(den, float("-inf")))[..., 0]
        oi = torch.einsum("hqk,khd->qhd", e, v) / den.clamp_min(1e-300).permute(1, 0, 2)
        o[i] = torch.where(ok.permute(1, 0, 2), oi, torch.zeros_like(oi))
    return o, lse


def call(kern, p, **kw):
    args = {"seqlens_k": p["seqlens_k"]}
    if "block_table" in p:
        args["block_table"] = p["block_table"]
        kw.setdefault("num_pages", p["K"].shape[0])
    return kern(p["Q"], p["K"], p["V"], **args, **kw)


def check(kern, p, out, causal):
    o, lse = out
    ro, rl = reference(kern, p, causal)
    dt = kern.plan.spec.params.attn.dtype.value
    empty = torch.isneginf(rl)
    assert torch.equal(torch.isneginf(lse), empty)
    assert not torch.isnan(o).any() and not torch.isnan(lse).any()
    if (~empty).any():
        err = float((o.double() - ro).norm() / ro.norm())
        assert err < TOL[dt], err
        assert float((lse.double() - rl)[~empty].abs().max()) < LSE_TOL
    if empty.any():  # a row that sees no key: O = 0
        assert float(o.double().permute(0, 2, 1, 3)[empty].abs().max()) == 0.0


@pytest.mark.parametrize("splits", [0, 1, 5, 40])
def test_contiguous_gqa(splits):
    k = kernel("gpu_dec_bf16_d128")
    p = problem(k, 3, 32, 8, 1, [1000, 1, 0], seed=splits)
    check(k, p, call(k, p, num_splits=splits), causal=False)


@pytest.mark.parametrize("splits", [0, 1, 3])
def test_paged_causal_page_boundaries(splits):
    k = kernel("gpu_dec_f16_d128_causal_p16")
    p = problem(k, 6, 8, 1, 4, [16, 17, 15, 200, 1, 0], seed=10 + splits)
    check(k, p, call(k, p, num_splits=splits), causal=True)


@pytest.mark.parametrize("name", ["gpu_dec_bf16_d64_p64", "gpu_dec_bf16_d256_p256"])
def test_paged_page_sizes(name):
    k = kernel(name)
    page = k.plan.spec.params.page_size
    p = problem(k, 4, 16, 4, 2, [page - 1, page, page + 1, 3 * page + 5], seed=3)
    check(k, p, call(k, p), causal=False)


@pytest.mark.parametrize("splits", [0, 1, 37])
def test_paged_long_sequences_many_splits(splits):
    """Page ids read two tiles ahead over long walks (up to 65 tiles of 64 keys, shuffled pages), GQA 32/8 one
    token, and the combine over up to 37 splits (not a multiple of its unroll by 8)."""
    k = kernel("gpu_dec_f16_d128_causal_p16")
    p = problem(k, 4, 32, 8, 1, [4099, 16, 2000, 0], seed=20 + splits)
    check(k, p, call(k, p, num_splits=splits), causal=True)


def test_paged_rows_further_apart_than_a_page():
    """8 warps at d64: a thread's rows of a K/V tile lie 32 keys apart, more than a page of 16 (a page id per row)."""
    k = kernel("gpu_dec_f16_d64_p16_w8")
    p = problem(k, 5, 8, 2, 1, [140, 17, 15, 1, 129], seed=8)
    for splits in (0, 1, 3):
        check(k, p, call(k, p, num_splits=splits), causal=False)


def test_chunked_prefill_paged():
    """A prefill chunk of 100 tokens against 100..700 keys of a paged cache, bottom-right causal, GQA 8/2."""
    k = kernel("gpu_prefill_bf16_d128_causal_p64")
    p = problem(k, 3, 8, 2, 100, [700, 100, 333], seed=4)
    check(k, p, call(k, p), causal=True)


def test_split_results_repeat_bitwise():
    k = kernel("gpu_dec_bf16_d128")
    p = problem(k, 2, 32, 8, 1, [5000, 3000], seed=7)
    o1, l1 = call(k, p, num_splits=12)
    o2, l2 = call(k, p, num_splits=12)
    assert torch.equal(o1, o2) and torch.equal(l1, l2)


def test_cuda_graph_replay():
    """A split call captured in a CUDA graph and replayed with new queries: each replay computes the new result
    (the workspace's slots are back to zero after every call)."""
    k = kernel("gpu_dec_f16_d128_causal_p16")
    p = problem(k, 2, 8, 2, 1, [900, 64], seed=8)
    o = torch.empty_like(p["Q"])
    lse = torch.empty(2, 8, 1, device="cuda")
    call(k, p, O=o, LSE=lse, num_splits=6)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        call(k, p, O=o, LSE=lse, num_splits=6)
    for seed in (1, 2):
        p["Q"].copy_(torch.randn(p["Q"].shape, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed)))
        o.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        check(k, p, (o, lse), causal=True)


def test_append_then_decode():
    """A 4-token step appended to a paged cache (crossing page boundaries), then decoded causally with the grown
    lengths; the appended rows are the new keys exactly."""
    app, dec = kernel("gpu_append_f16_d128_p16"), kernel("gpu_dec_f16_d128_causal_p16")
    p = problem(dec, 3, 8, 2, 4, [14, 0, 100], seed=9, max_pages=8)
    g = torch.Generator(device="cuda").manual_seed(9)
    kn, vn = (torch.randn(3, 4, 2, 128, device="cuda", generator=g).to(torch.float16) for _ in "kv")
    app(kn, vn, p["seqlens_k"], p["block_table"], K_cache=p["K"], V_cache=p["V"])
    torch.cuda.synchronize()
    pos = 14 + 2  # sequence 0, token 2: page 1 of its table
    assert torch.equal(p["K"][p["block_table"][0, pos // 16].long(), pos % 16], kn[0, 2])
    p["seqlens_k"] = p["seqlens_k"] + 4
    check(dec, p, call(dec, p, num_splits=3), causal=True)


def test_mixed_query_lengths():
    """seqlens_q: decode steps, an empty sequence and prefill chunks in one batch (causal, paged); rows past each
    sequence's tokens stay NaN."""
    k = kernel("gpu_prefill_bf16_d128_causal_p64")
    p = problem(k, 4, 8, 2, 70, [70, 300, 5, 129], seed=12)
    sqs = torch.tensor([70, 1, 0, 17], dtype=torch.int32, device="cuda")
    o = torch.full_like(p["Q"], float("nan"))
    lse = torch.full((4, 8, 70), float("nan"), device="cuda")
    call(k, p, seqlens_q=sqs, O=o, LSE=lse, num_splits=2)
    for b, sq in enumerate(sqs.tolist()):
        assert torch.isnan(o[b, sq:]).all() and torch.isnan(lse[b, :, sq:]).all()
        if sq:
            sub = {**p, "Q": p["Q"][b:b + 1, :sq], "seqlens_k": p["seqlens_k"][b:b + 1]}
            if "block_table" in p:
                sub["block_table"] = p["block_table"][b:b + 1]
            check(k, sub, (o[b:b + 1, :sq], lse[b:b + 1, :, :sq]), causal=True)


def test_append_rope():
    """RoPE on the way into a contiguous cache: rotated keys against float64 (rounded once to bf16), values exact."""
    app = kernel("gpu_append_rope_bf16_d128")
    g = torch.Generator(device="cuda").manual_seed(13)
    b, t, hk, d, cap = 3, 5, 4, 128, 300
    kn, vn = (torch.randn(b, t, hk, d, device="cuda", generator=g).to(torch.bfloat16) for _ in "kv")
    kc, vc = (torch.zeros(b, cap, hk, d, device="cuda", dtype=torch.bfloat16) for _ in "kv")
    lens = torch.tensor([0, 100, 295], dtype=torch.int32, device="cuda")
    inv = 10000.0 ** (-torch.arange(0, d, 2, device="cuda", dtype=torch.float64) / d)
    ang = torch.arange(cap, device="cuda", dtype=torch.float64)[:, None] * inv[None, :]
    cs = torch.cat([ang.cos(), ang.sin()], 1).float()
    app(kn, vn, lens, cs, K_cache=kc, V_cache=vc)
    torch.cuda.synchronize()
    for i in range(b):
        pos = int(lens[i])
        c, s_ = cs[pos:pos + t].double()[:, None, : d // 2], cs[pos:pos + t].double()[:, None, d // 2:]
        lo, hi = kn[i].double()[..., : d // 2], kn[i].double()[..., d // 2:]
        ref = torch.cat([lo * c - hi * s_, hi * c + lo * s_], -1)
        got = kc[i, pos:pos + t].double()
        assert float((got - ref).norm() / ref.norm()) < 1e-2
        assert torch.equal(vc[i, pos:pos + t], vn[i])


@pytest.mark.parametrize("sq, splits", [(1, 0), (1, 1), (4, 7), (5, 3)])
def test_key_split_contiguous(sq, splits):
    """warp_split = keys (16 rows shared by 4 warps, 16 keys each per 64-key tile): GQA 32/8 with 1, 4 and 5 tokens
    (4, 16 and 20 packed rows: one and two row tiles), lengths 1000, 1, 0, 65; repeatable bitwise."""
    k = kernel("gpu_dec_bf16_d128_keys")
    p = problem(k, 4, 32, 8, sq, [1000, 1, 0, 65], seed=30 + sq)
    out = call(k, p, num_splits=splits)
    check(k, p, out, causal=False)
    again = call(k, p, num_splits=splits)
    assert torch.equal(out[0], again[0]) and torch.equal(out[1], again[1])


@pytest.mark.parametrize("sq, splits", [(1, 0), (4, 1), (37, 2)])
def test_key_split_paged_causal(sq, splits):
    """warp_split = keys over a paged cache (pages of 16 shuffled; 64-key tiles: 16 keys per warp, 3 stages),
    causal with 1 and 4 tokens and a 37-token chunk; lengths at page boundaries +-1, 1, 0 and long."""
    k = kernel("gpu_dec_f16_d128_causal_p16_keys")
    p = problem(k, 7, 32, 8, sq, [16, 17, 15, 3001, 1, 0, 200], seed=40 + sq)
    check(k, p, call(k, p, num_splits=splits), causal=True)


@pytest.mark.parametrize("heads, sq, splits", [(32, 1, 0), (32, 1, 1), (16, 2, 5), (16, 3, 3)])
def test_key_split_32_rows_mqa(heads, sq, splits):
    """warp_split = keys at 32 rows (4 warps, each both m16 blocks against 16 keys of every 64-key tile): MQA packing
    (one KV head: 32 heads x 1 token, 16 x 2; 16 x 3 = 48 rows, two row tiles), lengths 1000, 1, 0, 65; repeatable
    bitwise."""
    k = kernel("gpu_dec_bf16_d128_keys_m32")
    p = problem(k, 4, heads, 1, sq, [1000, 1, 0, 65], seed=50 + sq)
    out = call(k, p, num_splits=splits)
    check(k, p, out, causal=False)
    again = call(k, p, num_splits=splits)
    assert torch.equal(out[0], again[0]) and torch.equal(out[1], again[1])


@pytest.mark.parametrize("heads, sq, splits", [(32, 1, 0), (16, 2, 1), (16, 3, 4)])
def test_key_split_32_rows_mqa_paged_causal(heads, sq, splits):
    """The same over a paged cache (pages of 16 shuffled, Q re-read from shared memory as planned), causal: lengths
    at page boundaries +-1, 1, 0 and long."""
    k = kernel("gpu_dec_bf16_d128_causal_p16_keys_m32")
    assert not k.plan.body.q_in_regs
    p = problem(k, 7, heads, 1, sq, [16, 17, 15, 3001, 1, 0, 200], seed=60 + sq)
    check(k, p, call(k, p, num_splits=splits), causal=True)


def poison_past_keys(kern, p):
    """NaN in every K/V row the decode contract does not read: past each sequence's keys (contiguous), or in the
    rest of its last page and in every page it does not hold (paged)."""
    page, lens = kern.plan.spec.params.page_size, p["seqlens_k"].tolist()
    for x in "KV":
        t = p[x]
        if not page:
            for b, n in enumerate(lens):
                t[b, n:] = float("nan")
            continue
        keep = torch.zeros(t.shape[:2], dtype=torch.bool, device="cuda")
        for b, n in enumerate(lens):
            for j in range(-(-n // page)):
                keep[int(p["block_table"][b, j]), : min(page, n - j * page)] = True
        t[~keep] = float("nan")


@pytest.mark.parametrize("name, heads, heads_kv, sq, lens, splits", [
    ("gpu_pre_bf16_d128_causal_p16_wg", 8, 2, 100, [700, 100, 0, 15, 16, 17, 129], 0),
    ("gpu_pre_f16_d64_wg", 6, 6, 200, [1000, 1, 383, 64], 0),
    # MQA with few row tiles: the automatic split would be > 1 (the decode body's); one split asked for
    ("gpu_pre_bf16_d256_causal_p256_wg", 4, 1, 64, [513, 255, 256, 64, 3], 1),
    ("gpu_pre_bf16_d128_p32_wg64", 8, 4, 130, [97, 31, 33, 4096], 0),
])
def test_prefill_entry(name, heads, heads_kv, sq, lens, splits):
    """A prefill chunk on the Hopper entry (and not the decode body) against float64: rows that see no key (causal
    chunks longer than the keys, empty sequences) O = 0 and LSE = -inf; NaN past the keys never reaches O."""
    k = kernel(name)
    p = problem(k, len(lens), heads, heads_kv, sq, lens, seed=len(lens))
    poison_past_keys(k, p)
    o = torch.full_like(p["Q"], float("nan"))
    lse = torch.full((len(lens), heads, sq), float("nan"), device="cuda")
    ran = launched(lambda: call(k, p, O=o, LSE=lse, num_splits=splits))
    assert ran is None or (f"{name}_tma" in ran and name not in ran), ran
    check(k, p, (o, lse), causal=k.plan.spec.params.attn.mask == "causal")


@pytest.mark.parametrize("sq, kw", [(100, {"num_splits": 2}), (100, {"seqlens_q": [100, 40]}), (16, {})])
def test_prefill_entry_leaves_other_calls_to_the_decode_body(sq, kw):
    """A split, per-sequence query counts or a chunk under half the entry's query tile: the decode body runs."""
    k = kernel("gpu_pre_bf16_d128_causal_p16_wg")
    p = problem(k, 2, 8, 2, sq, [300, 150], seed=sq)
    poison_past_keys(k, p)
    if "seqlens_q" in kw:
        kw = {"seqlens_q": torch.tensor(kw["seqlens_q"], dtype=torch.int32, device="cuda")}
    out = []
    ran = launched(lambda: out.append(call(k, p, **kw)))
    assert ran is None or ("gpu_pre_bf16_d128_causal_p16_wg" in ran and not any(n.endswith("_tma") for n in ran)), ran
    if "seqlens_q" not in kw:
        check(k, p, out[0], causal=True)

