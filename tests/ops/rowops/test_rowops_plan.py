"""The row ops' DSL, planner and ABI: defaults planned per wave size, every refusal naming the parameter, its value
and what is legal, the ABI as data (unused tensors, in-place aliases, the cols bound), the launch, and the host
entry's checks as generated."""

from __future__ import annotations

import json

import pytest

from ckgen.codegen import render_header, render_kernel, render_launchers
from ckgen.codegen.render import launcher_view, manifest_kernels
from ckgen.errors import CkgenError, SpecError, ValidationError
from ckgen.frontend import load_text
from ckgen.ir.abi import Abi, Arg, ArgKind
from ckgen.ir.plan import GridDim
from ckgen.ir.registry import get_op
from ckgen.ir.types import DType
from ckgen.lower import plan_kernel
from ckgen.ops.rowops.plan import WEIGHTS_A_VECTOR_AT_A_TIME
from ckgen.ops.rowops.registers import REG_MODEL, estimate_registers
from ckgen.ops.rowops.tiles import BOUNDED_SINGLE_PASS, SINGLE_PASS

AMD, NV = ("gfx908", "gfx90a", "gfx942", "gfx950"), ("sm_80", "sm_90")


def plan1(body: str, arch: str = "gfx942", op: str = "softmax"):
    (spec,) = load_text(f"kernel k {{ op = {op} {body} }}", "t.ck", (arch,))
    return plan_kernel(spec, arch)


def refused(body: str, arch: str = "gfx942", op: str = "softmax") -> CkgenError:
    with pytest.raises(CkgenError) as e:
        plan1(body, arch, op)
    return e.value


# ------------------------------------------------------------------------------------------ planned defaults
@pytest.mark.parametrize("arch,max_cols,want", [
    ("sm_90", 1024, (32, 4, 8, False)), ("sm_90", 4096, (128, 4, 2, False)), ("sm_90", 8192, (256, 4, 1, False)),
    ("sm_90", 16384, (512, 4, 1, False)),
    ("sm_90", 32768, (512, 2, 1, True)),    # row_in = shared: 4 tiles of 8192 in 64 KiB of shared memory
    ("gfx942", 1024, (32, 4, 8, False)), ("gfx942", 4096, (128, 4, 2, False)), ("gfx942", 16384, (512, 4, 1, False)),
    ("gfx942", 32768, (512, 4, 1, True)),   # 8 vectors per thread spill SGPRs, 1024 threads too many VGPRs
    ("gfx942", 65536, (512, 4, 1, False)),  # 128 KiB: split rows, 4 workgroups of 16384 columns (split.py)
    ("gfx942", 7, (1, 1, 256, False)), ("sm_90", 100, (4, 4, 64, False)),
])
def test_planned_softmax_bf16(arch: str, max_cols: int, want: tuple) -> None:
    b = plan1(f"x = bf16 max_cols = {max_cols}", arch).body
    assert (b.threads_per_row, b.reg_vecs, b.rows_per_workgroup, b.looped) == want
    assert b.looped or b.tile_cols * max(1, b.split) >= max_cols
    assert b.split == (4 if max_cols == 65536 else 0)
    assert b.threads % b.wave_size == 0 and b.vec == 8


def test_nothing_given_is_a_looped_kernel_for_any_cols() -> None:
    for arch, w in (("gfx942", 64), ("sm_90", 32)):
        p = plan1("x = f16", arch, "layernorm")
        b = p.body
        assert b.looped and b.max_cols is None and b.threads_per_row == w and b.reg_vecs == 4
        assert p.abi["cols"].at_most is None
    # a layer norm row of 32768 bf16 is too many registers for one pass of one workgroup: looped on AMD; on
    # NVIDIA a single pass bounded for two workgroups per SM (below)
    assert plan1("x = bf16 max_cols = 32768", "gfx942", "layernorm").body.looped
    assert not plan1("x = bf16 max_cols = 32768", "sm_90", "layernorm").body.looped


