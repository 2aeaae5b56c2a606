"""Shared pieces of the attention tests: kernels built through the op (DSL -> plan -> generated source) into one
emulator library per group (one compile for many kernels), problems in every layout the ABI binds, and the check
against the float64 reference.

* :func:`emu_group` builds plans of one platform into one emulator library (cached by source and flags) and
  returns a :class:`ckgen.runtime.api.Kernel` per plan: AMD plans as their arch (wave64, that arch's MFMAs),
  NVIDIA plans (sm_90) as warps of 32 with mma.sync / ldmatrix / cp.async emulated (``ckgen/emu/nv.h``): the
  generated kernel and its emu host entry, called through the op's Python binding like any JIT kernel.
* :class:`Scenario` / :func:`make_problem`: lengths per sequence, heads, layout (BSHD, BHSD, rows padded by 8
  or by 3 elements: not 16-byte aligned, the per-element paths), window, scale; outputs poisoned (0xFF).
* :func:`check`: O's relative norm error (per dtype), rows that see no key (O exactly 0, LSE -inf), LSE's absolute
  error, padding and rows outside the sequences still poisoned.
"""

from __future__ import annotations

import math
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ckgen.backends.emu import (
    EmuBackend,
    EmuKernel,
    compile_flags,
    compiler_version,
    host_compiler,
    load_library,
)
from ckgen.backends.emu.compiler import BASE_FLAGS
from ckgen.codegen import render_kernel, render_launchers
from ckgen.ir.arrays import from_bf16, to_bf16
from ckgen.ir.types import DType
from ckgen.ops.attention.reference import attend
from ckgen.resources import content_hashes, include_flags
from ckgen.runtime.api import Kernel
from ckgen.toolchain.cache import get_or_build

#: relative norm error of O per element type (P rounded to T, O rounded to T, f32 accumulation)
TOL = {DType.F16: 4e-3, DType.BF16: 2.5e-2}
LSE_TOL = 2e-3  # absolute, natural log
PAD = {"bshd_pad": 8, "bshd_odd": 3}  # elements of padding after each token's heads
#: NVIDIA bodies on the emulator: warps of 32, sm_90's shared memory (docs/emulation.md)
NV_EMU_DEFINES = ("-DCKGEN_PLATFORM_EMU", "-DCKGEN_EMU_WAVE_SIZE=32", "-DCKGEN_EMU_LDS_BYTES=232448")


class _Shared(EmuBackend):
    """The emu backend over libraries built here (several kernels per library)."""

    def __init__(self, libs: dict[str, object]):
        self.libs = libs

    def build(self, plan) -> EmuKernel:
        return EmuKernel(plan, self.libs[plan.name])


