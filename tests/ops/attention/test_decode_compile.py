"""Rung 1 for ``op = attention_decode`` and ``op = attention_kv_append``: decode kernels (contiguous and paged,
d64 / d128 / d256, causal) and cache appends planned, generated and compiled through the driver.

AMD (gfx90a, gfx942 with clang-19; gfx950 with clang-22; ``ckgen report``'s analysis of the code object): the
planned MFMA in the main loop a whole number of times the plan's count per K/V tile and wave, no spills, no scratch, the planned
LDS (plus the split hand-off's ticket), the workgroup size, an occupancy of at least one wave per SIMD. The appends
include ``rotate_q`` (the queries rotated in the same launch).
NVIDIA (sm_90 built as sm_90a, sm_80; nvcc + ptxas -v): no spills, no stack, the planned dynamic shared memory,
and the plan's mma.sync count per K/V tile inside a loop of the PTX (per warp: with warp_split = keys a warp's share
of the keys; at 32 rows both m16 blocks, Q in registers contiguous and in shared memory paged, as planned). The
appends: no matrix instruction, no spills, no LDS.
"""

from __future__ import annotations

import re
import shutil

import pytest

from ckgen import driver
from ckgen.backends.nvidia.compiler import resources as nvidia_resources
from tests.ops.attention import harness as H
from tests.ops.attention.test_attention_compile import AMD_ARCHES, ops_in_loops

AMD = """
kernel r1d_f16_d128 { op = attention_decode  dtype = f16  head_dim = 128 }
kernel r1d_bf16_d64_causal_p16 { op = attention_decode  dtype = bf16  head_dim = 64  mask = causal  page_size = 16 }
kernel r1d_f16_d256_p256 { op = attention_decode  dtype = f16  head_dim = 256  page_size = 256  lds_buffers = 2 }
kernel r1a_bf16_d128_p16_rope { op = attention_kv_append  dtype = bf16  head_dim = 128  page_size = 16  rope = true }
kernel r1d_bf16_d128_causal_p16_rope { op = attention_decode  dtype = bf16  head_dim = 128  mask = causal
  page_size = 16  rope = neox }
kernel r1a_f16_d64_gptj40_q { op = attention_kv_append  dtype = f16  head_dim = 64  rope = gptj(40)  rotate_q = true }
"""
NV = """
kernel r1dn_bf16_d128_p64 { op = attention_decode  dtype = bf16  head_dim = 128  page_size = 64  arch = [sm_90, sm_80] }
kernel r1dn_f16_d64_causal { op = attention_decode  dtype = f16  head_dim = 64  mask = causal  arch = [sm_90] }
kernel r1dn_f16_d256_p16 { op = attention_decode  dtype = f16  head_dim = 256  page_size = 16  arch = [sm_90] }
kernel r1an_f16_d64_rope { op = attention_kv_append  dtype = f16  head_dim = 64  rope = true  arch = [sm_90] }
kernel r1dn_bf16_d128_p16_rope_gptj64 { op = attention_decode  dtype = bf16  head_dim = 128  page_size = 16
  rope = gptj(64)  arch = [sm_90] }
kernel r1dn_bf16_d128_p16_keys { op = attention_decode  dtype = bf16  head_dim = 128  page_size = 16
  warp_split = keys  arch = [sm_90] }
kernel r1dn_bf16_d128_keys_m32 { op = attention_decode  dtype = bf16  head_dim = 128  warp_split = keys
  tile = 32x64  waves = 4  arch = [sm_90] }
kernel r1dn_bf16_d128_p16_keys_m32 { op = attention_decode  dtype = bf16  head_dim = 128  page_size = 16
  warp_split = keys  tile = 32x64  waves = 4  arch = [sm_90] }
kernel r1an_bf16_d128_q { op = attention_kv_append  dtype = bf16  head_dim = 128  page_size = 16  rope = neox
  rotate_q = true  arch = [sm_90] }
"""


