"""RMS norm with the per-row rstd output (``rstd = true``) and without normalized rows (``y = none``): the DSL
and its errors, the ABI (``rstd`` after ``y_scale``, ``y`` unused), the planner (a y = none kernel gets the normal
kernel's tile, long rows looped from registers: read once, no row cache, no default split), rung 1 (gfx90a / gfx942
/ gfx950 code objects and the sm_90 nvcc build without spills or scratch) and rung 2 (the emulator against float64:
1, 7, 100, 1000 and 4097 columns, with and without a residual, y = none and y = bf16, int8 y, split rows, the row
cache; every output poisoned first, s_out exact, padding between rows untouched; the sm_90 plans on the emulator
too). Bad calls: an rstd of the wrong dtype or shape is a CkgenError naming it."""

from __future__ import annotations

import numpy as np
import pytest

from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.lower import plan_kernel
from ckgen.ops.rowops.reference import RSTD_TOLERANCE
from tests.ops.rowops import harness as H

SOURCE = """
target gfx942
kernel none_1000     { op = rmsnorm x = bf16 y = none rstd = true max_cols = 1000 }
kernel none_any      { op = rmsnorm x = f16 y = none rstd = true eps = 1e-6 }
kernel res_none_any  { op = rmsnorm x = bf16 residual = true y = none rstd = true }
kernel res_none_4097 { op = rmsnorm x = bf16 residual = f32 y = none rstd = true max_cols = 4097 }
kernel y_4097        { op = rmsnorm x = bf16 rstd = true max_cols = 4097 }
kernel res_y_any     { op = rmsnorm x = bf16 residual = true rstd = true }
kernel i8_1000       { op = rmsnorm x = f32 y = i8 rstd = true weight = none max_cols = 1000 }
kernel res_none_s3   { op = rmsnorm x = bf16 residual = true y = none rstd = true max_cols = 5000 split = 3 }
kernel y_s3          { op = rmsnorm x = f16 rstd = true max_cols = 5000 split = 3 }
kernel none_lds      { op = rmsnorm x = bf16 y = none rstd = true max_cols = 3000 row_in = shared }
kernel res_none_32k  { op = rmsnorm x = bf16 residual = true y = none rstd = true max_cols = 32768 }
"""
SPECS = {s.name: s for s in load_text(SOURCE, "rowops_rstd.ck")}
WIDTHS = (1, 7, 100, 1000, 4097)
#: the kernels built for gfx90a / gfx942 / gfx950 and sm_90 (rung 1): each pipeline once
COMPILED = ("none_1000", "res_none_any", "res_none_4097", "y_4097", "i8_1000", "res_none_s3", "res_none_32k")
#: the kernels whose sm_90 plans also run on the emulator (warp32, the CUDA tail path)
NV_ON_EMU = ("none_1000", "res_none_any", "y_4097", "res_none_s3", "res_none_32k")


def plan(name: str, arch: str = "gfx942"):
    return plan_kernel(SPECS[name], arch)


def shapes(name: str) -> list[tuple[int, int, str]]:
    """(rows, cols, stride mode): every width of WIDTHS up to max_cols (and max_cols itself), strides varied,
    more rows than a workgroup holds; a split kernel's longest row."""
    p = plan(name)
    mc = p.body.max_cols
    cols = [c for c in WIDTHS if mc is None or c <= mc] + ([mc] if mc is not None and mc not in WIDTHS else [])
    if mc is None:
        cols.append(2 * p.body.tile_cols + 5)  # more than two tiles (looped)
    modes = H.STRIDE_MODES
    return [(2 * p.body.rows_per_workgroup + 1 if i % 2 else 3, c, modes[i % len(modes)]) for i, c in enumerate(cols)]


