"""The row ops' test kernels (DSL, through the op) and what the tests share: planning them, running one call on
strided, poisoned arrays and checking it against the op's float64 reference.

``SOURCE`` holds one kernel per variant the issue names, covering between them every op (softmax, log-softmax,
layer norm, RMS norm), every input dtype, int8 outputs, residuals (same and other dtype), weight / bias on and
off, single-pass and looped rows (on sm_90 also register-bounded single passes of 32768 columns: ln_bf16_long,
rms_f16_long; weights read a vector at a time, f32 ones and a 512-thread residual tile compiled for two workgroups
per SM among them: ln_f16_w32, ln_res_9000), looped rows kept in shared memory (row_in = shared: a residual of another dtype,
int8, rows sharing a wave, vectors of 4 bytes, a whole 64 KiB row on AMD), rows of one thread, of part of a wave, of a wave and of several waves (LDS),
planned and given parameters. Rung 1 compiles them for gfx90a / gfx942 / gfx950 (and sm_90); rung 2 runs their
gfx942 plans on the emulator through ``ckgen.jit`` and their sm_90 plans (warp32, the CUDA tail path) on the
emulator too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ckgen.backends.amd import compiler as amd_compiler
from ckgen.frontend import load_text
from ckgen.ir.arrays import numpy_dtype, random_values, to_bf16, to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.registry import get_op
from ckgen.ir.types import DType
from ckgen.lower import plan_kernel
from ckgen.ops.rowops.reference import reference

__all__ = ["random_values", "to_float64"]

SOURCE = """
target gfx942
kernel sm_bf16       { op = softmax x = bf16 scale = 0.7 max_cols = 4096 }
kernel sm_f32_looped { op = softmax x = f32 }
kernel sm_f16_i8_sub { op = softmax x = f16 y = i8 threads_per_row = 16 looped = true }
kernel lsm_f16_res   { op = softmax log = true x = f16 residual = true scale = -1.3 }
kernel lsm_bf16_i8   { op = softmax log = true x = bf16 y = i8 max_cols = 2048 }
kernel sm_bf16_wide  { op = softmax x = bf16 max_cols = 32768 }
kernel sm_f16_tiny   { op = softmax x = f16 max_cols = 33 }
kernel ln_bf16_wb    { op = layernorm x = bf16 max_cols = 8192 }
kernel ln_f16_plain  { op = layernorm x = f16 weight = none bias = none threads_per_row = 8
                       rows_per_workgroup = 32 looped = true eps = 1e-3 }
kernel ln_f32_i8     { op = layernorm x = f32 y = i8 bias = none }
kernel ln_res_f16    { op = layernorm x = f16 residual = f32 threads_per_row = 128 looped = true }
kernel rms_bf16_w    { op = rmsnorm x = bf16 max_cols = 1024 }
kernel rms_res_bf16  { op = rmsnorm x = bf16 residual = true }
kernel rms_res_i8    { op = rmsnorm x = bf16 residual = bf16 y = i8 threads_per_row = 128 reg_vecs = 2 looped = true }
kernel rms_f32_long  { op = rmsnorm x = f32 weight = none max_cols = 262144 }
kernel rms_f16_one   { op = rmsnorm x = f16 y = f32 max_cols = 7 }
kernel sm_bf16_lds   { op = softmax x = bf16 scale = 0.7 max_cols = 20000 row_in = shared threads_per_row = 128
                       reg_vecs = 2 }
kernel lsm_f16_lds   { op = softmax log = true x = f16 residual = f32 max_cols = 5000 row_in = shared }
kernel ln_bf16_lds   { op = layernorm x = bf16 residual = true max_cols = 12288 row_in = shared }
kernel rms_f32_lds   { op = rmsnorm x = f32 y = i8 max_cols = 3001 row_in = shared threads_per_row = 32
                       rows_per_workgroup = 2 }
