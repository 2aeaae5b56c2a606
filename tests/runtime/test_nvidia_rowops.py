"""Generated row-op kernels on a real NVIDIA GPU (marked ``gpu``: ladder rung 3, runs on the lent H200).

The kernels of SPEC (softmax, log-softmax, layer norm, RMS norm; residual, int8, single-pass and looped, rows of
part of a warp up to 16 warps; looped rows kept in shared memory, row_in = shared, up to 64 KiB of bf16 per row;
tiles fitted to awkward widths, 2304, 11008 and 17920 columns, with whole-vector tails; RMS norms with the per-row
rstd output, with y = bf16 and y = none, with and without a residual: RSTD)
run through ``ckgen.jit(..., target="sm_90")`` on edge shapes (1 row; 1, 7, 33, 4097, 65537 columns; max_cols) with strided rows (tight, padded, odd: misaligned vectors), against the op's
float64 reference (``ckgen.ops.rowops.reference``) and against torch; with torch tensors (outputs poisoned, or
allocated by the backend), numpy arrays, a DLPack-only object and a side stream; in place; and the errors
(cols above max_cols, overlaps). ``bench/nv_prebuild.py`` builds these kernels ahead of a run;
``bench/device_run.sh rowops-memcheck`` runs the edge-shape tests under compute-sanitizer.
"""

from __future__ import annotations

import numpy as np
import pytest

from ckgen.errors import RuntimeFailure

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")]

SPEC = """
target sm_90
kernel gpu_softmax_bf16      { op = softmax x = bf16 scale = 0.7 max_cols = 8192 }
kernel gpu_logsoftmax_f16    { op = softmax log = true x = f16 y = f32 }
kernel gpu_softmax_f32_i8    { op = softmax x = f32 y = i8 threads_per_row = 8 looped = true }
kernel gpu_layernorm_bf16    { op = layernorm x = bf16 max_cols = 16384 }
kernel gpu_layernorm_f16_res { op = layernorm x = f16 residual = f32 bias = none threads_per_row = 256 looped = true }
kernel gpu_rmsnorm_bf16      { op = rmsnorm x = bf16 max_cols = 1024 }
kernel gpu_addrms_bf16       { op = rmsnorm x = bf16 residual = true }
kernel gpu_addrms_bf16_i8    { op = rmsnorm x = bf16 residual = true y = i8 threads_per_row = 512 looped = true }
kernel gpu_softmax_bf16_lds  { op = softmax x = bf16 scale = 0.7 max_cols = 32768 }
kernel gpu_layernorm_res_lds { op = layernorm x = bf16 residual = true max_cols = 32768 row_in = shared
                               threads_per_row = 256 reg_vecs = 2 }
kernel gpu_addrms_f16_i8_lds { op = rmsnorm x = f16 residual = f32 y = i8 max_cols = 20000 row_in = shared }
kernel gpu_logsoftmax_lds    { op = softmax log = true x = bf16 max_cols = 3001 row_in = shared threads_per_row = 32
                               rows_per_workgroup = 4 }
kernel gpu_layernorm_2304    { op = layernorm x = bf16 max_cols = 2304 }
kernel gpu_addrms_11008      { op = rmsnorm x = bf16 residual = true max_cols = 11008 }
kernel gpu_layernorm_17920   { op = layernorm x = bf16 max_cols = 17920 }
kernel gpu_rms_rstd_none     { op = rmsnorm x = bf16 y = none rstd = true max_cols = 4096 }
kernel gpu_addrms_rstd_none  { op = rmsnorm x = bf16 residual = true y = none rstd = true max_cols = 4096 }
kernel gpu_rms_rstd_bf16     { op = rmsnorm x = bf16 rstd = true max_cols = 4096 }
kernel gpu_addrms_rstd_any   { op = rmsnorm x = bf16 residual = true y = none rstd = true eps = 1e-6 }
kernel gpu_addrms_rstd_32k   { op = rmsnorm x = bf16 residual = true y = none rstd = true max_cols = 32768 }
"""
NAMES = ["gpu_softmax_bf16", "gpu_logsoftmax_f16", "gpu_softmax_f32_i8", "gpu_layernorm_bf16",
         "gpu_layernorm_f16_res", "gpu_rmsnorm_bf16", "gpu_addrms_bf16", "gpu_addrms_bf16_i8",
         "gpu_softmax_bf16_lds", "gpu_layernorm_res_lds", "gpu_addrms_f16_i8_lds", "gpu_logsoftmax_lds",
         "gpu_layernorm_2304", "gpu_addrms_11008", "gpu_layernorm_17920"]