# ------------------------------------------------------------------------------------------ DSL, ABI, plans
def test_dsl_and_abi() -> None:
    r = SPECS["res_none_any"].params.row
    assert r.rstd and not r.write_y and r.weight is None and r.residual is not None
    p = plan("res_none_any")
    names = [a.name for a in p.abi.args]
    assert names[:8] == ["x", "residual", "weight", "y", "s_out", "y_scale", "rstd", "rows"]
    assert p.abi["y"].unused and p.abi["weight"].unused and not p.abi["rstd"].unused
    assert p.abi["rstd"].dtype.value == "f32" and p.abi["rstd"].dims == ("rows",) and p.abi["rstd"].role == "out"
    assert p.body.impl.endswith("rmsnorm_rstd_entry")
    assert [a.name for a in plan("y_4097").abi.args if a.writes and not a.unused] == ["y", "rstd"]
    # the description (cache key) names them; kernels without rstd keep theirs
    assert p.spec.params.to_json()["row"]["rstd"] is True and p.spec.params.to_json()["row"]["y"] == "none"
    plain = load_text("target gfx942\nkernel k { op = rmsnorm x = bf16 }", "p.ck")[0]
    assert "rstd" not in plain.params.to_json()["row"] and plan_kernel(plain, "gfx942").body.impl.endswith(
        "rmsnorm_entry")
    # the kernel source says kRstd / kWriteY only where set; the C prototype takes rstd after y_scale
    from ckgen.codegen import render_kernel

    src = render_kernel(p)
    assert "kRstd = true;" in src and "kWriteY = false;" in src and "rmsnorm_rstd_entry<" in src
    y_src = render_kernel(plan("y_4097"))
    assert "kRstd = true;" in y_src and "kWriteY" not in y_src
    assert "kRstd" not in render_kernel(plan_kernel(plain, "gfx942"))


def test_the_python_call_form() -> None:
    from ckgen.runtime.binding import call_form

    assert call_form("k", plan("res_none_any").abi).endswith("-> (s_out, rstd)")
    assert call_form("k", plan("none_1000").abi).endswith("-> rstd")
    assert call_form("k", plan("i8_1000").abi).endswith("-> (y, y_scale, rstd)")


def test_y_none_gets_the_normal_tile() -> None:
    """A y = none kernel is planned as the same kernel writing y (same tile, rows, workgroup); a row no register
    tile holds is looped from registers (read once: no row cache, no register-bounded pass, no default split)."""
    src = """
    target gfx942
    kernel none4k { op = rmsnorm x = bf16 y = none rstd = true max_cols = 4096 }
    kernel full4k { op = rmsnorm x = bf16 weight = none max_cols = 4096 }
    kernel none11k { op = rmsnorm x = bf16 residual = true y = none rstd = true max_cols = 11008 }
    kernel full11k { op = rmsnorm x = bf16 residual = true max_cols = 11008 }
    kernel huge { op = rmsnorm x = bf16 y = none rstd = true max_cols = 262144 }
    """
    k = {s.name: s for s in load_text(src, "t.ck")}
    for arch in ("gfx942", "sm_90"):
        for none, full in (("none4k", "full4k"), ("none11k", "full11k")):
            a, b = plan_kernel(k[none], arch).body, plan_kernel(k[full], arch).body
            assert (a.threads_per_row, a.reg_vecs, a.rows_per_workgroup, a.looped, a.vec) == \
                (b.threads_per_row, b.reg_vecs, b.rows_per_workgroup, b.looped, b.vec), (arch, none)
        long = plan("res_none_32k", arch).body
        assert long.looped and not long.cache_tiles and not long.split and long.lds_bytes <= 1024  # (the scratch)
        assert any("y = none" in w for w in long.why)
        assert any("read once" in w for w in long.why)
        h = plan_kernel(k["huge"], arch)
        assert h.body.looped and not h.body.split and h.abi.workspace is None
    # NVIDIA: a y = none looped tile of 512 threads is compiled for two workgroups per SM (plan.NONE_LOOPED_BOUND)
    assert plan("res_none_32k", "sm_90").body.workgroups_per_cu == 2
    assert plan("res_none_32k", "gfx942").body.workgroups_per_cu == 0


