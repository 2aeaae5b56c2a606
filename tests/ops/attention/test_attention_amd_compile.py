"""Rung 1 for the AMD attention body (attention_fwd_amd.h): every cases/*.hip compiles for its arches with
the device flags of ckgen.toolchain.amdgpu (clang-19 for gfx90a/gfx942, clang-22 for gfx950), and its code
object holds what the Cfg asks for:

* the case's MFMA (looked up in the targets table by the builtin its ``mma`` calls) sits inside a loop,
  at least one K/V tile's worth: kKB*kQB*kDC (S^T = K.Q^T) + kDB*kQB*kPC (O^T += V^T.P^T);
* no spills (.vgpr_spill_count / .sgpr_spill_count 0), no scratch (.private_segment_fixed_size 0, no
  scratch_/buffer_ instructions);
* .group_segment_fixed_size == kLdsBuffers * (kBlockN*kLdsKStride + kHeadDim*kLdsVStride) * 2;
* the workgroup size and wave64.
``python3 -m tests.ops.attention.report`` prints VGPR / AGPR / LDS per case and arch.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from ckgen.resources import include_flags
from ckgen.targets import get_target
from ckgen.toolchain.amdgpu import DEVICE_FLAGS
from tests.ops.attention.harness import AMD_CASES, Case

PARAMS = [(c, a) for c in AMD_CASES for a in c.arches]


def tool(name: str, major: int) -> str | None:
    return shutil.which(f"{name}-{major}")


@dataclass(frozen=True)
class Built:
    ok: bool
    log: str
    disasm: str = ""
    notes: str = ""


def build(case: Case, arch: str, outdir: Path) -> Built:
    major = get_target(arch).min_clang
    clang, objdump, readelf = tool("clang++", major), tool("llvm-objdump", major), tool("llvm-readelf", major)
    if not (clang and objdump and readelf):
        return Built(False, f"SKIP: clang++-{major}/llvm-objdump-{major}/llvm-readelf-{major} not installed")
    obj = outdir / f"{case.name}.{arch}.o"
    cmd = [clang, *DEVICE_FLAGS, f"--offload-arch={arch}", *include_flags(), "-c", str(case.path), "-o", str(obj)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return Built(False, " ".join(cmd) + "\n" + r.stderr)
    dis = subprocess.run([objdump, "-d", str(obj)], capture_output=True, text=True, check=True).stdout
    notes = subprocess.run([readelf, "--notes", str(obj)], capture_output=True, text=True, check=True).stdout
    return Built(True, r.stderr, dis, notes)


def build_all(outdir: Path) -> dict[tuple[str, str], Built]:
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futs = {(c.name, a): pool.submit(build, c, a, outdir) for c, a in PARAMS}
        return {k: f.result() for k, f in futs.items()}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[tuple[str, str], Built]:
    return build_all(tmp_path_factory.mktemp("attn_amd"))


def get(built, case: Case, arch: str) -> Built:
    b = built[(case.name, arch)]
    if b.log.startswith("SKIP:"):
        pytest.skip(b.log)
    assert b.ok, f"{case.name} failed to compile for {arch}:\n{b.log}"
    return b


def metadata(notes: str) -> dict[str, str]:
    return dict(re.findall(r"^\s+(?:- )?\.(\w+):\s+(\S+)\s*$", notes, re.M))


_BRANCH = re.compile(r"^\s+(s_c?branch\w*)\s.*//\s*([0-9A-Fa-f]+):.*<([^+>]+)(?:\+0x([0-9a-f]+))?>")
_INSN = re.compile(r"^\s+(\w+)\b.*//\s*([0-9A-Fa-f]+):")
_SYM = re.compile(r"^([0-9a-f]+) <([^>]+)>:")


def mnemonics_in_loops(disasm: str, mnemonic: str) -> tuple[int, int]:
    """(count of ``mnemonic``, count inside some loop), a loop being [target, pc] of a backward branch."""
    syms: dict[str, int] = {}
    insns: list[tuple[int, str]] = []
    loops: list[tuple[int, int]] = []
    for line in disasm.splitlines():
        if m := _SYM.match(line):
            syms[m.group(2)] = int(m.group(1), 16)
            continue
        if m := _BRANCH.match(line):
            pc = int(m.group(2), 16)
            target = syms.get(m.group(3), 0) + int(m.group(4) or "0", 16)
            if target <= pc:
                loops.append((target, pc))
        if m := _INSN.match(line):
            insns.append((int(m.group(2), 16), m.group(1)))
    hits = [pc for pc, op in insns if op == mnemonic]
    inside = [pc for pc in hits if any(lo <= pc <= hi for lo, hi in loops)]
    return len(hits), len(inside)


def builtin_of(case: Case) -> str:
    return re.search(r"return (__builtin_amdgcn_mfma_\w+)\(", case.path.read_text()).group(1)


def expected_mnemonic(case: Case, arch: str) -> str:
    hits = [i for i in get_target(arch).instructions if i.builtin == builtin_of(case) and i.blocks == 1]
    assert hits, f"{builtin_of(case)} is not a single-block instruction of {arch} in the targets table"
    return hits[0].mnemonic


def mfma_per_tile(case: Case) -> int:
    m, n, k = case.const("kInstrM"), case.const("kInstrN"), case.const("kInstrK")
    d, bn = case.const("kHeadDim"), case.const("kBlockN")
    qb = case.const("kBlockM") // case.const("kWaves") // n
    return (bn // m) * qb * (d // k) + (d // m) * qb * (bn // k)


def lds_bytes(case: Case) -> int:
    return case.const("kLdsBuffers") * (case.const("kBlockN") * case.const("kLdsKStride")
                                        + case.const("kHeadDim") * case.const("kLdsVStride")) * 2


def figures(b: Built, case: Case, arch: str) -> dict:
    md = metadata(b.notes)
    mnem = expected_mnemonic(case, arch)
    total, inside = mnemonics_in_loops(b.disasm, mnem)
    return {"mfma": mnem, "mfma_total": total, "mfma_in_loop": inside, "per_tile": mfma_per_tile(case),
            "vgpr": int(md.get("vgpr_count", -1)), "agpr": int(md.get("agpr_count", 0)),
            "sgpr": int(md.get("sgpr_count", -1)), "lds": int(md["group_segment_fixed_size"]),
            "scratch": int(md["private_segment_fixed_size"]),
            "spills": int(md["vgpr_spill_count"]) + int(md["sgpr_spill_count"])}


@pytest.mark.parametrize("case,arch", PARAMS, ids=[f"{c.name}-{a}" for c, a in PARAMS])
def test_amd_code_object(built, case: Case, arch: str) -> None:
    b = get(built, case, arch)
    f = figures(b, case, arch)
    ops = set(re.findall(r"^\s+(\w+)", b.disasm, re.M))
    assert not any(o.startswith(("scratch_", "buffer_store", "buffer_load")) for o in ops), "scratch access"
    assert f["mfma_in_loop"] >= f["per_tile"], (
        f"{f['mfma_in_loop']} of {f['mfma_total']} {f['mfma']} inside a loop; want >= {f['per_tile']} (one K/V tile)")
    assert f["spills"] == 0 and f["scratch"] == 0, f
    assert f["lds"] == lds_bytes(case)
    md = metadata(b.notes)
    assert int(md["max_flat_workgroup_size"]) == case.const("kThreads")
    assert int(md["wavefront_size"]) == 64
    assert "ds_bpermute_b32" in ops, "the row statistics exchange (xor_shuffle) is missing"
    assert "v_exp_f32" in ops or "v_exp_f32_e32" in ops


def test_cases_cover_the_brief() -> None:
    """The AMD case set keeps its coverage: both dtypes, d64/d128/d256, every mask, varlen, MHA and GQA,
    both LDS depths, both instruction sizes, gfx90a, gfx942 and gfx950."""
    assert {c.dtype for c in AMD_CASES} == {"f16", "bf16"}
    assert {c.const("kHeadDim") for c in AMD_CASES} >= {64, 128, 256}
    assert {c.mask for c in AMD_CASES} == {"none", "causal", "window"}
    assert {c.flag("kVarlen") for c in AMD_CASES} == {True, False}
    assert {c.flag("kGqa") for c in AMD_CASES} == {True, False}
    assert {c.const("kLdsBuffers") for c in AMD_CASES} == {1, 2}
    assert {c.const("kInstrM") for c in AMD_CASES} == {16, 32}
    assert {a for c in AMD_CASES for a in c.arches} >= {"gfx90a", "gfx942", "gfx950"}


def test_bad_cfg_is_rejected_by_name(tmp_path: Path) -> None:
    clang = tool("clang++", 19)
    if clang is None:
        pytest.skip("clang++-19 not installed")
    src = tmp_path / "bad.hip"
    case = next(c for c in AMD_CASES if c.name == "amd_f16_d128_none")
    src.write_text(case.path.read_text().replace("kLdsVStride = 36", "kLdsVStride = 30"))
    r = subprocess.run([clang, *DEVICE_FLAGS, "--offload-arch=gfx942", *include_flags(), "-c", str(src), "-o",
                        str(tmp_path / "bad.o")], capture_output=True, text=True)
    assert r.returncode != 0
    assert "kLdsVStride must be >= kBlockN and a multiple of 4" in r.stderr
