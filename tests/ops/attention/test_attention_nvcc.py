"""The NVIDIA attention body (attention_fwd_nv.h) compiles with nvcc (no GPU needed): every cases/*.cu for
its arches (sm_90 builds the arch-specific sm_90a like the GEMM; sm_80 plain), with ptxas -v:

* 0 spill stores / loads, no stack frame; registers reported (``python3 -m tests.ops.attention.report``);
* no static shared memory (the body takes Cfg::kLdsBytes dynamically) and kLdsBytes equals the formula
  2*kBlockM*kHeadDim + 2*kStages*2*kBlockN*kHeadDim;
* the PTX holds mma.sync.aligned.m16n8k16 (f16 or bf16, f32 accumulators) inside a loop, at least one
  K/V tile's worth (S = Q.K^T and O += P.V: 2 * kRW/16 * kBlockN/8 * kHeadDim/16 per warp), with
  ldmatrix (.trans for V), cp.async and ex2.approx in the same loop.
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
from ckgen.toolchain.nvidia import parse_ptxas
from tests.ops.attention.harness import NV_CASES, Case

NVCC_FLAGS = ("-std=c++17", "-O3", "-Xptxas", "-v", "--expt-relaxed-constexpr")
PARAMS = [(c, a) for c in NV_CASES for a in c.arches]


def nvcc() -> str | None:
    return shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").is_file() else None)


def gencode(arch: str) -> str:
    num = arch.split("_", 1)[1] + ("a" if arch == "sm_90" else "")
    return f"-gencode=arch=compute_{num},code=sm_{num}"


@dataclass(frozen=True)
class Built:
    ok: bool
    log: str
    ptx: str = ""


def build(case: Case, arch: str, out: Path) -> Built:
    exe = nvcc()
    if exe is None:
        return Built(False, "SKIP: nvcc not installed")
    keep = out / f"{case.name}.{arch}"
    keep.mkdir()
    cmd = [exe, *NVCC_FLAGS, gencode(arch), *include_flags(), "--keep", f"--keep-dir={keep}", "-c", "-x", "cu",
           str(case.path), "-o", str(keep / "k.o")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return Built(False, " ".join(cmd) + "\n" + r.stderr)
    ptx = "\n".join(p.read_text() for p in keep.glob("*.ptx"))
    return Built(True, r.stdout + r.stderr, ptx)


def build_all(out: Path) -> dict[tuple[str, str], Built]:
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futs = {(c.name, a): pool.submit(build, c, a, out) for c, a in PARAMS}
        return {k: f.result() for k, f in futs.items()}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[tuple[str, str], Built]:
    return build_all(tmp_path_factory.mktemp("attn_nvcc"))


def get(built, case: Case, arch: str) -> Built:
    b = built[(case.name, arch)]
    if b.log.startswith("SKIP:"):
        pytest.skip(b.log)
    assert b.ok, f"{case.name} failed to compile for {arch}:\n{b.log}"
    return b


_LABEL = re.compile(r"^(\$L__BB\d+_\d+):", re.M)


def ops_in_loops(ptx: str, prefix: str) -> tuple[int, int]:
    """(instructions starting with ``prefix``, those inside a loop): a loop is the text between a label and
    a later branch back to it."""
    lines = ptx.splitlines()
    labels = {m.group(1): i for i, ln in enumerate(lines) if (m := _LABEL.match(ln))}
    loops = []
    for i, ln in enumerate(lines):
        m = re.search(r"\bbra(?:\.uni)?\s+(\$L__BB\d+_\d+);", ln)
        if m and labels.get(m.group(1), i + 1) <= i:
            loops.append((labels[m.group(1)], i))
    hits = [i for i, ln in enumerate(lines) if ln.strip().startswith(prefix)]
    inside = [i for i in hits if any(lo <= i <= hi for lo, hi in loops)]
    return len(hits), len(inside)


def mma_per_tile(case: Case) -> int:
    rw = case.const("kBlockM") // case.const("kWarps")
    return 2 * (rw // 16) * (case.const("kBlockN") // 8) * (case.const("kHeadDim") // 16)


def smem_formula(case: Case) -> int:
    d, bm, bn, st = (case.const(k) for k in ("kHeadDim", "kBlockM", "kBlockN", "kStages"))
    return 2 * bm * d + 2 * st * 2 * bn * d


def figures(b: Built, case: Case, arch: str) -> dict:
    res = parse_ptxas(b.log)[(case.name, arch)]
    dt = "bf16" if case.dtype == "bf16" else "f16"
    mma = f"mma.sync.aligned.m16n8k16.row.col.f32.{dt}.{dt}.f32"
    total, inside = ops_in_loops(b.ptx, mma)
    return {**res, "mma": mma, "mma_total": total, "mma_in_loop": inside, "per_tile": mma_per_tile(case),
            "smem": smem_formula(case)}


@pytest.mark.parametrize("case,arch", PARAMS, ids=[f"{c.name}-{a}" for c, a in PARAMS])
def test_nv_ptxas_and_ptx(built, case: Case, arch: str) -> None:
    b = get(built, case, arch)
    f = figures(b, case, arch)
    assert f["spill_stores"] == 0 and f["spill_loads"] == 0 and f["stack_bytes"] == 0, f
    assert f["static_smem"] == 0, f
    assert f["mma_in_loop"] >= f["per_tile"], f
    for op in ("ldmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
               "cp.async.cg.shared.global", "ex2.approx.ftz.f32", "shfl.sync.bfly.b32"):
        assert ops_in_loops(b.ptx, op)[1] > 0, f"{op} missing from the loop"


def test_nv_cases_cover_the_brief() -> None:
    assert {c.dtype for c in NV_CASES} == {"f16", "bf16"}
    assert {c.const("kHeadDim") for c in NV_CASES} >= {64, 128, 256}
    assert {c.mask for c in NV_CASES} == {"none", "causal", "window"}
    assert {c.flag("kVarlen") for c in NV_CASES} == {True, False}
    assert {c.flag("kQInRegs") for c in NV_CASES} == {True, False}
    assert {c.const("kStages") for c in NV_CASES} >= {1, 2, 3}
    assert {a for c in NV_CASES for a in c.arches} == {"sm_90", "sm_80"}
