"""NVIDIA builds: generated HIP source -> nvcc -> one shared library (fat binary), and its report.

Contract:

- :func:`find_nvcc` -> :class:`Nvcc` (path, version line): ``CKGEN_NVCC``, else ``nvcc`` on PATH, else
  ``/usr/local/cuda/bin/nvcc``; :class:`~ckgen.errors.ToolchainError` when none runs.
- :func:`cuda_sources(stem, plans)` -> {file name: text}: one ``<kernel>.cu`` per kernel (the same
  device text codegen renders for every platform) and ``launchers.cu``, which includes them, so kernels
  and ``extern "C"`` entry points share one translation unit (the cuda platform's CKGEN_LAUNCH reads
  each kernel's ``Cfg::kLdsBytes``).
- :func:`build_cuda_library(stem, plans, out_dir, host_sources=None)` -> :class:`CudaLibrary`: compiles for
  every arch of ``plans`` (``-gencode`` SASS + PTX per arch) into ``<stem>.o`` and links ``lib<stem>.so``,
  cached in the build cache (key: sources, nvcc version, flags, arches, header hashes), and copies the library
  into ``out_dir`` atomically when given. The cache entry also holds ``ptxas.log`` (``-Xptxas -v``),
  ``<stem>_<arch>.ptx`` (the PTX that build compiled, kept from its intermediate files: one nvcc pass) and,
  when ``cuobjdump`` is found, ``<stem>.sass``. ``host_sources`` (name -> C++ text,
  host code only: e.g. generated dispatchers) are compiled on their own and linked with that object into the
  published library (a second cache entry), so that changing them never recompiles the kernels.
- :func:`analyze(lib, plans)` -> one :class:`NvKernelReport` per (kernel entry, arch), the ``<kernel>_tma``
  entry of a plan with the Hopper body included: the tensor-core
  instructions in the PTX (``mma.sync`` / ``wgmma``) and in the SASS (``HMMA`` / ``IMMA`` / ``HGMMA``,
  with how many sit in the main loop: the backward branch holding the most of them), registers,
  spills, stack, shared memory (static + the dynamic ``kLdsBytes``), and occupancy (blocks and warps
  per SM, limited by registers, shared memory, threads).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ckgen.backends.base import BuiltLibrary
from ckgen.codegen import render_kernel, render_launchers
from ckgen.codegen.render import unique_plans
from ckgen.config import Settings, settings
from ckgen.errors import BuildError, ToolchainError
from ckgen.files import atomic_copy
from ckgen.ir.target import Target
from ckgen.progress import Steps, current
from ckgen.resources import content_hashes, include_flags
from ckgen.targets.nvidia import nvcc_arch_flags
from ckgen.toolchain.cache import file_sha256, get_or_build
from ckgen.toolchain.tools import run_tool, tool_version

#: flags of every NVIDIA library build (besides -gencode per arch). --prec-div=false: float division
#: (the epilogue's tanh / sigmoid) is div.full.f32 (<= 2 ulp) instead of IEEE division, whose slow-path
#: call per element serialized the epilogue (measured: a matrix product with a bias + GELU epilogue 23% slower than without).
NVCC_FLAGS: tuple[str, ...] = ("-std=c++17", "-O3", "-Xcompiler", "-fPIC,-fvisibility=hidden",
                               "-Xptxas", "-v", "--expt-relaxed-constexpr", "--prec-div=false")
#: host-only sources linked into a library (dispatchers): plain C++ through nvcc's host compiler
HOST_FLAGS: tuple[str, ...] = ("-std=c++17", "-O2", "-Xcompiler", "-fPIC,-fvisibility=hidden")
#: tensor-core instruction prefixes in SASS
SASS_TENSOR = ("HMMA", "IMMA", "HGMMA", "IGMMA", "QGMMA")


@dataclass(frozen=True)
class Nvcc:
    path: str
    version: str        # the "Cuda compilation tools, release ..." line

    @property
    def cuobjdump(self) -> str | None:
        sib = Path(self.path).resolve().parent / "cuobjdump"
        if sib.is_file():
            return str(sib)
        return shutil.which("cuobjdump")


def _probe(path: str) -> Nvcc | None:
    text = tool_version(path)
    if text is None:
        return None
    lines = [ln for ln in text.splitlines() if "release" in ln] or text.splitlines()[-1:]
    return Nvcc(path, lines[0].strip() if lines else "unknown")


def find_nvcc(st: Settings | None = None) -> Nvcc:
    st = st or settings()
    if st.nvcc:
        found = shutil.which(st.nvcc) or (st.nvcc if Path(st.nvcc).is_file() else None)
        probe = _probe(found) if found else None
        if probe is None:
            raise ToolchainError(f"CKGEN_NVCC = {st.nvcc}: not found or does not run", hint="point CKGEN_NVCC at nvcc")
        return probe
    for cand in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and Path(cand).is_file():
            probe = _probe(cand)
            if probe is not None:
                return probe
    raise ToolchainError("no nvcc found for the NVIDIA targets (tried nvcc on PATH, /usr/local/cuda/bin/nvcc)",
                         hint="install the CUDA toolkit or set CKGEN_NVCC")


def cuda_sources(stem: str, plans) -> dict[str, str]:

    files: dict[str, str] = {}
    kernels = unique_plans(list(plans))
    names = {p.name for p in kernels}
    for p in kernels:  # one device text per kernel name, the same for every NVIDIA arch
        for e in p.entries[1:]:
            if e.name in names:
                raise BuildError(f"kernel '{e.name}' has the name of kernel '{p.name}''s {e.name[len(p.name) + 1:]} "
                                 f"entry in library '{stem}'; rename one of them")
        files[f"{p.name}.cu"] = render_kernel(p)
    kernel_files = list(files)
    files["launchers.cu"] = render_launchers(stem, list(plans), "cuda", kernel_files=kernel_files)
    return files


def _arches(plans) -> list[Target]:
    seen: dict[str, Target] = {}
    for p in plans:
        if p.target.platform != "cuda":
            raise BuildError(f"kernel '{p.name}': {p.arch} is not an NVIDIA target")
        seen.setdefault(p.arch, p.target)
    return list(seen.values())


#: nvcc names its host translation unit tmpxft_<process id>_<n>-<k>_<file>.cudafe1.cpp, and that name lands in the
#: library's symbol table (an STT_FILE symbol): the only bytes that differ between two builds of one source
_NVCC_TMP_NAME = re.compile(rb"tmpxft_[0-9a-f]{8}_[0-9a-f]{8}")


def _reproducible(lib: Path) -> None:
    """Make the library's bytes independent of the nvcc process: zero the process ids in nvcc's temporary file
    names (same length, so no offset moves)."""
    data = lib.read_bytes()
    fixed = _NVCC_TMP_NAME.sub(b"tmpxft_00000000_00000000", data)
    if fixed != data:
        lib.write_bytes(fixed)


def _sass(cuobjdump: str, lib: Path) -> str:
    current().command([cuobjdump, "-sass", str(lib)])
    proc = subprocess.run([cuobjdump, "-sass", str(lib)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"cuobjdump -sass {lib.name} failed", log=proc.stderr)
    return proc.stdout


def check_host_exits(lib: Path) -> None:
    """BuildError when the library's host code imports ``exit``: nvcc compiles a call from host code to a
    ``__device__``-only function (in a template: no diagnostic) into ``exit(1)``, so such a library would end the
    calling process silently at its first launch. Nothing ckgen generates calls exit. Skipped without ``nm``."""
    nm = shutil.which("nm") or shutil.which("llvm-nm")
    if nm is None:
        return
    proc = subprocess.run([nm, "-D", "--undefined-only", str(lib)], capture_output=True, text=True, check=False)
    if proc.returncode == 0 and re.search(r"\bexit\b", proc.stdout):
        raise BuildError(f"{lib.name}: host code calls a __device__ function (nvcc turns such a call into exit(1))",
                         hint="build the value on the host without that function (or make it __host__ __device__)")


@dataclass(frozen=True)
class CudaLibrary:
    stem: str
    library: Path            # the published library (out_dir, or the cache entry)
    entry: Path              # cache entry directory (ptxas.log, *.ptx, *.sass, sources)
    arches: tuple[str, ...]


def build_cuda_library(stem: str, plans, out_dir: Path | None = None, nvcc: Nvcc | None = None,
                       extra_flags: tuple[str, ...] = (), host_sources: dict[str, str] | None = None) -> CudaLibrary:

    nvcc = nvcc or find_nvcc()
    targets = _arches(plans)
    files = cuda_sources(stem, plans)
    gencode = [f for t in targets for f in nvcc_arch_flags(t)]
    flags = [*NVCC_FLAGS, *gencode, *extra_flags]
    lib_name = f"lib{stem}.so"
    key_parts = {"kind": "cuda-library", "stem": stem, "arches": [t.name for t in targets], "sources": files,
                 "nvcc": nvcc.version, "flags": flags, "include": content_hashes()["include"]}

    built: list[bool] = []
    t0 = time.perf_counter()

    def build(d: Path) -> None:  # in d with relative paths: the sources' paths do not reach the library
        for name, text in files.items():
            (d / name).write_text(text)
        inc = [*include_flags(), "-I."]
        (d / "keep").mkdir()  # nvcc's intermediate files: the PTX it compiled is kept from there (below)
        log = run_tool([nvcc.path, *flags, *inc, "-c", "launchers.cu", "-o", f"{stem}.o", "--keep", "--keep-dir",
                        "keep"], f"nvcc build of {lib_name}", cwd=d)
        _reproducible(d / f"{stem}.o")
        run_tool([nvcc.path, "-shared", f"{stem}.o", "-o", lib_name], f"nvcc link of {lib_name}", cwd=d)
        check_host_exits(d / lib_name)
        _reproducible(d / lib_name)
        (d / "ptxas.log").write_text(log)
        warnings = [ln for ln in log.splitlines() if "warning" in ln.lower()]
        if warnings:
            current().warning(f"nvcc build of {lib_name}:\n" + "\n".join(warnings))
        virts = [nvcc_arch_flags(t)[0].split("arch=", 1)[1].split(",", 1)[0] for t in targets]  # compute_90a ...
        for t, virt in zip(targets, virts, strict=True):
            # the PTX the build compiled (its flags, e.g. --prec-div=false): launchers.ptx for one virtual arch,
            # launchers.<virtual arch>.ptx for several
            kept = d / "keep" / ("launchers.ptx" if len(virts) == 1 else f"launchers.{virt}.ptx")
            if not kept.is_file():
                raise BuildError(f"nvcc build of {lib_name}: no PTX kept for {virt} ({kept.name})")
            kept.replace(d / f"{stem}_{t.name}.ptx")
        shutil.rmtree(d / "keep")
        dump = nvcc.cuobjdump
        if dump:
            try:
                (d / f"{stem}.sass").write_text(_sass(dump, d / lib_name))
            except BuildError:
                pass  # the report then says n/a (no SASS)
        built.append(True)

    entry = get_or_build(key_parts, build)
    Steps(1).finish(lib_name, ",".join(t.name for t in targets), not built, time.perf_counter() - t0)
    library = entry / lib_name
    if host_sources:
        library = _link_host_sources(nvcc, entry, stem, host_sources)
    if out_dir is not None:

        atomic_copy(library, Path(out_dir) / lib_name)
        library = Path(out_dir) / lib_name
    return CudaLibrary(stem, library, entry, tuple(t.name for t in targets))


def _link_host_sources(nvcc: Nvcc, entry: Path, stem: str, host_sources: dict[str, str]) -> Path:
    """``lib<stem>.so`` of the kernels' object (from ``entry``) and ``host_sources``, cached on its own."""

    obj = entry / f"{stem}.o"
    lib_name = f"lib{stem}.so"
    parts = {"kind": "cuda-link", "stem": stem, "object": file_sha256(obj), "host_sources": host_sources,
             "nvcc": nvcc.version, "flags": list(HOST_FLAGS), "include": content_hashes()["include"]}

    def link(d: Path) -> None:
        objs = [str(obj)]
        for name, text in host_sources.items():
            (d / name).write_text(text)
            out = d / (Path(name).stem + ".o")
            run_tool([nvcc.path, *HOST_FLAGS, *include_flags(), "-c", str(d / name), "-o", str(out)], f"compiling {name}")
            _reproducible(out)
            objs.append(str(out))
        run_tool([nvcc.path, "-shared", *objs, "-o", str(d / lib_name)], f"nvcc link of {lib_name}")
        _reproducible(d / lib_name)

    return get_or_build(parts, link) / lib_name