TORCH = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "i8": torch.int8}
TOL = {"bf16": 1e-2, "f16": 2e-3, "f32": 2e-5, "i8": 2.5e-2}
_kernels: dict = {}


def kernel(name):
    from ckgen.runtime.api import jit

    if name not in _kernels:
        _kernels[name] = jit(SPEC, kernel=name, target="sm_90")
    return _kernels[name]


def strided(rows, cols, stride, dt, gen=None, poison=False):
    """(storage, view): rows x cols with a row stride, storage of exactly rows * stride elements."""
    n = max(rows * stride, 1)
    if poison:
        store = torch.full((n,), -128 if dt == "i8" else float("nan"), dtype=TORCH[dt], device="cuda")
    else:
        store = ((torch.rand(n, generator=gen, device="cuda") * 2 - 1) * 2).to(TORCH[dt])
    return store, store[: rows * stride].view(rows, stride)[:, :cols]


def np_of(t):
    """A host float64 copy of a CUDA tensor (numpy)."""
    return t.double().cpu().numpy()


def check(k, ins: dict, outs: dict, what: str):
    """Every output of a finished call against the op's float64 reference (on host copies)."""
    from ckgen.ir.op import relative_error
    from ckgen.ir.registry import get_op
    from ckgen.ops.rowops.reference import reference

    p, r = k.plan, k.plan.spec.params.row
    host = {n: (v.cpu().view(torch.int16).numpy().view(np.uint16) if v.dtype == torch.bfloat16 else v.cpu().numpy())
            for n, v in {**ins, **outs}.items()}
    ref = reference(p, host)
    for name, v in outs.items():
        if name == "s_out":
            want = (ins["x"].float() + ins["residual"].float()).to(v.dtype)
            assert torch.equal(v, want), f"{what}: s_out != x + residual"
            continue
        got = np_of(v)
        err = relative_error(got, ref[name])
        tol = get_op(p.op).tolerance(p, name)
        assert err <= tol, f"{what}: {name} relative error {err:.3e} > {tol}"
    if r.quantized:
        q = np_of(outs["y"])
        assert not np.any(q == -128), f"{what}: int8 outputs unwritten"
        assert np.abs(q - ref["y"]).max(initial=0) <= 0.52, f"{what}: int8 off by more than one rounding"


def operands(k, rows, cols, mode, gen):
    r = k.plan.spec.params.row
    up = (cols + 15) // 16 * 16
    stride = {"tight": cols, "pad": up + 16, "odd": cols + 3}[mode]
    ins = {"x": strided(rows, cols, stride, r.x.value, gen)[1]}
    if r.residual:
        ins["residual"] = strided(rows, cols, stride, r.residual.value, gen)[1]
    if r.weight:
        ins["weight"] = (torch.rand(cols, generator=gen, device="cuda") + 0.5).to(TORCH[r.w_dtype.value])
    if r.bias:
        ins["bias"] = (torch.rand(cols, generator=gen, device="cuda") - 0.5).to(TORCH[r.w_dtype.value])
    stores = {"y": strided(rows, cols, stride, r.y.value, poison=True)}
    if r.residual:
        stores["s_out"] = strided(rows, cols, stride, r.residual.value, poison=True)
    outs = {n: v for n, (_, v) in stores.items()}
    if r.quantized:
        outs["y_scale"] = torch.full((rows,), float("nan"), device="cuda")
    return ins, outs, stores