@pytest.fixture(scope="module")
def amd_libs(tmp_path_factory):
    out = tmp_path_factory.mktemp("decode_rung1")
    src = out / "decode.ck"
    src.write_text(AMD)
    arches = tuple(a for a, cc in AMD_ARCHES.items() if shutil.which(cc))
    if not arches:
        pytest.skip("clang++-19 / clang++-22 not installed")
    libs = driver.compile_files([src], arches, out, jobs=2)
    return {(p.name, p.arch): (p, lib.resources[(p.name, p.arch)], lib.resources) for lib in libs for p in lib.plans}


def test_amd_code_objects_match_the_plan(amd_libs):
    assert {a for _, a in amd_libs} >= {a for a, cc in AMD_ARCHES.items() if shutil.which(cc)}
    assert len({n for n, _ in amd_libs}) == 6
    for (name, arch), (plan, res, every) in sorted(amd_libs.items()):
        b = plan.body
        what = f"{name} on {arch}: {res}"
        if plan.op == "attention_kv_append":  # loads and stores only
            assert not res["mfma"] and res["vgpr_spills"] == res["sgpr_spills"] == res["scratch_bytes"] == 0, what
            continue
        assert res["mfma"] == {b.instr.mnemonic: res["mfma_total"]}, what
        # the one-buffer main loop may be unrolled (clang-19 unrolls it by 2): whole tiles' worth per iteration
        assert res["mfma_in_main_loop"] and res["mfma_in_main_loop"] % b.mma_per_tile == 0, what
        assert res["vgpr_spills"] == res["sgpr_spills"] == res["scratch_bytes"] == 0, what
        # the split-KV combine kernel in the same code object: one row per workgroup, no LDS, no spills
        comb = every[(f"{name}_combine", arch)]
        assert comb["workgroup_size"] == plan.spec.params.attn.head_dim // 4 * 8 and not comb["mfma"], comb
        assert comb["vgpr_spills"] == comb["sgpr_spills"] == comb["scratch_bytes"] == comb["lds_bytes"] == 0, comb
        assert b.lds_bytes <= res["lds_bytes"] <= b.lds_bytes + 16, what
        assert res["workgroup_size"] == plan.threads and res["wavefront_size"] == 64, what
        assert res["waves_per_simd"] >= 1, what


@pytest.fixture(scope="module")
def nv_lib():
    return H.build_nv(NV, "decode_nv.ck", "decode_rung1")


def test_nvidia_builds_match_the_plan(nv_lib):
    lib, plans, reports = nv_lib
    by = {(r.name, r.arch): r for r in reports}
    assert len(plans) == 10
    for p in plans:
        r = by[(p.name, p.arch)]
        what = f"{p.name} on {p.arch}: {r}"
        assert r.spill_stores == r.spill_loads == r.stack_bytes == 0, what
        if p.op == "attention_kv_append":
            assert not r.ptx_tensor and r.static_smem == r.dynamic_smem == 0, what
            continue
        assert r.static_smem == 0 and r.dynamic_smem == p.body.lds_bytes, what
        assert r.registers <= 255 and r.blocks_per_sm >= 1, what
        # the split-KV combine kernel its host entry launches after it: reported as a part, no spills
        c = by[(f"{p.name}_combine", p.arch)]
        assert c.part_of == p.name and c.threads == p.spec.params.attn.head_dim // 4 * 8, c
        assert c.spill_stores == c.spill_loads == c.stack_bytes == 0 and not c.ptx_tensor, c
        assert nvidia_resources(reports)[(p.name, p.arch)]["parts"][c.name]["registers"] == c.registers
        ptx = (lib.entry / f"{lib.stem}_{p.arch}.ptx").read_text()
        body = re.split(r"^\s*\.(?:visible\s+)?\.?entry\s+", ptx, flags=re.M)
        text = next(b for b in body if b.startswith(p.name + "("))
        dt = p.spec.params.attn.dtype.value
        mma = ops_in_loops(text, f"mma.sync.aligned.m16n8k16.row.col.f32.{dt}.{dt}.f32")
        # two copies of the main loop: 16-byte aligned operands (cp.async) and the per-element path
        assert sorted(mma)[-2:] == [p.body.mma_per_tile] * 2, (p.name, mma, p.body.mma_per_tile)
        assert max(ops_in_loops(text, "cp.async.cg.shared.global")) > 0, p.name
