"""What a compiled AMDGPU code object really contains, per kernel (``ckgen report``).

:func:`analyze_code_object(path, target, toolchain)` returns one frozen :class:`KernelReport` per
kernel listed in the code object's metadata note, from two tools of the toolchain:

- ``llvm-readelf --notes`` (metadata): ``.vgpr_count`` (the VGPR file a wave takes: on targets with a
  unified file, arch VGPRs aligned to 4 plus AGPRs), ``.agpr_count``, ``.sgpr_count``,
  ``.group_segment_fixed_size`` (LDS bytes), ``.private_segment_fixed_size`` (scratch bytes),
  ``.vgpr_spill_count``/``.sgpr_spill_count``, ``.max_flat_workgroup_size``, ``.wavefront_size``;
- ``llvm-objdump -d`` (disassembly of the kernel's symbol): every matrix instruction (mnemonics starting
  with one of ``target.matrix_mnemonics``) with its count;
  the arch VGPRs the code names (highest ``v`` register + 1); and the **main loop**: each backward
  branch (``s_cbranch_*`` or ``s_branch`` to an earlier address of the same kernel) closes a loop from
  its target to itself; the main loop is the one holding the most MFMA instructions (ties: the
  shortest). Only the kernel's own symbol is read: MFMAs in non-inlined callees are not counted.

Occupancy (waves per SIMD) uses only Target fields, no arch names:

- VGPRs: unified file: ``vgprs_per_simd_lane // roundup(roundup(arch_vgprs, 4) + agprs, vgpr_granule)``
  (``.vgpr_count`` when the code names fewer registers than the metadata counts); separate files:
  the VGPR file and the AGPR file (``agprs`` entries) limit separately, each with the granule;
- SGPRs: a wave needing more than ``target.sgprs`` cannot run (0); when the Target has
  ``sgprs_per_simd``, ``sgprs_per_simd // sgpr_count`` more;
- LDS: ``lds_bytes_per_cu // lds_bytes`` workgroups per CU, each of ``ceil(workgroup / wave_size)``
  waves spread over ``simds_per_cu`` SIMDs (rounded up);
- ``max_waves_per_simd``. The result is the minimum; ``occupancy_limiter`` names the binding limit
  (on a tie: max_waves, then vgpr, agpr, sgpr, lds).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from ckgen.errors import BuildError
from ckgen.targets.model import Target
from ckgen.toolchain.llvm import Toolchain
from ckgen.toolchain.metadata import kernels_of, read_metadata_text

_FUNC_RE = re.compile(r"^([0-9a-fA-F]+) <([^>]+)>:\s*$")
_INSN_RE = re.compile(r"^\s+([a-z_][a-z0-9_.]*)\b(.*?)\s*//\s*([0-9A-Fa-f]+):[^<]*(?:<([^>+]+)(?:\+0x([0-9a-fA-F]+))?>)?\s*$")
_VREG_RE = re.compile(r"(?<![\w.])v(?:\[(\d+):(\d+)\]|(\d+)\b)")


@dataclass(frozen=True)
class Insn:
    addr: int
    mnemonic: str
    operands: str
    target: int | None  # branch target address, if the disassembler printed one


@dataclass(frozen=True)
class KernelReport:
    """Resources and matrix instructions of one kernel in one code object (see the module docstring)."""

    name: str
    arch: str
    mfma: tuple[tuple[str, int], ...]   # (mnemonic, count in the kernel), sorted by mnemonic
    mfma_total: int
    mfma_in_main_loop: int
    main_loop: tuple[int, int] | None   # (first, last) instruction address of the main loop
    vgprs: int                          # arch VGPRs (v0..vN) the code names
    agprs: int
    vgpr_file: int                      # metadata .vgpr_count: VGPR file entries one wave takes
    sgprs: int
    lds_bytes: int
    scratch_bytes: int
    vgpr_spills: int
    sgpr_spills: int
    wavefront_size: int
    workgroup_size: int                 # .max_flat_workgroup_size (the launch bound)
    waves_per_simd: int
    occupancy_limiter: str              # vgpr | agpr | sgpr | lds | max_waves

    def __post_init__(self) -> None:
        if self.mfma_in_main_loop > self.mfma_total or min(self.vgprs, self.agprs, self.sgprs) < 0:
            raise ValueError(f"{self.name}: inconsistent report")

    def to_json(self) -> dict:
        d = asdict(self)
        d["mfma"] = {m: n for m, n in self.mfma}
        d["main_loop"] = list(self.main_loop) if self.main_loop else None
        return d

    def to_json_text(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)


# ------------------------------------------------------------------------------------ disassembly
def disassemble(objdump: Path, path: Path) -> dict[str, list[Insn]]:
    """Instructions of every function symbol of ``path``, by symbol name."""
    proc = subprocess.run([str(objdump), "-d", "--no-show-raw-insn", str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"llvm-objdump -d failed on {path}", log=proc.stderr)
    funcs: dict[str, list[Insn]] = {}
    starts: dict[str, int] = {}
    cur: list[Insn] | None = None
    for line in proc.stdout.splitlines():
        m = _FUNC_RE.match(line)
        if m:
            starts[m.group(2)] = int(m.group(1), 16)
            cur = funcs.setdefault(m.group(2), [])
            continue
        m = _INSN_RE.match(line)
        if m and cur is not None:
            target = None
            if m.group(4) is not None and m.group(4) in starts:
                target = starts[m.group(4)] + int(m.group(5) or "0", 16)
            cur.append(Insn(int(m.group(3), 16), m.group(1), m.group(2).strip(), target))
    return funcs


def main_loop(insns: list[Insn], prefixes: tuple[str, ...]) -> tuple[tuple[int, int] | None, int]:
    """The loop (first, last address) holding the most MFMAs (ties: shortest) and that count."""
    best: tuple[int, int, int] | None = None  # (mfma count, -length, first) ordering key
    span: tuple[int, int] | None = None
    for br in insns:
        is_branch = br.mnemonic.startswith("s_cbranch_") or br.mnemonic == "s_branch"
        if not is_branch or br.target is None or br.target >= br.addr or br.target < insns[0].addr:
            continue
        n = sum(1 for i in insns if br.target <= i.addr <= br.addr and i.mnemonic.startswith(prefixes))
        key = (n, -(br.addr - br.target), -br.target)
        if best is None or key > best:
            best, span = key, (br.target, br.addr)
    return span, (best[0] if best else 0)


def arch_vgprs_named(insns: list[Insn]) -> int:
    """Highest arch VGPR index named by any operand, plus one (0 when none)."""
    top = -1
    for i in insns:
        for m in _VREG_RE.finditer(i.operands):
            top = max(top, int(m.group(2) or m.group(3)))
    return top + 1


# ------------------------------------------------------------------------------------ occupancy
def _roundup(x: int, g: int) -> int:
    return -(-x // g) * g


def occupancy(target: Target, vgprs: int, agprs: int, vgpr_file: int, sgprs: int, lds_bytes: int,
              workgroup_size: int) -> tuple[int, str]:
    """Waves per SIMD and the binding limit (see the module docstring)."""
    g = max(1, target.vgpr_granule)
    limits: dict[str, int] = {"max_waves": target.max_waves_per_simd}
    if target.unified_vgpr_file:
        used = _roundup(vgprs, 4) + agprs if agprs else vgprs
        used = max(used, vgpr_file)
        limits["vgpr"] = target.vgprs_per_simd_lane // max(g, _roundup(used, g))
    else:
        limits["vgpr"] = target.vgprs_per_simd_lane // max(g, _roundup(max(vgprs, vgpr_file if not agprs else 0), g))
        if agprs:
            limits["agpr"] = (target.agprs // _roundup(agprs, g)) if target.agprs else 0
    if sgprs > target.sgprs:
        limits["sgpr"] = 0
    else:
        if target.sgprs_per_simd and sgprs:
            limits["sgpr"] = target.sgprs_per_simd // sgprs
    if lds_bytes > target.lds_bytes:
        limits["lds"] = 0
    elif lds_bytes > 0:
        granule = max(1, target.lds_granule_bytes)
        groups = target.lds_bytes_per_cu // (-(-lds_bytes // granule) * granule)
        waves_per_group = -(-max(1, workgroup_size) // target.wave_size)
        limits["lds"] = -(-(groups * waves_per_group) // target.simds_per_cu)
    order = ["max_waves", "vgpr", "agpr", "sgpr", "lds"]  # ties: the hardware cap first
    limiter = min(limits, key=lambda k: (limits[k], order.index(k)))
    return limits[limiter], limiter


# ------------------------------------------------------------------------------------ reports
def _int(meta: dict, key: str, default: int = 0) -> int:
    v = meta.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool):
        raise BuildError(f"kernel metadata {key} is not an integer: {v!r}")
    return v


def analyze_code_object(path: Path, target: Target, tc: Toolchain) -> list[KernelReport]:
    """One report per kernel of the code object at ``path`` (built for ``target``), in metadata order."""
    docs = read_metadata_text(tc.readelf, path)
    if len(docs) != 1:
        raise BuildError(f"{path}: expected one AMDGPU metadata note, found {len(docs)}")
    funcs = disassemble(tc.objdump, path)
    reports = []
    for meta in kernels_of(docs[0]):
        name = str(meta.get(".name"))
        insns = funcs.get(name)
        if not insns:
            raise BuildError(f"{path}: kernel {name} is in the metadata but not in the disassembly")
        counts: dict[str, int] = {}
        for i in insns:
            if i.mnemonic.startswith(target.matrix_mnemonics):
                counts[i.mnemonic] = counts.get(i.mnemonic, 0) + 1
        span, in_loop = main_loop(insns, target.matrix_mnemonics)
        vgprs, agprs = arch_vgprs_named(insns), _int(meta, ".agpr_count")
        vgpr_file, sgprs = _int(meta, ".vgpr_count"), _int(meta, ".sgpr_count")
        lds, wg = _int(meta, ".group_segment_fixed_size"), _int(meta, ".max_flat_workgroup_size", 1024)
        waves, limiter = occupancy(target, vgprs, agprs, vgpr_file, sgprs, lds, wg)
        reports.append(KernelReport(
            name=name, arch=target.name, mfma=tuple(sorted(counts.items())), mfma_total=sum(counts.values()),
            mfma_in_main_loop=in_loop, main_loop=span, vgprs=vgprs, agprs=agprs, vgpr_file=vgpr_file,
            sgprs=sgprs, lds_bytes=lds, scratch_bytes=_int(meta, ".private_segment_fixed_size"),
            vgpr_spills=_int(meta, ".vgpr_spill_count"), sgpr_spills=_int(meta, ".sgpr_spill_count"),
            wavefront_size=_int(meta, ".wavefront_size", target.wave_size), workgroup_size=wg,
            waves_per_simd=waves, occupancy_limiter=limiter))
    return reports


# ------------------------------------------------------------------------------------ ckgen report
_COLUMNS = ("kernel", "arch", "mfma (main loop / total)", "VGPR", "AGPR", "SGPR", "LDS B", "scratch B",
            "spills v/s", "waves/SIMD")


def format_table(reports: list[KernelReport]) -> str:
    """The human-readable ``ckgen report`` table, one row per (kernel, arch)."""
    rows = [_COLUMNS]
    for r in reports:
        mfma = ", ".join(f"{m} x{n}" for m, n in r.mfma) or "none"
        rows.append((r.name, r.arch, f"{mfma} ({r.mfma_in_main_loop}/{r.mfma_total})", str(r.vgprs), str(r.agprs),
                     str(r.sgprs), str(r.lds_bytes), str(r.scratch_bytes), f"{r.vgpr_spills}/{r.sgpr_spills}",
                     f"{r.waves_per_simd} ({r.occupancy_limiter})"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"