@pytest.mark.parametrize("line,param,words", [
    ("op = rmsnorm x = bf16 y = none", "y", "rstd = true"),
    ("op = rmsnorm x = bf16 y = none rstd = false", "y", "rstd = true"),
    ("op = softmax x = bf16 y = none", "y", "op = rmsnorm"),
    ("op = layernorm x = bf16 y = none", "y", "op = rmsnorm"),
    ("op = layernorm x = bf16 rstd = true", "rstd", "unknown parameter"),
    ("op = softmax x = bf16 rstd = true", "rstd", "unknown parameter"),
    ("op = rmsnorm x = bf16 y = none rstd = true weight = bf16", "weight", "weight = none"),
    ("op = rmsnorm x = bf16 y = none rstd = true weight = true", "weight", "weight = none"),
    ("op = rmsnorm x = bf16 y = none rstd = true quant = row", "quant", "y = none"),
    ("op = rmsnorm x = bf16 rstd = maybe", "rstd", "true, false"),
    ("op = rmsnorm x = bf16 y = nothing rstd = true", "y", "nothing"),
])
def test_bad_keys_are_located_errors(line: str, param: str, words: str) -> None:
    with pytest.raises(CkgenError) as e:
        load_text(f"target gfx942\nkernel k {{ {line} }}\n", "bad.ck")
    msg = e.value.render() if hasattr(e.value, "render") else str(e.value)
    assert "bad.ck:2:" in msg and param in msg and words in msg, msg


# ------------------------------------------------------------------------------------------ rung 2
@pytest.fixture(scope="module")
def emu_kernels():
    from ckgen.targets import get_target

    return H.build_on_emu([plan(n) for n in SPECS], "rowops_rstd_emu", get_target("gfx942"), [])


@pytest.fixture(scope="module")
def nv_emu_kernels():
    return H.build_nv_on_emu(list(NV_ON_EMU), [plan(n, "sm_90") for n in NV_ON_EMU], stem="rowops_rstd_nv_emu")


def run_shapes(k, name: str) -> None:
    ws = None
    if k.plan.abi.workspace is not None:
        ws = np.zeros(k.workspace_bytes(rows=64, cols=k.plan.body.max_cols), np.uint8)
    for i, (rows, cols, mode) in enumerate(shapes(name)):
        c = H.make_call(k.plan, rows, cols, mode, seed=i)
        assert "rstd" in c.outputs and ("y" in c.outputs) == c.plan.spec.params.row.write_y
        out = k(**c.inputs, **c.outputs, **c.scalars, **({"workspace": ws} if ws is not None else {}))
        outs = out if isinstance(out, tuple) else (out,)
        assert outs[-1] is c.outputs["rstd"], "rstd is returned last"
        H.check_call(c, f"{name} {rows}x{cols} {mode}")
        assert not np.isnan(c.outputs["rstd"]).any(), f"{name} {rows}x{cols}: rstd rows left unwritten"


@pytest.mark.parametrize("name", list(SPECS))
def test_emulator_against_float64(emu_kernels, name: str) -> None:
    run_shapes(emu_kernels[name], name)


@pytest.mark.parametrize("name", NV_ON_EMU)
def test_emulator_runs_the_nvidia_plans(nv_emu_kernels, name: str) -> None:
    run_shapes(nv_emu_kernels[name], name)


def test_runtime_eps_and_allocated_outputs(emu_kernels) -> None:
    """rstd follows the runtime eps; outputs left out are allocated and returned (s_out, rstd)."""
    k = emu_kernels["res_none_any"]
    rng = np.random.default_rng(5)
    x = H.matrix(4, 300, 300, k.plan.spec.params.row.x, rng)
    r = H.matrix(4, 300, 300, k.plan.spec.params.row.residual, rng)
    s, rstd = k(x, r, eps=0.25)
    assert s.shape == (4, 300) and rstd.shape == (4,) and rstd.dtype == np.float32
    v = H.to_float64(s, k.plan.spec.params.row.residual)
    want = 1.0 / np.sqrt((v * v).mean(-1) + 0.25)
    assert np.abs(rstd / want - 1).max() <= RSTD_TOLERANCE


