"""Ladder rung 1 for the hand-written kernel headers: every case in tests/include/cases compiles for
the real chips with the device-only HIP command line, and its code object holds what we intend.

Each case file names its arches (``// arch: gfx942 gfx90a``) and mnemonics that must appear
(``// expect: global_load_dwordx4 ...``). The MFMA mnemonic expected for an arch is looked up in the
targets table by the builtin the case's ``mma`` calls. Checked per (case, arch):

* the expected v_mfma_* is in the disassembly, and sits inside a loop (between a backward branch and
  its target), at least one K step's worth (kTileK/kInstrK * kRepM * kRepN);
* .vgpr_spill_count / .sgpr_spill_count == 0 and .private_segment_fixed_size == 0 (no scratch);
* .group_segment_fixed_size == kLdsBuffers * (kTileM + kTileN) * kTileK * sizeof(T): unpadded, swizzled tiles.
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

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "ckgen" / "include"
CASES = Path(__file__).resolve().parent / "cases"
ELEM_BYTES = {"ckgen::f16": 2, "ckgen::bf16": 2, "float": 4, "::int8_t": 1, "::int32_t": 4, "double": 8}


def tool(name: str, major: int) -> str | None:
    return shutil.which(f"{name}-{major}")


def device_compile_cmd(clang: str, arch: str, src: Path, out: Path) -> list[str]:
    return [clang, "-x", "hip", f"--offload-arch={arch}", "--offload-device-only", "--no-gpu-bundle-output",
            "-nogpuinc", "-nogpulib", "-O3", *include_flags(), "-c", str(src), "-o", str(out)]


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    arches: tuple[str, ...]
    expect: tuple[str, ...]
    builtin: str
    consts: dict

    def const(self, key: str) -> int:
        return int(self.consts[key])


def parse_case(path: Path) -> Case:
    text = path.read_text()
    arches = tuple(re.search(r"^// arch:(.*)$", text, re.M).group(1).split())
    expect_m = re.search(r"^// expect:(.*)$", text, re.M)
    builtin = re.search(r"return (__builtin_amdgcn_mfma_\w+)\(", text).group(1)
    consts = dict(re.findall(r"\b(k\w+) = ([\w.]+)", text))
    consts.update(re.findall(r"using (T\w+) = ([\w:]+);", text))
    return Case(path.stem, path, arches, tuple(expect_m.group(1).split()) if expect_m else (), builtin, consts)


ALL_CASES = [parse_case(p) for p in sorted(CASES.glob("*.hip"))]
PARAMS = [(c, a) for c in ALL_CASES for a in c.arches]


def metadata(notes: str) -> dict[str, str]:
    return dict(re.findall(r"^\s+(?:- )?\.(\w+):\s+(\S+)\s*$", notes, re.M))


_BRANCH = re.compile(r"^\s+(s_c?branch\w*)\s.*//\s*([0-9A-Fa-f]+):.*<([^+>]+)(?:\+0x([0-9a-f]+))?>")
_INSN = re.compile(r"^\s+(\w+)\b.*//\s*([0-9A-Fa-f]+):")
_SYM = re.compile(r"^([0-9a-f]+) <([^>]+)>:")


def mfma_in_loops(disasm: str) -> tuple[int, int]:
    """(v_mfma total, v_mfma inside some loop), a loop being [target, pc] of a backward branch."""
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
    mfma = [pc for pc, op in insns if op.startswith("v_mfma")]
    inside = [pc for pc in mfma if any(lo <= pc <= hi for lo, hi in loops)]
    return len(mfma), len(inside)


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
    r = subprocess.run(device_compile_cmd(clang, arch, case.path, obj), capture_output=True, text=True)
    if r.returncode != 0:
        return Built(False, r.stderr)
    dis = subprocess.run([objdump, "-d", str(obj)], capture_output=True, text=True, check=True).stdout
    notes = subprocess.run([readelf, "--notes", str(obj)], capture_output=True, text=True, check=True).stdout
    return Built(True, r.stderr, dis, notes)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[tuple[str, str], Built]:
    out = tmp_path_factory.mktemp("cases")
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futs = {(c.name, a): pool.submit(build, c, a, out) for c, a in PARAMS}
        return {k: f.result() for k, f in futs.items()}


def get(built, case: Case, arch: str) -> Built:
    b = built[(case.name, arch)]
    if b.log.startswith("SKIP:"):
        pytest.skip(b.log)
    assert b.ok, f"{case.name} failed to compile for {arch}:\n{b.log}"
    return b


def expected_mnemonic(case: Case, arch: str) -> str:
    hits = [i for i in get_target(arch).instructions if i.builtin == case.builtin and i.blocks == 1]
    assert hits, f"{case.builtin} is not a single-block instruction of {arch} in the targets table"
    return hits[0].mnemonic


@pytest.mark.parametrize("case,arch", PARAMS, ids=[f"{c.name}-{a}" for c, a in PARAMS])
def test_case_code_object(built, case: Case, arch: str) -> None:
    b = get(built, case, arch)
    mnem = expected_mnemonic(case, arch)
    ops = set(re.findall(r"^\s+(\w+)", b.disasm, re.M))
    assert mnem in ops, f"{mnem} missing; MFMAs found: {sorted(o for o in ops if 'mfma' in o)}"
    for want in case.expect:
        assert want in ops, f"{want} missing from the disassembly of {case.name} for {arch}"
    assert not any(o.startswith(("scratch_", "buffer_store", "buffer_load")) for o in ops), "scratch access"

    total, inside = mfma_in_loops(b.disasm)
    per_step = case.const("kTileK") // case.const("kInstrK") * case.const("kRepM") * case.const("kRepN")
    assert inside >= per_step, f"{inside} of {total} v_mfma inside a loop; want >= {per_step} (one K step)"

    md = metadata(b.notes)
    assert md["vgpr_spill_count"] == "0" and md["sgpr_spill_count"] == "0", md
    assert md["private_segment_fixed_size"] == "0", md
    lds = case.const("kLdsBuffers") * case.const("kTileK") * (
        case.const("kTileM") * ELEM_BYTES[case.consts["TA"]] + case.const("kTileN") * ELEM_BYTES[case.consts["TB"]])
    assert int(md["group_segment_fixed_size"]) == lds
    assert int(md["max_flat_workgroup_size"]) == case.const("kThreads")
    assert int(md["wavefront_size"]) == 64


def test_cases_cover_the_brief() -> None:
    """The case set keeps its coverage: every dtype, both layouts, both LDS depths, an epilogue, gfx950."""
    tas = {c.consts["TA"] for c in ALL_CASES}
    assert {"ckgen::f16", "ckgen::bf16", "float", "::int8_t"} <= tas
    assert {c.consts["kARowMajor"] for c in ALL_CASES} == {"true", "false"}
    assert {c.consts["kBRowMajor"] for c in ALL_CASES} == {"true", "false"}
    assert {c.consts["kLdsBuffers"] for c in ALL_CASES} == {"1", "2"}
    assert any(c.consts["kHasBias"] == "true" for c in ALL_CASES)
    assert {a for c in ALL_CASES for a in c.arches} >= {"gfx90a", "gfx942", "gfx950"}


def _compile_snippet(tmp_path: Path, code: str, extra: list[str]) -> subprocess.CompletedProcess:
    clang = tool("clang++", 19)
    if clang is None:
        pytest.skip("clang++-19 not installed")
    src = tmp_path / "s.hip"
    src.write_text(code)
    return subprocess.run([clang, *extra, *include_flags(), "-c", str(src), "-o", str(tmp_path / "s.o")],
                          capture_output=True, text=True)


def test_host_pass_of_hip_is_a_clear_error(tmp_path: Path) -> None:
    r = _compile_snippet(tmp_path, '#include "ckgen/platform.h"\n',
                         ["-x", "hip", "--offload-arch=gfx942", "--offload-host-only", "-nogpuinc", "-nogpulib"])
    assert r.returncode != 0
    assert "--offload-device-only" in r.stderr


def test_no_platform_is_a_clear_error(tmp_path: Path) -> None:
    r = _compile_snippet(tmp_path, '#include "ckgen/platform.h"\n', ["-x", "c++"])
    assert r.returncode != 0
    assert "CKGEN_PLATFORM_EMU" in r.stderr


def test_bad_cfg_is_rejected_by_name(tmp_path: Path) -> None:
    """A Cfg whose tile does not match waves x instruction fails with the member named."""
    src = (CASES / "f32_32x32x2.hip").read_text().replace("kRepM = 1", "kRepM = 2")
    r = _compile_snippet(tmp_path, src, ["-x", "hip", "--offload-arch=gfx942", "--offload-device-only",
                                         "--no-gpu-bundle-output", "-nogpuinc", "-nogpulib"])
    assert r.returncode != 0
    assert "kRepM * kInstrM != kWaveTileM" in r.stderr
