"""Ladder rung 2 for the row ops: every hand-written case (tests/ops/rowops/cases) runs on the CPU emulator
(the same source as the gfx9 build, DPP / ds_swizzle / readlane emulated) against a float64 numpy reference.

Inputs are random and never zero; y, s and the int8 scales are poisoned before each run (0xFF bytes: NaN for
floats; int8 outputs get 0x80 = -128, a value the symmetric quantization never writes), and every tensor is
registered with the emulator at its exact extent, so an unwritten element, a write into a row's padding or any
access outside a tensor fails. Shapes: 1 row; 1, 7, 33, 4097, 65537 (and 262147) columns; the largest single
tile; strides equal to cols, padded and aligned, odd (misaligned vectors: the per-element path), and different
per tensor; a grid smaller than the row groups (grid-stride loop); in-place y = x and s = residual. Every case runs twice: with the tail path of the gfx9 build (clamped element
accesses) and with the CUDA build's (CKGEN_ROWOPS_PREDICATED_TAIL=1).
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from tests.ops.rowops import harness as H

#: looped cases that also get one row of 262147 columns
LONG_ROW_CASES = ("rmsnorm_res_bf16", "softmax_f32_looped")


def shapes_for(name: str, info: H.Info) -> list[tuple[int, int, str, int]]:
    """(rows, cols, stride mode, grid: 0 = the grid rule) for one case."""
    t = info.tile_cols
    rb = info.rows_per_block
    s = [(1, 1, "tight", 0), (1, 7, "odd", 0), (2 * rb + 1, 33, "mixed", 1)]
    if info.looped:
        s += [(3, 4097, "pad", 0), (2, 4097, "mixed", 0), (2, 65537, "tight", 0), (rb + 1, 2 * t + 5, "odd", 0)]
        if name in LONG_ROW_CASES:
            s.append((1, 262147, "odd", 0))
    else:
        s += [(3, t, "pad", 0), (2 * rb + 1, t - 1, "odd", 2), (2, min(t, 4097), "mixed", 0)]
        # aligned rows (the staged ring's cp.async path) over more row groups than workgroups: the ring wraps,
        # a partial last vector (zero-filled copy), vectors wholly past the row (not copied), rows past the end
        s += [(5 * rb + 2, t - 3, "pad", 2), (4 * rb + 1, min(t, 40), "pad", 3), (3 * rb, t, "tight", 1)]
    return s


def strides(mode: str, cols: int) -> dict[str, int]:
    up = (cols + 15) // 16 * 16
    if mode == "tight":
        return dict.fromkeys(("x", "r", "y", "s"), cols)
    if mode == "pad":
        return dict.fromkeys(("x", "r", "y", "s"), up + 16)
    if mode == "odd":
        return dict.fromkeys(("x", "r", "y", "s"), cols + 3)
    return {"x": cols + 3, "r": cols, "y": up + 16, "s": cols + 5}   # mixed


class Tensor:
    """A rows x cols row-major view with a row stride, in its own buffer (poisoned or random)."""

    def __init__(self, rows: int, cols: int, stride: int, dt: str, rng=None, poison: int | None = None):
        self.rows, self.cols, self.stride, self.dt = rows, cols, stride, dt
        self.buf = np.empty(max(rows * stride, 1), dtype=H.NP_STORAGE[dt])
        if poison is not None:
            self.buf.view(np.uint8)[:] = poison
        else:
            self.buf[:] = H.random_values(rng, dt, self.buf.shape)
        self.extent = ((rows - 1) * stride + cols) * self.buf.itemsize

    def view(self) -> np.ndarray:
        return self.buf[: self.rows * self.stride].reshape(self.rows, self.stride)[:, : self.cols]

    def pad_mask(self) -> np.ndarray:
        m = np.ones(self.buf.shape, dtype=bool)
        m[: self.rows * self.stride].reshape(self.rows, self.stride)[:, : self.cols] = False
        return m

    def ptr(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self.buf.ctypes.data)


def run_case(cases: H.EmuCases, name: str, rows: int, cols: int, mode: str, grid: int, seed: int,
             scale: float = 0.7, eps: float = 1e-5, inplace: bool = False, zero_rows: bool = False,
             offset: float = 0.0, spread: float = 1.0):
    """Run one case; returns (status, fault, tensors dict, the float64 v, w, b). x = offset + spread * the random
    values (as stored in x's dtype)."""
    info = cases.info[name]
    lib = cases.lib(name)
    rng = np.random.default_rng(seed)
    st = strides(mode, cols)
    if inplace:
        st = dict.fromkeys(st, st["x"])
    x = Tensor(rows, cols, st["x"], info.tin, rng)
    if offset or spread != 1.0:
        x.buf[:] = H.from_f32((offset + spread * H.to_f64(x.buf, info.tin)).astype(np.float32), info.tin)
    r = Tensor(rows, cols, st["r"], info.tres, rng) if info.residual else None
    if zero_rows and r is not None:          # s = x + r = 0 exactly
        r.view()[:] = H.from_f32(-H.to_f64(x.view(), info.tin).astype(np.float32), info.tres)
    w = H.random_values(rng, info.tw, (cols,)) if info.weight else None
    b = H.random_values(rng, info.tw, (cols,)) if info.bias else None
    x_in = x.view().copy()
    r_in = r.view().copy() if r is not None else None
    poison = 0x80 if info.tout == "i8" else 0xFF
    y = x if inplace else Tensor(rows, cols, st["y"], info.tout, poison=poison)
    s = (r if inplace else Tensor(rows, cols, st["s"], info.tres, poison=0xFF)) if info.residual else None
    ys = np.full(rows, np.nan, dtype=np.float32) if info.quant else None
    pad_before = {k: t.buf.copy() for k, t in (("y", y), ("s", s)) if t is not None}

    lib.ckgen_emu_clear_buffers()
    reg = lambda a, n, label: lib.ckgen_emu_register_buffer(ctypes.c_void_p(a.ctypes.data), n, label)  # noqa: E731
    reg(x.buf, x.extent, b"x")
    if not inplace:
        reg(y.buf, y.extent, b"y")
    if r is not None:
        reg(r.buf, r.extent, b"residual")
        if not inplace:
            reg(s.buf, s.extent, b"s_out")
    for arr, label in ((w, b"weight"), (b, b"bias"), (ys, b"y_scale")):
        if arr is not None:
            reg(arr, arr.nbytes, label)
    p = lambda a: ctypes.c_void_p(a.ctypes.data) if a is not None else ctypes.c_void_p(0)  # noqa: E731
    rc = getattr(lib, f"run_{name}")(x.ptr(), r.ptr() if r else None, p(w), p(b), y.ptr(), s.ptr() if s else None,
                                       p(ys), rows, cols, st["x"], st["r"], st["y"], st["s"], scale, eps, grid)
    fault = lib.ckgen_emu_last_fault().decode()
    lib.ckgen_emu_clear_buffers()
    if r_in is not None:
        v_store = H.from_f32((H.to_f64(x_in, info.tin) + H.to_f64(r_in, info.tres)).astype(np.float32), info.tres)
        v = H.to_f64(v_store, info.tres)
    else:
        v_store, v = None, H.to_f64(x_in, info.tin)
    return rc, fault, dict(y=y, s=s, ys=ys, v_store=v_store, pad_before=pad_before), v, \
        (H.to_f64(w, info.tw) if w is not None else None), (H.to_f64(b, info.tw) if b is not None else None)


def check(info: H.Info, out: dict, v, w, b, scale: float, eps: float, inplace: bool = False) -> None:
    y, s = out["y"], out["s"]
    if not inplace:
        for k, t in (("y", y), ("s", s)):
            if t is not None:
                m = t.pad_mask()
                assert np.array_equal(t.buf[m].view(np.uint8), out["pad_before"][k][m].view(np.uint8)), \
                    f"{k}: a row's padding was written"
    if s is not None:
        assert np.array_equal(s.view().view(np.uint8), out["v_store"].view(np.uint8)), \
            f"s != x + residual: {np.count_nonzero(s.view() != out['v_store'])} of {s.view().size} differ"
    ref = H.reference(info, v, w, b, scale, eps)
    if info.quant:
        q = y.view().astype(np.float64)
        ys = out["ys"].astype(np.float64)
        assert np.all(np.isfinite(ys)), "y_scale not written"
        assert not np.any(q == -128), f"{np.count_nonzero(q == -128)} int8 outputs unwritten (poison) or -128"
        amax = np.abs(ref).max(axis=1)
        want = np.where(amax > 0, amax / 127, 1.0)
        assert np.allclose(ys, want, rtol=1e-4, atol=0), f"y_scale {ys[:4]} != amax/127 {want[:4]}"
        exact = np.where(amax[:, None] > 0, ref / ys[:, None], 0.0)
        dev = np.abs(q - exact).max()
        assert dev <= 0.52, f"int8 output off by {dev:.3f} levels from the exact quantization"
        return
    got = H.to_f64(y.view(), info.tout)
    assert np.all(np.isfinite(got)), f"{np.count_nonzero(~np.isfinite(got))} unwritten/NaN outputs"
    nref = np.linalg.norm(ref)
    err = np.linalg.norm(got - ref) / nref if nref > 0 else np.abs(got).max()   # e.g. layer norm of 1 column: 0
    assert err <= H.TOL[info.tout], f"relative error {err:.3e} > {H.TOL[info.tout]}"


PARAMS = [(n, i) for n in H.CASE_NAMES for i in range(8)]


FIXTURES = {"clamped": "emu_cases", "predicated": "emu_cases_predicated", "warp32": "emu_cases_warp32"}


@pytest.mark.parametrize("tail", list(FIXTURES))
@pytest.mark.parametrize("name", H.CASE_NAMES)
def test_case_on_emulator(request, name: str, tail: str) -> None:
    """Every shape of the case (see shapes_for), each against the float64 reference; with the AMD tail path
    (clamped element accesses: the gfx9 code), the CUDA one (predicated), and the CUDA model (warps of 32, and
    the cp.async staged ring of kStages > 0 cases)."""
    emu_cases = request.getfixturevalue(FIXTURES[tail])
    info = emu_cases.info[name]
    for i, (rows, cols, mode, grid) in enumerate(shapes_for(name, info)):
        scale = (0.7, -1.3, 2.0)[i % 3]
        rc, fault, out, v, w, b = run_case(emu_cases, name, rows, cols, mode, grid, seed=i * 7919 + cols, scale=scale)
        assert rc == 0, f"{rows}x{cols} ({mode}, grid {grid}): emulator status {rc}: {fault}"
        try:
            check(info, out, v, w, b, scale, 1e-5)
        except AssertionError as e:
            raise AssertionError(f"{name} {rows}x{cols} ({mode}, grid {grid}, scale {scale}): {e}") from None


@pytest.mark.parametrize("name", ["softmax_bf16", "layernorm_f16_looped", "rmsnorm_res_bf16"])
def test_in_place(emu_cases, name: str) -> None:
    """y written over x (same dtype and stride), s over residual; multi-tile rows for the looped cases."""
    info = emu_cases.info[name]
    cols = min(info.tile_cols, 4097) if not info.looped else 3 * info.tile_cols + 17
    rc, fault, out, v, w, b = run_case(emu_cases, name, 3, cols, "pad", 0, seed=11, inplace=True)
    assert rc == 0, fault
    check(info, out, v, w, b, 0.7, 1e-5, inplace=True)


LAYERNORM_CASES = [n for n in H.CASE_NAMES if n.startswith("layernorm")]


@pytest.mark.parametrize("tail", ["clamped", "warp32"])
@pytest.mark.parametrize("name", LAYERNORM_CASES)
def test_layernorm_rows_with_a_large_offset(request, name: str, tail: str) -> None:
    """Rows of 1000 + small values: the single pass's exact two-pass variance and the looped per-tile moments
    merged by Chan's rule keep the variance (mean(x^2) - mean^2 in f32 would lose it: ~0.06 absolute error
    against a variance of ~0.4 for f16 rows)."""
    cases = request.getfixturevalue(FIXTURES[tail])
    info = cases.info[name]
    spread = 8.0 if info.tin == "bf16" else 1.0     # bf16 steps are 4 at 1000
    for i, (rows, cols, mode) in enumerate([(3, min(info.tile_cols, 3001), "pad"), (2, info.tile_cols - 3, "odd"),
                                             (2 * info.rows_per_block + 1, 77, "tight")]):
        if info.looped:
            cols = (cols, 2 * info.tile_cols + 19, 4097)[i]
        rc, fault, out, v, w, b = run_case(cases, name, rows, cols, mode, 0, seed=i + 101, offset=1000.0,
                                           spread=spread)
        assert rc == 0, fault
        try:
            check(info, out, v, w, b, 0.7, 1e-5)
        except AssertionError as e:
            raise AssertionError(f"{name} {rows}x{cols} ({mode}): {e}") from None


def test_all_zero_row_quantizes_to_zero_with_scale_one(emu_cases) -> None:
    """s = x + residual = 0 exactly: rms norm y = 0, so amax = 0: y_scale = 1 and every q = 0."""
    rc, fault, out, *_ = run_case(emu_cases, "rmsnorm_res_bf16_i8", 2, 999, "odd", 0, seed=5, zero_rows=True)
    assert rc == 0, fault
    assert np.array_equal(out["ys"], np.ones(2, np.float32))
    assert not np.any(out["y"].view())


@pytest.mark.parametrize("name", ["softmax_bf16", "layernorm_bf16_wb", "softmax_f16_i8"])
def test_single_pass_rejects_rows_longer_than_a_tile(emu_cases, name: str) -> None:
    """kLooped == false is compiled for one tile: cols > kTileCols traps (an emulation fault), touching nothing."""
    info = emu_cases.info[name]
    assert not info.looped
    rc, fault, out, *_ = run_case(emu_cases, name, 2, info.tile_cols + 1, "tight", 0, seed=3)
    assert rc == 6, f"status {rc}"
    assert "device trap: rowops: cols > Cfg::kTileCols" in fault, fault


def test_case_set_covers_the_brief(emu_cases) -> None:
    infos = list(emu_cases.info.values())
    assert {i.op for i in infos} == set(H.OPS)
    assert {i.tin for i in infos} >= {"bf16", "f16", "f32"}
    assert any(i.tout != i.tin for i in infos)
    for op in ("layernorm", "rmsnorm"):
        assert any(i.op == op and i.residual for i in infos), f"{op} with a residual"
        assert any(i.op == op and i.quant for i in infos), f"{op} to int8"
        assert any(i.op == op and i.weight for i in infos) and any(i.op == op and not i.weight for i in infos)
    assert any(i.op == "layernorm" and i.bias for i in infos)
    assert any(i.quant and i.op == "softmax" for i in infos) and any(i.quant and i.op == "logsoftmax" for i in infos)
    assert {i.looped for i in infos} == {True, False}
    wave = 64
    assert any(i.row_threads < wave for i in infos) and any(i.row_threads == wave for i in infos)
    assert any(i.row_threads > wave and i.lds_bytes > 0 for i in infos)


def test_staged_cases_run_the_ring_on_the_cuda_model(emu_cases, emu_cases_warp32) -> None:
    """kStages > 0 cases take the cp.async ring where the platform has cp.async (the warp-32 emulator, like
    nvcc) and direct loads on the wave64 (AMD) build; the case set covers the ring's variants."""
    staged = [n for n, i in emu_cases_warp32.info.items() if i.stages > 0]
    assert len(staged) >= 3
    for n in staged:
        assert emu_cases_warp32.info[n].stages_run == emu_cases_warp32.info[n].stages, n
        assert emu_cases.info[n].stages_run == 0, n
    infos = [emu_cases_warp32.info[n] for n in staged]
    assert any(i.residual and i.tres != i.tin for i in infos), "a residual of another width (two chunks per vector)"
    assert any(i.stages == 1 for i in infos) and any(i.stages > 2 for i in infos)
    assert any(i.row_threads > 32 for i in infos) and any(i.row_threads < 32 for i in infos)
    assert any(i.quant for i in infos)
