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

Occupancy (waves per SIMD) follows the hardware's allocation rules (:mod:`ckgen.backends.amd.occupancy`:
VGPR/AGPR files and granules, SGPRs with VCC/FLAT_SCRATCH/XNACK_MASK and their granule, LDS per CU and
its granule, barrier-limited workgroups per CU, waves per SIMD); ``occupancy_limiter`` names the binding
limit. ``sgpr_extra`` is the metadata's SGPR count minus the SGPRs the code names (the special SGPRs).
``clang_occupancy`` is clang's own figure (``-Rpass-analysis=kernel-resource-usage``) when the compile
log of the kernel is known (the library build attaches it), else None.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from ckgen.backends.amd.llvm import Toolchain
from ckgen.backends.amd.metadata import kernels_of, read_metadata_text
from ckgen.backends.amd.occupancy import occupancy, parse_resource_remarks
from ckgen.errors import BuildError
from ckgen.ir.target import Target

_FUNC_RE = re.compile(r"^([0-9a-fA-F]+) <([^>]+)>:\s*$")
_INSN_RE = re.compile(r"^\s+([a-z_][a-z0-9_.]*)\b(.*?)\s*//\s*([0-9A-Fa-f]+):[^<]*(?:<([^>+]+)(?:\+0x([0-9a-fA-F]+))?>)?\s*$")
_VREG_RE = re.compile(r"(?<![\w.])v(?:\[(\d+):(\d+)\]|(\d+)\b)")
_SREG_RE = re.compile(r"(?<![\w.])s(?:\[(\d+):(\d+)\]|(\d+)\b)")


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
    sgpr_extra: int = 0                 # .sgpr_count - SGPRs the code names: VCC, FLAT_SCRATCH, XNACK_MASK
    clang_occupancy: int | None = None  # clang's "Occupancy [waves/SIMD]" remark, when known

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


def _named(insns: list[Insn], regex: re.Pattern) -> int:
    top = -1
    for i in insns:
        for m in regex.finditer(i.operands):
            top = max(top, int(m.group(2) or m.group(3)))
    return top + 1


def arch_vgprs_named(insns: list[Insn]) -> int:
    """Highest arch VGPR index named by any operand, plus one (0 when none)."""
    return _named(insns, _VREG_RE)


def sgprs_named(insns: list[Insn]) -> int:
    """Highest SGPR index named by any operand (s0.., not vcc/exec/flat_scratch), plus one."""
    return _named(insns, _SREG_RE)


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
            waves_per_simd=waves, occupancy_limiter=limiter, sgpr_extra=max(0, sgprs - sgprs_named(insns))))
    return reports


def with_clang_occupancy(report: KernelReport, log: Path | None) -> KernelReport:
    """``report`` with ``clang_occupancy`` from the kernel's compile log (unchanged when there is none)."""
    if log is None or not log.is_file():
        return report
    occ = parse_resource_remarks(log.read_text(errors="replace")).get(report.name, {}).get("occupancy")
    return report if occ is None else dataclasses.replace(report, clang_occupancy=occ)


# ------------------------------------------------------------------------------------ ckgen report
_COLUMNS = ("kernel", "arch", "mfma (main loop / total)", "VGPR", "AGPR", "SGPR", "LDS B", "scratch B",
            "spills v/s", "waves/SIMD")


def _waves_cell(r: KernelReport) -> str:
    cell = f"{r.waves_per_simd} ({r.occupancy_limiter})"
    if r.clang_occupancy is not None and r.clang_occupancy != r.waves_per_simd:
        cell += f" [clang {r.clang_occupancy}]"
    return cell


def format_table(reports: list[KernelReport]) -> str:
    """The human-readable ``ckgen report`` table, one row per (kernel, arch)."""
    rows = [_COLUMNS]
    for r in reports:
        mfma = ", ".join(f"{m} x{n}" for m, n in r.mfma) or "none"
        rows.append((r.name, r.arch, f"{mfma} ({r.mfma_in_main_loop}/{r.mfma_total})", str(r.vgprs), str(r.agprs),
                     f"{r.sgprs}" + (f" ({r.sgpr_extra} sp)" if r.sgpr_extra else ""), str(r.lds_bytes), str(r.scratch_bytes), f"{r.vgpr_spills}/{r.sgpr_spills}",
                     _waves_cell(r)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"