# ---------------------------------------------------------------------------------------------- report
@dataclass(frozen=True)
class NvKernelReport:
    name: str
    arch: str
    ptx_tensor: tuple[tuple[str, int], ...]      # (PTX instruction with its shape/types, count)
    sass_tensor: tuple[tuple[str, int], ...]     # (SASS mnemonic, count); empty without cuobjdump
    sass_tensor_in_main_loop: int | None         # None without SASS
    registers: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    static_smem: int
    dynamic_smem: int                            # Cfg::kLdsBytes (passed at launch)
    threads: int
    blocks_per_sm: int
    warps_per_sm: int
    occupancy_limiter: str                       # registers | smem | threads | blocks
    tma_body_of: str | None = None               # set on a ``<kernel>_tma`` entry: that kernel's name
    part_of: str | None = None                   # set on an entry the kernel's host entry also launches
    wgmma_serialized: bool = False               # ptxas C7514: it made the wgmmas wait for each other
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        d = asdict(self)
        d["ptx_tensor"] = [list(x) for x in self.ptx_tensor]
        d["sass_tensor"] = [list(x) for x in self.sass_tensor]
        return d


_PTXAS_ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(sm_\w+)'")
_PTXAS_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")
_PTXAS_SERIALIZED = re.compile(r"wgmma\.mma_async instructions are serialized .*in the function '(\w+)'")