kernel rms_bf16_lds2 { op = rmsnorm x = bf16 vec = 2 weight = none max_cols = 1000 row_in = shared }
kernel sm_bf16_lds64 { op = softmax x = bf16 max_cols = 32768 row_in = shared threads_per_row = 64 reg_vecs = 1 }
kernel ln_bf16_long  { op = layernorm x = bf16 max_cols = 32768 }
kernel rms_f16_long  { op = rmsnorm x = f16 max_cols = 30000 }
kernel ln_bf16_2304  { op = layernorm x = bf16 max_cols = 2304 }
kernel rms_res_11008 { op = rmsnorm x = bf16 residual = true max_cols = 11008 }
kernel sm_bf16_5376  { op = softmax x = bf16 scale = 0.7 max_cols = 5376 }
kernel ln_f16_w32    { op = layernorm x = f16 weight = f32 max_cols = 3000 }
kernel ln_res_9000   { op = layernorm x = bf16 residual = true max_cols = 9000 }
"""
SPECS = {s.name: s for s in load_text(SOURCE, "rowops_tests.ck")}
NAMES: tuple[str, ...] = tuple(SPECS)
#: rung-1 AMD arches and the oldest clang major that builds each (ckgen's toolchain picks the newest installed)
AMD_ARCHES: dict[str, int] = {"gfx942": 19, "gfx90a": 19, "gfx950": 22}
#: the kernels the sm_90 plans of which also run on the emulator (warp32, predicated tails)
NV_ON_EMU = ("sm_bf16", "sm_f16_i8_sub", "lsm_f16_res", "ln_bf16_wb", "ln_res_f16", "rms_bf16_w", "rms_res_i8",
             "sm_bf16_wide", "sm_bf16_lds", "lsm_f16_lds", "ln_bf16_lds", "rms_f32_lds", "rms_bf16_lds2",
             "ln_bf16_long", "rms_f16_long", "ln_bf16_2304", "rms_res_11008", "sm_bf16_5376", "ln_f16_w32",
             "ln_res_9000")
#: looped kernels that also get one row of more than 262144 columns
LONG_ROWS = {"rms_f32_long": 262144, "sm_f32_looped": 262147}


def plan(name: str, arch: str = "gfx942"):
    return plan_kernel(SPECS[name], arch)


# ------------------------------------------------------------------------------------------ arrays
STRIDE_MODES = ("tight", "pad", "odd", "mixed")


def strides(mode: str, cols: int) -> dict[str, int]:
    """Row strides per tensor: tight (= cols), padded and 16-byte aligned, odd (cols + 3: misaligned vectors),
    and mixed (different per tensor)."""
    up = (cols + 15) // 16 * 16
    if mode == "tight":
        return dict.fromkeys(("x", "residual", "y", "s_out"), cols)
    if mode == "pad":
        return dict.fromkeys(("x", "residual", "y", "s_out"), up + 16)
    if mode == "odd":
        return dict.fromkeys(("x", "residual", "y", "s_out"), cols + 3)
    return {"x": cols + 3, "residual": cols, "y": up + 16, "s_out": cols + 5}


def matrix(rows: int, cols: int, stride: int, dt: DType, rng=None, poison: int | None = None) -> np.ndarray:
    """A rows x cols view with row stride ``stride`` into its own buffer of exactly (rows - 1) * stride + cols
    elements past the first (the padding between rows poisoned, or random)."""
    n = max(rows * stride, 1)
    buf = np.empty(n, numpy_dtype(dt))
    if poison is not None:
        buf.view(np.uint8)[:] = poison
    else:
        buf[:] = random_values(rng, (n,), dt)
    return buf[: rows * stride].reshape(rows, stride)[:, :cols] if rows else buf[:0].reshape(0, cols)


def encode(v: np.ndarray, dt: DType) -> np.ndarray:
    """float values as ``dt``'s storage (bf16: its raw bits)."""
    f = np.asarray(v, np.float32)
    return to_bf16(f) if dt == DType.BF16 else f.astype(np.dtype(dt.numpy))


