"""Rung 1 for the attention op: kernels written in the DSL (examples/attention.ck and a few more) are planned,
generated and compiled through the driver, and what the code objects hold matches the plan.

AMD (gfx90a, gfx942 with clang-19; gfx950 with clang-22; ``ckgen report``'s analysis): the planned MFMA sits in
the main loop exactly as often as the plan issues per K/V tile and wave (S^T = K.Q^T plus O^T += V^T.P^T), no
spills, no scratch, the planned LDS bytes, the workgroup size, and an occupancy the report states.
NVIDIA (sm_90 built as sm_90a, sm_80; nvcc + ptxas -v): no spills, no stack, the planned dynamic shared memory,
and the PTX holds the plan's mma.sync count per K/V tile inside a loop, with ldmatrix (.trans for V), cp.async,
ex2.approx and the row-statistics shuffles in the same loop.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ckgen import driver
from tests.ops.attention import harness as H

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "attention.ck"
EXTRA_AMD = """
kernel r1_f16_d256_causal { op = attention  dtype = f16  head_dim = 256  mask = causal }
kernel r1_f16_d64_window_16x16 { op = attention  dtype = f16  head_dim = 64  mask = window  instr = 16x16x16
  tile = 128x32 }
kernel r1_bf16_d128_varlen_window { op = attention  dtype = bf16  head_dim = 128  mask = window  varlen = true }
kernel r1_bf16_d128_causal_rope64 { op = attention  dtype = bf16  head_dim = 128  mask = causal  rope = neox(64) }
"""
NV = """
kernel r1n_bf16_d128_causal { op = attention  dtype = bf16  head_dim = 128  mask = causal  arch = [sm_90, sm_80] }
kernel r1n_bf16_d64_128x128_1b { op = attention  dtype = bf16  head_dim = 64  tile = 128x128  q_in_regs = false
  kv_barriers = 1  arch = [sm_90] }
kernel r1n_f16_d256_window_varlen { op = attention  dtype = f16  head_dim = 256  mask = window  varlen = true
  arch = [sm_90] }
kernel r1n_f16_d64_rope_gptj { op = attention  dtype = f16  head_dim = 64  mask = causal  rope = gptj
  arch = [sm_90, sm_80] }
kernel r1n_bf16_d128_rope64_wgmma { op = attention  dtype = bf16  head_dim = 128  mask = causal  rope = neox(64)
  body = wgmma  arch = [sm_90] }
kernel r1n_bf16_d128_rope40_wgmma { op = attention  dtype = bf16  head_dim = 128  mask = causal  rope = neox(40)
  body = wgmma  arch = [sm_90] }