def edge_shapes(k):
    """1 row of 1, 7, 33 columns and max_cols (or 4097 and 65537); more rows than a workgroup; a row of two tiles
    and a bit (looped) or the longest row (single pass); a row of whole vectors ending inside a tile (the fitted
    tiles of awkward widths: kWholeVectors, the fast path predicated per vector)."""
    b = k.plan.body
    cols = [1, 7, 33, 4097, 65537] if b.max_cols is None else sorted({1, 7, 33, b.max_cols - 1, b.max_cols})
    whole = b.tile_cols + 3 * b.vec if b.looped else b.max_cols // b.vec * b.vec
    whole -= b.vec if not b.looped and whole % b.tile_cols == 0 else 0
    return [(1, c, m) for c, m in zip(cols, ("tight", "odd", "pad", "odd", "tight"), strict=False)] + \
        [(2 * b.rows_per_workgroup + 3, min(cols[-1], 4097), "odd"),
         (b.rows_per_workgroup + 1, min(2 * b.tile_cols + 5, b.max_cols or 2 * b.tile_cols + 5)
          if b.looped else min(b.tile_cols, b.max_cols), "pad")] + \
        ([(b.rows_per_workgroup + 2, whole, "pad")] if 0 < whole <= (b.max_cols or whole) else [])


@pytest.mark.parametrize("name", NAMES)
def test_edge_shapes_vs_float64(name):
    k = kernel(name)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    for rows, cols, mode in edge_shapes(k):
        ins, outs, stores = operands(k, rows, cols, mode, gen)
        before = {n: s.clone() for n, (s, _) in stores.items()}
        k(**ins, **outs)
        torch.cuda.synchronize()
        for n, (s, v) in stores.items():  # the padding between rows keeps its poison
            pad = torch.ones_like(s, dtype=torch.bool)
            pad[: v.shape[0] * v.stride(0)].view(v.shape[0], v.stride(0))[:, : v.shape[1]] = False
            assert torch.equal(s[pad].view(torch.uint8) if s.dtype != torch.int8 else s[pad],
                               before[n][pad].view(torch.uint8) if s.dtype != torch.int8 else before[n][pad]), \
                f"{name} {rows}x{cols}: {n}'s padding was written"
        check(k, ins, outs, f"{name} {rows}x{cols} ({mode})")


@pytest.mark.parametrize("name", ["gpu_layernorm_2304", "gpu_rmsnorm_bf16", "gpu_addrms_11008"])
def test_few_rows_entry(name):
    """A kernel whose weights are read in batches launches <name>_few for grids of at most few_groups workgroups
    (checked through torch's profiler) and its own entry past that; both against float64."""
    from tests.runtime.gpu_helpers import launched

    k = kernel(name)
    b = k.plan.body
    assert b.few_groups > 0
    gen = torch.Generator(device="cuda")
    gen.manual_seed(5)
    for groups, want in ((1, f"{name}_few"), (b.few_groups, f"{name}_few"), (b.few_groups + 1, name)):
        rows = groups * b.rows_per_workgroup
        ins, outs, _ = operands(k, rows, b.max_cols - b.vec, "odd", gen)
        ran = launched(lambda ins=ins, outs=outs: k(**ins, **outs))
        if ran is not None:
            assert want in ran and not ({name, f"{name}_few"} - {want}) & ran, (rows, ran)
        check(k, ins, outs, f"{name} {rows}x{b.max_cols - b.vec} ({want})")


def _torch_ref(k, ins, scale=None, eps=None):
    """What torch computes for the kernel (float32 math), for the float outputs."""
    import torch.nn.functional as F

    r = k.plan.spec.params.row
    v = ins["x"].float() if not r.residual else (ins["x"].float() + ins["residual"].float()).to(
        TORCH[r.residual.value]).float()
    w = ins["weight"].float() if "weight" in ins else None
    b = ins["bias"].float() if "bias" in ins else None
    if r.op == "softmax":
        t = (scale if scale is not None else r.scale) * v
        return torch.log_softmax(t, -1) if r.log else torch.softmax(t, -1)
    e = eps if eps is not None else r.eps
    if r.op == "layernorm":
        return F.layer_norm(v, (v.shape[-1],), w, b, e)
    return F.rms_norm(v, (v.shape[-1],), w, e)


@pytest.mark.parametrize("name", ["gpu_softmax_bf16", "gpu_logsoftmax_f16", "gpu_layernorm_bf16",
                                  "gpu_layernorm_f16_res", "gpu_rmsnorm_bf16", "gpu_addrms_bf16",
                                  "gpu_softmax_bf16_lds", "gpu_layernorm_res_lds", "gpu_logsoftmax_lds"])
