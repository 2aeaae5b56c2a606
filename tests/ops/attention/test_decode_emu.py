"""Rung 2 for ``op = attention_decode``: the gfx942 plans run on the emulator (the same generated source as the code
object: MFMA lane layouts, LDS, the workspace slots and the combine kernel; one emulator library), and the sm_90
plans (the mma.sync body: warps of 32, ldmatrix / cp.async emulated; tests/ops/attention/harness.py), against float64
(``decode_reference``): split-KV with 1, several, more splits than key tiles and the automatic choice; GQA packing
(several row tiles per KV head); lengths 0, 1, page boundaries +-1, sequences of different lengths in one batch,
seqlen_k not a multiple of the split; contiguous and paged K/V (pages in a random order), causal decode and a
chunked prefill (seqlen_q < the keys); strided and
unaligned layouts; the workspace left zero-filled; bad input refused by name.
"""

from __future__ import annotations

import numpy as np
import pytest

import ckgen
from ckgen.errors import CkgenError, EmulationFault, RuntimeFailure, SpecError, ValidationError
from ckgen.ir.arrays import to_float64
from ckgen.ir.types import DType
from ckgen.ops.attention import decode_reference as R
from ckgen.runtime.api import plan_for
from tests.ops.attention import harness as H

SOURCE = """
target gfx942
kernel dec_f16_d64 { op = attention_decode  dtype = f16  head_dim = 64 }
kernel dec_bf16_d128_causal_p16 { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal  page_size = 16
  lds_buffers = 2 }
kernel dec_f16_d64_causal_p64 { op = attention_decode  dtype = f16  head_dim = 64  mask = causal  page_size = 64
  lds_buffers = 1 }
kernel pre_bf16_d64_causal_p32 { op = attention_decode  dtype = bf16  head_dim = 64  mask = causal  page_size = 32
  tile = 64x32  waves = 4 }
"""
TOL = {DType.F16: 4e-3, DType.BF16: 2.5e-2}
LSE_TOL = 2e-3


NAMES = ("dec_f16_d64", "dec_bf16_d128_causal_p16", "dec_f16_d64_causal_p64", "pre_bf16_d64_causal_p32")
PLATFORMS = ("amd", "nv")


@pytest.fixture(scope="module")
def all_kernels():
    amd = H.emu_group([plan_for(SOURCE, n, "amd", "gfx942") for n in NAMES], "decode_amd_emu")  # one host compile
    out = {("amd", n): k for n, k in amd.items()}
    nv_src = SOURCE.replace("target gfx942", "target sm_90")
    nv = H.emu_group([plan_for(nv_src, n, "nvidia", "sm_90") for n in NAMES], "decode_nv_emu")
    out.update({("nv", n): k for n, k in nv.items()})
    return out


@pytest.fixture(params=PLATFORMS)
def kernels(request, all_kernels):
    """name -> Kernel of one platform's body (amd: gfx942 MFMA; nv: sm_90 mma.sync)."""
    return {n: all_kernels[(request.param, n)] for n in NAMES}


def _check(k, inp, sizes, out):
    o, lse = out
    dt = k.plan.spec.params.attn.dtype
    ref = R.reference(k.plan, {**inp, "O": o, "LSE": lse}, sizes)
    got = to_float64(o, dt)
    assert np.isfinite(got).all() and not np.isnan(lse).any()
    empty = np.isneginf(ref["LSE"])
    assert (np.isneginf(lse) == empty).all()
    assert (got.transpose(0, 2, 1, 3)[empty] == 0).all()  # a row that sees no key: O = 0
    if (~empty).any():
        err = np.linalg.norm(got - ref["O"]) / max(np.linalg.norm(ref["O"]), 1e-30)
        assert err < TOL[dt], err
        assert np.abs(lse[~empty] - ref["LSE"][~empty]).max() < LSE_TOL


