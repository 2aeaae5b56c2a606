"""Rung 2 for ``op = attention_decode`` with ``warp_split = keys`` (the NVIDIA body's key split: the warps share 16
packed rows, each takes N / waves keys of every K/V tile, their softmax states merged at the end), sm_90 plans on
the emulator (warps of 32) against float64: GQA 32/8-like packing with 1 and 4 query tokens (and 5: two row
tiles), lengths 0, 1, page boundaries +-1 and a batch of mixed lengths, seqlen_k not a multiple of the split,
contiguous and paged K/V, causal decode and a chunked prefill, 2 and 4 warps, 16 and 32 keys per warp; the
workspace left zero-filled; the planner's choices and refusals. 32-row tiles (two m16 blocks per warp, the bench's
d128 32x64 over 4 warps): MQA-like packing (32/1 one token, 16/1 two and three tokens: one and two row tiles),
contiguous with Q in registers and paged 16 causal with Q in shared memory (planned), several splits.
"""

from __future__ import annotations

import numpy as np
import pytest

from ckgen.errors import ValidationError
from ckgen.ops.attention import decode_reference as R
from ckgen.runtime.api import plan_for
from tests.ops.attention import harness as H
from tests.ops.attention.test_decode_emu import _call as _call_fresh
from tests.ops.attention.test_decode_emu import _check

SOURCE = """
target sm_90
kernel dk_bf16_d128 { op = attention_decode  dtype = bf16  head_dim = 128  warp_split = keys }
kernel dk_f16_d64_causal_p16 { op = attention_decode  dtype = f16  head_dim = 64  mask = causal  page_size = 16
  warp_split = keys  tile = 16x64  waves = 2  lds_buffers = 1 }
kernel dk_f16_d64_causal_w4n128 { op = attention_decode  dtype = f16  head_dim = 64  mask = causal
  warp_split = keys  tile = 16x128  waves = 4  kv_barriers = 1 }
kernel dk_f16_d64_p32_gptj_qsmem { op = attention_decode  dtype = f16  head_dim = 64  page_size = 32  mask = causal
  rope = gptj  warp_split = keys  tile = 16x32  waves = 2  q_in_regs = false }
kernel dk_bf16_d128_m32 { op = attention_decode  dtype = bf16  head_dim = 128  warp_split = keys  tile = 32x64
  waves = 4 }
kernel dk_bf16_d128_causal_p16_m32 { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal
  page_size = 16  warp_split = keys  tile = 32x64  waves = 4 }
"""
NAMES = ("dk_bf16_d128", "dk_f16_d64_causal_p16", "dk_f16_d64_causal_w4n128", "dk_f16_d64_p32_gptj_qsmem",
         "dk_bf16_d128_m32", "dk_bf16_d128_causal_p16_m32")


def _call(k, inp, **kw):
    """test_decode_emu's call with the poisoned O and LSE of random_inputs (every row computed must be written)."""
    return _call_fresh(k, inp, O=inp["O"], LSE=inp["LSE"], **kw)


@pytest.fixture(scope="module")
def kernels():
    return H.emu_group([plan_for(SOURCE, n, "nvidia", "sm_90") for n in NAMES], "decode_keys_nv_emu")


def test_plan(kernels):
    """Planned: tile 16x64, 4 warps (16 keys each), 2 stages; per warp and tile 2 x (16 / 8) x (128 / 16) mma."""
    b = kernels["dk_bf16_d128"].plan.body
    assert (b.block_m, b.block_n, b.waves, b.split_keys, b.rows_per_wave) == (16, 64, 4, True, 16)
    assert b.mma_per_tile == 32 and b.lds_buffers == 2
    assert kernels["dk_f16_d64_causal_w4n128"].plan.body.mma_per_tile == 2 * 4 * 4
    d256 = plan_for("kernel k { op = attention_decode  dtype = bf16  head_dim = 256  warp_split = keys }\n", "k",
                    "nvidia", "sm_90").body
    assert (d256.block_m, d256.block_n, d256.waves, d256.q_in_regs) == (16, 32, 2, False)


