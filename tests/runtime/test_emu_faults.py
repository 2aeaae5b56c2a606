"""The emulator as a sanitizer: planted faults in hand-written kernels are caught and named.

tests/runtime/cases/faults.cpp holds one correct kernel and one kernel per planted fault. Each report
must be an error naming the kernel, the workgroup, the thread and the address (and the buffer or LDS
allocation); the correct kernel must report nothing and compute its result.
"""

from __future__ import annotations

import ctypes
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from ckgen.backends import emu
from ckgen.errors import EmulationFault
from ckgen.targets import get_target

HERE = Path(__file__).resolve().parent
N = 256  # 2 workgroups of 128 threads

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")


@pytest.fixture(scope="module")
def lib(tmp_path_factory) -> emu.EmuLibrary:
    out = tmp_path_factory.mktemp("faults") / "libfaults.so"
    return emu.EmuLibrary(emu.build_shared([HERE / "cases" / "faults.cpp"], out, get_target("gfx942")))


def _run(lib: emu.EmuLibrary, kernel: str):
    # Both buffers are views of one array with unregistered gaps after each, so a planted overrun never lands
    # in the other buffer (two separate allocations may sit side by side, and a store 252 bytes past the end
    # of 'out' could then fall inside 'in': in bounds, as it would be on a GPU).
    backing = np.full(4 * N, np.nan, np.float32)
    a, out = backing[:N], backing[2 * N:3 * N]
    a[:] = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    lib.clear_buffers()
    lib.register(a, "in")
    lib.register(out, "out")
    fn = getattr(lib.lib, f"run_{kernel}")
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    fn.restype = ctypes.c_int
    status = fn(a.ctypes.data, out.ctypes.data, N)
    return status, lib.last_fault(), a, out


def _fault(lib, kernel: str) -> str:
    status, msg, _, _ = _run(lib, kernel)
    assert status == emu.CKGEN_ERROR_EMULATION_FAULT, f"{kernel}: status {status}, message {msg!r}"
    with pytest.raises(EmulationFault):
        lib.check_status(status, kernel)
    assert f"kernel '{kernel}'" in msg
    assert re.search(r"workgroup \(\d+,0,0\), thread \d+ \(wave \d, lane \d+\)", msg), msg
    return msg


