"""Split rows (ckgen/ops/rowops/split.py, device/rowops_pipeline_split.h): the planner's choice, the ABI's
workspace, rung 1 (gfx90a / gfx942 / gfx950 code objects without spills or scratch, the cross-workgroup exchange's
atomics present; the sm_90 nvcc build without spills) and rung 2 (the emulator against float64: vocabulary widths
32000, 128256, 151936, 256000 at few rows, prime and tail widths, residuals, weight / bias, strided tensors, a
reused workspace left zero-filled)."""

from __future__ import annotations

import numpy as np
import pytest

from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.lower import plan_kernel
from ckgen.ops.rowops import split as S
from tests.ops.rowops import harness as H

SOURCE = """
target gfx942
kernel sm_vocab   { op = softmax x = bf16 scale = 0.9 max_cols = 128256 }
kernel lsm_vocab  { op = softmax log = true x = f16 max_cols = 151936 }
kernel ln_vocab   { op = layernorm x = bf16 residual = true max_cols = 256000 }
kernel rms_vocab  { op = rmsnorm x = bf16 residual = f32 max_cols = 151936 }
kernel sm_f32_s3  { op = softmax x = f32 max_cols = 1009 split = 3 }
kernel ln_f16_s5  { op = layernorm x = f16 bias = none max_cols = 4099 split = 5 }
kernel rms_s2     { op = rmsnorm x = bf16 weight = none max_cols = 1000 split = 2 threads_per_row = 64 }
kernel sm_wide    { op = softmax x = bf16 scale = 0.7 max_cols = 170000 }
"""
SPECS = {s.name: s for s in load_text(SOURCE, "rowops_split.ck")}
#: (rows, cols, stride mode) per kernel on the emulator: the widths named above, primes, tails, one slice
SHAPES = {
    "sm_vocab": [(2, 128256, "tight"), (3, 32000, "odd"), (1, 16411, "pad"), (2, 16384, "mixed")],
    "lsm_vocab": [(2, 151936, "mixed"), (1, 1, "tight")],
    "ln_vocab": [(2, 256000, "tight"), (1, 131071, "odd")],
    "rms_vocab": [(2, 151936, "pad"), (3, 32003, "odd")],
    "sm_f32_s3": [(5, 1009, "odd"), (4, 384, "tight"), (3, 385, "mixed"), (2, 7, "pad")],
    "ln_f16_s5": [(3, 4099, "mixed"), (6, 2053, "odd")],
    "rms_s2": [(9, 1000, "tight"), (2, 513, "odd")],
    # sm_90: 7 wide slices of 512 x 6 (split.WIDE_SLICES); a call of 151936 takes 7, one of 40961 two
    "sm_wide": [(2, 170000, "tight"), (1, 151936, "odd"), (3, 40961, "mixed")],
}
ARCHES = tuple(H.AMD_ARCHES)
#: the AMD code objects' kernels: sm_wide is an NVIDIA plan form (split.WIDE_SLICES, wave32); on AMD it plans as
#: sm_vocab does, a pattern those builds already hold
AMD_SPECS = [n for n in SPECS if n != "sm_wide"]


def plan(name: str, arch: str = "gfx942"):
    return plan_kernel(SPECS[name], arch)