"""
AMD_ARCHES = {"gfx90a": "clang++-19", "gfx942": "clang++-19", "gfx950": "clang++-22"}


@pytest.fixture(scope="module")
def amd_libs(tmp_path_factory):
    out = tmp_path_factory.mktemp("attn_rung1")
    extra = out / "attention_extra.ck"
    extra.write_text(EXTRA_AMD)
    arches = tuple(a for a, cc in AMD_ARCHES.items() if shutil.which(cc))
    if not arches:
        pytest.skip("clang++-19 / clang++-22 not installed")
    libs = driver.compile_files([EXAMPLE, extra], arches, out, jobs=2)
    return {(p.name, p.arch): (p, lib.resources[(p.name, p.arch)]) for lib in libs for p in lib.plans}


def test_amd_code_objects_match_the_plan(amd_libs):
    assert {a for _, a in amd_libs} >= {a for a, cc in AMD_ARCHES.items() if shutil.which(cc)}
    assert len({n for n, _ in amd_libs}) == 7
    for (name, arch), (plan, res) in sorted(amd_libs.items()):
        b = plan.body
        what = f"{name} on {arch}: {res}"
        assert res["mfma"] == {b.instr.mnemonic: res["mfma_total"]}, what
        assert res["mfma_in_main_loop"] == b.mma_per_tile, what
        assert res["vgpr_spills"] == res["sgpr_spills"] == res["scratch_bytes"] == 0, what
        assert res["lds_bytes"] == b.lds_bytes, what
        assert res["workgroup_size"] == plan.threads and res["wavefront_size"] == 64, what
        assert res["waves_per_simd"] >= 1, what
        assert res["vgprs"] + res["agprs"] <= b.registers.budget, what


def test_amd_gfx950_uses_its_wider_instructions(amd_libs):
    if ("attn_d64_causal", "gfx950") not in amd_libs:
        pytest.skip("clang++-22 not installed")
    plan, _ = amd_libs[("attn_d64_causal", "gfx950")]
    assert plan.body.instr.shape == (32, 32, 16)
    plan, _ = amd_libs[("r1_f16_d256_causal", "gfx950")]
    assert plan.body.lds_buffers == 2 and amd_libs[("r1_f16_d256_causal", "gfx942")][0].body.lds_buffers == 1


# ------------------------------------------------------------------------------------------ NVIDIA
_LABEL = re.compile(r"^(\$L__BB\d+_\d+):", re.M)


def ops_in_loops(ptx: str, prefix: str) -> list[int]:
    """Per loop (a label and a later branch back to it), how many instructions start with ``prefix``."""
    lines = ptx.splitlines()
    labels = {m.group(1): i for i, ln in enumerate(lines) if (m := _LABEL.match(ln))}
    counts = []
    for i, ln in enumerate(lines):
        m = re.search(r"\bbra(?:\.uni)?\s+(\$L__BB\d+_\d+);", ln)
        if m and labels.get(m.group(1), i + 1) <= i:
            counts.append(sum(1 for x in lines[labels[m.group(1)]:i + 1] if x.strip().startswith(prefix)))
    return counts


@pytest.fixture(scope="module")
def nv_lib(tmp_path_factory):
    return H.build_nv(NV, "attention_nv.ck", "attention_rung1")


def test_nvidia_builds_match_the_plan(nv_lib):
    lib, plans, reports = nv_lib
    by = {(r.name, r.arch): r for r in reports}
    for p in plans:
        r = by[(p.name, p.arch)]
        what = f"{p.name} on {p.arch}: {r}"
        assert r.spill_stores == r.spill_loads == r.stack_bytes == 0, what
        assert r.static_smem == 0 and r.dynamic_smem == p.body.lds_bytes, what
        assert r.registers <= 255 and r.blocks_per_sm >= 1, what
        ptx = (lib.entry / f"{lib.stem}_{p.arch}.ptx").read_text()
        body = re.split(r"^\s*\.(?:visible\s+)?\.?entry\s+", ptx, flags=re.M)
        text = next(b for b in body if b.startswith(p.name + "("))
        dt = p.spec.params.attn.dtype.value
        mma = ops_in_loops(text, f"mma.sync.aligned.m16n8k16.row.col.f32.{dt}.{dt}.f32")
        # two copies of the main loop: 16-byte aligned operands (cp.async) and the per-element path
        assert sorted(mma)[-2:] == [p.body.mma_per_tile] * 2, (p.name, mma, p.body.mma_per_tile)
        for op in ("ldmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                   "cp.async.cg.shared.global", "ex2.approx.ftz.f32", "shfl.sync.bfly.b32"):
            assert max(ops_in_loops(text, op)) > 0, f"{p.name}: {op} missing from the loops"


@pytest.mark.parametrize("name, access", [("r1n_bf16_d128_rope64_wgmma", "v4.u32"),  # by 16-byte chunks
                                          ("r1n_bf16_d128_rope40_wgmma", "u16")])    # rot / 2 = 20: pair by pair
def test_nvidia_hopper_body_with_rope_builds(nv_lib, name, access):
    """The Hopper body's in-place rotation of Q (body = wgmma with rope): its entry builds without spills or stack,
    and its PTX reads and writes the Q tile before the first wgmma, 16 bytes at a time where the rotary dim splits
    into 16-byte units (attn::RopeChunks), else one 16-bit element at a time."""
    lib, plans, reports = nv_lib
    (p,) = [p for p in plans if p.name == name]
    assert p.body.wgmma is not None
    tma = [r for r in reports if r.name == f"{p.name}_tma" and r.arch == "sm_90"]
    assert len(tma) == 1 and tma[0].spill_stores == tma[0].spill_loads == tma[0].stack_bytes == 0, tma
    ptx = (lib.entry / f"{lib.stem}_sm_90.ptx").read_text()
    body = re.split(r"^\s*\.(?:visible\s+)?\.?entry\s+", ptx, flags=re.M)
    text = next(b for b in body if b.startswith(f"{p.name}_tma("))
    first_wgmma = text.index("wgmma.mma_async")
    assert f"ld.shared.{access}" in text[:first_wgmma] and f"st.shared.{access}" in text[:first_wgmma]
    assert (access == "u16") == ("ld.shared.u16" in text[:first_wgmma])
    assert "fence.proxy.async.shared::cta" in text[:first_wgmma]