def test_vs_torch_with_allocated_outputs(name):
    """Outputs allocated by the backend (torch tensors, on the operands' device), compared with torch."""
    k = kernel(name)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(2)
    b = k.plan.body
    ins, _, _ = operands(k, 300, min(b.max_cols or 5000, 5000), "tight", gen)
    out = k(**ins)
    outs = out if isinstance(out, tuple) else (out,)
    assert all(isinstance(o, torch.Tensor) and o.is_cuda for o in outs)
    y = outs[0]
    err = (torch.linalg.norm((y.float() - _torch_ref(k, ins)).flatten()) /
           torch.linalg.norm(_torch_ref(k, ins).flatten())).item()
    assert err <= TOL[k.plan.spec.params.row.y.value], err


def test_runtime_scalars_numpy_dlpack_and_side_stream():
    k = kernel("gpu_softmax_bf16")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(3)
    x = strided(64, 3000, 3008, "bf16", gen)[1]
    want = torch.softmax(-1.5 * x.float(), -1)
    # numpy (bf16 as uint16 bits), copied to the GPU and back
    xn = x.cpu().view(torch.int16).numpy().view(np.uint16)
    yn = k(xn, scale=-1.5)
    assert isinstance(yn, np.ndarray)
    got = torch.from_numpy(yn.view(np.int16)).view(torch.bfloat16).float()
    assert torch.allclose(got, want.cpu(), atol=4e-3, rtol=1e-2)

    class DLPackOnly:  # an object with only the DLPack protocol
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, *a, **kw):
            return self.t.__dlpack__(*a, **kw)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    y = torch.empty(64, 3000, dtype=torch.bfloat16, device="cuda")
    k(DLPackOnly(x), y=y, scale=-1.5)
    torch.cuda.synchronize()
    assert torch.allclose(y.float(), want, atol=4e-3, rtol=1e-2)

    s = torch.cuda.Stream()
    y2 = torch.full_like(y, float("nan"))
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        k(x, y=y2, scale=-1.5)            # the current (side) stream
    s.synchronize()
    assert torch.allclose(y2.float(), want, atol=4e-3, rtol=1e-2)
    y3 = torch.full_like(y, float("nan"))
    s.wait_stream(torch.cuda.current_stream())
    k(x, y=y3, scale=-1.5, stream=s)      # an explicit stream
    s.synchronize()
    assert torch.equal(y3, y2)


