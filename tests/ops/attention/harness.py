"""Shared pieces of the attention tests: the hand-written cases (one Cfg + kernel entry each), their
emulator builds, problem set-up (layouts, varlen packing, poisoned outputs) and the float64 reference.

A case file (``cases/*.hip`` for the AMD body, ``cases/*.cu`` for the NVIDIA body) names its arches
(``// arch: gfx942 gfx90a`` or ``// arch: sm_90``) and defines ``struct <name>_cfg`` plus the kernel
``<name>`` with ``CKGEN_ATTENTION_FWD_ENTRY``. Its ``k...`` constants and ``using T`` are parsed here.
"""

from __future__ import annotations

import ctypes
import math
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ckgen.resources import include_flags
from ckgen.runtime.emu import compile_flags
from ckgen.targets import get_target

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
DRIVER = HERE / "emu" / "driver.h"
MASKS = {"ckgen::attn::kMaskNone": "none", "ckgen::attn::kMaskCausal": "causal", "ckgen::attn::kMaskWindow": "window"}
#: relative norm error of O per element type (P rounded to T, O rounded to T, f32 accumulation)
TOL = {"f16": 4e-3, "bf16": 2.5e-2}
LSE_TOL = 2e-3  # absolute, natural log
PAD = {"bshd_pad": 8, "bshd_odd": 3}  # elements of padding after each token's heads


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    arches: tuple[str, ...]
    consts: dict = field(hash=False)

    def const(self, key: str) -> int:
        return int(self.consts[key])

    @property
    def dtype(self) -> str:
        return "bf16" if self.consts["T"] == "ckgen::bf16" else "f16"

    @property
    def mask(self) -> str:
        return MASKS[self.consts["kMask"]]

    def flag(self, key: str) -> bool:
        return self.consts[key] == "true"

    @property
    def nv(self) -> bool:
        return self.path.suffix == ".cu"


def parse_case(path: Path) -> Case:
    text = path.read_text()
    arches = tuple(re.search(r"^// arch:(.*)$", text, re.M).group(1).split())
    consts: dict[str, str] = {}
    for decl in re.findall(r"static constexpr (?:int|bool) ([^;]*);", text):
        for name, val in re.findall(r"(k\w+) = ([^,]+)", decl):
            consts[name] = val.strip()
    consts.update(re.findall(r"using (T) = ([\w:]+);", text))
    return Case(path.stem, path, arches, consts)


AMD_CASES = [parse_case(p) for p in sorted(CASES.glob("*.hip"))]
NV_CASES = [parse_case(p) for p in sorted(CASES.glob("*.cu"))]


# ------------------------------------------------------------------------------------------ emulator
# -O1: these libraries are built on every run (quicker to compile; the runs are short)
NV_EMU_FLAGS = ("-std=c++17", "-O1", "-fPIC", "-shared", "-pthread", "-fvisibility=hidden", "-Wno-psabi",
                "-DCKGEN_PLATFORM_EMU", "-DCKGEN_EMU_WAVE_SIZE=32", "-DCKGEN_EMU_LDS_BYTES=232448")


def emu_group(case: Case) -> str:
    """Cases that share emulator flags build into one library: the NVIDIA ones, the AMD ones per arch."""
    return "nv" if case.nv else case.arches[0]