@pytest.mark.parametrize("sq, splits", [(1, 1), (1, 3), (4, 2), (5, 0)])
def test_contiguous_gqa(kernels, sq, splits):
    """GQA 16/4 (4 query heads per KV head, as 32/8) x sq tokens: 4, 16 and 20 rows (two row tiles); 300 keys in
    64-key tiles (5: not a multiple of 3 splits), lengths 300, 1, 0, 129, 63."""
    k = kernels["dk_bf16_d128"]
    sizes = dict(batch=5, heads=16, heads_kv=4, seqlen_q=sq, seqlen_k=300)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(sq * 10 + splits), lengths=[300, 1, 0, 129, 63])
    _check(k, inp, sizes, _call(k, inp, num_splits=splits))


def test_plan_32_rows(kernels):
    """32x64 over 4 warps: every warp both m16 blocks against its 16 keys (2 x 2 x 2 x 8 mma per tile); shared
    memory the Q tile + the warps' states (4 x (32 x 136 + 64) floats, over the 64 KiB of K/V stages); Q in
    registers, but planned in shared memory over a paged cache (ptxas: spills with it in registers)."""
    b = kernels["dk_bf16_d128_m32"].plan.body
    assert (b.block_m, b.block_n, b.waves, b.split_keys, b.rows_per_wave, b.q_in_regs) == (32, 64, 4, True, 32, True)
    assert b.mma_per_tile == 64 and b.lds_bytes == 2 * 32 * 128 + 4 * (32 * 136 + 64) * 4
    p = kernels["dk_bf16_d128_causal_p16_m32"].plan.body
    assert (p.block_m, p.q_in_regs, "q_in_regs" in p.planned) == (32, False, True)

    def body(text):
        src = f"kernel k {{ op = attention_decode  dtype = bf16  warp_split = keys  {text} }}\n"
        return plan_for(src, "k", "nvidia", "sm_90").body

    # more than 16 keys per warp: Q planned in shared memory (32x128 over 4 warps); a written choice is kept; d64
    # keeps Q in registers
    assert not body("head_dim = 128  tile = 32x128  waves = 4").q_in_regs
    assert body("head_dim = 128  tile = 32x128  waves = 8").q_in_regs
    assert body("head_dim = 128  tile = 32x64  waves = 4  page_size = 16  q_in_regs = true").q_in_regs
    assert body("head_dim = 64  tile = 32x128  waves = 4  page_size = 16").q_in_regs


@pytest.mark.parametrize("heads, sq, splits", [(32, 1, 1), (32, 1, 3), (16, 2, 2), (16, 3, 0)])
def test_mqa_32_rows_contiguous(kernels, heads, sq, splits):
    """MQA-like packing, one KV head: 32 heads x 1 token and 16 x 2 (32 rows, one tile), 16 x 3 (48 rows: two row
    tiles, the second half empty); 200 keys in 64-key tiles (4: not a multiple of 3 splits), lengths 200, 1, 0, 65,
    129."""
    k = kernels["dk_bf16_d128_m32"]
    sizes = dict(batch=5, heads=heads, heads_kv=1, seqlen_q=sq, seqlen_k=200)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(70 + sq * 10 + splits), lengths=[200, 1, 0, 65, 129])
    _check(k, inp, sizes, _call(k, inp, num_splits=splits))


@pytest.mark.parametrize("heads, sq, splits", [(32, 1, 1), (16, 2, 3), (16, 3, 2)])
def test_mqa_32_rows_paged_causal(kernels, heads, sq, splits):
    """Pages of 16 (random order), 64-key tiles over 4 pages, Q re-read from shared memory for both m16 blocks,
    causal (with 2 and 3 tokens the rows of one tile see different key counts); lengths at page boundaries +-1, 1,
    0, mixed; one and two row tiles, 1 to 3 splits."""
    k = kernels["dk_bf16_d128_causal_p16_m32"]
    sizes = dict(batch=7, heads=heads, heads_kv=1, seqlen_q=sq, max_pages=6, num_pages=48)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(80 + sq * 10 + splits),
                          lengths=[80, 15, 16, 17, 1, 0, 33])
    _check(k, inp, sizes, _call(k, inp, num_splits=splits))


@pytest.mark.parametrize("sq, splits", [(1, 1), (4, 3)])
def test_paged_causal_page_boundaries(kernels, sq, splits):
    """Pages of 16, 64-key tiles over 4 pages, 2 warps of 32 keys, random page order, causal with 1 and 4 tokens
    (rows that see fewer keys than the warp's slice, and none); lengths at page boundaries +-1, 1, 0."""
    k = kernels["dk_f16_d64_causal_p16"]
    sizes = dict(batch=7, heads=8, heads_kv=2, seqlen_q=sq, max_pages=5, num_pages=40)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(50 + sq), lengths=[80, 15, 16, 17, 1, 0, 33])
    _check(k, inp, sizes, _call(k, inp, num_splits=splits))


