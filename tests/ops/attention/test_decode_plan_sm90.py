"""The decode op's Hopper prefill entry (``body = auto | wgmma``: the attention op's TMA + wgmma body reading the
decode cache, ``device/attention_decode_sm90.h``) in the planner, without a GPU: planned only when asked for and
where the target has wgmma and TMA, never with rope; refusals name the parameter and its legal values; the kernel
source emits the entry and the host entry tries it once the split is chosen, before the decode body; and (with
nvcc, rung 1) the entries build for sm_90a without spills or stack, with the planned shared memory, wgmma in the
PTX and the TMA copies of the cache."""

from __future__ import annotations

import pytest

from ckgen.codegen import render_kernel
from ckgen.codegen.render import render_launchers
from ckgen.errors import SpecError
from ckgen.ops.attention.decode import OP
from tests.ops.attention import harness as H
from tests.ops.attention import test_attention_plan as attention_plan


def kern(body: str, arch: str = "sm_90"):
    return attention_plan.kern(body, arch, "attention_decode")


def refusal(body: str, arch: str = "sm_90"):
    return attention_plan.refusal(body, arch, "attention_decode")


@pytest.mark.parametrize("body,tile", [
    ("dtype = bf16  head_dim = 128  mask = causal  page_size = 16  body = auto", (128, 128)),
    ("dtype = f16  head_dim = 64  body = wgmma", (192, 128)),
    ("dtype = bf16  head_dim = 256  page_size = 256  body = wgmma", (128, 64)),
    ("dtype = bf16  head_dim = 128  page_size = 32  body = wgmma  wgmma_tile = 128x64  wgmma_stages = 4", (128, 64)),
])
def test_body_auto_or_wgmma_adds_the_prefill_entry(body, tile):
    p = kern(body)
    w = p.body.wgmma
    assert w is not None and (w.block_m, w.block_n) == tile
    assert [e.name for e in p.entries] == ["k", "k_combine", "k_tma"]
    assert p.entries[2].variant_of == "k" and p.entries[2].lds_bytes == w.smem_bytes
    assert p.launch.prelaunch == "attention/decode_tma_launch.cpp.j2"
    assert f"Hopper prefill entry {tile[0]}x{tile[1]}" in OP.summary(p)
    src = render_kernel(p)
    assert '#include "attention_decode_sm90.h"' in src and "CKGEN_DECODE_SM90_ENTRY(k, ckgen_gen::k_cfg)" in src
    assert f"kSm90BlockN = {tile[1]}" in src and f"kSm90SmemBytes = {w.smem_bytes}" in src
    host = render_launchers("t", [p], "cuda", kernel_files=["k.cu"])
    tma = host.index("ckgen::attn_sm90::DecodeFwd<ckgen_gen::k_cfg>::launch(k_tma, ")
    # the split is chosen first (the entry applies to one split), the decode body and its combine after it
    assert host.index("num_splits_ = static_cast<int>(splits_v);") < tma < host.index("CKGEN_LAUNCH(k,")


@pytest.mark.parametrize("arch,body", [
    ("sm_90", "dtype = bf16  head_dim = 128  page_size = 16"),                   # the default: the decode body
    ("sm_90", "dtype = bf16  head_dim = 128  body = mma_sync"),
    ("sm_80", "dtype = bf16  head_dim = 128  body = auto"),                      # no wgmma / TMA
    ("sm_90", "dtype = bf16  head_dim = 128  mask = causal  rope = neox  body = auto"),  # Q rotated on the way
    ("gfx942", "dtype = bf16  head_dim = 128  body = auto"),
])
def test_the_prefill_entry_is_planned_only_where_asked_and_possible(arch, body):
    p = kern(body, arch)
    assert p.body.wgmma is None and [e.name for e in p.entries] == ["k", "k_combine"]
    assert p.launch.prelaunch == "attention/decode_launch.cpp.j2"
    assert "attention_decode_sm90.h" not in render_kernel(p)


@pytest.mark.parametrize("arch,body,param,legal", [
    ("sm_90", "rope = neox  body = wgmma", "body", "body = auto or mma_sync (and no wgmma_* parameters) with rope"),
    ("sm_90", "rope = neox  body = auto  wgmma_tile = 128x64", "wgmma_tile", "with rope"),
    ("sm_80", "body = wgmma", "body", "body = auto or mma_sync"),
    ("gfx942", "body = wgmma", "body", "body = auto or mma_sync"),
    ("sm_90", "body = wgmma  wgmma_tile = 64x128", "wgmma_tile", "M in 128, 192"),
    ("sm_90", "body = wgmma  wgmma_stages = 5", "wgmma_stages", "2, 3, 4"),
    ("sm_90", "wgmma_stages = 3", "wgmma_stages", "(leave it out with body = mma_sync)"),
])
def test_prefill_entry_refusals_name_param_value_and_legal(arch, body, param, legal):
    e = refusal(f"dtype = bf16  head_dim = 128  mask = causal  {body}", arch)
    assert e.param == param, e.render()
    assert legal in e.render(), e.render()


def test_body_key_is_checked_in_the_dsl():
    with pytest.raises(SpecError) as e:
        kern("dtype = bf16  head_dim = 128  body = tma")
    assert "expected one of auto, wgmma, mma_sync" in e.value.render()


NV = """
kernel r1p_bf16_d128_causal_p16 { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal  page_size = 16
  body = wgmma  arch = [sm_90] }
kernel r1p_f16_d64 { op = attention_decode  dtype = f16  head_dim = 64  body = wgmma  arch = [sm_90] }
kernel r1p_bf16_d256_causal_p256 { op = attention_decode  dtype = bf16  head_dim = 256  mask = causal
  page_size = 256  body = wgmma  arch = [sm_90] }
"""


def test_prefill_entries_build_for_sm90a_without_spills():
    lib, plans, analysis = H.build_nv(NV, "decode_sm90.ck", "decode_sm90_rung1")
    reports = {(r.name, r.arch): r for r in analysis}
    for p in plans:
        for e in p.entries:
            r = reports[(e.name, p.arch)]
            assert r.spill_stores == r.spill_loads == r.stack_bytes == 0, f"{e.name}: {r}"
            assert r.blocks_per_sm >= 1, f"{e.name}: {r}"
        H.check_hopper_entry(lib, p, reports)