def _target_arch(sm: str) -> str:
    """ptxas / cuobjdump spell the arch-specific build sm_90a; the target is sm_90."""
    return sm[:-1] if sm.endswith("a") else sm


def parse_ptxas(log: str) -> dict[tuple[str, str], dict]:
    """(kernel, arch) -> {registers, spill_stores, spill_loads, stack_bytes, static_smem, wgmma_serialized} from
    -Xptxas -v (wgmma_serialized: ptxas's C7514 note that it serialized the kernel's wgmmas, which it prints
    before the kernel's own lines; wgmma exists on sm_90 only)."""
    out: dict[tuple[str, str], dict] = {}
    cur: tuple[str, str] | None = None
    serialized = set(_PTXAS_SERIALIZED.findall(log))
    for line in log.splitlines():
        m = _PTXAS_ENTRY.search(line)
        if m:
            cur = (m.group(1), _target_arch(m.group(2)))
            out[cur] = {"registers": 0, "spill_stores": 0, "spill_loads": 0, "stack_bytes": 0, "static_smem": 0,
                        "wgmma_serialized": cur[0] in serialized}
            continue
        if cur is None:
            continue
        m = _PTXAS_PROPS.search(line)
        if m:
            out[cur].update(stack_bytes=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
            continue
        m = _PTXAS_USED.search(line)
        if m:
            out[cur].update(registers=int(m.group(1)), static_smem=int(m.group(2) or 0))
    return out


def ptx_tensor_instructions(ptx: str) -> dict[str, dict[str, int]]:
    """kernel -> {tensor instruction (opcode with modifiers): count} per ``.entry`` of a PTX file."""
    out: dict[str, dict[str, int]] = {}
    parts = re.split(r"^\s*\.(?:visible\s+)?\.?entry\s+(\w+)", ptx, flags=re.M)
    for name, body in zip(parts[1::2], parts[2::2], strict=False):
        counts: dict[str, int] = {}
        for m in re.finditer(r"^\s*((?:mma\.sync|wgmma\.mma_async)[\w.]*)", body, flags=re.M):
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
        out[name] = counts
    return out


_SASS_LINE = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Za-z0-9_.]*)(.*?);")