def _call(k, inp, **kw):
    args = {"seqlens_k": inp["seqlens_k"]}
    if k.plan.spec.params.page_size:
        args["block_table"] = inp["block_table"]
        kw.setdefault("num_pages", inp["K"].shape[0])
    return k(inp["Q"], inp["K"], inp["V"], **args, **kw)


def _launch_changed(k, inp, extra, change):
    """The device's own checks: a call bound (and checked) with valid entries, then an entry changed in place before
    the launch, as the binding cannot read a device array's entries."""
    args = {"seqlens_k": inp["seqlens_k"]}
    if k.plan.spec.params.page_size:
        args["block_table"] = inp["block_table"]
    call = k.bind(inp["Q"], inp["K"], inp["V"], **args, **extra)
    change()
    k.backend.launch(k.handle, call)


@pytest.mark.parametrize("splits", [1, 3, 7, 0])
def test_contiguous_splits(kernels, splits):
    """300 keys in 64-key tiles (5 tiles: not a multiple of 3; 7 splits leave some empty), lengths 300, 1, 0,
    GQA 8/2 with two query tokens."""
    k = kernels["dec_f16_d64"]
    sizes = dict(batch=3, heads=8, heads_kv=2, seqlen_q=2, seqlen_k=300)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(splits), lengths=[300, 1, 0])
    _check(k, inp, sizes, _call(k, inp, num_splits=splits))


def test_more_splits_than_combine_lanes(kernels):
    """19 splits (the combine kernel's 8 lanes per 4 columns take 2-3 each), GQA 8/2, one token: at length 1250
    (20 tiles of 64) 10 splits take 2 tiles and 9 none, at 1200 every split one tile, at 64 only the first."""
    k = kernels["dec_f16_d64"]
    sizes = dict(batch=3, heads=8, heads_kv=2, seqlen_q=1, seqlen_k=1250)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(19), lengths=[1250, 1200, 64])
    _check(k, inp, sizes, _call(k, inp, num_splits=19))


def test_mha_odd_heads(kernels):
    """No GQA (3 query heads over 3 KV heads: one row per head and token), 2 tokens, 3 splits over 130 keys."""
    k = kernels["dec_f16_d64"]
    sizes = dict(batch=2, heads=3, heads_kv=3, seqlen_q=2, seqlen_k=130)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(33), lengths=[130, 65])
    _check(k, inp, sizes, _call(k, inp, num_splits=3))


def test_row_tiles_and_strided_layouts(kernels):
    """GQA 16/2 x 9 tokens: 72 rows, three 32-row tiles per KV head; Q and O as [B, H, S, D] memory, K and V rows
    padded by 3 elements (unaligned: the per-element loads), 4 splits."""
    k = kernels["dec_f16_d64"]
    rng = np.random.default_rng(5)
    b, h, hk, sq, sk, d = 2, 16, 2, 9, 130, 64
    q = rng.standard_normal((b, h, sq, d)).astype(np.float16).transpose(0, 2, 1, 3)
    kvbuf = rng.standard_normal((2, b, sk, hk * d + 3)).astype(np.float16)
    kk = np.lib.stride_tricks.as_strided(kvbuf[0], (b, sk, hk, d), (kvbuf.strides[1], kvbuf.strides[2], d * 2, 2))
    vv = np.lib.stride_tricks.as_strided(kvbuf[1], (b, sk, hk, d), (kvbuf.strides[1], kvbuf.strides[2], d * 2, 2))
    lens = np.array([130, 77], np.int32)
    inp = {"Q": q, "K": kk, "V": vv, "seqlens_k": lens}
    o = np.full((b, h, sq, d), np.nan, np.float16).transpose(0, 2, 1, 3)
    out = k(q, kk, vv, seqlens_k=lens, O=o, num_splits=4)
    assert out[0] is o or np.shares_memory(out[0], o)
    _check(k, inp, dict(batch=b, heads=h, heads_kv=hk, seqlen_q=sq, seqlen_k=sk), out)