def row_inputs(r, rows: int, cols: int, stride: int, rng, x: np.ndarray | None = None, spread: bool = False,
               zero_row: int | None = None) -> dict:
    """The inputs of row op ``r`` (a RowOpSpec): x and its residual (rows x cols, row stride ``stride``), weight
    and bias (cols), random; or x given (float values); ``spread``: each row of x scaled by its own power of two
    (2^-6..2^6: rows of other ranges); row ``zero_row`` of x and the residual all zero."""
    ins = {"x": matrix(rows, cols, stride, r.x, rng)}
    if x is not None:
        ins["x"][...] = encode(x, r.x)
    elif spread:
        ins["x"][...] = encode(to_float64(ins["x"], r.x) * np.exp2(rng.integers(-6, 7, (rows, 1))), r.x)
    if r.residual is not None:
        ins["residual"] = matrix(rows, cols, stride, r.residual, rng)
    if r.weight is not None:
        ins["weight"] = random_values(rng, (cols,), r.w_dtype)
    if r.bias is not None:
        ins["bias"] = random_values(rng, (cols,), r.w_dtype)
    if zero_row is not None:
        for name in ("x", "residual"):
            if name in ins:
                ins[name][zero_row] = 0
    return ins


def capped_widths(k, widths) -> list[int]:
    """``widths`` capped at kernel ``k``'s max_cols (when it has one), sorted, without repeats."""
    mc = k.plan.body.max_cols
    return sorted({min(c, mc) if mc else c for c in widths})


def assert_mx_scales_and_s_out(outs: dict, ref: dict, residual: DType | None, what: str) -> None:
    """An MX call's E8M0 y_scale written everywhere and exactly the reference's; s_out (with a residual) exact."""
    s = outs["y_scale"]
    assert s.dtype == np.uint8 and s.shape == ref["y_scale"].shape, what
    assert np.all(s != 0xFF), f"{what}: a scale unwritten (or NaN)"
    assert np.array_equal(to_float64(s, DType.E8M0), ref["y_scale"]), f"{what}: y_scale"
    if "s_out" in outs:
        assert relative_error(to_float64(outs["s_out"], residual), ref["s_out"]) == 0.0, f"{what}: s_out"


def poison_byte(dt: DType) -> int:
    """0xFF (NaN) for floats; 0x80 (-128, which the symmetric quantization never writes) for int8."""
    return 0x80 if dt == DType.I8 else 0xFF


@dataclass
class Call:
    plan: object
    inputs: dict
    outputs: dict
    scalars: dict
    before: dict           # copies of every output's buffer before the call


def make_call(p, rows: int, cols: int, mode: str, seed: int, scalars: dict | None = None) -> Call:
    """Random inputs and poisoned outputs (every tensor the kernel uses) at (rows, cols) with ``mode`` strides."""
    r = p.spec.params.row
    rng = np.random.default_rng(seed)
    st = strides(mode, cols)
    ins = {"x": matrix(rows, cols, st["x"], r.x, rng)}
    if r.residual is not None:
        ins["residual"] = matrix(rows, cols, st["residual"], r.residual, rng)
    if r.weight is not None:
        ins["weight"] = random_values(rng, (cols,), r.w_dtype)
    if r.bias is not None:
        ins["bias"] = random_values(rng, (cols,), r.w_dtype)
    outs = {"y": matrix(rows, cols, st["y"], r.y, poison=poison_byte(r.y))} if r.write_y else {}
    if r.residual is not None:
        outs["s_out"] = matrix(rows, cols, st["s_out"], r.residual, poison=0xFF)
    if r.quantized:
        outs["y_scale"] = np.full(rows, np.nan, np.float32)
    if r.rstd:
        outs["rstd"] = np.full(rows, np.nan, np.float32)
    return Call(p, ins, outs, dict(scalars or {}), {k: _base(v).copy() for k, v in outs.items()})


def _base(a: np.ndarray) -> np.ndarray:
    return a.base if a.base is not None else a