def test_bad_rstd_arrays_are_refused_by_name(emu_kernels) -> None:
    k = emu_kernels["none_1000"]
    x = H.matrix(3, 100, 100, k.plan.spec.params.row.x, np.random.default_rng(1))
    for bad in (np.zeros(3, np.float64), np.zeros(4, np.float32), np.zeros((3, 1), np.float32),
                np.zeros(3, np.float16)):
        with pytest.raises(CkgenError, match="rstd"):
            k(x, rstd=bad)
    with pytest.raises(CkgenError, match="y"):
        k(x, y=np.zeros((3, 100), np.uint16), rstd=np.zeros(3, np.float32))  # y = none: no y argument


# ------------------------------------------------------------------------------------------ rung 1
@pytest.fixture(scope="module")
def amd_build(tmp_path_factory):
    import shutil

    from ckgen.backends.amd import compiler as amd_compiler
    from ckgen.backends.amd.report import disassemble

    if not any(shutil.which(f"clang++-{m}") for m in range(max(H.AMD_ARCHES.values()), 30)):
        pytest.skip("no clang++ >= 22 installed (tools/install.sh installs clang-22)")
    out = tmp_path_factory.mktemp("rowops_rstd")
    plans = [plan(n, a) for a in H.AMD_ARCHES for n in COMPILED]
    res = amd_compiler.compile_plans("rowops_rstd", plans, out, 2)
    return {(n, a): ({i.mnemonic for i in disassemble(res.toolchains[a].objdump, res.code_objects[a]).get(n, [])},
                     res.reports[(n, a)]) for a in H.AMD_ARCHES for n in COMPILED}


@pytest.mark.parametrize("arch", list(H.AMD_ARCHES))
def test_code_objects(amd_build, arch: str) -> None:
    """No spills or scratch; a y = none kernel stores no 2-byte vectors of y (only s_out with a residual, and rstd
    as one dword per row)."""
    for name in COMPILED:
        ops, rep = amd_build[(name, arch)]
        assert ops, f"{name} missing from the {arch} disassembly"
        assert rep.vgpr_spills == 0 and rep.sgpr_spills == 0 and rep.scratch_bytes == 0, (name, rep)
        assert not any(o.startswith(("scratch_", "buffer_store", "buffer_load")) for o in ops), name
        p = plan(name, arch)
        assert rep.workgroup_size == p.body.threads, name
        assert p.body.split or rep.lds_bytes == p.body.lds_bytes, name  # (split rows: + the ticket, the row state)
        assert "global_store_dword" in ops, f"{name}: rstd is stored as one dword per row"
        r = p.spec.params.row
        if not r.write_y and r.residual is None:
            assert not any(o.startswith("global_store") and o != "global_store_dword" for o in ops), \
                f"{name}: y = none without a residual stores nothing but rstd: {sorted(ops)}"


def test_nvcc_build(tmp_path) -> None:
    from ckgen.backends.nvidia import compiler as nvidia
    from ckgen.errors import ToolchainError
    from ckgen.ops.rowops.registers import register_budget

    plans = [plan(n, "sm_90") for n in COMPILED]
    try:
        lib = nvidia.build_cuda_library("rowops_rstd_nv", plans, tmp_path)
    except ToolchainError as exc:
        pytest.skip(str(exc))
    for r in nvidia.analyze(lib, plans):
        p = next(q for q in plans if r.name in {e.name for e in q.entries})  # (and its few-rows entry: one per SM)
        assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0, r
        assert r.registers <= register_budget(p.target, p.body.threads), (r.name, r.registers)
        want = max(1, p.body.workgroups_per_cu) if r.name == p.name else 1
        assert r.blocks_per_sm >= want, (r.name, r.registers, r.blocks_per_sm)