def test_chunked_prefill_wide_tile(kernels):
    """A causal chunk of 13 tokens (GQA 2/1: 26 rows, two row tiles) against 13..200 keys, 128-key tiles over 4
    warps (32 keys each: two k16 steps of P.V), one barrier per tile, 1 and 2 splits."""
    k = kernels["dk_f16_d64_causal_w4n128"]
    sizes = dict(batch=3, heads=2, heads_kv=1, seqlen_q=13, seqlen_k=200)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(13), lengths=[200, 13, 130])
    for splits in (1, 2):
        inp["O"].fill(np.nan)  # poisoned again for the second call
        inp["LSE"].fill(np.nan)
        _check(k, inp, sizes, _call(k, inp, num_splits=splits))


@pytest.mark.parametrize("sq, splits", [(1, 2), (3, 1)])
def test_rope_q_in_shared_memory(kernels, sq, splits):
    """RoPE on Q (rotated in the shared Q tile at len - sq + token) with Q re-read from shared memory by both warps
    (16 keys each of 32-key tiles), pages of 32, causal."""
    k = kernels["dk_f16_d64_p32_gptj_qsmem"]
    sizes = dict(batch=4, heads=8, heads_kv=2, seqlen_q=sq, max_pages=4)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(60 + sq), lengths=[128, 33, 31, 3])
    out = k(**{n: v for n, v in inp.items() if v is not None}, num_splits=splits)
    _check(k, inp, sizes, out)


def test_workspace_left_zero(kernels):
    k = kernels["dk_bf16_d128"]
    sizes = dict(batch=2, heads=8, heads_kv=2, seqlen_q=1, seqlen_k=400)
    inp = R.random_inputs(k.plan, sizes, np.random.default_rng(4), lengths=[400, 250])
    env = {**sizes, "num_pages": 0, "max_pages": 0, "num_splits": 5}
    ws = np.zeros(k.plan.launch.workspace_bytes(env), np.uint8)
    _check(k, inp, sizes, _call(k, inp, num_splits=5, workspace=ws))
    assert not ws.any()


@pytest.mark.parametrize("body, target, match", [
    ("warp_split = keys  tile = 48x64  waves = 4", "sm_90",
     r"(?s)tile = 48x64.*16xN or 32xN, N = 64, 128, 192, 256 \(M = 16 or 32"),
    ("warp_split = keys  tile = 32x64  waves = 8", "sm_90", r"(?s)tile = 32x64.*waves = 8: 16xN or 32xN, N = 128, 256"),
    ("warp_split = keys  tile = 16x96  waves = 4", "sm_90", r"(?s)tile = 16x96.*N a multiple of 16 x waves"),
    ("warp_split = keys", "gfx942", r"(?s)warp_split = keys.*AMD decode body.*legal: rows"),
    ("warp_split = keys  tile = 32x32  waves = 2  head_dim = 256", "sm_90", r"(?s)tile = 32x32.*256 for O"),
    ("tile = 16x64  waves = 4", "sm_90", r"(?s)tile = 16x64.*queries per wave"),
    ("warp_split = cols", "sm_90", r"(?s)warp_split.*rows, keys"),
])
def test_refused_by_name(body, target, match):
    """Key split tiles other than (16 or 32) x (16 x waves x k) refused with the legal ones; AMD refuses the split;
    without it a 16-row tile over 4 warps keeps its old refusal; an unknown split is named; d256 at 32 rows is over
    the registers (O alone 256 per lane)."""
    hd = "" if "head_dim" in body else "head_dim = 64  "
    src = f"kernel bad {{ op = attention_decode  dtype = f16  {hd}{body} }}\n"
    platform = "amd" if target.startswith("gfx") else "nvidia"
    with pytest.raises(Exception, match=match) as e:
        plan_for(src, "bad", platform, target)
    assert isinstance(e.value, ValidationError) or "warp_split" in str(e.value)


def test_waves_planned_for_a_written_tile():
    src = "kernel k { op = attention_decode  dtype = f16  head_dim = 64  warp_split = keys  tile = 16x32 }\n"
    b = plan_for(src, "k", "nvidia", "sm_90").body
    assert (b.waves, b.split_keys, b.mma_per_tile) == (2, True, 2 * 2 * 4)