def _padding(view: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """The bytes of ``buf`` (the 1-D buffer under the 2-D ``view``) that lie outside the view's elements."""
    rows, cols = view.shape
    stride = view.strides[0] // view.itemsize
    keep = np.ones(buf.shape, bool)
    keep[(np.arange(rows)[:, None] * stride + np.arange(cols)[None, :]).reshape(-1)] = False
    return buf[keep].view(np.uint8)


def check_call(c: Call, what: str = "") -> None:
    """Every output against the float64 reference (relative norm error within the op's tolerance; int8 also
    element by element within one rounding step; s_out exactly), and every row's padding untouched."""
    p, r = c.plan, c.plan.spec.params.row
    op = get_op(p.op)
    ref = reference(p, {**c.inputs, **c.outputs}, c.scalars)
    for name, arr in c.outputs.items():
        if arr.ndim == 2:
            assert np.array_equal(_padding(arr, _base(arr)), _padding(arr, c.before[name])), \
                f"{what}: {name}: a row's padding was written"
        got = to_float64(arr, p.abi[name].dtype)
        err = relative_error(got, ref[name])
        tol = op.tolerance(p, name)
        assert err <= tol, f"{what}: {name}: relative error {err:.3e} > {tol:.1e}"
    if r.quantized:
        q = c.outputs["y"].astype(np.float64)
        assert not np.any(q == -128), f"{what}: {np.count_nonzero(q == -128)} int8 outputs unwritten (poison)"
        dev = np.abs(q - ref["y"]).max(initial=0.0)
        assert dev <= 0.52, f"{what}: int8 y off by {dev:.3f} steps from the exact quantization (one rounding: 0.5)"


# ------------------------------------------------------------------------------------------ builds
def emu_library(names) -> dict:
    """The gfx942 plans of ``names`` on the emulator, from two libraries built side by side (a library is one host
    compile; cached); name -> Kernel (the JIT's callable: the same binding and checks as ``ckgen.jit``)."""
    from ckgen.runtime.api import emu_kernels

    return emu_kernels([plan(n) for n in names], "rowops_tests_emu", jobs=2)


def build_amd(out):
    """The rung-1 library of every kernel for gfx90a, gfx942 and gfx950 (ckgen's own toolchain and flags):
    (LibraryResult, plans by (name, arch)), or (None, why) when a compiler is missing."""
    import shutil


    if not any(shutil.which(f"clang++-{m}") for m in range(max(AMD_ARCHES.values()), 30)):
        return None, f"no clang++ >= {max(AMD_ARCHES.values())} installed (tools/install.sh installs clang-22)"
    plans = [plan(n, a) for a in AMD_ARCHES for n in NAMES]
    return amd_compiler.compile_plans("rowops_tests", plans, out, 2), {(p.name, p.arch): p for p in plans}


def build_nvcc(out):
    """The sm_90 library of every kernel (nvcc through ckgen's toolchain) and its per-kernel reports, or
    (None, why) without nvcc."""
    from ckgen.backends.nvidia import compiler as nvidia
    from ckgen.errors import ToolchainError

    plans = [plan(n, "sm_90") for n in NAMES]
    try:
        lib = nvidia.build_cuda_library("rowops_tests_nv", plans, out)
    except ToolchainError as exc:
        return None, str(exc)
    return lib, {r.name: r for r in nvidia.analyze(lib, plans)}


#: the most spill bytes ptxas may trade for occupancy in a kernel it was left to bound (assert_nv_spill_free)
OCCUPANCY_SPILL_BYTES = 8


def assert_nv_entries_spill_free(plans, reports: dict, out) -> None:
    """Every entry of the sm_90 ``plans`` has a report in ``reports`` (name -> report) and no spill: the kernel's
    own (assert_nv_spill_free) and its few-rows entry (RowPlan.few_groups: compiled for one workgroup per SM, no
    spill and no stack frame at all)."""
    assert set(reports) == {e.name for p in plans for e in p.entries}
    for p in plans:
        assert_nv_spill_free(p, reports[p.name], out)
        for e in p.entries[1:]:
            r = reports[e.name]
            assert e.name == f"{p.name}_few" and (r.spill_stores, r.spill_loads, r.stack_bytes) == (0, 0, 0), r


def assert_nv_spill_free(p, r, out) -> None:
    """An sm_90 build report ``r`` of plan ``p``: no spills and no stack frame, or a spill ptxas traded for occupancy.
    Left to bound a kernel itself (no workgroups_per_cu: CKGEN_LAUNCH_BOUNDS(threads) alone), ptxas sometimes stores
    a value or two to reach one more workgroup per SM (RMS norm at 6912 columns: 48 registers, 4 bytes; RMS norm's
    looped MX kernel: 64 registers, 4 bytes, for a fourth workgroup); the same plan compiled for the workgroups per
    SM ptxas reached, or else for one fewer (built again into ``out``), must then have no spill: the kernel fits."""
    from ckgen.backends.nvidia import compiler as nvidia

    if r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0:
        return
    b = p.body
    assert b.workgroups_per_cu == 0 and r.spill_stores <= OCCUPANCY_SPILL_BYTES, (p.name, r)
    for groups in (r.blocks_per_sm, r.blocks_per_sm - 1):
        assert groups >= 1, (p.name, r)
        bounded = dataclasses.replace(p, body=dataclasses.replace(b, workgroups_per_cu=groups))
        again = next(a for a in nvidia.analyze(nvidia.build_cuda_library(f"{p.name}_bounded{groups}", [bounded], out),
                                               [bounded]) if a.name == p.name)
        if (again.spill_stores, again.spill_loads, again.stack_bytes) == (0, 0, 0):
            assert again.blocks_per_sm == groups, (p.name, again.blocks_per_sm, groups)
            return
    raise AssertionError((p.name, "spills however bounded", again))


def nvcc_spill_free(stem: str, plans, out) -> None:
    """nvcc builds ``plans`` (sm_90) into one library: every entry spill-free (:func:`assert_nv_entries_spill_free`);
    skips without nvcc."""
    import pytest

    from ckgen.backends.nvidia import compiler as nvidia
    from ckgen.errors import ToolchainError

    try:
        lib = nvidia.build_cuda_library(stem, plans, out)
    except ToolchainError as exc:
        pytest.skip(str(exc))
    assert_nv_entries_spill_free(plans, {r.name: r for r in nvidia.analyze(lib, plans)}, out)


def assert_refused(src: str, param: str, needle: str) -> None:
    """Planning the one kernel of ``src`` (its first line names the target) raises a CkgenError whose text or hint
    names ``param`` and holds ``needle``."""
    import pytest

    from ckgen.errors import CkgenError

    with pytest.raises(CkgenError) as e:
        spec = load_text(src, "bad.ck")[0]
        plan_kernel(spec, src.split()[1])
    text = str(e.value) + " " + str(getattr(e.value, "hint", "") or "")
    assert param in text and needle in text, text


def build_nv_on_emu(names, plans=None, stem: str = "rowops_nv_emu") -> dict:
    """The sm_90 plans of ``names`` (warp32 configurations; or ``plans`` as given) on the emulator: one library
    built with a 32-lane wave and the CUDA build's tail path and group-scale stores (CKGEN_ROWOPS_PREDICATED_TAIL=1,
    CKGEN_ROWOPS_GROUP_SCALES_AFTER=1); name -> Kernel."""
    import dataclasses

    from ckgen.targets import get_target

    plans = plans if plans is not None else [plan(n, "sm_90") for n in names]
    # a 32-lane wave with sm_90's shared memory per workgroup (the row cache of a 64 KiB row and its scratch)
    target = dataclasses.replace(get_target("gfx942"), wave_size=32, lds_bytes=get_target("sm_90").lds_bytes)
    return build_on_emu(plans, stem, target, ["-DCKGEN_ROWOPS_PREDICATED_TAIL=1", "-DCKGEN_ROWOPS_GROUP_SCALES_AFTER=1"])


def build_on_emu(plans, stem: str, target, extra: list[str]) -> dict:
    """``plans`` on the emulator as one library ``lib<stem>.so`` built for ``target`` with ``extra`` flags (through
    the build cache); name -> Kernel."""
    from ckgen.backends import emu
    from ckgen.codegen import render_kernel, render_launchers
    from ckgen.resources import content_hashes
    from ckgen.runtime.api import Kernel
    from ckgen.toolchain.cache import get_or_build

    files = {f"{p.name}.hip": render_kernel(p) for p in plans}
    files["launchers.cpp"] = render_launchers(stem, plans, "emu", kernel_files=list(files))
    cxx = emu.host_compiler()
    key = {"kind": "test-emu-library", "files": files, "compiler": emu.compiler_version(cxx),
           "flags": emu.compile_flags(target, extra), "include": content_hashes()["include"]}

    def build(d):
        for fname, text in files.items():
            (d / fname).write_text(text)
        emu.build_shared([d / "launchers.cpp"], d / f"lib{stem}.so", target, extra, cxx=cxx)

    lib = emu.load_library(get_or_build(key, build) / f"lib{stem}.so")

    class Prebuilt(emu.EmuBackend):
        def build(self, p):
            return emu.EmuKernel(p, lib)

    backend = Prebuilt()
    return {p.name: Kernel(p, backend) for p in plans}


def run(kernel, c: Call) -> None:
    """Call ``kernel`` with the call's arrays (by name) and scalars."""
    out = kernel(**c.inputs, **c.outputs, **c.scalars)
    outs = out if isinstance(out, tuple) else (out,)
    assert all(any(o is v for v in c.outputs.values()) for o in outs), "the kernel returned other arrays"


def shapes(p) -> list[tuple[int, int, str]]:
    """(rows, cols, stride mode) the emulator runs for plan ``p``: 1 row; 1, 7, 33 columns; 4097 and 65537 (looped)
    or max_cols, max_cols - 1 and min(max_cols, 4097) (single pass); a row of whole vectors ending inside a tile;
    more rows than a workgroup holds; every stride mode."""
    b = p.body
    rpw = b.rows_per_workgroup
    out = [(1, 1, "tight"), (1, 7, "odd"), (2 * rpw + 1, 33, "mixed")]
    if b.looped and b.max_cols is None:
        out += [(3, 4097, "pad"), (2, 65537, "tight"), (rpw + 1, 2 * b.tile_cols + 5, "odd")]
    elif b.looped:
        out += [(3, min(4097, b.max_cols), "pad"), (rpw + 1, min(2 * b.tile_cols + 5, b.max_cols), "odd")]
        if b.cache_tiles:  # the row cache: its longest rows, aligned and not
            out += [(rpw + 1, b.max_cols, "tight"), (2, b.max_cols, "odd"), (1, max(b.max_cols - 1, 1), "pad")]
    else:
        m = b.max_cols
        out += [(3, m, "pad"), (rpw + 1, max(m - 1, 1), "odd"), (2, min(m, 4097), "mixed")]
    whole = _whole_cols(b)
    if whole:  # a partial tile of whole vectors (Cfg::kWholeVectors: the fast path, predicated per vector)
        out.append((rpw + 1, whole, "pad"))
    if p.name in LONG_ROWS:
        out.append((1, LONG_ROWS[p.name], "odd"))
    return [s for s in dict.fromkeys(out) if b.max_cols is None or s[1] <= b.max_cols]


def _whole_cols(b) -> int:
    """Columns of a row of whole vectors whose last tile is partial: a single pass's longest such row (the tail
    of a fitted tile wider than max_cols), a looped kernel's second tile 3 vectors in; 0 when there is none."""
    if b.looped:
        w = b.tile_cols + 3 * b.vec
        return w if b.max_cols is None or w <= b.max_cols else 0
    w = b.max_cols // b.vec * b.vec
    w -= b.vec if w % b.tile_cols == 0 else 0
    return max(w, 0)