@pytest.mark.parametrize("op,body,bounded", [
    ("layernorm", "x = bf16 max_cols = 32768", True), ("rmsnorm", "x = f16 max_cols = 32768", True),
    ("softmax", "x = bf16 max_cols = 32768", False),      # keeps the row cache (measured faster)
    ("softmax", "x = bf16 max_cols = 32768 threads_per_row = 512 reg_vecs = 8 looped = false", True),
    ("layernorm", "x = bf16 residual = true max_cols = 32768", False), ("rmsnorm", "x = bf16 y = i8 max_cols = 32768", False),
    ("layernorm", "x = bf16 max_cols = 16384", False),     # one workgroup's SINGLE_PASS line holds it (weighted rule)
    ("layernorm", "x = bf16 max_cols = 32768 row_in = shared", False),
])
def test_register_bounded_single_pass(op: str, body: str, bounded: bool) -> None:
    """BOUNDED_SINGLE_PASS on sm_90: 512 threads x 8 vectors, compiled for 2 workgroups per SM, weight and bias
    read 2 vectors at a time (an exact tile of 8 vectors; others: test_fitted_register_bounded_rows); not for
    residual or int8 kernels, nor on AMD (no line for wave64)."""
    p = plan1(body, "sm_90", op)
    b = p.body
    src = render_kernel(p)
    if bounded:
        assert (b.threads_per_row, b.reg_vecs, b.looped, b.workgroups_per_cu, b.weight_vecs) == (512, 8, False, 2, 2)
        assert "CKGEN_LAUNCH_BOUNDS_MIN(512, 2)" in src and "kWeightBatch = 2;" in src
        assert b.registers_estimate == 64 and "registers for 2 workgroups per CU / SM" in get_op(op).summary(p)
    elif not b.looped and op != "softmax" and not p.spec.params.row.quantized:  # test_weighted_single_pass
        assert (b.threads, b.weight_vecs, b.workgroups_per_cu) == (512, 1, 2) and "kWeightBatch = 1;" in src
    else:  # (row caches: bounded for CACHE_GROUPS workgroups on NVIDIA, test_row_cache_is_planned_...)
        assert b.weight_vecs == 0 and "kWeightBatch" not in src
        assert b.workgroups_per_cu == (2 if b.cache_tiles else 0)
    if "row_in" not in body:  # (gfx942's LDS holds no 64 KiB row cache beside the scratch)
        amd = plan1(body.replace("threads_per_row = 512 reg_vecs = 8 looped = false", ""), "gfx942", op).body
        assert amd.workgroups_per_cu == 0 and amd.weight_vecs == 0


@pytest.mark.parametrize("op,body,threads,weighted,groups", [
    ("layernorm", "x = bf16 max_cols = 11008", 256, True, 0), ("layernorm", "x = bf16 max_cols = 4096", 256, True, 0),
    ("rmsnorm", "x = f16 max_cols = 7168", 256, True, 0), ("rmsnorm", "x = bf16 max_cols = 11008", 512, True, 0),
    ("layernorm", "x = bf16 residual = true max_cols = 11008", 512, True, 2),  # one workgroup by its estimate
    ("layernorm", "x = bf16 weight = none max_cols = 4096", 256, False, 0),   # neither weight nor bias
    ("rmsnorm", "x = bf16 y = i8 max_cols = 7168", 256, False, 0),           # per-row scales keep the whole tile
    ("rmsnorm", "x = bf16 y = i8 quant = group(128) max_cols = 7168", 256, True, 0),  # per-group: one pass
    ("softmax", "x = bf16 max_cols = 11008", 256, False, 0),
    ("layernorm", "x = bf16 max_cols = 512 threads_per_row = 64 reg_vecs = 1", 256, False, 0),  # one vector per thread
])
def test_weighted_single_pass(op: str, body: str, threads: int, weighted: bool, groups: int) -> None:
    """WEIGHTED_SINGLE_PASS_REGISTERS: on sm_90 a single pass of two or more vectors per thread with a weight or bias
    (and no per-row quantized y) reads them a vector at a time, estimated at 64 registers per thread; compiled for the
    workgroups per SM that leave 64 registers only where its whole-tile estimate left room for one; gfx942 keeps its
    plan (no bound, the whole tile's weights)."""
    p = plan1(body, "sm_90", op)
    b, src = p.body, render_kernel(p)
    assert b.threads == threads and not b.looped
    if weighted:
        if b.weight_ahead and not groups:  # (the weight-ahead rule bounds for 64 registers: below)
            groups = 65536 // (64 * threads)
        assert (b.weight_vecs, b.workgroups_per_cu) == (1, groups) and b.registers_estimate <= 64
        bound = f"CKGEN_LAUNCH_BOUNDS_MIN({threads}, {groups})" if groups else f"CKGEN_LAUNCH_BOUNDS({threads})"
        assert "kWeightBatch = 1;" in src and bound in src
        assert any(why.startswith(WEIGHTS_A_VECTOR_AT_A_TIME) for why in b.why)
    else:
        assert b.weight_vecs == 0 and "kWeightBatch" not in src and b.workgroups_per_cu == 0
    amd = plan1(body, "gfx942", op).body
    assert amd.weight_vecs == 0 and amd.workgroups_per_cu == 0


