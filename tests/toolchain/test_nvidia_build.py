"""CI compile tests of the NVIDIA path: generated HIP source -> nvcc (sm_90) -> shared library; the PTX
holds the planned mma.sync for each dtype, the report's resources agree with ptxas, no spills; the
cache key changes with the arch; a corrupted cache entry is rebuilt. Needs nvcc (skipped without)."""

from __future__ import annotations

import ctypes
import os

import pytest

from ckgen import config
from ckgen.backends.nvidia import compiler as nv
from ckgen.errors import ToolchainError
from ckgen.frontend import load_text
from ckgen.lower import plan_kernel
from ckgen.targets import get_target

SPEC = """
target sm_90
kernel nvt_bf16_rr {
  A = bf16 row
  B = bf16 row
  C = bf16 row
  tile = 64x64x32
  waves = 2x2
  lds_buffers = 3
}
kernel nvt_f16_cc_gelu {
  A = f16 col
  B = f16 col
  C = f16 row
  tile = 64x64x32
  waves = 2x2
  lds_buffers = 2
  epilogue = bias(col) -> gelu -> cast(f16)
}
kernel nvt_i8 {
  A = i8 row
  B = i8 col
  C = i32 row
  acc = i32
  tile = 64x64x64
  waves = 2x2
  lds_buffers = 3
}
kernel nvt_f32 {
  A = f32 row
  B = f32 row
  C = f32 row
  tile = 64x64x16
  waves = 2x2
  lds_buffers = 3
}
"""

PTX = {"nvt_bf16_rr": "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
       "nvt_f16_cc_gelu": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
       "nvt_i8": "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
       "nvt_f32": "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"}


@pytest.fixture(scope="module")
def nvcc():
    try:
        return nv.find_nvcc()
    except ToolchainError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory, monkeypatch_module):
    d = tmp_path_factory.mktemp("nvcache")
    monkeypatch_module.setenv("CKGEN_CACHE_DIR", str(d))
    config.reload()
    yield d
    config.reload()


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def plans(arch="sm_90"):
    t = get_target(arch)
    return [plan_kernel(s, t) for s in load_text(SPEC)]


@pytest.fixture(scope="module")
def built(nvcc, cache_dir):
    ps = plans()
    lib = nv.build_cuda_library("nvt", ps)
    return lib, ps, nv.analyze(lib, ps)


def test_library_exports_entry_points(built):
    lib, ps, _ = built
    so = ctypes.CDLL(str(lib.library))
    for p in ps:
        assert hasattr(so, f"ckgen_{p.name}")
    so.ckgen_status_string.restype = ctypes.c_char_p
    assert so.ckgen_status_string(1) == b"invalid argument value"


def test_ptx_has_planned_mma(built):
    _, _, reports = built
    for r in reports:
        names = dict(r.ptx_tensor)
        assert PTX[r.name] in names, (r.name, names)
        assert all(k == PTX[r.name] for k in names)          # no other tensor instruction
        assert names[PTX[r.name]] > 0


def test_resources_no_spills(built):
    lib, ps, reports = built
    log = nv.parse_ptxas((lib.entry / "ptxas.log").read_text())
    for p, r in zip(ps, reports, strict=True):
        assert (r.name, r.arch) in log
        assert 0 < r.registers <= 255 and r.registers == log[(r.name, r.arch)]["registers"]
        assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0, r
        assert r.dynamic_smem == p.body.lds.total_bytes and r.threads == 128
        assert r.blocks_per_sm >= 1 and r.warps_per_sm == 4 * r.blocks_per_sm


def test_report_table_and_json(built, capsys):
    _, _, reports = built
    table = nv.format_table(reports)
    assert "nvt_i8" in table and "m16n8k32" in table
    res = nv.resources(reports)
    assert res[("nvt_f32", "sm_90")]["registers"] == reports[3].registers


def test_arch_in_cache_key_and_hit(built):
    lib, ps, _ = built
    again = nv.build_cuda_library("nvt", ps)
    assert again.entry == lib.entry                            # cache hit
    # the same kernels planned for sm_80: another entry, with sm_80 code and its own report
    lib80 = nv.build_cuda_library("nvt", plans("sm_80"))
    assert lib80.entry != lib.entry and lib80.arches == ("sm_80",)
    assert {a for _, a in nv.parse_ptxas((lib80.entry / "ptxas.log").read_text())} == {"sm_80"}