@pytest.mark.parametrize("splits", [1, 2, 5])
def test_paged_page_boundaries(kernels, splits):
    """Pages of 16 (AMD: one 16-key tile per page; NVIDIA: 64-key tiles over 4 pages), random page order; lengths at page boundaries +-1, 1, 0, and
    shorter than the 3 causal query tokens (rows that see no key); MQA 4/1."""
    k = kernels["dec_bf16_d128_causal_p16"]
    sizes = dict(batch=7, heads=4, heads_kv=1, seqlen_q=3, max_pages=3, num_pages=25)
    lens = [48, 15, 16, 17, 1, 0, 33]
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(10 + splits), lengths=lens)
    _check(k, inp, sizes, _call(k, inp, num_splits=splits))


@pytest.mark.parametrize("lens", [[63, 64, 65, 1], [128, 0, 127, 129]])
def test_paged_64_boundaries(kernels, lens):
    """Pages of 64 with 64-key tiles and one LDS buffer, GQA 8/4 with 2 causal tokens, automatic split."""
    k = kernels["dec_f16_d64_causal_p64"]
    sizes = dict(batch=4, heads=8, heads_kv=4, seqlen_q=2, max_pages=3)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(lens[0]), lengths=lens)
    _check(k, inp, sizes, _call(k, inp))
    _check(k, inp, sizes, _call(k, inp, num_splits=3))


def test_chunked_prefill_paged(kernels):
    """A prefill chunk of 37 tokens against 37..100 keys in pages of 32 (bottom-right causal: the chunk is the end
    of each sequence), GQA 4/2: 74 rows per KV head in 64-row tiles, 2 splits."""
    k = kernels["pre_bf16_d64_causal_p32"]
    sizes = dict(batch=3, heads=4, heads_kv=2, seqlen_q=37, max_pages=4)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(37), lengths=[100, 37, 64])
    _check(k, inp, sizes, _call(k, inp, num_splits=2))


@pytest.mark.parametrize("shape", ["head_dim = 64  page_size = 16  tile = 128x64  waves = 8",
                                   "head_dim = 128  page_size = 16  tile = 48x64  waves = 3"])
def test_nv_paged_rows_further_apart_than_a_page(shape):
    """NVIDIA, 8 warps at d64 (a thread's rows of a K/V tile 32 keys apart, more than a page of 16) and 3 warps at
    d128 (rows 6 apart: not a power of two, the last iteration partial): each row has its own page id (read two tiles
    ahead); lengths at page boundaries +-1, 1, 0 and a last tile with pages past the length, random page order,
    1 and 3 splits."""
    src = f"target sm_90\nkernel dec_rows {{ op = attention_decode  dtype = f16  {shape} }}\n"
    k = H.emu_group([plan_for(src, "dec_rows", "nvidia", "sm_90")], "decode_nv_emu_rows")["dec_rows"]
    sizes = dict(batch=6, heads=4, heads_kv=2, seqlen_q=1, max_pages=9, num_pages=60)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(8), lengths=[140, 17, 15, 1, 0, 129])
    for splits in (1, 3):
        _check(k, inp, sizes, _call(k, inp, num_splits=splits))