@pytest.mark.parametrize("op,body,ahead", [
    ("layernorm", "x = bf16 max_cols = 6912", True),     # 128 x 7, two rows: the fit
    ("rmsnorm", "x = bf16 max_cols = 2560", True),       # 64 x 5, four rows
    ("rmsnorm", "x = bf16 max_cols = 8960", False),      # 128 x 9: more than WEIGHT_AHEAD's 7 vectors
    ("layernorm", "x = bf16 max_cols = 4096", False),    # 128 x 4, two rows: fewer than WEIGHT_AHEAD's 5 vectors
    ("layernorm", "x = bf16 max_cols = 11008", False),   # one row per workgroup
    ("rmsnorm", "x = bf16 y = i8 max_cols = 7168", False),  # the whole tile's weights (per-row scales)
])
def test_weight_ahead(op: str, body: str, ahead: bool) -> None:
    """WEIGHT_AHEAD: weights a vector at a time, two rows or more per workgroup, 5 to 7 vectors per thread: the
    next vector's weight and bias asked for before this one's y is stored, registers bounded for 64 (sm_90); the
    few-rows entry keeps the whole tile's weights, unbounded; gfx942 has no such rule."""
    b = plan1(body, "sm_90", op).body
    src = render_kernel(plan1(body, "sm_90", op))
    assert b.weight_ahead == ahead and ("kWeightAhead = true;" in src) == ahead
    if ahead:
        assert b.weight_vecs == 1 and b.rows_per_workgroup >= 2 and 5 <= b.reg_vecs <= 7
        assert f"CKGEN_LAUNCH_BOUNDS_MIN({b.threads}, {65536 // (64 * b.threads)})" in src
        assert f"CKGEN_LAUNCH_BOUNDS_MIN({b.threads}, 1) void" in src  # (<name>_few)
        assert any("WEIGHT_AHEAD" in why for why in b.why)
    assert not plan1(body, "gfx942", op).body.weight_ahead


def test_bounded_lines_are_consistent() -> None:
    for w, lines in BOUNDED_SINGLE_PASS.items():
        for v, t, r, groups, wv in lines:
            assert t * r >= v and groups >= 2 and 1 <= wv <= r and r % wv == 0
            assert not any(v <= lim and t * r <= tt * rr for lim, tt, rr in SINGLE_PASS[w]), "a line beyond the table"


def test_one_plan_per_wave_size() -> None:
    """Every AMD arch (and every NVIDIA arch) gets the same rows, workgroup and grid: one library's launcher."""
    src = "x = bf16 residual = f32 y = i8 max_cols = 6000"
    for group in (AMD[1:], NV):
        plans = [plan1(src, a, "rmsnorm") for a in group]
        assert len({(p.body.threads_per_row, p.body.reg_vecs, p.body.rows_per_workgroup, p.launch) for p in plans}) == 1


def test_given_parameters_are_kept() -> None:
    b = plan1("x = f32 vec = 2 threads_per_row = 8 rows_per_workgroup = 16 reg_vecs = 3 looped = true").body
    assert (b.vec, b.threads_per_row, b.rows_per_workgroup, b.reg_vecs, b.looped, b.tile_cols) == (2, 8, 16, 3, True, 48)
    b = plan1("x = bf16 threads_per_row = 64 max_cols = 1500").body   # reg_vecs planned to hold max_cols
    assert (b.reg_vecs, b.looped, b.tile_cols) == (3, False, 1536)


def test_tables_and_register_model_are_consistent() -> None:
    for w, lines in SINGLE_PASS.items():
        assert [v for v, _, _ in lines] == sorted(v for v, _, _ in lines)
        assert all(t * r >= v for v, t, r in lines), "a line holds its rows"
        assert w in REG_MODEL


