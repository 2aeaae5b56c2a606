"""Shared helpers of the rowops device tests: the hand-written cases (tests/ops/rowops/cases/*.hip, one Cfg +
kernel entry each), their builds (AMD code objects, the emulator library, nvcc), and the float64 reference.

Builds are done once per pytest session (conftest.py fixtures) and cover every case in as few compiler runs as
possible: one translation unit per AMD arch (all cases), one emulator library per half of the cases (two
compiler processes for two cores), one nvcc run.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ckgen.resources import include_flags

HERE = Path(__file__).resolve().parent
CASES_DIR = HERE / "cases"
CASE_NAMES: tuple[str, ...] = tuple(sorted(p.stem for p in CASES_DIR.glob("*.hip")))
#: AMD arches of rung 1 and the clang major that builds each
AMD_ARCHES: dict[str, int] = {"gfx942": 19, "gfx90a": 19, "gfx950": 22}
#: the flags ckgen/toolchain/amdgpu.py compiles device code with
AMD_FLAGS = ("-x", "hip", "--offload-device-only", "--no-gpu-bundle-output", "-nogpuinc", "-nogpulib", "-O3",
             "-std=c++17", "-fgpu-rdc", "-mcode-object-version=4", "-Xclang", "-emit-obj")
#: ckgen/targets/nvidia.py's SASS gencode for sm_90 and ckgen/toolchain/nvidia.py's flags (compile only)
NVCC_FLAGS = ("-std=c++17", "-O3", "-x", "cu", "-Xptxas", "-v", "--expt-relaxed-constexpr", "--prec-div=false",
              "-gencode=arch=compute_90a,code=sm_90a")

OPS = ("softmax", "logsoftmax", "layernorm", "rmsnorm")
DTYPES = ("f32", "f16", "bf16", "i8")          # info codes 0..3
NP_STORAGE = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "i8": np.int8}
#: relative norm error allowed for y per output dtype (its rounding dominates; f32: f32 arithmetic)
TOL = {"f32": 2e-5, "f16": 2e-3, "bf16": 1e-2}


def tool(name: str, major: int) -> str | None:
    return shutil.which(f"{name}-{major}")


def case_path(name: str) -> Path:
    return CASES_DIR / f"{name}.hip"


def includes() -> list[str]:
    return [*include_flags(), f"-I{HERE}"]


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)


# ------------------------------------------------------------------------------------------ builds
def all_cases_source(names=CASE_NAMES, emu: bool = False) -> str:
    """One translation unit holding the cases (with emulator launchers when emu)."""
    lines = ['#include "emu_launch.h"'] if emu else []
    for n in names:
        lines.append(f'#include "{case_path(n)}"')
        if emu:
            lines.append(f"ROWOPS_EMU_CASE({n})")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class AmdBuild:
    ok: bool
    log: str
    disasm: str = ""
    notes: str = ""


def build_amd(arch: str, out: Path) -> AmdBuild:
    major = AMD_ARCHES[arch]
    clang, objdump, readelf = tool("clang++", major), tool("llvm-objdump", major), tool("llvm-readelf", major)
    if not (clang and objdump and readelf):
        return AmdBuild(False, f"clang++-{major} / llvm-objdump-{major} / llvm-readelf-{major} not installed")
    src = out / f"rowops_{arch}.hip"
    src.write_text(all_cases_source())
    obj = out / f"rowops_{arch}.o"
    r = run([clang, *AMD_FLAGS, f"--offload-arch={arch}", *includes(), "-c", str(src), "-o", str(obj)])
    if r.returncode != 0:
        return AmdBuild(False, r.stderr)
    dis = run([objdump, "-d", str(obj)]).stdout
    notes = run([readelf, "--notes", str(obj)]).stdout
    return AmdBuild(True, r.stderr, dis, notes)


def kernel_disasm(disasm: str, name: str) -> str:
    """The disassembly of one kernel symbol."""
    m = re.search(rf"^[0-9a-f]+ <{re.escape(name)}>:\n(.*?)(?=^[0-9a-f]+ <|\Z)", disasm, re.M | re.S)
    return m.group(1) if m else ""


def kernel_metadata(notes: str) -> dict[str, dict[str, str]]:
    """kernel name -> its scalar metadata fields (.vgpr_count, .group_segment_fixed_size, ...)."""
    out: dict[str, dict[str, str]] = {}
    for block in re.split(r"^\s+- \.", notes, flags=re.M)[1:]:
        fields = dict(re.findall(r"^\s*\.?(\w+):\s+(\S+)\s*$", "." + block, re.M))
        if "name" in fields and "vgpr_count" in fields:
            out[fields["name"]] = fields
    return out


#: emulator builds: the AMD tail path (clamped element accesses), the CUDA one (predicated), and the CUDA model
#: (warps of 32, predicated tails, sm_90's 227 KiB of shared memory, cp.async: ckgen/emu/nv.h), which runs the
#: staged (kStages > 0) cp.async ring of the NVIDIA build
TAILS: dict[str, tuple[str, ...]] = {
    "clamped": (),
    "predicated": ("-DCKGEN_ROWOPS_PREDICATED_TAIL=1",),
    "warp32": ("-DCKGEN_ROWOPS_PREDICATED_TAIL=1", "-DCKGEN_EMU_WAVE_SIZE=32", "-DCKGEN_EMU_LDS_BYTES=232448"),
}


def build_emu(names: tuple[str, ...], so: Path, tail: str = "clamped") -> Path:
    clang = shutil.which("clang++-19") or shutil.which("clang++")
    src = so.with_suffix(".cpp")
    src.write_text(all_cases_source(names, emu=True))
    r = run([clang, "-x", "c++", "-std=c++17", "-O1", "-Wno-psabi", "-DCKGEN_PLATFORM_EMU", *TAILS[tail], "-shared",
             "-fPIC", "-pthread", *includes(), str(src), "-o", str(so)])
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    return so


def find_nvcc() -> str | None:
    return shutil.which("nvcc") or (p if Path(p := "/usr/local/cuda/bin/nvcc").is_file() else None)


def build_nvcc(out: Path) -> tuple[bool, str]:
    """(ok, ptxas log) of the CUDA build of every case for sm_90a."""
    nvcc = find_nvcc()
    if nvcc is None:
        return False, "nvcc not installed"
    src = out / "rowops_nv.cu"
    src.write_text(all_cases_source())
    r = run([nvcc, *NVCC_FLAGS, *includes(), "-c", str(src), "-o", str(out / "rowops_nv.o")])
    return r.returncode == 0, r.stderr


def ptxas_resources(log: str) -> dict[str, dict[str, int]]:
    """kernel -> registers, spill_stores, spill_loads, stack from `-Xptxas -v`."""
    out: dict[str, dict[str, int]] = {}
    cur = None
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '(\w+)'", line):
            cur = out.setdefault(m.group(1), {})
        elif cur is not None and (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)):
            cur.update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        elif cur is not None and (m := re.search(r"Used (\d+) registers", line)):
            cur["registers"] = int(m.group(1))
    return out


# ------------------------------------------------------------------------------------------ emulator cases
@dataclass(frozen=True)
class Info:
    name: str
    op: str
    weight: bool
    bias: bool
    residual: bool
    quant: bool
    looped: bool
    tile_cols: int
    threads: int
    rows_per_block: int
    row_threads: int
    lds_bytes: int
    vec: int
    tin: str
    tres: str
    tw: str
    tout: str
    stages: int          # the Cfg's kStages (0 when absent)
    stages_run: int      # the stages this build runs (rowops::stages<C>(): 0 without cp.async)


class EmuCases:
    """The loaded emulator libraries and each case's entry points."""

    def __init__(self, libs: dict[str, ctypes.CDLL]):
        self.libs = libs
        self.info: dict[str, Info] = {}
        for name, lib in libs.items():
            v = (ctypes.c_longlong * 18)()
            getattr(lib, f"info_{name}")(v)
            self.info[name] = Info(name, OPS[v[0]], bool(v[1]), bool(v[2]), bool(v[3]), bool(v[4]), bool(v[5]),
                                   *[int(v[i]) for i in range(6, 12)], *[DTYPES[v[i]] for i in range(12, 16)],
                                   int(v[16]), int(v[17]))
            fn = getattr(lib, f"run_{name}")
            fn.argtypes = [ctypes.c_void_p] * 6 + [ctypes.c_void_p, ctypes.c_int, ctypes.c_int] + \
                [ctypes.c_longlong] * 4 + [ctypes.c_float, ctypes.c_float, ctypes.c_longlong]
            fn.restype = ctypes.c_int
            lib.ckgen_emu_register_buffer.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
            lib.ckgen_emu_last_fault.restype = ctypes.c_char_p

    def lib(self, name: str) -> ctypes.CDLL:
        return self.libs[name]