def test_query_lengths_per_sequence(kernels):
    """seqlens_q: a batch mixing a decode step (1 token), an empty one (0), a 5-token prefill chunk and 3 tokens of
    speculative decoding, causal over a paged cache; the rows past each sequence's tokens stay poisoned."""
    k = kernels["dec_bf16_d128_causal_p16"]
    sizes = dict(batch=4, heads=4, heads_kv=2, seqlen_q=5, max_pages=3)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(21), lengths=[40, 9, 5, 2])
    sqs = np.array([1, 0, 5, 3], np.int32)
    o = np.full((4, 5, 4, 128), 0xFFFF, np.uint16)  # bf16 NaN
    lse = np.full((4, 4, 5), np.nan, np.float32)
    _call(k, inp, seqlens_q=sqs, O=o, LSE=lse, num_splits=2)
    ref = R.reference(k.plan, {**inp, "seqlens_q": sqs, "O": o, "LSE": lse}, sizes)
    got = to_float64(o, DType.BF16)
    for b, sq in enumerate(sqs):
        assert np.isnan(got[b, sq:]).all() and np.isnan(lse[b, :, sq:]).all()  # not written
        if sq:
            empty = np.isneginf(ref["LSE"][b, :, :sq])
            assert (np.isneginf(lse[b, :, :sq]) == empty).all()
            assert np.abs(got[b, :sq] - ref["O"][b, :sq]).max() < 0.05
            assert np.abs(lse[b, :, :sq][~empty] - ref["LSE"][b, :, :sq][~empty]).max() < LSE_TOL
    with pytest.raises(RuntimeFailure, match=r"seqlens_q: every entry must lie in 0\.\.5"):
        _call(k, inp, seqlens_q=np.array([1, 6, 0, 0], np.int32))
    bad = np.array([1, 0, 0, 0], np.int32)
    with pytest.raises(EmulationFault, match="seqlens_q"):
        _launch_changed(k, inp, {"seqlens_q": bad}, lambda: bad.__setitem__(1, 6))


def test_workspace_left_zero(kernels):
    """A caller's workspace: zero-filled on entry, zero-filled again after a 6-way split (every slot)."""
    k = kernels["dec_f16_d64"]
    sizes = dict(batch=2, heads=4, heads_kv=2, seqlen_q=1, seqlen_k=400)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(3), lengths=[400, 250])
    env = {**sizes, "num_pages": 0, "max_pages": 0, "num_splits": 6}
    nbytes = k.plan.launch.workspace_bytes(env)
    assert nbytes > 0 and k.plan.launch.environment(env)["splits"] == 6
    ws = np.zeros(nbytes, np.uint8)
    _check(k, inp, sizes, _call(k, inp, num_splits=6, workspace=ws))
    assert not ws.any()