# ------------------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize("op,body,param,legal", [
    ("softmax", "x = i8", "x", "f16, bf16, f32"),
    ("softmax", "x = f16 y = i32", "y", "f16, bf16, f32, i8"),
    ("layernorm", "x = f16 residual = i8", "residual", "f16, bf16, f32"),
    ("softmax", "x = bf16 vec = 16", "vec", "1, 2, 4, 8"),
    ("softmax", "x = f32 vec = 3", "vec", "1, 2, 4 "),
    ("softmax", "x = bf16 threads_per_row = 48", "threads_per_row", "a power of two"),
    ("rmsnorm", "x = bf16 threads_per_row = 16 rows_per_workgroup = 3", "rows_per_workgroup", "a multiple of 4"),
    ("rmsnorm", "x = bf16 threads_per_row = 512 rows_per_workgroup = 4", "rows_per_workgroup", "1..2"),
    ("softmax", "x = bf16 looped = false", "looped", "max_cols"),
    ("softmax", "x = bf16 looped = false max_cols = 100000", "max_cols", "max_cols <= 16384 for a single pass"),
    ("softmax", "x = bf16 threads_per_row = 64 reg_vecs = 2 max_cols = 2000 looped = false", "max_cols",
     "max_cols <= 1024"),
    ("layernorm", "x = bf16 residual = f32 threads_per_row = 256 reg_vecs = 16 looped = true", "reg_vecs",
     "reg_vecs <= 4 with 256 threads"),
    ("layernorm", "x = bf16 threads_per_row = 1024 reg_vecs = 4", "reg_vecs", "fewer threads per workgroup"),
])
def test_refusals_name_parameter_value_and_legal(op: str, body: str, param: str, legal: str) -> None:
    e = refused(body, "gfx942", op)
    assert isinstance(e, ValidationError) and e.param == param, e.render()
    assert f"{param} = " in e.message and legal in (e.hint or ""), e.render()
    assert e.span is not None and "t.ck" in e.render()