def test_corrupted_entry_is_rebuilt(built):
    lib, ps, _ = built
    so = lib.entry / "libnvt.so"
    original = so.read_bytes()
    data = bytearray(original)
    data[len(data) // 2] ^= 0xFF
    # a new file over the old name: the library loaded above stays mapped from the old inode
    tmp = so.with_suffix(".corrupt")
    tmp.write_bytes(bytes(data))
    os.replace(tmp, so)
    again = nv.build_cuda_library("nvt", ps[:1] + ps[1:])
    assert again.entry == lib.entry
    assert (again.entry / "libnvt.so").read_bytes() != bytes(data)   # rebuilt, manifest verifies
    assert (again.entry / "libnvt.so").read_bytes() == original      # and byte-reproducible (another nvcc process)
    ctypes.CDLL(str(again.entry / "libnvt.so"))


def test_bad_tile_rejected_before_nvcc():
    from ckgen.errors import ValidationError

    bad = SPEC.split("kernel nvt_f16_cc_gelu")[0].replace("tile = 64x64x32", "tile = 64x48x32")  # N/waves = 24
    with pytest.raises(ValidationError) as e:
        [plan_kernel(s, get_target("sm_90")) for s in load_text(bad)]
    assert e.value.param == "tile"


def test_nvcc_failure_is_build_error(nvcc, cache_dir):
    from ckgen.errors import BuildError

    with pytest.raises(BuildError) as e:
        nv.build_cuda_library("nvt_flags", plans()[:1], extra_flags=("--no-such-nvcc-flag",))
    assert "no-such-nvcc-flag" in e.value.log


WGMMA_SPEC = """
target sm_90
kernel nvt_wgmma { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x256x64  waves = 2x4  lds_buffers = 3 }
"""


def test_sm90_builds_wgmma_path(nvcc, cache_dir):
    """128x256x64, 8 warps, 16-bit: on sm_90 the kernel gets its Hopper body, the ``_tma`` entry (TMA loads,
    wgmma, setmaxnreg, 384 threads), beside the portable mma.sync entry; on sm_80 only the portable entry."""
    spec = load_text(WGMMA_SPEC)[0]
    p90 = plan_kernel(spec, get_target("sm_90"))
    assert p90.body.tma is not None and p90.body.tma.threads == 384
    lib = nv.build_cuda_library("nvw", [p90])
    r, rt = nv.analyze(lib, [p90])
    assert (r.name, rt.name, rt.tma_body_of) == ("nvt_wgmma", "nvt_wgmma_tma", "nvt_wgmma")
    assert dict(rt.ptx_tensor).get("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", 0) >= 4, rt.ptx_tensor
    assert not any(k.startswith("mma.sync") for k, _ in rt.ptx_tensor)
    assert dict(r.ptx_tensor).get("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 0) > 0
    assert not any(k.startswith("wgmma") for k, _ in r.ptx_tensor)
    assert rt.threads == 384 and rt.dynamic_smem == p90.body.tma.smem_bytes and rt.blocks_per_sm == 1
    assert rt.spill_stores == 0 and r.registers <= 255  # (the portable body of this big tile spills a few bytes)
    assert not rt.wgmma_serialized
    ptx = (lib.entry / "nvw_sm_90.ptx").read_text()
    body = ptx[ptx.index(".entry nvt_wgmma_tma"):]
    for insn in ("cp.async.bulk.tensor.3d", "mbarrier.try_wait.parity", "setmaxnreg.inc", "setmaxnreg.dec"):
        assert insn in body, insn
    res = nv.resources([r, rt])
    assert res[("nvt_wgmma", "sm_90")]["tma_body"]["entry"] == "nvt_wgmma_tma"
    p80 = plan_kernel(spec, get_target("sm_80"))
    assert p80.body.tma is None
    (r80,) = nv.analyze(nv.build_cuda_library("nvw", [p80]), [p80])
    assert not any(k.startswith("wgmma") for k, _ in r80.ptx_tensor)


def test_mixed_arch_library_carries_the_tma_entry(nvcc, cache_dir):
    """One device text per kernel for every NVIDIA arch: with sm_80 listed first, the sm_90 plan's entry is
    still there (and the host entry checks the device before launching it)."""
    spec = load_text(WGMMA_SPEC)[0]
    plans_ = [plan_kernel(spec, get_target("sm_80")), plan_kernel(spec, get_target("sm_90"))]
    files = nv.cuda_sources("nvmix", plans_)
    assert "CKGEN_TMA_GEMM_ENTRY(nvt_wgmma, " in files["nvt_wgmma.cu"]
    assert "TmaGemm<ckgen_gen::nvt_wgmma_cfg>::launch" in files["launchers.cu"]


def test_kernel_named_like_a_hopper_entry_is_refused():
    from ckgen.errors import BuildError

    spec = load_text(WGMMA_SPEC)[0]
    twin = load_text(WGMMA_SPEC.replace("nvt_wgmma", "nvt_wgmma_tma"))[0]
    plans_ = [plan_kernel(spec, get_target("sm_90")), plan_kernel(twin, get_target("sm_90"))]
    with pytest.raises(BuildError, match="nvt_wgmma_tma.*tma entry"):
        nv.cuda_sources("nvtwin", plans_)


HOST_CALLS_DEVICE = """
template <class T> struct Op { const T* p; static __device__ __forceinline__ Op make(const T* q) { return Op{q}; } };
template <class T> struct Host { static int launch(const T* q) { return Op<T>::make(q).p == q ? 0 : 1; } };
extern "C" int entry(const int* q) { return Host<int>::launch(q); }
"""


def test_a_library_whose_host_code_calls_device_code_is_refused(tmp_path):
    """nvcc compiles a host call of a __device__ function inside a template, without a word, into exit(1) (it
    ended the GPU test process of the residual GEMM silently once): the build check refuses such a library."""
    import shutil
    import subprocess

    from ckgen.errors import BuildError

    nvcc = shutil.which("nvcc") or "/usr/local/bin/nvcc"
    if not os.path.exists(nvcc) or not (shutil.which("nm") or shutil.which("llvm-nm")):
        pytest.skip("needs nvcc and nm")
    src = tmp_path / "bad.cu"
    src.write_text(HOST_CALLS_DEVICE)
    subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", str(src), "-o", str(tmp_path / "libbad.so")], check=True)
    with pytest.raises(BuildError, match="host code calls a __device__ function"):
        nv.check_host_exits(tmp_path / "libbad.so")
    src.write_text(HOST_CALLS_DEVICE.replace("Op<T>::make(q)", "Op<T>{q}"))
    subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", str(src), "-o", str(tmp_path / "libok.so")], check=True)
    nv.check_host_exits(tmp_path / "libok.so")


def test_ptxas_serialized_wgmma_note_is_read():
    """ptxas's C7514 note (printed before the kernel's own lines) marks that kernel, and only it."""
    log = ("ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
           "non wgmma instructions reading accumulator registers of  a wgmma between start and end of the pipeline "
           "stage in the function 'k_tma'\n"
           "ptxas info    : Compiling entry function 'k_tma' for 'sm_90a'\n"
           "ptxas info    : Used 168 registers, used 1 barriers\n"
           "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
           "ptxas info    : Used 90 registers\n")
    out = nv.parse_ptxas(log)
    assert out[("k_tma", "sm_90")]["wgmma_serialized"] and not out[("k", "sm_90")]["wgmma_serialized"]
    row = dict(name="k_tma", arch="sm_90", ptx_tensor=(("wgmma.x", 4),), sass_tensor=(), sass_tensor_in_main_loop=None,
               registers=168, spill_stores=0, spill_loads=0, stack_bytes=0, static_smem=0, dynamic_smem=0, threads=384,
               blocks_per_sm=1, warps_per_sm=12, occupancy_limiter="registers")
    assert "(serialized by ptxas)" in nv.format_table([nv.NvKernelReport(**row, wgmma_serialized=True)])
    assert "serialized" not in nv.format_table([nv.NvKernelReport(**row)])


@pytest.mark.parametrize("mode", ["grouped", "masked"])
def test_grouped_hopper_body_stores_c_by_tma_with_its_wgmmas_in_flight(nvcc, cache_dir, mode):
    """Grouped / masked 16-bit row-major C: TMA stores (a warp whose rows run past its group's stores them itself)
    with the overlapped epilogue; the group walk runs before the next tile's wgmmas go out, so ptxas keeps them in
    flight (taken after them, its loop made ptxas serialize every wgmma: C7518), and nothing spills."""
    (spec,) = load_text(f"target sm_90\nkernel nvt_grp {{ A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 "
                        f"waves = 2x4 lds_buffers = 4 mode = {mode} }}")
    p = plan_kernel(spec, get_target("sm_90"))
    lib = nv.build_cuda_library(f"nvgrp_{mode}", [p])
    _, rt = nv.analyze(lib, [p])
    assert rt.tma_body_of == "nvt_grp" and not rt.wgmma_serialized and rt.spill_stores == 0 and rt.stack_bytes == 0
    ptx = (lib.entry / f"nvgrp_{mode}_sm_90.ptx").read_text()
    assert "cp.async.bulk.tensor.3d.global.shared" in ptx[ptx.index(".entry nvt_grp_tma"):]


def test_block_scaled_fp8_hopper_body_keeps_its_wgmmas_in_flight(nvcc, cache_dir):
    """block(128) scales: the fold of one block runs while the next block's wgmmas do; ptxas must not serialize
    them (its C7514 note), and nothing spills."""
    (spec,) = load_text("target sm_90\nkernel nvt_blk { A = e4m3fn row B = e4m3fn col C = bf16 row "
                        "tile = 128x128x128 waves = 2x4 lds_buffers = 4 scale_a = block(128) scale_b = block(128) }")
    p = plan_kernel(spec, get_target("sm_90"))
    _, rt = nv.analyze(nv.build_cuda_library("nvblk", [p]), [p])
    assert rt.tma_body_of == "nvt_blk" and not rt.wgmma_serialized and rt.spill_stores == 0