def test_planner_splits_vocabulary_rows() -> None:
    for arch in ("gfx942", "sm_90"):
        p = plan("sm_vocab", arch)
        b = p.body
        assert b.split == 8 and not b.looped and b.rows_per_workgroup == 1 and b.tile_cols * 8 >= 128256
        assert any(w.startswith("split rows") for w in b.why)
        assert p.abi.workspace is not None and p.launch.prelaunch == S.PRELAUNCH
        assert p.launch.grid[0].count({"rows": 1024, "cols": 128256}) == 1024 * 8
        assert p.launch.workspace_bytes({"rows": 1024, "cols": 128256}) == 256 + 4096 + 1024 * 8 * 2 * 4
    assert plan("ln_vocab", "sm_90").body.split == 16 and plan("rms_vocab", "sm_90").body.split == 10
    # sm_90 softmax: wide slices (split.WIDE_SLICES), 512 x 5 vectors, ceil(n / 2560) of them; the kernel's kSplit
    # (the ABI) stays the target-free default. Not where the narrow cut is 7 or 8 slices (128256 columns: 8)
    src = "target sm_90\nkernel w { op = softmax x = bf16 max_cols = 151936 }\n"
    wide = plan_kernel(load_text(src, "w.ck")[0], "sm_90").body
    assert (wide.threads_per_row, wide.reg_vecs, wide.split) == (512, 5, 10) and -(-151936 // wide.tile_cols) == 8
    assert (plan("sm_vocab", "sm_90").body.reg_vecs, plan("sm_vocab", "sm_90").body.workgroups_per_cu) == (4, 2)
    assert S.wide_tile("softmax", 32, 21250, 11) == (512, 6)  # 170000 columns: 7 slices of 512 x 6
    assert (plan("sm_wide", "sm_90").body.reg_vecs, plan("sm_wide", "sm_90").body.split) == (6, 11)
    assert S.wide_tile("softmax", 32, 6288, 4) == (512, 5)    # 50304: 3 slices of 512 x 5
    for n, split in ((32000, 16), (16032, 8), (12544, 7)):     # 256000: too many; 128256, 100352: narrow 8 and 7
        assert S.wide_tile("softmax", 32, n, split) is None
    assert S.wide_tile("rmsnorm", 32, 18992, 10) is None and S.wide_tile("softmax", 64, 18992, 10) is None
    # the host entries: the emulator runs kSplit workgroups at once, CUDA tries a cluster launch first, AMD launches
    # as usual; the kernel's Cfg says kSplit
    from ckgen.codegen import render_kernel, render_launchers

    for arch, platform in (("gfx942", "emu"), ("sm_90", "cuda"), ("gfx942", "amd")):
        p = plan("sm_vocab", arch)
        host = render_launchers("t", [p], platform, ["k.hip"] if platform != "amd" else None)
        assert "launch_coresident(ckgen_gen::sm_vocab_cfg::kSplit" in host and "launch_split_clusters" in host
        assert "workspace" in host and f"kSplit = {p.body.split};" in render_kernel(p)
    # wave64: no tile holds a residual layer norm's slice of 2000 vectors without spilling SGPRs: more slices
    ln = plan("ln_vocab").body
    assert ln.split == 32 and ln.tile_cols * 32 >= 256000 and "split rows" in ln.why[0]


def test_other_kernels_keep_their_plans() -> None:
    """Rows of at most 96 KiB, int8 outputs, looped / row_in / tiles given, split = 1: no split, no workspace, no
    kSplit, and the description (cache key) without a split entry."""
    src = """
    target gfx942
    kernel a { op = softmax x = bf16 max_cols = 49152 }
    kernel b { op = rmsnorm x = bf16 y = i8 max_cols = 128256 }
    kernel c { op = softmax x = bf16 max_cols = 128256 looped = true }
    kernel d { op = softmax x = bf16 max_cols = 128256 split = 1 }
    kernel e { op = layernorm x = f32 max_cols = 262144 }
    """
    for spec in load_text(src, "keep.ck"):
        for arch in ("gfx942", "sm_90"):
            p = plan_kernel(spec, arch)
            assert p.body.split == 0 and p.abi.workspace is None and p.launch.prelaunch is None, spec.name
            assert "split" not in p.body.to_json()
            assert "split" not in spec.params.config.to_json() or spec.name == "d"


@pytest.mark.parametrize("line,param", [
    ("op = softmax x = bf16 split = 4", "max_cols"),
    ("op = softmax x = bf16 max_cols = 9000 split = 4 looped = true", "looped"),
    ("op = rmsnorm x = bf16 y = i8 max_cols = 9000 split = 4", "y"),
    ("op = softmax x = bf16 max_cols = 9000 split = 4 row_in = shared", "row_in"),
    ("op = softmax x = bf16 max_cols = 9000 split = 4 rows_per_workgroup = 2", "rows_per_workgroup"),
    ("op = softmax x = bf16 max_cols = 9000 split = 33", "split"),
    ("op = softmax x = bf16 max_cols = 9000 split = 0", "split"),
    ("op = softmax x = bf16 max_cols = 9000 split = 2 threads_per_row = 16", "threads_per_row"),
    ("op = softmax x = bf16 max_cols = 9000 split = 2 threads_per_row = 64 reg_vecs = 1", "reg_vecs"),
    # a split given is the split: where no tile holds its slices, an error (not silently more slices)
    ("op = layernorm x = bf16 residual = true max_cols = 256000 split = 16", "split"),
])
def test_bad_split_is_a_clear_error(line: str, param: str) -> None:
    with pytest.raises(CkgenError) as e:
        for spec in load_text(f"target gfx942\nkernel k {{ {line} }}\n", "bad.ck"):
            plan_kernel(spec, "gfx942")
    msg = str(e.value)
    assert "bad.ck:2:" in msg and param in msg, msg


# ------------------------------------------------------------------------------------------ rung 1
@pytest.fixture(scope="module")
def amd_build(tmp_path_factory):
    from ckgen.backends.amd import compiler as amd_compiler
    from ckgen.backends.amd.report import disassemble

    out = tmp_path_factory.mktemp("rowops_split")
    plans = [plan(n, a) for a in ARCHES for n in AMD_SPECS]
    res = amd_compiler.compile_plans("rowops_split", plans, out, 2)
    return {(n, a): ({i.mnemonic for i in disassemble(res.toolchains[a].objdump, res.code_objects[a]).get(n, [])},
                     res.reports[(n, a)]) for a in ARCHES for n in AMD_SPECS}


@pytest.mark.parametrize("arch", ARCHES)
def test_code_objects(amd_build, arch: str) -> None:
    for name in AMD_SPECS:
        ops, rep = amd_build[(name, arch)]
        assert ops, f"{name} missing from the {arch} disassembly"
        assert rep.vgpr_spills == 0 and rep.sgpr_spills == 0 and rep.scratch_bytes == 0, (name, rep)
        assert not any(o.startswith(("scratch_", "buffer_store", "buffer_load")) for o in ops), name
        assert any(o.startswith("global_atomic_add") for o in ops), f"{name}: the arrival counters' atomics"
        assert rep.workgroup_size == plan(name, arch).body.threads


def test_nvcc_build(tmp_path) -> None:
    from ckgen.backends.nvidia import compiler as nvidia
    from ckgen.errors import ToolchainError

    plans = [plan(n, "sm_90") for n in SPECS]
    assert plans[0].body.workgroups_per_cu == 2  # softmax slices of 512 x 4: two per SM (split.SPLIT_BOUNDED)
    assert plans[-1].body.reg_vecs == 6  # and a wide one (sm_wide, split.WIDE_SLICES): one per SM
    try:
        lib = nvidia.build_cuda_library("rowops_split_nv", plans, tmp_path)
    except ToolchainError as exc:
        pytest.skip(str(exc))
    for r in nvidia.analyze(lib, plans):
        assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0, r
        p = next(q for q in plans if q.name == r.name)
        assert r.blocks_per_sm >= max(1, p.body.workgroups_per_cu), (r.name, r.registers, r.blocks_per_sm)
    ptx = (lib.entry / f"{lib.stem}_sm_90.ptx").read_text()
    # the cluster exchange (partials stored into the peers' shared memory, completing on their mbarriers; the next
    # rows' slices by cp.async, or into L2) beside the workspace one (atomics)
    for want in ("st.async.shared::cluster.mbarrier::complete_tx::bytes", "mbarrier.try_wait.parity.acquire.cluster",
                 "mapa.shared::cluster", "barrier.cluster.arrive.release", "%cluster_nctarank", "cp.async.cg",
                 "prefetch.global.L2", "atom.global.add", "nanosleep"):
        assert ptx.count(want) >= len(plans), want


# ------------------------------------------------------------------------------------------ rung 2
@pytest.fixture(scope="module")
def emu_kernels():
    """The gfx942 plans on the emulator, one library."""
    from ckgen.targets import get_target

    return H.build_on_emu([plan(n) for n in SPECS], "rowops_split_emu", get_target("gfx942"), [])


@pytest.fixture(scope="module")
def nv_emu_kernels():
    """The sm_90 plans (warp32: 512-thread slices of 16 warps) on the emulator: the workspace exchange."""
    return H.build_nv_on_emu(list(SPECS), [plan(n, "sm_90") for n in SPECS])


@pytest.mark.parametrize("name", list(SPECS))
def test_emulator_against_float64(emu_kernels, name: str) -> None:
    run_shapes(emu_kernels[name], name)


@pytest.mark.parametrize("name", ["sm_vocab", "ln_vocab", "rms_vocab", "sm_f32_s3"])
def test_emulator_runs_the_nvidia_plans(nv_emu_kernels, name: str) -> None:
    run_shapes(nv_emu_kernels[name], name)


def run_shapes(k, name: str) -> None:
    rows_max = max(r for r, _, _ in SHAPES[name])
    ws = np.zeros(k.workspace_bytes(rows=rows_max, cols=SPECS[name].params.config.max_cols), np.uint8)
    for i, (rows, cols, mode) in enumerate(SHAPES[name]):
        for seed in (i, i + 100):  # the same workspace twice: a launch leaves it zero-filled
            c = H.make_call(k.plan, rows, cols, mode, seed)
            k(**c.inputs, **c.outputs, **c.scalars, workspace=ws)
            H.check_call(c, f"{name} {rows}x{cols} {mode}")
            assert not ws.any(), f"{name} {rows}x{cols}: the workspace was left non-zero"


def test_emulator_runs_a_rows_slices_at_once_on_one_os_thread(emu_kernels) -> None:
    """ckgen_emu_set_threads(1): the split launch still runs kSplit workgroups at once (emu::launch_coresident;
    one OS thread would leave the first slice waiting for the others forever)."""
    k = emu_kernels["ln_f16_s5"]
    c = H.make_call(k.plan, 3, 4099, "tight", 7)
    H.run(k, c)  # (builds the handle)
    lib = k.handle.library
    lib.set_threads(1)
    try:
        c = H.make_call(k.plan, 4, 4099, "odd", 8)
        H.run(k, c)
        H.check_call(c, "one OS thread")
    finally:
        lib.set_threads(0)
