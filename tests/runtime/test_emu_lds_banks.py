"""LDS bank conflicts counted by the emulator (ckgen/emu/lds_banks.h): zero for every shipped example GEMM's
swizzled tiles, and exactly the bank model's prediction (ckgen/lower/lds_banks.py) for deliberately
unswizzled tiles, which conflict."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ckgen import driver
from ckgen.backends import emu
from ckgen.frontend import load_text
from ckgen.ir.arrays import to_float64
from ckgen.lower import lds_banks as L
from ckgen.lower import plan_kernel
from ckgen.lower.lds import MAX_TABLE
from ckgen.ops.attention import decode_reference as R
from ckgen.ops.attention import plan as P
from ckgen.ops.gemm import lds_layout as G
from ckgen.ops.gemm.body import LdsPlan
from ckgen.runtime import api, run
from ckgen.runtime.api import Kernel, get_backend, plan_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.ck"))
ATTN = ROOT / "ckgen" / "ops" / "attention" / "device" / "attention_fwd_amd.h"
LOADER = ROOT / "ckgen" / "include" / "ckgen" / "blocks" / "tile_loader.h"

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")


def _example_plans():
    out = []
    for ex in EXAMPLES:
        specs = driver.load([ex])
        for stem, ss in specs.items():
            for p in driver.plan({stem: ss})[stem]:
                if p.op == "gemm" and p.target.vendor == "amd" and p.arch == p.spec.arches[0]:
                    out.append(p)
    return out


def _launch(kernel: Kernel, tiles_m: int, tiles_n: int, tiles_k: int, seed: int = 0):
    """One checked call over whole tiles: [(output, error, tolerance)] and the LDS sites it reached."""
    c = kernel.plan.spec.params.config
    sizes = {"m": tiles_m * c.tile[0], "n": tiles_n * c.tile[1], "k": tiles_k * c.tile[2]}
    g = kernel.plan.spec.params.gemm
    if g.rope is not None:  # a rotary kernel's columns rotated: whole heads within N
        sizes["rope_cols"] = sizes["n"] // g.rope_head * g.rope_head
    results, _ = run.check_call(kernel, run.resolve_sizes(kernel.plan, sizes), np.random.default_rng(seed))
    return results, kernel.handle.library.lds_sites()


@pytest.fixture(scope="module")
def example_kernels():
    """Every example kernel on its first target, grouped per arch into one emu library each."""
    plans = _example_plans()
    out = []
    for arch in sorted({p.arch for p in plans}):
        mine = [p for p in plans if p.arch == arch]
        out += list(api.emu_kernels(mine, f"examples_{arch}").values())
    return out


def test_examples_cover_every_file(example_kernels):
    with_gemm = {e.name for e in EXAMPLES if any(s.op == "gemm" for ss in driver.load([e]).values() for s in ss)}
    assert {Path(k.plan.spec.source).name for k in example_kernels} == with_gemm
    assert len(example_kernels) >= 9


def test_shipped_layouts_have_no_bank_conflicts(example_kernels):
    for kernel in example_kernels:
        results, sites = _launch(kernel, 2, 1, 3)
        assert all(err <= tol for _, err, tol in results), (kernel.name, results)
        reads = [s for s in sites if not s.write]
        writes = [s for s in sites if s.write]
        assert reads and writes, (kernel.name, sites)
        # the main loop: every fragment read and every global->LDS write of 3 K tiles x 2 workgroups
        assert sum(s.instructions for s in reads) > 0 and sum(s.instructions for s in writes) > 0
        assert sum(s.extra_cycles for s in sites) == 0, (kernel.name, kernel.arch, sites)
        assert all(s.max_ways == 1 for s in sites), (kernel.name, sites)
        # and the planner predicted exactly that
        assert (kernel.plan.body.lds.a.read_conflicts, kernel.plan.body.lds.a.write_conflicts,
                kernel.plan.body.lds.b.read_conflicts, kernel.plan.body.lds.b.write_conflicts) == (0, 0, 0, 0)


@pytest.mark.parametrize("kernel_name,arch", [("gemm_f16_nt", "gfx942"), ("mlp_f16_bias_gelu", "gfx950")])
def test_unswizzled_tiles_conflict_as_the_model_predicts(kernel_name, arch):
    """Replace the planned layouts by plain rows (no XOR): the emulator counts conflicts, exactly the model's
    per-K-tile figure x K tiles x workgroups, and the numbers are still right."""
    plan = next(p for p in driver.plan(driver.load([ROOT / "examples" / "gemm_f16.ck"], (arch,)), (arch,))["gemm_f16"]
                if p.name == kernel_name)
    a, b = G.gemm_operand_shapes(plan.target, plan.spec.params, plan.body.instr, plan.body.vec)
    pa, pb = L.plain_layout(a), L.plain_layout(b, mn_piece=plan.body.lds.b.mn_piece)
    bank = L.bank_model(plan.target)
    predicted = 0
    for shape, lay in ((a, pa), (b, pb)):
        groups = L.operand_accesses(shape, lay.granule, lay.mn_lanes, bank.wave, lay.mn_piece)
        cost = L.extra_cycles(groups, lay.granule * lay.elem_bytes, 0, lay.table, bank)
        predicted += cost["read"] + cost["write"]
    assert predicted > 0
    bad = dataclasses.replace(plan, body=dataclasses.replace(plan.body, lds=LdsPlan(a=pa, b=pb, buffers=plan.body.lds.buffers)))
    kernel = Kernel(bad, get_backend("emu"))
    results, sites = _launch(kernel, 2, 2, 3)
    assert sum(s.extra_cycles for s in sites) == predicted * 3 * 4
    assert max(s.max_ways for s in sites) > 1
    assert all(err <= tol for _, err, tol in results), results


def test_ckgen_run_prints_the_bank_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "ckgen", "run", str(ROOT / "examples" / "gemm_f16.ck"), "--kernel",
                        "gemm_f16_nt", "--target", "emu", "-m", "256", "-n", "128", "-k", "64"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("LDS bank conflicts"))
    # 2 workgroups x 2 K tiles x 4 waves x 16 fragment reads; 8 LDS writes per wave and K tile
    assert line.startswith("LDS bank conflicts (0 extra cycles): ds_read 0 extra cycles over 256 instructions; "
                           "ds_write 0 extra cycles over 128 instructions"), line


def _line_of(path: Path, text: str) -> int:
    (n,) = [i + 1 for i, ln in enumerate(path.read_text().splitlines()) if text in ln]
    return n


def _site(sites, path: Path, line: int):
    """The one LDS site of ``sites`` at ``path``:``line``."""
    (s,) = [s for s in sites if Path(s.file).name == path.name and s.line == line]
    return s


def _checked_call(kernel: Kernel, sizes: dict) -> list:
    """One checked call of ``kernel`` at ``sizes`` (the numbers must be right): the LDS sites it reached."""
    results, _ = run.check_call(kernel, run.resolve_sizes(kernel.plan, sizes), np.random.default_rng(0))
    assert all(err <= tol for _, err, tol in results), (kernel.name, results)
    return kernel.handle.library.lds_sites()


def _plans(src: str, arch: str) -> list:
    return [plan_kernel(s, arch) for s in load_text(src, "t.ck", default_arches=(arch,))]


ATTN_SIZES = dict(batch=1, heads=2, heads_kv=2, seqlen_q=128, seqlen_k=128)


def test_attention_v_tile_reads_have_no_bank_conflicts():
    """The AMD attention body's V^T reads (attention_fwd_amd.h load_v) on gfx950's 64 banks, with the instructions
    whose fixed stride (block_n + max(4, kAItems)) left 2-way conflicts on every read: the planned stride
    (ckgen/ops/attention/plan.py v_tile_stride) measures 0 extra cycles, and the numbers are right."""
    v_line = _line_of(ATTN, "const vec<T, 4> run = lds_load(")
    src = "".join(f"kernel {n} {{ op = attention dtype = bf16 head_dim = 64 tile = 128x64 waves = 4 instr = {i} }}\n"
                  for n, i in (("att_v16", "16x16x16"), ("att_v32", "32x32x16")))
    for kernel in api.emu_kernels(_plans(src, "gfx950"), "attention_v_banks").values():
        v = _site(_checked_call(kernel, ATTN_SIZES), ATTN, v_line)
        assert v.instructions > 0 and (v.extra_cycles, v.max_ways) == (0, 1), (kernel.name, v)


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_attention_v_tile_writes_at_block_n_16_measure_as_the_model_predicts(arch):
    """The loader's V^T writes (blk::TileLoader MN-contiguous: one element per lane, tile_loader.h) at block_n 16,
    16x16x16: 0 extra cycles on gfx942; on gfx950 2-way, 1 extra cycle per write, exactly the bank model's figure
    per tile (plan.v_write_groups) that plan.v_tile_stride accepts to keep the V^T reads free (no V_RUN-aligned
    stride frees both: tests/ops/attention/test_attention_plan.py). The reads measure 0, the numbers are right."""
    src = "kernel att_v16 { op = attention dtype = bf16 head_dim = 64 tile = 64x16 waves = 4 instr = 16x16x16 }\n"
    (plan,) = _plans(src, arch)
    (kernel,) = api.emu_kernels([plan], f"attention_v16_banks_{arch}").values()
    sites = _checked_call(kernel, ATTN_SIZES)
    reads = _site(sites, ATTN, _line_of(ATTN, "const vec<T, 4> run = lds_load("))
    writes = _site(sites, LOADER, _line_of(LOADER, "lds_store(reinterpret_cast<vec<T, kMnPiece>*>("))
    assert reads.instructions > 0 and (reads.extra_cycles, reads.max_ways) == (0, 1), reads
    b = plan.body
    (g,) = P.v_write_groups(b.block_n, 64, b.lds_v_stride, 2, b.vec, plan.threads, plan.target.wave_size)
    per_tile = L.extra_cycles([g], 1, 0, (0,) * MAX_TABLE, L.bank_model(plan.target))["write"]
    tiles = writes.instructions // int((g.q >= 0).any(axis=1).sum())  # K/V tiles x workgroups
    assert tiles == 2 * 2 * 128 // b.block_n
    assert writes.extra_cycles == per_tile * tiles, (writes, per_tile, tiles)
    if arch == "gfx950":
        assert (writes.extra_cycles, writes.max_ways) == (writes.instructions, 2), writes
    else:
        assert (writes.extra_cycles, writes.max_ways) == (0, 1), writes


@pytest.mark.parametrize("arch,hd,tile,instr", [("gfx942", 128, "128x32", "32x32x8"), ("gfx942", 64, "64x64", "16x16x16"),
                                                ("gfx950", 64, "128x64", "32x32x8"), ("gfx950", 64, "64x32", "16x16x32")])
def test_attention_k_tile_has_no_bank_conflicts(arch, hd, tile, instr):
    """The AMD attention body's K tile (XOR-swizzled: ckgen/ops/attention/plan.py k_tile_layout): its fragment reads
    (attention_fwd_amd.h load_k) and its global->LDS writes (the K-contiguous store of blk::TileLoader) measure 0
    extra cycles; the padded rows this replaces conflicted 2-way on every read (and on gfx950 d64's writes)."""
    src = f"kernel att_k {{ op = attention dtype = bf16 head_dim = {hd} tile = {tile} waves = 4 instr = {instr} }}\n"
    (kernel,) = api.emu_kernels(_plans(src, arch), f"attention_k_banks_{arch}_{hd}_{instr}").values()
    sites = _checked_call(kernel, ATTN_SIZES)
    reads = _site(sites, ATTN, _line_of(ATTN, "a[kb] = bit_cast<AOp>(lds_load("))
    writes = _site(sites, LOADER, _line_of(LOADER, "lds_store(reinterpret_cast<Piece*>("))
    for s in (reads, writes):
        assert s.instructions > 0 and (s.extra_cycles, s.max_ways) == (0, 1), (kernel.name, s)


def test_attention_padded_k_tile_fallback_still_runs():
    """The body's other K layout (padded rows, kLdsKStride > 0: targets without swizzled tiles) stays right; its
    reads conflict 2-way on gfx942 as the swizzled tile's replacement measured."""
    src = "kernel att_pad { op = attention dtype = f16 head_dim = 64 tile = 128x64 waves = 4 instr = 32x32x8 }\n"
    (plan,) = _plans(src, "gfx942")
    b = plan.body
    stride = 64 + 8
    lds = b.lds_buffers * (b.block_n * stride + 64 * b.lds_v_stride) * 2
    padded = dataclasses.replace(plan, body=dataclasses.replace(b, lds_k=None, lds_k_stride=stride, lds_bytes=lds))
    kernel = Kernel(padded, get_backend("emu"))
    sites = _checked_call(kernel, dict(ATTN_SIZES, seqlen_k=100))
    reads = _site(sites, ATTN, _line_of(ATTN, "a[kb] = bit_cast<AOp>(lds_load("))
    assert reads.instructions > 0 and reads.max_ways == 2, reads


def _decode_kernels(arch: str):
    """Two decode plans on `arch` in one emu library: contiguous f16 d64 (64-key tiles) and paged bf16 d128 in pages
    of 16 (16-key tiles)."""
    src = (f"target {arch}\nkernel dec_d64 {{ op = attention_decode dtype = f16 head_dim = 64 }}\n"
           "kernel dec_p16 { op = attention_decode dtype = bf16 head_dim = 128 mask = causal page_size = 16 "
           "lds_buffers = 2 }\n")
    return api.emu_kernels([plan_for(src, n, "amd", arch) for n in ("dec_d64", "dec_p16")], f"decode_banks_{arch}")


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_decode_call_counts_every_launch_and_its_tiles_have_no_bank_conflicts(arch):
    """An attention decode call launches the decode kernel and, with the keys split, the combine kernel: the bank
    counters add up over the call's launches (lds_sites()), apart from the last launch's (lds_sites(last_launch=
    True): the combine kernel, which uses no LDS). The decode body's K reads / writes (XOR-swizzled tile) and V^T
    reads / writes (planned stride) measure 0 extra cycles, unsplit and split, and the numbers are right."""
    lines = {(ATTN.name, _line_of(ATTN, "a[kb] = bit_cast<AOp>(lds_load(")): "K read",
             (LOADER.name, _line_of(LOADER, "lds_store(reinterpret_cast<Piece*>(")): "K write",
             (ATTN.name, _line_of(ATTN, "const vec<T, 4> run = lds_load(")): "V read",
             (LOADER.name, _line_of(LOADER, "lds_store(reinterpret_cast<vec<T, kMnPiece>*>(")): "V write"}
    for name, kernel in _decode_kernels(arch).items():
        paged = kernel.plan.spec.params.page_size
        sizes = (dict(batch=3, heads=4, heads_kv=1, seqlen_q=3, max_pages=4, num_pages=25) if paged else
                 dict(batch=2, heads=8, heads_kv=2, seqlen_q=1, seqlen_k=300))
        inp = R.random_inputs(kernel.plan, sizes, np.random.default_rng(0), lengths=[48, 40, 60] if paged else [300, 200])
        extra = {"block_table": inp["block_table"], "num_pages": inp["K"].shape[0]} if paged else {}
        for splits in (1, 3):
            o, lse = kernel(inp["Q"], inp["K"], inp["V"], seqlens_k=inp["seqlens_k"], num_splits=splits, **extra)
            lib = kernel.handle.library
            sites = lib.lds_sites()
            assert lib.lds_launches() == (1 if splits == 1 else 2), (name, splits)
            # one launch: both windows agree; split: the combine kernel (the last launch) has no LDS access
            assert lib.lds_sites(last_launch=True) == (sites if splits == 1 else []), (name, splits)
            got = {lines[(Path(s.file).name, s.line)]: s for s in sites}
            assert set(got) == set(lines.values()), (name, splits, sites)
            for what, s in got.items():
                if (name, arch, what) == ("dec_p16", "gfx950", "V write"):
                    # block_n 16 on gfx950: no V_RUN-aligned stride frees both the reads and these writes; the
                    # planner keeps the reads free (test_attention_v_tile_writes_at_block_n_16_...)
                    assert (s.extra_cycles, s.max_ways) == (s.instructions, 2), s
                    continue
                assert s.instructions > 0 and (s.extra_cycles, s.max_ways) == (0, 1), (name, arch, splits, what, s)
            ref = R.reference(kernel.plan, {**inp, "O": o, "LSE": lse}, sizes)
            got = to_float64(o, kernel.plan.spec.params.attn.dtype)
            seen = ~np.isneginf(ref["LSE"])  # rows that see a key (the others: O = 0)
            assert (np.isneginf(lse) == ~seen).all() and np.isfinite(got).all(), (name, splits)
            err = np.linalg.norm(got - ref["O"]) / max(np.linalg.norm(ref["O"]), 1e-30)
            assert err < 2.5e-2, (name, splits, err)