def test_in_place_and_errors():
    k = kernel("gpu_addrms_bf16")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(4)
    ins, _, _ = operands(k, 33, 9000, "pad", gen)
    want_y, want_s = k(**ins)
    x, r = ins["x"].clone(), ins["residual"].clone()
    y, s = k(x, r, ins["weight"], y=x, s_out=r)   # y over x, s over residual
    assert y is x and s is r
    torch.cuda.synchronize()
    assert torch.equal(s, want_s) and torch.equal(y, want_y)
    with pytest.raises(RuntimeFailure, match="overlaps"):
        k(ins["x"], ins["residual"], ins["weight"], y=ins["residual"])
    single = kernel("gpu_rmsnorm_bf16")
    xs = torch.randn(4, 1025, device="cuda").to(torch.bfloat16)
    with pytest.raises(RuntimeFailure, match="cols = 1025: this kernel takes cols <= 1024"):
        single(xs, weight=torch.ones(1025, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(RuntimeFailure, match="x must be row-major"):
        single(torch.randn(1024, 4, device="cuda").to(torch.bfloat16).t(),
               weight=torch.ones(1024, device="cuda", dtype=torch.bfloat16))


def test_many_rows_and_empty():
    """Many short rows (25000 workgroups of 8 rows) and empty calls (nothing launched, an empty output)."""
    k = kernel("gpu_rmsnorm_bf16")
    x = torch.randn(200000, 64, device="cuda").to(torch.bfloat16)
    w = torch.rand(64, device="cuda").to(torch.bfloat16)
    y = k(x, weight=w)
    ref = torch.nn.functional.rms_norm(x.float(), (64,), w.float(), k.plan.spec.params.row.eps)
    assert torch.allclose(y.float(), ref, atol=2e-2, rtol=1e-2)
    e = k(torch.empty(0, 64, device="cuda", dtype=torch.bfloat16), weight=w)
    assert e.shape == (0, 64)


@pytest.mark.parametrize("name", ["gpu_softmax_bf16_lds", "gpu_layernorm_res_lds"])
def test_row_cache_long_rows_vs_torch(name):
    """row_in = shared at issue 11's row length: 1000 rows of 32768 columns (64 KiB of bf16 per row in dynamic
    shared memory, over the default 48 KiB: the launcher raises the limit), several workgroups per SM."""
    k = kernel(name)
    b = k.plan.body
    assert b.cache_tiles and b.lds_bytes > 48 * 1024
    gen = torch.Generator(device="cuda")
    gen.manual_seed(5)
    ins, _, _ = operands(k, 1000, 32768, "tight", gen)
    out = k(**ins)
    y = (out if isinstance(out, tuple) else (out,))[0]
    ref = _torch_ref(k, ins)
    err = (torch.linalg.norm((y.float() - ref).flatten()) / torch.linalg.norm(ref.flatten())).item()
    assert err <= TOL["bf16"], err


RSTD = ["gpu_rms_rstd_none", "gpu_addrms_rstd_none", "gpu_rms_rstd_bf16", "gpu_addrms_rstd_any",
        "gpu_addrms_rstd_32k"]


@pytest.mark.parametrize("name", RSTD)
def test_rstd_vs_float64(name):
    """rstd = true (and y = none): 2048 x 4096 (32768 for the long kernel) and ragged widths (1, 7, 100, 1000, 4097
    where the kernel takes them) with odd strides; every output poisoned first, rstd against float64 (and torch),
    y and s_out as the other row ops; the padding between rows untouched."""
    k = kernel(name)
    r, b = k.plan.spec.params.row, k.plan.body
    gen = torch.Generator(device="cuda")
    gen.manual_seed(6)
    big = 32768 if b.max_cols == 32768 else 4096
    shapes = [(2048, big, "tight")] + [(rows, c, "odd") for rows, c in ((1, 1), (3, 7), (65, 100), (17, 1000),
                                                                        (9, 4097)) if c <= (b.max_cols or c)]
    for rows, cols, mode in shapes:
        stride = {"tight": cols, "odd": cols + 3}[mode]
        ins = {"x": strided(rows, cols, stride, r.x.value, gen)[1]}
        if r.residual:
            ins["residual"] = strided(rows, cols, stride, r.residual.value, gen)[1]
        if r.weight:
            ins["weight"] = (torch.rand(cols, generator=gen, device="cuda") + 0.5).to(TORCH[r.w_dtype.value])
        stores = {}
        if r.write_y:
            stores["y"] = strided(rows, cols, stride, r.y.value, poison=True)
        if r.residual:
            stores["s_out"] = strided(rows, cols, stride, r.residual.value, poison=True)
        outs = {n: v for n, (_, v) in stores.items()}
        outs["rstd"] = torch.full((rows,), float("nan"), device="cuda")
        before = {n: st.clone() for n, (st, _) in stores.items()}
        got = k(**ins, **outs)
        torch.cuda.synchronize()
        got = got if isinstance(got, tuple) else (got,)
        assert got[-1] is outs["rstd"], "rstd is returned last"
        what = f"{name} {rows}x{cols} ({mode})"
        for n, (st, v) in stores.items():
            pad = torch.ones_like(st, dtype=torch.bool)
            pad[: v.shape[0] * v.stride(0)].view(v.shape[0], v.stride(0))[:, : v.shape[1]] = False
            assert torch.equal(st[pad].view(torch.uint8), before[n][pad].view(torch.uint8)), f"{what}: {n} padding"
        assert not torch.isnan(outs["rstd"]).any(), f"{what}: rstd rows unwritten"
        check(k, ins, outs, what)
        v = (ins["x"].double() if not r.residual else outs["s_out"].double())
        want = torch.rsqrt(v.pow(2).mean(-1) + r.eps)
        err = ((outs["rstd"].double() - want).norm() / want.norm()).item()
        assert err <= 2e-5, f"{what}: rstd vs torch float64 {err:.3e}"