def emu_group(plans: list, tag: str, includes: tuple[Path, ...] = ()) -> dict[str, Kernel]:
    """One emulator library (-O1) for ``plans`` (all AMD of one arch, or all NVIDIA) -> Kernel per name.
    ``includes`` are searched before ckgen's headers (a planted fault: a modified copy of a body)."""
    platforms = {p.target.platform for p in plans}
    arches = {p.arch for p in plans}
    assert len(platforms) == 1 and (platforms == {"cuda"} or len(arches) == 1), (platforms, arches)
    cxx = host_compiler()
    if platforms == {"cuda"}:
        flags = [*BASE_FLAGS, "-O1", *[f"-I{p}" for p in includes], *include_flags(), *NV_EMU_DEFINES]
    else:
        flags = compile_flags(plans[0].target, extra=("-O1",), includes=includes)
        if "gfx950" in arches:  # the host clang must know gfx950's builtins' operand types
            cxx = host_compiler_22() or cxx
    files = {f"{p.name}.hip": render_kernel(p) for p in plans}
    launchers = render_launchers(tag, plans, "emu", kernel_files=list(files))
    key = {"kind": "attention-test-emu", "files": files, "launchers": launchers, "flags": flags,
           "compiler": compiler_version(cxx), "include": content_hashes()["include"],
           "planted": [p.read_text() for inc in includes for p in sorted(inc.glob("*.h"))]}

    def build(d: Path) -> None:
        for name, text in files.items():
            (d / name).write_text(text)
        (d / "launchers.cpp").write_text(launchers)
        cmd = [cxx, "-x", "c++", *flags, str(d / "launchers.cpp"), "-o", str(d / f"lib{tag}.so")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(" ".join(cmd) + "\n" + r.stderr[-6000:])

    lib = load_library(get_or_build(key, build) / f"lib{tag}.so")
    backend = _Shared({p.name: lib for p in plans})
    return {p.name: Kernel(p, backend) for p in plans}


def host_compiler_22() -> str | None:
    import shutil

    return shutil.which("clang++-22")


# ------------------------------------------------------------------------------------------ problems
@dataclass(frozen=True)
class Scenario:
    """One problem. lens_q/k: one length per sequence (dense kernels: one sequence per batch entry, all of the
    same length... or the maximum, see make_problem); layout: bshd, bhsd, bshd_pad, bshd_odd."""

    lens_q: tuple[int, ...]
    lens_k: tuple[int, ...]
    heads: int = 2
    heads_kv: int = 2
    layout: str = "bshd"
    window: tuple[int, int] | None = None  # runtime window (None: the kernel's default)
    scale_mul: float = 1.0                 # scale = scale_mul / sqrt(d)
    seed: int = 0

    @property
    def id(self) -> str:
        w = f"-w{self.window[0]}_{self.window[1]}" if self.window else ""
        return (f"q{'-'.join(map(str, self.lens_q))}_k{'-'.join(map(str, self.lens_k))}_h{self.heads}x{self.heads_kv}"
                f"_{self.layout}{w}")


def _element(x: np.ndarray, dt: DType) -> np.ndarray:
    return to_bf16(x) if dt == DType.BF16 else x.astype(np.float16)


def _f64(x: np.ndarray, dt: DType) -> np.ndarray:
    return from_bf16(x).astype(np.float64) if dt == DType.BF16 else np.asarray(x, np.float64)


class Tensor:
    """A [batch, seq, heads, d] view (varlen: [total, heads, d]) of one flat poisoned-or-random buffer."""

    def __init__(self, dt: DType, d: int, heads: int, lens: tuple[int, ...], varlen: bool, layout: str,
                 rng: np.random.Generator | None):
        np_t = np.uint16 if dt == DType.BF16 else np.float16
        pad = PAD.get(layout, 0)
        if varlen:
            total = sum(lens)
            self.store = np.empty((max(total, 1), heads * d + pad), np_t)
            self.view = _strided(self.store, (total, heads, d), (heads * d + pad, d, 1))
        elif layout == "bhsd":
            s = max(lens, default=0)
            self.store = np.empty((len(lens), heads, max(s, 1), d), np_t)
            self.view = self.store[:, :, :s].transpose(0, 2, 1, 3)
        else:
            s = max(lens, default=0)
            self.store = np.empty((len(lens), max(s, 1), heads * d + pad), np_t)
            row = heads * d + pad
            self.view = _strided(self.store, (len(lens), s, heads, d), (max(s, 1) * row, row, d, 1))
        if rng is None:
            self.store.view(np.uint8).fill(0xFF)
        else:
            self.store[...] = _element(rng.standard_normal(self.store.shape), dt)


def _strided(base: np.ndarray, shape, strides_el) -> np.ndarray:
    isz = base.itemsize
    return np.lib.stride_tricks.as_strided(base, shape=shape, strides=[s * isz for s in strides_el])


def make_problem(kernel: Kernel, sc: Scenario) -> dict:
    """Arrays for one call of ``kernel`` (dense kernels: every sequence max(lens) long), and the reference."""
    a = kernel.plan.spec.params.attn
    dt, d, varlen = a.dtype, a.head_dim, a.varlen
    rng = np.random.default_rng(sc.seed * 7919 + sum(sc.lens_q) * 31 + sum(sc.lens_k) + d)
    lq, lk = sc.lens_q, sc.lens_k
    if not varlen:
        lq, lk = (max(lq, default=0),) * len(lq), (max(lk, default=0),) * len(lk)
    q = Tensor(dt, d, sc.heads, lq, varlen, sc.layout, rng)
    k = Tensor(dt, d, sc.heads_kv, lk, varlen, sc.layout, rng)
    v = Tensor(dt, d, sc.heads_kv, lk, varlen, sc.layout, rng)
    o = Tensor(dt, d, sc.heads, lq, varlen, sc.layout, None)
    b = len(lq)
    if varlen:
        lse = np.empty((sc.heads, sum(lq)), np.float32)
    else:
        lse = np.empty((b, sc.heads, lq[0] if lq else 0), np.float32)
    lse.view(np.uint8).fill(0xFF)
    scale = sc.scale_mul / math.sqrt(d)
    window = sc.window if sc.window is not None else a.window
    cu_q = np.concatenate([[0], np.cumsum(lq)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lk)]).astype(np.int32)
    ref_o = np.full(o.view.shape, np.nan)
    ref_lse = np.full(lse.shape, np.nan)
    qf, kf, vf = (_f64(t.view, dt) for t in (q, k, v))
    for i in range(b):
        if varlen:
            rq, rk = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
            ref_o[rq], ref_lse[:, rq] = attend(qf[rq], kf[rk], vf[rk], a.mask, scale, window)
        else:
            ref_o[i], ref_lse[i] = attend(qf[i], kf[i], vf[i], a.mask, scale, window)
    args = dict(Q=q.view, K=k.view, V=v.view, O=o.view, LSE=lse, scale=scale)
    if sc.window is not None:
        args.update(window_left=sc.window[0], window_right=sc.window[1])
    if varlen:
        args.update(cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    return dict(args=args, o=o, lse=lse, dtype=dt, ref_o=ref_o, ref_lse=ref_lse)


def check(pb: dict) -> str:
    """Compare with the reference; returns a one-line summary, raises AssertionError on a mismatch."""
    dt, o = pb["dtype"], pb["o"]
    got_all = o.view
    raw = o.store.view(np.uint16)
    written = np.zeros(o.store.shape, dtype=bool)
    idx = np.lib.stride_tricks.as_strided(np.arange(o.store.size).reshape(o.store.shape), shape=got_all.shape,
                                          strides=[s // o.store.itemsize * 8 for s in got_all.strides])
    written.reshape(-1)[idx.reshape(-1)] = True
    assert np.all(raw[~written] == 0xFFFF), f"{np.count_nonzero(raw[~written] != 0xFFFF)} O elements written outside O"
    got, ref = _f64(got_all, dt), pb["ref_o"]
    assert np.all(np.isfinite(got)), f"{np.count_nonzero(~np.isfinite(got))} of {got.size} O elements NaN/unwritten"
    nref = np.linalg.norm(ref)
    err = np.linalg.norm(got - ref) / nref if nref > 0 else float(np.abs(got).max(initial=0.0))
    assert err <= TOL[dt], f"O relative error {err:.3e} > {TOL[dt]}"
    assert np.all(got[ref == 0.0] == 0.0), "rows without keys must be exactly 0"
    want, lse = pb["ref_lse"], pb["lse"].astype(np.float64)
    assert np.array_equal(np.isneginf(lse), np.isneginf(want)), "LSE -inf rows differ"
    fin = np.isfinite(want)
    lse_err = float(np.abs(lse[fin] - want[fin]).max(initial=0.0))
    assert lse_err <= LSE_TOL, f"LSE max abs error {lse_err:.3e} > {LSE_TOL}"
    return f"O err {err:.2e}, LSE err {lse_err:.2e}, {int(np.count_nonzero(np.isneginf(want)))} empty rows"


def build_nv(text: str, filename: str, stem: str):
    """The plans of the DSL ``text`` (named ``filename`` in errors) for every arch it names, built into one CUDA
    library by ckgen's nvcc toolchain (rung 1 on NVIDIA): (library, plans, per-entry reports). Skips the calling
    test when there is no nvcc."""
    import pytest

    from ckgen.backends.nvidia import compiler as nvidia
    from ckgen.errors import ToolchainError
    from ckgen.frontend import load_text
    from ckgen.lower import plan_kernel

    try:
        nvidia.find_nvcc()
    except ToolchainError as e:
        pytest.skip(str(e))
    plans = [plan_kernel(s, a) for s in load_text(text, filename) for a in s.arches]
    lib = nvidia.build_cuda_library(stem, plans)
    return lib, plans, nvidia.analyze(lib, plans)


def check_hopper_entry(lib, plan, reports: dict) -> None:
    """The Hopper entry ``<name>_tma`` of an attention or decode plan (``plan.body.wgmma``) as built by
    :func:`build_nv`: the planned dynamic shared memory (no static) and threads, the S and O wgmma of its tile at
    least once per k16 step in the PTX, and in its own PTX the TMA copies and the register reallocation.
    ``reports``: (entry name, arch) -> report."""
    w, a = plan.body.wgmma, plan.spec.params.attn
    r = reports[(f"{plan.name}_tma", plan.arch)]
    assert r.dynamic_smem == w.smem_bytes and r.static_smem == 0 and r.threads == w.threads, r
    dt, hd = a.dtype.value, a.head_dim
    tensor = dict(r.ptx_tensor)
    assert tensor.get(f"wgmma.mma_async.sync.aligned.m64n{w.block_n}k16.f32.{dt}.{dt}", 0) >= hd // 16, tensor
    assert tensor.get(f"wgmma.mma_async.sync.aligned.m64n{hd}k16.f32.{dt}.{dt}", 0) >= w.block_n // 16, tensor
    ptx = (lib.entry / f"{lib.stem}_{plan.arch}.ptx").read_text()
    entry = ptx[ptx.index(f".entry {plan.name}_tma("):]
    entry = entry[: entry.find(".entry ", 10) if ".entry " in entry[10:] else len(entry)]
    assert "cp.async.bulk.tensor.4d" in entry and "setmaxnreg" in entry, plan.name