def sass_tensor_instructions(sass: str) -> dict[tuple[str, str], tuple[dict[str, int], int]]:
    """(kernel, arch) -> ({SASS tensor mnemonic: count}, count inside the main loop) from cuobjdump -sass."""
    out: dict[tuple[str, str], tuple[dict[str, int], int]] = {}
    arch = "?"
    blocks = re.split(r"^\s*(code for sm_\d+\w*|Function : \w+)\s*$", sass, flags=re.M)
    for head, body in zip(blocks[1::2], blocks[2::2], strict=False):
        if head.startswith("code for"):
            arch = _target_arch(head.split()[-1])
            continue
        name = head.split(":", 1)[1].strip()
        insns = []
        for line in body.splitlines():
            m = _SASS_LINE.match(line)
            if m:
                insns.append((int(m.group(1), 16), m.group(2), m.group(3)))
        counts: dict[str, int] = {}
        for _, op, _ in insns:
            if op.split(".")[0] in SASS_TENSOR:
                counts[op] = counts.get(op, 0) + 1
        best = 0
        for addr, op, rest in insns:
            bm = re.search(r"0x([0-9a-f]+)", rest) if op.startswith("BRA") else None
            if bm and int(bm.group(1), 16) < addr:
                lo = int(bm.group(1), 16)
                inside = sum(1 for a, o, _ in insns if lo <= a <= addr and o.split(".")[0] in SASS_TENSOR)
                best = max(best, inside)
        out[(name, arch)] = (counts, best)
    return out