def test_correct_kernel_reports_nothing(lib):
    status, msg, a, out = _run(lib, "good_kernel")
    assert status == 0 and msg == "", msg
    t = np.arange(N) % 128
    base = (np.arange(N) // 128) * 128
    v = a[base + (t + 64) % 128]                 # the other wave's element, read after the barrier
    want = v + (v[base + (t ^ 1)] + (t // 64).astype(np.float32))  # plus the partner lane's pair entry
    np.testing.assert_array_equal(out, want.astype(np.float32))


def test_lds_race_across_waves_is_caught(lib):
    msg = _fault(lib, "race_kernel")
    # whichever access comes second in the schedule reports; both directions are the same race
    assert re.search(r"LDS race: (read|write) of LDS offset \d+ \('tile' \+ \d+, address 0x[0-9a-f]+\) races with "
                     r"the (read|write) by thread \d+ \(wave \d", msg), msg


def test_lds_race_inside_a_wave_is_caught(lib):
    msg = _fault(lib, "lane_race_kernel")
    assert "LDS race" in msg and "wave operation" in msg, msg


def test_lds_write_after_read_race_is_caught(lib):
    msg = _fault(lib, "war_race_kernel")
    assert "LDS race" in msg and "'tile' +" in msg and "with no barrier() between them" in msg, msg


def test_global_load_out_of_bounds_is_caught(lib):
    msg = _fault(lib, "gload_oob_kernel")
    assert "out-of-bounds global load of 4 bytes at 0x" in msg, msg
    assert "0 bytes past the end of 'in'" in msg, msg
    assert "thread 127 " in msg and "workgroup (1,0,0)" in msg, msg


def test_global_store_out_of_bounds_is_caught(lib):
    msg = _fault(lib, "gstore_oob_kernel")
    assert "out-of-bounds global store of 4 bytes" in msg and "252 bytes past the end of 'out'" in msg, msg


def test_lds_out_of_bounds_is_caught(lib):
    msg = _fault(lib, "lds_oob_kernel")
    assert "out-of-bounds LDS store of 4 bytes at LDS offset" in msg and "'tile'" in msg, msg
    assert "thread 127 " in msg, msg


def test_barrier_deadlock_is_caught(lib):
    msg = _fault(lib, "deadlock_kernel")
    assert "deadlock" in msg and "64 of 128 threads (0-63) wait at the barrier" in msg, msg
    assert "faults.cpp" in msg and "(64-127) exited" in msg, msg


def test_divergent_barriers_are_caught(lib):
    msg = _fault(lib, "divergent_barrier_kernel")
    assert "divergent barriers" in msg and "thread 64 " in msg, msg


def test_wave_operation_with_exited_lanes_is_caught(lib):
    msg = _fault(lib, "wave_exit_kernel")
    assert "readfirstlane" in msg and "exited" in msg, msg


def test_non_uniform_value_is_caught(lib):
    msg = _fault(lib, "not_uniform_kernel")
    assert "CKGEN_UNIFORM(ckgen::thread_id())" in msg and "lane 1 holds a different value" in msg, msg


def test_no_buffers_registered_is_a_fault(lib):
    lib.clear_buffers()
    a = np.ones(N, np.float32)
    out = np.zeros(N, np.float32)
    fn = lib.lib.run_good_kernel
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    assert fn(a.ctypes.data, out.ctypes.data, N) == emu.CKGEN_ERROR_EMULATION_FAULT
    assert "no buffers are registered" in lib.last_fault()


@pytest.mark.parametrize(("marker", "src"), [
    ("barrier();  // buffer cur^1 is complete", "A = f16 row\n  B = f16 col\n  C = f16 row\n  tile = 64x64x32\n"
                                                "  waves = 2x2\n  lds_buffers = 2"),
], ids=["double-buffer-barrier"])
def test_missing_barrier_in_the_real_gemm_is_caught(tmp_path, marker, src):
    """Delete one barrier from a copy of the GEMM kernel header: the emulator reports the LDS race."""
    import numpy as np

    from ckgen.resources import OPS_DIR
    from ckgen.runtime.api import plan_for

    inc = tmp_path / "device"
    shutil.copytree(OPS_DIR / "gemm" / "device", inc)
    header = inc / "gemm_mfma.h"
    text = header.read_text()
    assert text.count(marker) == 1
    header.write_text(text.replace(marker, "/* barrier removed */ //"))
    plan = plan_for(f"target gfx942\nkernel k {{\n  {src}\n}}\n", "k", "amd", "gfx942")
    kernel_file, ksrc, lsrc = emu.emu_sources(plan)
    (tmp_path / kernel_file).write_text(ksrc)
    (tmp_path / "launchers.cpp").write_text(lsrc)
    lib = emu.EmuLibrary(emu.build_shared([tmp_path / "launchers.cpp"], tmp_path / "libk.so", plan.target,
                                          includes=[inc]))  # the mutated copy comes first
    M = N = K = 128
    A = np.ones((M, K), np.float16)
    B = np.ones((K, N), np.float16, order="F")
    C = np.zeros((M, N), np.float16)
    for arr, name in ((A, "A"), (B, "B"), (C, "C")):
        lib.register(arr, name)
    fn = lib.lib.ckgen_k
    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 6 + [ctypes.c_void_p]
    status = fn(A.ctypes.data, B.ctypes.data, C.ctypes.data, None, M, N, K, K, K, N, None)
    assert status == emu.CKGEN_ERROR_EMULATION_FAULT
    assert "LDS race" in lib.last_fault() and "kernel 'k'" in lib.last_fault(), lib.last_fault()