# ------------------------------------------------------------------------------------------ numerics
def bf16_to_f64(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def to_f64(a: np.ndarray, dt: str) -> np.ndarray:
    return bf16_to_f64(a) if dt == "bf16" else a.astype(np.float64)


def from_f32(x: np.ndarray, dt: str) -> np.ndarray:
    """Round f32 values to dt's storage as the device does (round to nearest even)."""
    x = np.asarray(x, dtype=np.float32)
    return f32_to_bf16(x) if dt == "bf16" else x.astype(NP_STORAGE[dt])


def random_values(rng, dt: str, shape) -> np.ndarray:
    """Values in +-[0.25, 2) (never zero), stored as dt."""
    x = rng.uniform(0.25, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return from_f32(x.astype(np.float32), dt)


def reference(info: Info, v: np.ndarray, w, b, scale: float, eps: float) -> np.ndarray:
    """float64 y of the op on v (rows x cols, float64), before the cast."""
    if info.op in ("softmax", "logsoftmax"):
        t = scale * v
        m = t.max(axis=1, keepdims=True)
        e = np.exp(t - m)
        d = e.sum(axis=1, keepdims=True)
        return e / d if info.op == "softmax" else t - m - np.log(d)
    if info.op == "layernorm":
        mean = v.mean(axis=1, keepdims=True)
        y = (v - mean) / np.sqrt(((v - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    else:
        y = v / np.sqrt((v * v).mean(axis=1, keepdims=True) + eps)
    if w is not None:
        y = y * w[None, :]
    if b is not None:
        y = y + b[None, :]
    return y