def test_split_choice_from_the_shape(kernels):
    """Automatic: one workgroup per sequence when batch x heads_kv fills the GPU or the keys are few; more when
    they do not (the target's CUs / SMs, gfx942 304 and H200 132, times the workgroups that share one by LDS, 1..2;
    at least 1 key tile per split, at most a quarter of the slots per sequence's KV head unless each split gets 8
    tiles, then at most half); num_splits overrides."""
    plan = kernels["dec_f16_d64"].plan
    launch, t = plan.launch, plan.target
    slots = t.cus * max(1, min(2, t.lds_bytes_per_cu // plan.body.lds_bytes))
    assert t.cus in (304, 132) and slots >= 2 * t.cus

    def splits(**s):
        env = {"batch": 1, "heads": 32, "heads_kv": 8, "seqlen_q": 1, "seqlen_k": 8192, "num_pages": 0,
               "max_pages": 0, "num_splits": 0, **s}
        return launch.environment(env)["splits"]

    assert splits() == min(slots // 8, 128)    # 8 KV heads; 128 tiles of 64 keys
    assert splits(batch=128) == 1              # 1024 (sequence, KV head) pairs fill every slot
    assert splits(batch=8) == slots // 64
    assert splits(seqlen_k=100) == 2           # 2 key tiles
    assert splits(seqlen_k=64) == 1
    assert splits(num_splits=5) == 5
    one = dict(heads=1, heads_kv=1)            # one row tile: only the split's share bounds it
    assert splits(**one, seqlen_k=2048) == 32  # 32 tiles: one each
    quarter = slots // 4                       # a quarter of the slots, unless every split gets 8 tiles
    assert splits(**one, seqlen_k=64 * 8 * quarter) == quarter
    assert splits(**one, seqlen_k=64 * 8 * (quarter + 10)) == quarter + 10
    assert splits(**one, seqlen_k=1 << 24) == min(slots // 2, 256)  # long caches: half the slots, MAX_SPLITS
    assert splits(heads=3, heads_kv=3, seqlen_k=64 * 8 * quarter) == quarter


def test_bad_input_named(kernels):
    k = kernels["dec_bf16_d128_causal_p16"]
    sizes = dict(batch=2, heads=4, heads_kv=1, seqlen_q=3, max_pages=3)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(0), lengths=[33, 2])
    bt = inp["block_table"]
    with pytest.raises(CkgenError, match="block_table"):
        _call(k, {**inp, "block_table": np.zeros((3, 3), np.int32)})
    with pytest.raises(CkgenError, match="seqlens_k"):
        _call(k, {**inp, "seqlens_k": np.array([3, 2], np.int64)})
    with pytest.raises(CkgenError, match="num_splits"):
        _call(k, inp, num_splits=1000)
    # lengths past the capacity (3 pages of 16): refused before any launch for host arrays; on the device a trap,
    # which the emulator reports as a fault naming the argument
    with pytest.raises(RuntimeFailure, match=r"seqlens_k: every entry must lie in 0\.\.48, got \[49\]"):
        _call(k, {**inp, "seqlens_k": np.array([49, 2], np.int32)})
    lens = inp["seqlens_k"].copy()
    with pytest.raises(EmulationFault, match="seqlens_k"):
        _launch_changed(k, {**inp, "seqlens_k": lens}, {}, lambda: lens.__setitem__(0, 49))
    # page ids are read only on the device (entries past a sequence's length may hold anything)
    with pytest.raises(EmulationFault, match="block_table"):
        _call(k, {**inp, "block_table": np.where(bt == bt[0, 0], 99, bt).astype(np.int32)})


def test_amd_tile_within_a_page():
    src = "kernel dec_big { op = attention_decode  dtype = f16  head_dim = 64  page_size = 16  tile = 32x32 }\n"
    with pytest.raises(ValidationError, match="tile N <= page_size = 16"):
        plan_for(src, "dec_big", "amd", "gfx942")
    assert plan_for(src.replace("}", " arch = [sm_90] }"), "dec_big", "nvidia", "sm_90").body.block_n == 32


@pytest.mark.parametrize("body, match", [
    ("page_size = 24", "page_size = 24"),
    ("mask = window", "mask"),
    ("head_dim = 96", "head_dim"),
])
def test_bad_spec_named(body, match):
    """Refused by name with what is legal (the frontend or the planner)."""
    head = "" if "head_dim" in body else "head_dim = 64"
    src = f"target gfx942\nkernel bad {{ op = attention_decode  dtype = f16  {head}  {body} }}\n"
    with pytest.raises((SpecError, ValidationError), match=match):
        ckgen.jit(src, kernel="bad", target="emu", arch="gfx942")


@pytest.mark.parametrize("shape", ["tile = 128x64", "page_size = 16  tile = 128x32"])
def test_nv_chunked_prefill_two_row_blocks_per_warp(shape):
    """NVIDIA, chunked-prefill tiles of 128 rows on 4 warps (two m16 blocks per warp, Q re-read from shared memory:
    bench/decode_nv.ck's prefill candidates), causal, contiguous and in pages of 16 (random order): 37 tokens at the
    end of 100, 37 and 64 keys, GQA 4/2 (74 rows per KV head: one partial tile), 1 and 2 splits."""
    src = ("target sm_90\nkernel pre_rows { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal\n"
           f"  {shape}  waves = 4  q_in_regs = false }}\n")
    k = H.emu_group([plan_for(src, "pre_rows", "nvidia", "sm_90")], "decode_nv_emu_pre")["pre_rows"]
    assert (k.plan.body.block_m, k.plan.body.waves, k.plan.body.q_in_regs) == (128, 4, False)
    paged = "page_size" in shape
    sizes = dict(batch=3, heads=4, heads_kv=2, seqlen_q=37, **({"max_pages": 7} if paged else {"seqlen_k": 100}))
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(128), lengths=[100, 37, 64])
    for splits in (1, 2):
        _check(k, inp, sizes, _call(k, inp, num_splits=splits))
