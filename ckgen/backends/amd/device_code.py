"""Device code for AMD GPUs: one code object per arch from separately compiled, cached kernels.

Pipeline (each step cached in :mod:`ckgen.toolchain.cache`, keyed by its exact inputs):

1. **Compile** each (kernel, arch) on its own, in parallel (``jobs``)::

       clang++ -x hip --offload-arch=<arch> --offload-device-only --no-gpu-bundle-output
               -nogpuinc -nogpulib -O3 -std=c++17 -fgpu-rdc -mcode-object-version=4
               -Xclang -emit-obj -cuid=<hash of the source> -I<each of resources.DEVICE_INCLUDE_DIRS>
               -c kernel.hip -o kernel.o        (in the entry's directory)

   ``-fgpu-rdc`` keeps the kernel relocatable; the kernel-resource-usage remarks (clang's own register,
   LDS and occupancy figures) go to the entry's ``compile.log`` (:attr:`DeviceResult.logs`); ``-Xclang -emit-obj`` makes the device pass emit a
   machine-code ELF object instead of bitcode, so there is no LTO at link time and an unchanged
   kernel is never recompiled. (Should a clang still emit bitcode, it is lowered to an object by a
   second ``clang --target=amdgcn-amd-amdhsa -mcpu=<arch>`` run.) ``--no-gpu-bundle-output`` gives a
   raw ELF: ckgen does not use offload bundles, so ``clang-offload-bundler --unbundle`` is not needed.
   Reproducible: clang names a ``__hip_cuid_<hash>`` symbol after the input's path unless given ``-cuid``, so
   ckgen passes a hash of the source; with relative paths, the same source gives the same object bytes in any
   directory.
2. **Link** per arch: each object carries its own ``NT_AMDGPU_METADATA`` note, and the loader reads
   only one note per code object. So the objects' ``.note`` sections are removed (llvm-objcopy), their
   metadata are merged into one document (:mod:`ckgen.backends.amd.metadata`), assembled into a note object
   with ``.amdgpu_metadata``, and ``ld.lld -shared`` links everything into one code object whose one
   note lists every kernel. The result is checked: one metadata note, exactly the expected kernels.
3. The host library (:mod:`ckgen.backends.amd.host_library`) embeds one code object per arch.

Code object version 4 is used: ROCm 4.x to 6.x loaders all accept it, and it carries everything
these kernels need (no device libraries, no hostcall).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ckgen.backends.amd.llvm import Toolchain, find_toolchain
from ckgen.backends.amd.metadata import kernels_of, merge_kernel_metadata, read_metadata_text
from ckgen.errors import BuildError
from ckgen.ir.target import Target
from ckgen.progress import Steps
from ckgen.resources import content_hashes, include_flags
from ckgen.toolchain import cache as cache_mod
from ckgen.toolchain.tools import run_tool

CODE_OBJECT_VERSION = 4
DEVICE_FLAGS: tuple[str, ...] = (
    "-x", "hip", "--offload-device-only", "--no-gpu-bundle-output", "-nogpuinc", "-nogpulib",
    "-O3", "-std=c++17", "-fgpu-rdc", f"-mcode-object-version={CODE_OBJECT_VERSION}",
    "-Xclang", "-emit-obj",
    "-Rpass-analysis=kernel-resource-usage",   # clang's resource figures (occupancy ...) land in compile.log
)
SCHEMA = 2  # bump when the layout or the bytes of cache entries below change (2: -cuid from the source)
OBJECT_FILE = "kernel.o"
CODE_OBJECT_FILE = "code_object.hsaco"
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class KernelSource:
    """One kernel: ``name`` is its ``extern "C"`` symbol, ``source`` the HIP text, ``flags`` extra clang
    flags. ``arch`` None: built for every arch of the library; else only for that arch (generated
    sources are per arch: give one KernelSource per (kernel, arch)). ``extra``: the other ``extern "C"`` kernels
    its source defines (e.g. a combine kernel its host entry also launches)."""

    name: str
    source: str
    flags: tuple[str, ...] = ()
    arch: str | None = None
    extra: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise ValueError(f"kernel name {self.name!r} is not a C identifier")
        if not isinstance(self.flags, tuple) or not all(isinstance(f, str) for f in self.flags):
            raise ValueError(f"kernel {self.name}: flags must be a tuple of str")


@dataclass
class BuildCounters:
    """Tool invocations made by this process (tests check that unchanged kernels are not rebuilt)."""

    device_compiles: int = 0
    links: int = 0
    host_compiles: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def bump(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)


COUNTERS = BuildCounters()


# ------------------------------------------------------------------------------------------ compile
def object_key(kernel: KernelSource, target: Target, tc: Toolchain) -> dict:
    return {
        "what": "amdgpu-object", "schema": SCHEMA, "name": kernel.name, "source": kernel.source,
        "flags": [*DEVICE_FLAGS, *kernel.flags], "arch": target.name, "toolchain": tc.key(),
        "include": content_hashes()["include"],
    }


def compile_kernel(kernel: KernelSource, target: Target, tc: Toolchain,
                   cache: cache_mod.Cache) -> tuple[Path, bool]:
    """The relocatable device object of ``kernel`` for ``target``; and whether it was compiled now."""
    built = []

    def build(out: Path) -> None:
        (out / "kernel.hip").write_text(kernel.source)
        obj = out / OBJECT_FILE
        cuid = hashlib.sha256(f"{kernel.name}\0{target.name}\0{kernel.source}".encode()).hexdigest()[:16]
        cmd = [str(tc.clang), *DEVICE_FLAGS, f"-cuid={cuid}", f"--offload-arch={target.name}", *include_flags(),
               *kernel.flags, "-c", "kernel.hip", "-o", OBJECT_FILE]
        COUNTERS.bump("device_compiles")
        what = f"compiling kernel '{kernel.name}' for {target.name}"
        log = run_tool(cmd, what, cwd=out, warn=True)
        head = obj.read_bytes()[:4]
        if head == b"BC\xc0\xde":  # this clang ignored -emit-obj: lower the bitcode ourselves
            obj.replace(out / "kernel.bc")
            log += run_tool([str(tc.clang), "--target=amdgcn-amd-amdhsa", f"-mcpu={target.name}",
                             f"-mcode-object-version={CODE_OBJECT_VERSION}", "-O3", "-c", "kernel.bc",
                             "-o", OBJECT_FILE], f"lowering kernel '{kernel.name}' for {target.name}", cwd=out)
            (out / "kernel.bc").unlink()
        if obj.read_bytes()[:4] != b"\x7fELF":
            raise BuildError(f"kernel '{kernel.name}' for {target.name}: the compiler wrote no ELF object")
        (out / "compile.log").write_text(log)
        built.append(True)

    entry = cache.get_or_build(object_key(kernel, target, tc), build)
    return entry / OBJECT_FILE, bool(built)


# ------------------------------------------------------------------------------------------ link
def link_code_object(names: Sequence[str], objects: Sequence[Path], target: Target, tc: Toolchain,
                     cache: cache_mod.Cache, extra: Sequence[str] = ()) -> Path:
    """One code object for ``target`` holding the kernels ``names`` (compiled into ``objects``) and the ``extra``
    kernels their sources also define."""
    parts = {
        "what": "amdgpu-code-object", "schema": SCHEMA, "arch": target.name, "toolchain": tc.key(),
        "objects": [[n, cache_mod.file_sha256(o)] for n, o in zip(names, objects, strict=True)],
    }

    def build(out: Path) -> None:
        work = out / "work"
        work.mkdir()
        metas: list[str] = []
        stripped: list[str] = []
        for i, (name, obj) in enumerate(zip(names, objects, strict=True)):
            docs = read_metadata_text(tc.readelf, obj)
            if len(docs) != 1:
                raise BuildError(f"kernel '{name}' for {target.name}: expected one metadata note, "
                                 f"found {len(docs)}")
            metas.append(docs[0])
            dst = work / f"k{i}.o"
            run_tool([str(tc.objcopy), "--remove-section=.note", str(obj), str(dst)],
                     f"stripping the metadata note of '{name}'")
            stripped.append(str(dst))
        merged = merge_kernel_metadata(metas)
        note_src = work / "metadata.s"
        note_src.write_text(f'.amdgcn_target "amdgcn-amd-amdhsa--{target.name}"\n'
                            f".amdgpu_metadata\n{merged}.end_amdgpu_metadata\n")
        note_obj = work / "metadata.o"
        run_tool([str(tc.clang), "-x", "assembler", "--target=amdgcn-amd-amdhsa", f"-mcpu={target.name}",
                  f"-mcode-object-version={CODE_OBJECT_VERSION}", "-c", str(note_src), "-o", str(note_obj)],
                 f"assembling the merged metadata for {target.name}")
        co = out / CODE_OBJECT_FILE
        COUNTERS.bump("links")
        run_tool([str(tc.lld), "-shared", "--no-undefined", *stripped, str(note_obj), "-o", str(co)],
                 f"linking the {target.name} code object")
        shutil.rmtree(work)
        check_code_object(co, [*names, *extra], tc, target.name)

    return cache.get_or_build(parts, build) / CODE_OBJECT_FILE


def check_code_object(co: Path, names: Sequence[str], tc: Toolchain, arch: str) -> None:
    """BuildError unless ``co`` is a linked AMDGPU ELF with one metadata note listing exactly ``names``."""
    data = co.read_bytes()
    # e_ident: ELF, 64-bit, little endian, OS/ABI 64 (AMDGPU HSA); e_type 3 (ET_DYN); e_machine 224.
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[7] != 64:
        raise BuildError(f"{arch}: {co.name} is not an AMDGPU HSA ELF")
    if int.from_bytes(data[16:18], "little") != 3 or int.from_bytes(data[18:20], "little") != 224:
        raise BuildError(f"{arch}: {co.name} is not a linked AMDGPU shared object")
    docs = read_metadata_text(tc.readelf, co)
    if len(docs) != 1:
        raise BuildError(f"{arch}: code object has {len(docs)} metadata notes, the loader needs one")
    listed = sorted(str(k.get(".name")) for k in kernels_of(docs[0]))
    if listed != sorted(names):
        raise BuildError(f"{arch}: code object lists kernels {listed}, expected {sorted(names)}")


# ------------------------------------------------------------------------------------------ driver
@dataclass(frozen=True)
class DeviceResult:
    """Per-arch code objects (cache paths, read-only) and what was compiled in this call."""

    code_objects: dict[str, Path]
    toolchains: dict[str, Toolchain]
    compiled: tuple[tuple[str, str], ...]   # (kernel, arch) compiled now
    reused: tuple[tuple[str, str], ...]     # (kernel, arch) taken from the cache
    logs: dict[tuple[str, str], Path] = field(default_factory=dict)  # (kernel, arch) -> its compile.log


def build_device_code(kernels: Sequence[KernelSource], targets: Sequence[Target], jobs: int,
                      cache: cache_mod.Cache) -> DeviceResult:
    """Compile every (kernel, target) in parallel (cached) and link one code object per target."""
    if not kernels:
        raise BuildError("no kernels to build")
    arch_names = {t.name for t in targets}
    for k in kernels:
        if k.arch is not None and k.arch not in arch_names:
            raise BuildError(f"kernel '{k.name}' is for {k.arch}, which is not among the library's arches "
                             f"({', '.join(sorted(arch_names))})")
    for t in targets:
        if t.vendor != "amd":
            raise BuildError(f"{t.name} is not an AMD target", hint="AMD targets: gfx908, gfx90a, gfx942, gfx950")
    tasks = [(k, t) for t in targets for k in kernels if k.arch in (None, t.name)]
    names_of: dict[str, list[str]] = {t.name: [k.name for k, tt in tasks if tt is t] for t in targets}
    for arch, names in names_of.items():
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise BuildError(f"{arch}: kernel name(s) given twice: {', '.join(dupes)}")
        if not names:
            raise BuildError(f"{arch}: no kernel is built for this arch")
    tcs = {t.name: find_toolchain(t) for t in targets}
    steps = Steps(len(tasks))

    def one(kt: tuple[KernelSource, Target]) -> tuple[Path, bool]:
        t0 = time.perf_counter()
        obj, compiled = compile_kernel(kt[0], kt[1], tcs[kt[1].name], cache)
        steps.finish(kt[0].name, kt[1].name, not compiled, time.perf_counter() - t0)
        return obj, compiled

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(one, tasks))
        objs = {(k.name, t.name): r[0] for (k, t), r in zip(tasks, results, strict=True)}
        cos = list(pool.map(lambda t: link_code_object(
            names_of[t.name], [objs[(n, t.name)] for n in names_of[t.name]], t, tcs[t.name], cache,
            [x for k, tt in tasks if tt is t for x in k.extra]), targets))
    compiled = tuple((k.name, t.name) for (k, t), r in zip(tasks, results, strict=True) if r[1])
    reused = tuple((k.name, t.name) for (k, t), r in zip(tasks, results, strict=True) if not r[1])
    logs = {(k.name, t.name): r[0].parent / "compile.log" for (k, t), r in zip(tasks, results, strict=True)}
    return DeviceResult({t.name: co for t, co in zip(targets, cos, strict=True)}, tcs, compiled, reused, logs)