def emu_build(cases: list[Case], out: Path, includes: tuple[Path, ...] = (), tag: str = "") -> Path:
    """One emulator library running ``cases`` (all of one emu_group): AMD cases as their first arch (wave64,
    that arch's MFMAs), NVIDIA cases as warp32 with the emulated mma.sync / ldmatrix / cp.async
    (ckgen/emu/nv.h). Exports run_<case name> (emu/driver.h). ``includes`` are searched before ckgen's
    headers (a planted fault: a modified copy of a body)."""
    group = {emu_group(c) for c in cases}
    assert len(group) == 1, f"cases of different emulator groups: {group}"
    first = cases[0]
    clang = shutil.which("clang++-22") if "gfx950" in first.arches else None
    clang = clang or shutil.which("clang++-19") or shutil.which("clang++")
    name = f"{group.pop()}{tag}"
    src = out / f"{name}.cpp"
    src.write_text("".join(f'#include "{c.path}"\n' for c in cases) + f'#include "{DRIVER}"\n'
                   + "".join(f"ATTN_EMU_RUNNER({c.name})\n" for c in cases))
    so = out / f"{name}.emu.so"
    inc = [f"-I{p}" for p in includes]
    if first.nv:
        flags = [*NV_EMU_FLAGS, *inc, *include_flags()]
    else:
        flags = compile_flags(get_target(first.arches[0]), extra=("-O1",), includes=includes)
    cmd = [clang, "-x", "c++", *flags, str(src), "-o", str(so)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(" ".join(cmd) + "\n" + r.stderr)
    return so


# ------------------------------------------------------------------------------------------ problems
def bf16_to_f64(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def f64_to_bf16(x: np.ndarray) -> np.ndarray:
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def to_f64(a: np.ndarray, dtype: str) -> np.ndarray:
    return bf16_to_f64(a) if dtype == "bf16" else a.astype(np.float64)


def from_f64(x: np.ndarray, dtype: str) -> np.ndarray:
    return f64_to_bf16(x) if dtype == "bf16" else x.astype(np.float16)


@dataclass(frozen=True)
class Scenario:
    """One problem. seqlens_q/k: one length per batch entry (varlen: packed; otherwise all equal).
    layout: bshd, bhsd, bshd_pad (sequence stride padded by 8 elements; the padding must stay poisoned) or
    bshd_odd (padded by 3: rows not 16-byte aligned, the per-element paths)."""

    seqlens_q: tuple[int, ...]
    seqlens_k: tuple[int, ...]
    heads_q: int = 2
    heads_kv: int = 2
    layout: str = "bshd"
    window: tuple[int, int] = (-1, -1)
    scale_mul: float = 1.0  # scale = scale_mul / sqrt(d)
    seed: int = 0
    lse: bool = True

    @property
    def id(self) -> str:
        sq = "-".join(map(str, self.seqlens_q))
        sk = "-".join(map(str, self.seqlens_k))
        w = f"-w{self.window[0]}_{self.window[1]}" if self.window != (-1, -1) else ""
        return f"q{sq}_k{sk}_h{self.heads_q}x{self.heads_kv}_{self.layout}{w}"


class Tensor:
    """A [batch, seq, heads, d] tensor (varlen: [total, heads, d]) in one flat buffer with strides."""

    def __init__(self, dtype: str, d: int, heads: int, lens: tuple[int, ...], varlen: bool, layout: str):
        self.dtype, self.d, self.heads, self.lens, self.varlen = dtype, d, heads, lens, varlen
        np_t = np.uint16 if dtype == "bf16" else np.float16
        if varlen:
            total = sum(lens)
            self.starts = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
            self.ss, self.hs, self.bs = heads * d + PAD.get(layout, 0), d, 0
            n = max(total * self.ss, 1)
        else:
            s = max(lens) if lens else 0
            b = len(lens)
            self.starts = None
            if layout == "bhsd":
                self.bs, self.hs, self.ss = heads * s * d, s * d, d
            else:
                self.ss, self.hs = heads * d + PAD.get(layout, 0), d
                self.bs = s * self.ss
            n = max(b * self.bs, 1)
        self.buf = np.zeros(n, dtype=np_t)

    def index(self, b: int, i: np.ndarray, h: int) -> np.ndarray:
        """Flat indices of rows i of (b, h) -> [len(i), d]."""
        base = (int(self.starts[b]) * self.ss) if self.varlen else b * self.bs
        return base + i[:, None] * self.ss + h * self.hs + np.arange(self.d)[None, :]

    def used_mask(self) -> np.ndarray:
        m = np.zeros(self.buf.shape, dtype=bool)
        for b, n in enumerate(self.lens):
            for h in range(self.heads):
                m[self.index(b, np.arange(n), h)] = True
        return m


def make_problem(case: Case, sc: Scenario):
    """Inputs (random, in the element type), poisoned outputs, and the float64 reference."""
    d = case.const("kHeadDim")
    dt = case.dtype
    varlen = case.flag("kVarlen")
    rng = np.random.default_rng(sc.seed * 7919 + sum(sc.seqlens_q) * 31 + sum(sc.seqlens_k))
    q = Tensor(dt, d, sc.heads_q, sc.seqlens_q, varlen, sc.layout)
    k = Tensor(dt, d, sc.heads_kv, sc.seqlens_k, varlen, sc.layout)
    v = Tensor(dt, d, sc.heads_kv, sc.seqlens_k, varlen, sc.layout)
    for t in (q, k, v):
        t.buf[:] = from_f64(rng.standard_normal(t.buf.shape), dt)
    o = Tensor(dt, d, sc.heads_q, sc.seqlens_q, varlen, sc.layout)
    o.buf.view(np.uint8)[:] = 0xFF
    batch = len(sc.seqlens_q)
    sq_max = max(sc.seqlens_q) if sc.seqlens_q else 0
    if varlen:
        lse = np.empty(max(sc.heads_q * sum(sc.seqlens_q), 1), np.float32)
        lse_bs, lse_hs = 0, sum(sc.seqlens_q)
    else:
        lse = np.empty(max(batch * sc.heads_q * sq_max, 1), np.float32)
        lse_bs, lse_hs = sc.heads_q * sq_max, sq_max
    lse.view(np.uint8)[:] = 0xFF
    scale = sc.scale_mul / math.sqrt(d)

    ref_o = np.zeros(o.buf.shape, np.float64)
    ref_lse = np.full(lse.shape, np.nan)
    group = sc.heads_q // sc.heads_kv
    wl, wr = sc.window
    for b in range(batch):
        sqb, skb = sc.seqlens_q[b], sc.seqlens_k[b]
        i = np.arange(sqb)[:, None]
        j = np.arange(skb)[None, :]
        off = skb - sqb
        vis = np.ones((sqb, skb), dtype=bool)
        if case.mask == "causal":
            vis &= j <= i + off
        elif case.mask == "window":
            if wl >= 0:
                vis &= j >= i + off - wl
            if wr >= 0:
                vis &= j <= i + off + wr
        for h in range(sc.heads_q):
            hk = h // group
            qi = q.index(b, np.arange(sqb), h)
            qh = to_f64(q.buf[qi], dt)
            kh = to_f64(k.buf[k.index(b, np.arange(skb), hk)], dt)
            vh = to_f64(v.buf[v.index(b, np.arange(skb), hk)], dt)
            s = np.where(vis, scale * (qh @ kh.T), -np.inf)
            mx = s.max(axis=1, initial=-np.inf)
            mxs = np.where(np.isfinite(mx), mx, 0.0)
            p = np.exp(s - mxs[:, None])
            den = p.sum(axis=1)
            with np.errstate(divide="ignore"):
                row_lse = np.where(den > 0, mxs + np.log(np.where(den > 0, den, 1.0)), -np.inf)
            ref_o[qi] = np.where(den[:, None] > 0, (p @ vh) / np.where(den > 0, den, 1.0)[:, None], 0.0)
            lrow = (h * lse_hs + int(q.starts[b]) + np.arange(sqb)) if varlen else (b * lse_bs + h * lse_hs +
                                                                                    np.arange(sqb))
            ref_lse[lrow] = row_lse
    cu_q = np.concatenate([[0], np.cumsum(sc.seqlens_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(sc.seqlens_k)]).astype(np.int32)
    strides = np.array([q.bs, q.ss, q.hs, k.bs, k.ss, k.hs, v.bs, v.ss, v.hs, o.bs, o.ss, o.hs, lse_bs, lse_hs],
                       dtype=np.int64)
    return dict(q=q, k=k, v=v, o=o, lse=lse, cu_q=cu_q, cu_k=cu_k, strides=strides, scale=scale, batch=batch,
                sq_max=sq_max, sk_max=max(sc.seqlens_k) if sc.seqlens_k else 0, ref_o=ref_o, ref_lse=ref_lse)


def run_emu(lib: ctypes.CDLL, case: Case, sc: Scenario, pb: dict) -> tuple[int, str]:
    """Run the case on the emulator with every array registered at its exact extent."""
    varlen = case.flag("kVarlen")
    lib.ckgen_emu_clear_buffers()
    lib.ckgen_emu_last_fault.restype = ctypes.c_char_p
    arrays = [("Q", pb["q"].buf), ("K", pb["k"].buf), ("V", pb["v"].buf), ("O", pb["o"].buf)]
    if sc.lse:
        arrays.append(("LSE", pb["lse"]))
    if varlen:
        arrays += [("cu_seqlens_q", pb["cu_q"]), ("cu_seqlens_k", pb["cu_k"])]
    for name, a in arrays:
        lib.ckgen_emu_register_buffer(ctypes.c_void_p(a.ctypes.data), ctypes.c_size_t(a.nbytes), name.encode())

    def ptr(a):
        return ctypes.c_void_p(a.ctypes.data)

    null = ctypes.c_void_p(0)
    run = getattr(lib, f"run_{case.name}")
    rc = run(ptr(pb["q"].buf), ptr(pb["k"].buf), ptr(pb["v"].buf), ptr(pb["o"].buf),
             ptr(pb["lse"]) if sc.lse else null, ptr(pb["cu_q"]) if varlen else null,
             ptr(pb["cu_k"]) if varlen else null, pb["batch"], sc.heads_q, sc.heads_kv, pb["sq_max"],
             pb["sk_max"], ptr(pb["strides"]), ctypes.c_float(pb["scale"]), sc.window[0], sc.window[1])
    fault = lib.ckgen_emu_last_fault().decode()
    lib.ckgen_emu_clear_buffers()
    return rc, fault


def check(case: Case, sc: Scenario, pb: dict) -> str:
    """Compare with the reference; returns a one-line summary, raises AssertionError on a mismatch."""
    o = pb["o"]
    used = o.used_mask()
    raw = o.buf.view(np.uint16)
    assert np.all(raw[~used] == 0xFFFF), f"{np.count_nonzero(raw[~used] != 0xFFFF)} O elements outside the rows written"
    got = to_f64(o.buf[used], case.dtype)
    ref = pb["ref_o"][used]
    assert np.all(np.isfinite(got)), f"{np.count_nonzero(~np.isfinite(got))} of {got.size} O elements NaN/unwritten"
    nref = np.linalg.norm(ref)
    err = np.linalg.norm(got - ref) / nref if nref > 0 else float(np.abs(got).max(initial=0.0))
    empty_rows = int(np.count_nonzero(np.isneginf(pb["ref_lse"])))
    assert err <= TOL[case.dtype], f"O relative error {err:.3e} > {TOL[case.dtype]}"
    zero_ref = ref == 0.0
    assert np.all(got[zero_ref] == 0.0), "rows without keys must be exactly 0"
    lse_err = 0.0
    if sc.lse:
        want = pb["ref_lse"]
        rows = ~np.isnan(want)
        g = pb["lse"][rows].astype(np.float64)
        w = want[rows]
        assert np.array_equal(np.isneginf(g), np.isneginf(w)), "LSE -inf rows differ"
        fin = np.isfinite(w)
        lse_err = float(np.abs(g[fin] - w[fin]).max(initial=0.0))
        assert lse_err <= LSE_TOL, f"LSE max abs error {lse_err:.3e} > {LSE_TOL}"
        assert np.all(pb["lse"].view(np.uint32)[~rows] == 0xFFFFFFFF), "LSE written outside its rows"
    return f"O err {err:.2e}, LSE err {lse_err:.2e}, {empty_rows} empty rows"