@pytest.mark.parametrize("op,body,match", [
    ("rmsnorm", "x = bf16 bias = true", "unknown parameter 'bias' for op rmsnorm"),
    ("layernorm", "x = bf16 scale = 2.0", "unknown parameter 'scale' for op layernorm"),
    ("softmax", "x = bf16 weight = true", "unknown parameter 'weight' for op softmax"),
    ("layernorm", "x = bf16 weight = bf16 bias = f32", "weight and bias share one dtype"),
    ("layernorm", "x = bf16 eps = -1", "eps = -1: out of range"),
    ("softmax", "x = bf16 max_cols = 0", "max_cols = 0: expected an integer"),
    ("softmax", "x = bf16 residual = yes", "residual = yes: expected none, true or a dtype"),
    ("softmax", "x = bf16 log = 1", "log = 1: expected one of true, false"),
    ("softmax", "y = bf16", "missing x"),
])
def test_dsl_errors(op: str, body: str, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        load_text(f"kernel k {{ op = {op} {body} }}", "t.ck", ("gfx942",))


def test_gfx908_refuses_by_name_what_its_smaller_register_file_cannot_hold() -> None:
    plan1("x = bf16 max_cols = 32768", "gfx942")
    e = refused("x = bf16 max_cols = 32768", "gfx908")
    assert isinstance(e, ValidationError) and e.param == "reg_vecs" and "gfx908" in e.message


# ------------------------------------------------------------------------------------------ ABI and launch
def test_abi_per_op() -> None:
    names = {op: [a.name for a in plan1("x = bf16", "gfx942", op).abi.args] for op in ("softmax", "layernorm", "rmsnorm")}
    mats = ["rows", "cols", "stride_x", "stride_res", "stride_y", "stride_s"]
    assert names["softmax"] == ["x", "residual", "y", "s_out", "y_scale", *mats, "scale"]
    assert names["layernorm"] == ["x", "residual", "weight", "bias", "y", "s_out", "y_scale", *mats, "eps"]
    assert names["rmsnorm"] == ["x", "residual", "weight", "y", "s_out", "y_scale", *mats, "eps"]


def test_abi_unused_aliases_bounds_and_defaults() -> None:
    abi = plan1("x = f16 residual = f32 weight = none y = i8 eps = 1e-3 max_cols = 5000", op="layernorm").abi
    assert plan1("x = f16", op="layernorm").abi["bias"].unused is False   # default: weight and bias
    assert [a.name for a in abi.tensors if a.unused] == ["weight", "bias"]
    assert abi["y"].aliases == () and abi["y"].dtype == DType.I8       # int8 y cannot be x
    assert abi["s_out"].aliases == ("residual",)                         # f32 s_out over the f32 residual only
    assert abi["y_scale"].dims == ("rows",) and not abi["y_scale"].unused
    assert abi["cols"].at_most == 5000 and abi["eps"].default == 1e-3
    abi = plan1("x = bf16 residual = true", op="rmsnorm").abi
    assert abi["y"].aliases == ("x",) and abi["s_out"].aliases == ("x", "residual")
    assert abi["y_scale"].unused and abi["cols"].at_most is None
    sm = plan1("x = f32 scale = -0.5 log = true").abi
    assert sm["scale"].default == -0.5 and "log_softmax" in sm["scale"].doc
    j = sm.to_json()
    assert {d["name"] for d in j if d.get("aliases")} == {"y"}


def test_abi_declarations_are_checked() -> None:
    t = ArgKind.TENSOR
    x = Arg("x", t, dtype=DType.F16, dims=("n",), strides=(1,))
    with pytest.raises(ValueError, match="only written tensors declare aliases"):
        Arg("z", t, dtype=DType.F16, dims=("n",), strides=(1,), aliases=("x",))
    with pytest.raises(ValueError, match="same dtype and dims"):
        Abi((x, Arg("y", t, dtype=DType.F32, role="out", dims=("n",), strides=(1,), aliases=("x",)),
             Arg("n", ArgKind.SIZE)))
    with pytest.raises(ValueError, match="only sizes have an upper bound"):
        Arg("s", ArgKind.STRIDE, at_most=4)
    with pytest.raises(ValueError, match="GridDim.cap"):
        GridDim(None, 1, cap=4)


def test_grid_cap_and_launch() -> None:
    p = plan1("x = bf16 max_cols = 1024", "sm_90")
    g = p.launch.grid[0]
    assert (g.size, g.per, g.cap) == ("rows", 8, 2**20)
    assert p.launch.grid_counts({"rows": 17, "cols": 5}) == (3, 1, 1)
    assert p.launch.grid_counts({"rows": 2**31 - 1, "cols": 5}) == (2**20, 1, 1)
    assert g.to_json() == {"size": "rows", "per": 8, "split": True, "cap": 2**20}
    v = launcher_view(p)
    assert v["grid"][0] == "(ckgen_ceil_div(rows, 8) < 1048576 ? ckgen_ceil_div(rows, 8) : 1048576)"
    assert ("cols", 1024) in v["sizes"] and ("rows", "INT32_MAX") in v["sizes"]
    # the strides of unused tensors (residual, s_out) are not checked: a C caller may pass 0
    assert [s for s, _ in v["stride_checks"]] == ["stride_x", "stride_y"]


def test_generated_sources() -> None:
    p = plan1("x = bf16 residual = f32 y = i8 max_cols = 3000", "gfx942", "rmsnorm")
    k = render_kernel(p)
    assert "ckgen::rowops::rmsnorm_entry<ckgen_gen::k_cfg>(x, residual, weight, y, s_out, y_scale" in k
    for member in ("using TRes = float;", "using TOut = int8_t;", "kOp = ckgen::rowops::kRmsNorm",
                   "kQuantI8 = true", "kLooped = false", f"kTileCols = {p.body.tile_cols}",
                   f"kLdsBytes = {p.body.lds_bytes}"):
        assert member in k
    host = render_launchers("t", [p], "amd")
    assert "if (cols < 0 || cols > 3000) return CKGEN_ERROR_INVALID_VALUE;" in host
    assert "if (rows == 0 || cols == 0) return CKGEN_SUCCESS;" in host
    hdr = render_header("t", [p])
    assert "int ckgen_k(const void* x, const void* residual, const void* weight, void* y, void* s_out, " \
           "void* y_scale, int64_t rows, int64_t cols" in hdr and "at most 3000 (max_cols)" in hdr
    m = manifest_kernels([p])[0]
    assert m["op"] == "rmsnorm" and json.dumps(m)
    cols = next(a for a in m["abi"] if a["name"] == "cols")
    assert cols["at_most"] == 3000
    assert m["plans"]["gfx942"]["body"]["tile_cols"] == p.body.tile_cols


def test_registry_serves_three_ops_from_one_package() -> None:
    ops = [get_op(n) for n in ("softmax", "layernorm", "rmsnorm")]
    assert {type(o).__module__ for o in ops} == {"ckgen.ops.rowops"}
    assert [o.kernel_template for o in ops] == ["rowops/kernel.hip.j2"] * 3
    assert "log" in [k.name for k in ops[0].keys] and "bias" in [k.name for k in ops[1].keys]
    assert "bias" not in [k.name for k in ops[2].keys]


def test_register_estimate_grows_with_the_tile() -> None:
    (spec,) = load_text("kernel k { op = layernorm x = bf16 residual = true }", "t.ck", ("gfx942",))
    r = spec.params.row
    for w in (32, 64):
        est = [estimate_registers(r, 8, n, False, w) for n in (1, 2, 4, 8)]
        assert est == sorted(est) and est[0] < est[-1]


# ------------------------------------------------------------------------------------------ row_in = shared
@pytest.mark.parametrize("op", ["softmax", "layernorm", "rmsnorm"])
def test_row_cache_is_planned_where_no_register_single_pass_fits(op: str) -> None:
    """sm_90 / sm_80 bf16 rows of 32768: the row cache (64 KiB + the scratch, dynamic shared memory on CUDA),
    the same plan on both arches (softmax by default, the norms with row_in = shared: their default is the
    register-bounded single pass); gfx942 (32 KiB planning limit) stays looped in registers, f32 rows (128 KiB) are
    split over workgroups (split.py)."""
    given = "" if op == "softmax" else " row_in = shared"
    plans = [plan1("x = bf16 max_cols = 32768" + given, a, op) for a in NV]
    assert len({(p.body, p.launch) for p in plans}) == 1
    p = plans[1]
    b = p.body
    assert b.looped and b.cache_tiles * b.tile_cols >= 32768 > (b.cache_tiles - 1) * b.tile_cols
    scratch = 2 * (b.threads // 32) * {"softmax": 2, "layernorm": 3, "rmsnorm": 1}[op] * 4
    assert b.lds_bytes == 65536 + scratch and p.entries[0].lds_bytes == b.lds_bytes
    view = get_op(op).kernel_view(p)
    assert ("int", "kCacheTiles", str(b.cache_tiles)) in view["constants"]
    assert "kCacheTiles = " in render_kernel(p) and "row in shared memory" in get_op(op).summary(p)
    # two workgroups per SM, as planned, held by the launch bounds (CACHE_BOUNDED: ptxas may otherwise take more)
    assert b.workgroups_per_cu == 2 and "CKGEN_LAUNCH_BOUNDS_MIN(512, 2)" in render_kernel(p)
    split = plan1("x = f32 max_cols = 32768", "sm_90", op)
    assert split.body.split == 4 and split.body.cache_tiles == 0 and split.abi.workspace is not None
    for body, arch in (("x = bf16 max_cols = 32768", "gfx942"), ("x = f32 max_cols = 32768 split = 1", "sm_90"),
                       ("x = bf16 max_cols = 32768 looped = true", "sm_90"),
                       ("x = bf16 max_cols = 32768 row_in = registers", "sm_90"), ("x = bf16", "sm_90")):
        q = plan1(body, arch, op)
        assert q.body.looped and q.body.cache_tiles == 0 and q.entries[0].lds_bytes == 0, (body, arch)
        assert "kCacheTiles" not in render_kernel(q)
    # rows a register single pass holds keep it
    assert plan1("x = bf16 max_cols = 8192", "sm_90", op).body.cache_tiles == 0


def test_row_cache_given_parameters_and_sizes() -> None:
    b = plan1("x = f16 residual = f32 max_cols = 5000 row_in = shared threads_per_row = 128 reg_vecs = 2",
              "gfx942").body
    assert (b.threads_per_row, b.reg_vecs, b.tile_cols, b.cache_tiles) == (128, 2, 2048, 3)
    assert b.lds_bytes == 3 * 2 * 128 * 32 + 2 * 2 * 2 * 4   # f32 slots of 8 elements, MultiWave scratch of 2 waves
    b = plan1("x = bf16 vec = 2 max_cols = 1000 row_in = shared", "sm_90", "rmsnorm").body
    assert b.lds_bytes % 16 == 0 and b.cache_tiles == 1
    b = plan1("x = f32 max_cols = 100 row_in = shared threads_per_row = 16 rows_per_workgroup = 4", "gfx942").body
    assert (b.threads, b.cache_tiles, b.lds_bytes) == (64, 1, 64 * 4 * 16)   # rows share a wave: no scratch


@pytest.mark.parametrize("arch,body,param,legal", [
    ("gfx942", "x = bf16 row_in = shared", "row_in", "shared with max_cols"),
    ("gfx942", "x = bf16 max_cols = 4096 row_in = shared looped = false", "looped", "true (or leave it out)"),
    ("gfx942", "x = bf16 max_cols = 32768 row_in = shared", "max_cols", "max_cols <= 24576 with row_in = shared"),
    ("gfx90a", "x = bf16 max_cols = 32769 row_in = shared threads_per_row = 64 reg_vecs = 1", "max_cols",
     "max_cols <= 32768"),
    ("sm_90", "x = f32 max_cols = 65536 row_in = shared", "max_cols", "max_cols <= 57344 with row_in = shared"),
    ("sm_80", "x = f32 max_cols = 65536 row_in = shared", "max_cols", "max_cols <= 40960"),
])
def test_row_cache_refusals_name_the_limit(arch: str, body: str, param: str, legal: str) -> None:
    e = refused(body, arch)
    assert isinstance(e, ValidationError) and f"{param} = " in str(e) and legal in str(e), str(e)


def test_row_cache_of_a_whole_64_kib_row_on_amd() -> None:
    """A one-wave row has no scratch: the cache may take all 64 KiB of gfx90a / gfx942's LDS (32768 bf16)."""
    for arch in ("gfx90a", "gfx942"):
        b = plan1("x = bf16 max_cols = 32768 row_in = shared threads_per_row = 64 reg_vecs = 1", arch).body
        assert (b.lds_bytes, b.cache_tiles, b.tile_cols) == (65536, 64, 512)


def test_row_in_dsl_values() -> None:
    with pytest.raises(SpecError, match="row_in = shard: expected registers or shared"):
        plan1("x = bf16 max_cols = 64 row_in = shard")
    assert plan1("x = bf16 max_cols = 64 row_in = registers").body.cache_tiles == 0


# ------------------------------------------------------------------------------------------ any width
#: hidden and intermediate widths of open models (bench/shapes/hidden_sizes.txt) that are not powers of two
MODEL_WIDTHS = (896, 1152, 2304, 2560, 3072, 3584, 4544, 4608, 5120, 5376, 6144, 6912, 7168, 8960, 11008, 13824,
                14336, 15360)


@pytest.mark.parametrize("op,body", [("softmax", "x = bf16"), ("layernorm", "x = bf16"), ("rmsnorm", "x = bf16"),
                                     ("rmsnorm", "x = bf16 residual = true")])
def test_fitted_tiles_at_model_widths(op: str, body: str) -> None:
    """sm_90: a row of any width up to one workgroup's registers is one tile fitted to it: at most 16% of its
    vector slots idle (15.6%: 6912 and 13824 columns of softmax and add + RMS norm, whose 7 vectors per thread
    would leave registers for one workgroup per SM), the whole-vector path for a tile wider than the row (not for
    an exact tile: its kernel keeps the registers and code it had), an explanation."""
    for cols in MODEL_WIDTHS:
        b = plan1(f"{body} max_cols = {cols}", "sm_90", op).body
        slots = b.threads_per_row * b.reg_vecs
        assert not b.looped and b.tile_cols >= cols, (op, cols, b)
        assert b.whole_vectors == (b.tile_cols != cols), (op, cols, b)  # exact tiles keep their code
        assert 1 - cols / b.vec / slots <= 0.16, (op, cols, b.threads_per_row, b.reg_vecs)
        assert any(w.startswith("fitted to max_cols") for w in b.why), b.why


@pytest.mark.parametrize("op,cols,want", [
    ("layernorm", 5120, (128, 5)), ("layernorm", 7168, (128, 7)), ("rmsnorm", 14336, (256, 7)),
    ("layernorm", 3072, (128, 3)), ("rmsnorm", 2304, (32, 9)), ("layernorm", 2304, (64, 5)),
    ("softmax", 4544, (128, 5)), ("layernorm", 4096, (128, 4)), ("softmax", 16384, (512, 4)),
])
def test_fitted_tile_choices(op: str, cols: int, want: tuple) -> None:
    """Exact tiles where a power of two of threads divides the row with few enough vectors per thread for two
    workgroups per SM (layer norm at 2304 would need 9 per thread at 32 threads: 64 x 5, 10% idle, instead)."""
    b = plan1(f"x = bf16 max_cols = {cols}", "sm_90", op).body
    assert (b.threads_per_row, b.reg_vecs) == want


def test_fitted_register_bounded_rows() -> None:
    """Beyond one workgroup's registers (sm_90, layer norm / RMS norm): the bounded 512-thread tile with the fewest
    vectors that hold the row, weights one vector at a time and the whole-vector path; an exact tile of its own 8
    vectors is the measured kernel (batches of 2, the masked path for shorter rows)."""
    b = plan1("x = bf16 max_cols = 17920", "sm_90", "layernorm").body
    assert (b.threads_per_row, b.reg_vecs, b.weight_vecs, b.workgroups_per_cu, b.whole_vectors) == (512, 5, 1, 2, True)
    b = plan1("x = bf16 max_cols = 29568", "sm_90", "rmsnorm").body  # 8 vectors, not exact: one at a time
    assert (b.threads_per_row, b.reg_vecs, b.weight_vecs, b.workgroups_per_cu, b.whole_vectors) == (512, 8, 1, 2, True)
    b = plan1("x = bf16 max_cols = 32768", "sm_90", "layernorm").body
    assert (b.threads_per_row, b.reg_vecs, b.weight_vecs, b.workgroups_per_cu, b.whole_vectors) == (512, 8, 2, 2, False)


def test_whole_vectors_within_the_sgpr_budget_on_wave64() -> None:
    """gfx942: the whole-vector path where the SGPR estimate leaves room for it, said in the plan's reasons."""
    ln = plan1("x = bf16 max_cols = 2304", "gfx942", "layernorm").body
    rms = plan1("x = bf16 max_cols = 2304", "gfx942", "rmsnorm").body
    assert not ln.whole_vectors and any("masked path" in w for w in ln.why)
    assert rms.whole_vectors
    assert plan1("x = bf16 max_cols = 2304", "sm_90", "layernorm").body.whole_vectors


def test_widths_not_whole_vectors_keep_the_table() -> None:
    """max_cols not a multiple of vec: every row ends inside a vector at max_cols, the table's tile."""
    b = plan1("x = bf16 max_cols = 2300", "sm_90", "layernorm").body
    assert (b.threads_per_row, b.reg_vecs) == (128, 3) and any("not a whole number of vectors" in w for w in b.why)


def test_explain_kernel_says_how_and_why(tmp_path, capsys) -> None:
    """`ckgen explain FILE --kernel K`: the summary line per arch and the planner's reasons; --json the plan."""
    from ckgen.cli import main

    path = tmp_path / "w.ck"
    path.write_text("target sm_90, gfx942\nkernel ln { op = layernorm x = bf16 max_cols = 2304 }\n")
    assert main(["explain", str(path), "--kernel", "ln"]) == 0
    out = capsys.readouterr().out
    assert "ln on sm_90: layernorm bf16 -> bf16" in out and "ln on gfx942:" in out
    assert "why: fitted to max_cols = 2304 (288 vectors of 8): 64 threads x 5 vectors" in out
    assert "predicated per vector" in out and "masked path" in out  # sm_90 has the whole-vector path, gfx942 not
    assert main(["explain", str(path), "--kernel", "ln", "--arch", "sm_90", "--json"]) == 0
    (got,) = json.loads(capsys.readouterr().out)
    assert got["plan"]["threads_per_row"] == 64 and got["plan"]["whole_vectors"] and got["plan"]["why"]
    for args in (["--kernel", "nope"], [], ["--kernel", "ln", "--family", "f"], ["--kernel", "ln", "--shape", "1x2"]):
        assert main(["explain", str(path), *args]) == 2
    assert "no kernel 'nope'" in capsys.readouterr().err