def occupancy(target: Target, registers: int, smem: int, threads: int) -> tuple[int, int, str]:
    """(blocks per SM, warps per SM, limiter) from per-thread registers, per-block shared memory, threads."""
    warps = -(-threads // target.wave_size)
    regs_per_warp = -(-max(registers, 1) * target.wave_size // 256) * 256
    reg_file = target.vgprs_per_simd_lane * target.wave_size * target.simds_per_cu
    max_warps = target.max_waves_per_simd * target.simds_per_cu
    limits = {
        "registers": reg_file // (regs_per_warp * warps),
        "smem": target.lds_bytes_per_cu // (smem + 1024) if smem else 32,  # 1 KiB reserved per block
        "threads": max_warps // warps,
        "blocks": 32,
    }
    limiter = min(limits, key=lambda k: (limits[k], ["blocks", "threads", "registers", "smem"].index(k)))
    blocks = limits[limiter]
    return blocks, blocks * warps, limiter


def analyze(lib: CudaLibrary, plans) -> list[NvKernelReport]:
    ptxas = parse_ptxas((lib.entry / "ptxas.log").read_text())
    sass_file = lib.entry / f"{lib.stem}.sass"
    sass = sass_tensor_instructions(sass_file.read_text()) if sass_file.is_file() else {}
    reports = []
    for p in plans:
        ptx_all = ptx_tensor_instructions((lib.entry / f"{lib.stem}_{p.arch}.ptx").read_text())
        # the kernel's entry, and its Hopper body's entry when it has one
        for e in p.entries:
            name, threads, dyn, tma_of, part_of = e.name, e.threads, e.lds_bytes, e.variant_of, e.part_of
            res = ptxas.get((name, p.arch))
            if res is None:
                raise BuildError(f"kernel '{name}': no ptxas resource report for {p.arch}")
            counts, in_loop = sass.get((name, p.arch), ({}, None))
            blocks, warps, limiter = occupancy(p.target, res["registers"], res["static_smem"] + dyn, threads)
            reports.append(NvKernelReport(
                name=name, arch=p.arch, ptx_tensor=tuple(sorted(ptx_all.get(name, {}).items())),
                sass_tensor=tuple(sorted(counts.items())),
                sass_tensor_in_main_loop=in_loop if sass_file.is_file() else None, registers=res["registers"],
                spill_stores=res["spill_stores"], spill_loads=res["spill_loads"], stack_bytes=res["stack_bytes"],
                static_smem=res["static_smem"], dynamic_smem=dyn, threads=threads, blocks_per_sm=blocks,
                warps_per_sm=warps, occupancy_limiter=limiter, tma_body_of=tma_of, part_of=part_of,
                wgmma_serialized=res["wgmma_serialized"]))
    return reports


def resources(reports: list[NvKernelReport]) -> dict[tuple[str, str], dict]:
    """Manifest resources per (kernel, arch); a kernel's Hopper body is nested under ``tma_body``, the entries its
    host entry also launches under ``parts`` (by name)."""
    out: dict[tuple[str, str], dict] = {}
    for r in sorted(reports, key=lambda r: r.tma_body_of is not None or r.part_of is not None):
        d = {k: v for k, v in r.to_json().items() if k not in ("name", "arch", "extra", "tma_body_of", "part_of")}
        if r.tma_body_of is not None:
            out[(r.tma_body_of, r.arch)]["tma_body"] = {"entry": r.name, **d}
        elif r.part_of is not None:
            out[(r.part_of, r.arch)].setdefault("parts", {})[r.name] = d
        else:
            out[(r.name, r.arch)] = d
    return out


_COLUMNS = ("kernel", "arch", "tensor instr (PTX)", "SASS (main loop)", "regs", "spills st/ld", "stack",
            "smem", "blocks/SM (limit)")


def format_table(reports: list[NvKernelReport]) -> str:
    rows = [list(_COLUMNS)]
    for r in reports:
        ptx = ", ".join(f"{k} x{n}" for k, n in r.ptx_tensor) or "none"
        if r.wgmma_serialized:
            ptx += " (serialized by ptxas)"
        if r.sass_tensor_in_main_loop is None:
            sass = "n/a (no cuobjdump)"
        else:
            sass = (", ".join(f"{k} x{n}" for k, n in r.sass_tensor) or "none") + f" ({r.sass_tensor_in_main_loop})"
        rows.append([r.name, r.arch, ptx, sass, str(r.registers), f"{r.spill_stores}/{r.spill_loads}",
                     str(r.stack_bytes), str(r.static_smem + r.dynamic_smem),
                     f"{r.blocks_per_sm} ({r.occupancy_limiter})"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def build_library(stem: str, plans, *, out_dir: Path | None = None, jobs: int = 1,
                  host_sources: dict[str, str] | None = None) -> BuiltLibrary:
    """The one build path's NVIDIA step (:func:`ckgen.backends.build_library`): :func:`build_cuda_library` and the
    report of every (kernel entry, arch) read back from it. ``jobs`` is unused (nvcc builds every arch in one
    process)."""
    lib = build_cuda_library(stem, plans, out_dir, host_sources=host_sources or None)
    reports = analyze(lib, plans)
    return BuiltLibrary(lib.library, resources(reports), {(r.name, r.arch): r for r in reports})
