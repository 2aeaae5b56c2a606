"""The attention op's Hopper body (TMA + wgmma, ``device/attention_fwd_sm90.h``) in the planner, without a GPU:
sm_90 plans it by default for dense f16 / bf16 kernels of head dim 64, 128 and 256 as a second entry ``<name>_tma``
(the mma.sync body stays the first entry and the run-time fallback), never elsewhere; its DSL parameters are
validated by name with their legal values; the generated host entry tries it first; and (with nvcc) the
kernel builds for sm_90a without spills, with the planned shared memory and wgmma in the PTX."""

from __future__ import annotations

import pytest

from ckgen.codegen import render_kernel
from ckgen.codegen.render import render_launchers
from ckgen.errors import CkgenError
from tests.ops.attention import harness as H
from tests.ops.attention.test_attention_plan import kern, refusal


@pytest.mark.parametrize("hd,dt,mask,tile", [
    (128, "bf16", "none", (128, 128)),
    (128, "f16", "causal", (128, 128)),
    (64, "bf16", "window", (192, 128)),
    (256, "bf16", "causal", (128, 64)),   # (O takes 128 registers of a consumer warpgroup: two of them, 64 keys)
])
def test_sm90_plans_the_hopper_body_by_default(hd, dt, mask, tile):
    p = kern(f"dtype = {dt}  head_dim = {hd}  mask = {mask}", "sm_90")
    w = p.body.wgmma
    assert w is not None and (w.block_m, w.block_n) == tile and w.stages == 2
    assert w.threads == 128 * (tile[0] // 64 + 1)
    # the planned grid (WGMMA_TABLE): persistent but at d64; Q (and, persistent, an O tile where it fits: not at
    # d256) + 2 stages of K and V + 10 mbarriers + 1024 alignment slack
    assert w.persistent == (hd != 64)
    o_tile = hd == 128
    assert w.o_buffer == o_tile
    assert w.smem_bytes == 1024 + 2 * hd * (tile[0] * (1 + o_tile) + 2 * 2 * tile[1]) + 8 * 10 <= p.target.lds_bytes
    assert [e.name for e in p.entries] == ["k", "k_tma"]
    assert p.entries[1].threads == w.threads and p.entries[1].lds_bytes == w.smem_bytes
    assert p.launch.prelaunch == "attention/tma_launch.cpp.j2"
    src = render_kernel(p)
    assert '#include "attention_fwd_sm90.h"' in src and "CKGEN_ATTENTION_SM90_ENTRY(k, ckgen_gen::k_cfg)" in src
    assert f"kSm90BlockM = {tile[0]}" in src and f"kSm90SmemBytes = {w.smem_bytes}" in src
    assert f"kSm90OBuffer = {str(o_tile).lower()}" in src and f"kSm90Persistent = {str(hd != 64).lower()}" in src
    host = render_launchers("t", [p], "cuda", kernel_files=["k.cu"])
    assert "ckgen::attn_sm90::Fwd<ckgen_gen::k_cfg>::launch(k_tma, " in host
    assert host.index("k_tma") < host.index("CKGEN_LAUNCH(k,")  # tried first, the mma.sync entry after it


@pytest.mark.parametrize("arch,body", [
    ("sm_80", "dtype = bf16  head_dim = 128"),                       # no wgmma / TMA
    ("sm_90", "dtype = bf16  head_dim = 128  varlen = true"),        # packed sequences
    ("sm_90", "dtype = bf16  head_dim = 128  body = mma_sync"),      # asked not to
    ("gfx942", "dtype = bf16  head_dim = 128"),
])
def test_the_hopper_body_is_planned_only_where_it_applies(arch, body):
    p = kern(body, arch)
    assert p.body.wgmma is None and len(p.entries) == 1 and p.launch.prelaunch is None
    assert "attention_fwd_sm90.h" not in render_kernel(p)


def test_written_hopper_parameters_are_kept():
    w = kern("dtype = f16  head_dim = 64  wgmma_tile = 128x64  wgmma_stages = 4", "sm_90").body.wgmma
    assert (w.block_m, w.block_n, w.stages, w.threads) == (128, 64, 4, 384)
    assert kern("dtype = f16  head_dim = 128  body = wgmma", "sm_90").body.wgmma is not None
    w = kern("dtype = bf16  head_dim = 128  wgmma_grid = tiles", "sm_90").body.wgmma
    assert not w.persistent and not w.o_buffer  # a block per tile stages O in the Q tile, as before the grid existed
    assert w.smem_bytes == 1024 + 2 * 128 * (128 + 2 * 2 * 128) + 8 * 10
    w = kern("dtype = bf16  head_dim = 64  wgmma_grid = persistent", "sm_90").body.wgmma
    assert w.persistent and w.o_buffer
    with pytest.raises(CkgenError, match="wgmma_grid = static: expected one of persistent, tiles"):
        kern("dtype = bf16  head_dim = 128  wgmma_grid = static", "sm_90")


@pytest.mark.parametrize("arch,body,param,legal", [
    ("sm_90", "wgmma_tile = 256x128", "wgmma_tile", "M in 128, 192"),
    ("sm_90", "wgmma_tile = 128x96", "wgmma_tile", "N in 64, 128"),
    ("sm_90", "wgmma_stages = 5", "wgmma_stages", "2, 3, 4"),
    ("sm_90", "wgmma_tile = 192x128  wgmma_stages = 4", "wgmma_stages", "<= 232448 bytes"),
    ("sm_90", "body = mma_sync  wgmma_stages = 2", "wgmma_stages", "(leave it out with body = mma_sync)"),
    ("sm_90", "body = mma_sync  wgmma_grid = tiles", "wgmma_grid", "(leave it out with body = mma_sync)"),
    ("sm_80", "body = wgmma", "body", "body = auto or mma_sync"),
    ("sm_90", "body = wgmma  varlen = true", "body", "body = auto or mma_sync"),
    ("gfx942", "wgmma_tile = 128x128", "wgmma_tile", "body = auto or mma_sync"),
    ("sm_90", "head_dim = 256  wgmma_tile = 192x64", "wgmma_tile", "M in 128 (64"),
    ("sm_90", "head_dim = 256  wgmma_tile = 128x128", "wgmma_tile", "<= 232448 bytes"),
])
def test_hopper_refusals_name_param_value_and_legal(arch, body, param, legal):
    if "head_dim" not in body:
        body = f"head_dim = 128  {body}"
    e = refusal(f"dtype = bf16  {body}", arch)
    assert e.param == param, e.render()
    assert legal in e.render(), e.render()


def test_body_key_is_checked_in_the_dsl():
    from ckgen.errors import CkgenError
    from ckgen.frontend import load_text

    with pytest.raises(CkgenError) as e:
        load_text("kernel k { op = attention  dtype = bf16  head_dim = 128  body = tma }", "t.ck",
                  default_arches=("sm_90",))
    assert "expected one of auto, wgmma, mma_sync" in e.value.render()


NV = """
kernel s90_bf16_d128_causal { op = attention  dtype = bf16  head_dim = 128  mask = causal  arch = [sm_90, sm_80] }
kernel s90_f16_d64_window { op = attention  dtype = f16  head_dim = 64  mask = window  arch = [sm_90] }
kernel s90_bf16_d64_128x128s3 { op = attention  dtype = bf16  head_dim = 64  wgmma_tile = 128x128  wgmma_stages = 3
  arch = [sm_90] }
kernel s90_f16_d256_causal { op = attention  dtype = f16  head_dim = 256  mask = causal  arch = [sm_90] }
"""


def test_hopper_entries_build_for_sm90a_without_spills():
    lib, plans, analysis = H.build_nv(NV, "attention_sm90.ck", "attention_sm90_rung1")
    reports = {(r.name, r.arch): r for r in analysis}
    for p in plans:
        for e in p.entries:
            r = reports[(e.name, p.arch)]
            what = f"{e.name} on {p.arch}: {r}"
            assert r.spill_stores == r.spill_loads == r.stack_bytes == 0, what
            assert r.blocks_per_sm >= 1, what
        if p.body.wgmma is None:
            assert p.arch == "sm_80" and len(p.entries) == 1
            continue
        H.check_hopper_entry(lib, p, reports)
