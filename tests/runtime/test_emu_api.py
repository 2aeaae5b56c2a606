"""The JIT API on the emu target: argument checks with clear errors, output allocation, `ckgen run`."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ckgen.backends import emu
from ckgen.errors import CkgenError, EmulationFault, RuntimeFailure
from ckgen.ir.op import TOLERANCE
from ckgen.ir.types import DType
from ckgen.progress import CkgenWarning
from ckgen.runtime import api, run

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")

SRC = """target gfx942
kernel nt {
  A = f16 row
  B = f16 col
  C = f32 row
  tile = 64x64x32
  waves = 2x2
  epilogue = bias(col) -> relu
}
kernel beta1 {
  A = bf16 row
  B = bf16 row
  C = f32 col
  beta = 1.0
  tile = 64x64x32
  waves = 2x2
}
"""


@pytest.fixture(scope="module")
def nt() -> api.Kernel:
    return api.jit(SRC, kernel="nt", target="emu")


def _ops(M=40, N=24, K=20):
    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    B = np.asfortranarray(rng.uniform(-1, 1, (K, N)).astype(np.float16))
    bias = rng.uniform(-1, 1, N).astype(np.float32)
    return A, B, bias


def test_call_allocates_poisoned_output_and_computes(nt):
    A, B, bias = _ops()
    C = nt(A, B, bias=bias)
    assert C.shape == (40, 24) and C.dtype == np.float32 and C.flags.c_contiguous
    ref = np.maximum(A.astype(np.float64) @ B.astype(np.float64) + bias, 0)
    assert np.linalg.norm(C - ref) / np.linalg.norm(ref) < 1e-5
    assert repr(nt) == ("Kernel('nt', op='gemm', arch='gfx942', target='emu'): "
                        "nt(A, B, bias, *, C=None, M=None, N=None, K=None, stream=None) -> C")
    assert nt.signature() in repr(nt)


def test_outputs_are_keyword_only(nt):
    A, B, bias = _ops()
    with pytest.raises(RuntimeFailure, match=r"takes its inputs positionally \(A, B, bias\), got 4") as err:
        nt(A, B, bias, np.zeros((40, 24), np.float32))
    assert "C=..." in str(err.value.hint)
    C = np.zeros((40, 24), np.float32)
    assert nt(A, B, bias, C=C) is C


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda A, B, b: (A.astype(np.float32), B, b), "A has dtype float32, the kernel takes f16"),
    (lambda A, B, b: (A, np.ascontiguousarray(B), b), "B must be col-major"),
    (lambda A, B, b: (A[:, :10], B, b), "B has shape (20, 24) but A has shape (40, 10): their K differ (20 vs 10)"),
    (lambda A, B, b: (A, B, None), "pass bias (length N (bias(col)))"),
    (lambda A, B, b: (A, B, b[:5]), "bias has shape (5,) but B has shape (20, 24): their N differ (5 vs 24)"),
    (lambda A, B, b: (A[::-1], B, b), "negative strides"),
    (lambda A, B, b: (A.ravel(), B, b), "A must have 2 dimensions (MxK), got shape (800,)"),
    (lambda A, B, b: (A.tolist(), B, b), "the emu target takes numpy arrays"),
])
def test_bad_arguments_have_clear_errors(nt, mutate, message):
    A, B, bias = mutate(*_ops())
    with pytest.raises(RuntimeFailure, match=message.replace("(", r"\(").replace(")", r"\)")):
        nt(A, B, bias=bias)


def test_wrong_output_shape_and_readonly(nt):
    A, B, bias = _ops()
    with pytest.raises(RuntimeFailure, match=r"C has shape \(24, 40\) but A has shape \(40, 20\): their M differ \(24 vs 40\)"):
        nt(A, B, bias, C=np.zeros((24, 40), np.float32))
    C = np.zeros((40, 24), np.float32)
    C.setflags(write=False)
    with pytest.raises(RuntimeFailure, match="read-only"):
        nt(A, B, bias, C=C)


def test_beta_needs_c_and_bf16_is_uint16():
    k = api.jit(SRC, kernel="beta1", target="emu", arch="gfx90a")
    rng = np.random.default_rng(1)
    A = api.to_bf16(rng.uniform(-1, 1, (33, 17)))
    B = api.to_bf16(rng.uniform(-1, 1, (17, 9)))
    with pytest.raises(RuntimeFailure, match=r"C is read by this kernel \(M x N, read \(beta != 0\)\): pass it"):
        k(A, B)
    with pytest.raises(RuntimeFailure, match="bf16 is passed as uint16"):
        k(api.from_bf16(A), B, C=np.zeros((33, 9), np.float32, order="F"))
    C0 = np.asfortranarray(rng.uniform(-1, 1, (33, 9)).astype(np.float32))
    C = k(A, B, C=C0.copy(order="F"))
    ref = api.from_bf16(A).astype(np.float64) @ api.from_bf16(B).astype(np.float64) + C0
    assert np.linalg.norm(C - ref) / np.linalg.norm(ref) < 1e-5


def test_source_kernel_and_target_errors(tmp_path):
    with pytest.raises(CkgenError, match="defines 2 kernels; choose one"):
        api.jit(SRC, target="emu")
    with pytest.raises(CkgenError, match="no kernel named 'x'"):
        api.jit(SRC, kernel="x", target="emu")
    with pytest.raises(CkgenError, match="neither a backend nor a known arch"):
        api.jit(SRC, kernel="nt", target="tpu")
    with pytest.raises(CkgenError, match="no such .ck file"):
        api.jit(str(tmp_path / "missing.ck"))
    with pytest.raises(CkgenError, match="sm_90"):  # an NVIDIA arch (or unknown, before the table has it)
        api.plan_for(SRC, "nt", "amd", "sm_90")


def test_views_are_checked_at_their_own_extent(nt):
    """A view's neighbours in its base array are outside the registered buffer."""
    A, B, bias = _ops()
    big = np.zeros((80, 20), np.float16)
    big[:40] = A
    C = nt(big[:40], B, bias=bias)  # fine: reads only rows 0..39
    assert np.all(np.isfinite(C))


def test_emulation_fault_reaches_python(nt):
    """Bypassing the API's checks (M larger than A), the emulator catches the overrun."""
    A, B, bias = _ops()
    # A as the first rows of a larger array: the overrun reads its unregistered rows, never a neighbouring
    # buffer that happened to be allocated right after it
    padded = np.zeros((80, 20), np.float16)
    padded[:40] = A
    C = np.zeros((80, 24), np.float32)
    call = api.Call(nt.plan, (padded[:40], B, C, bias, 80, 24, 20, 20, 20, 24), {"M": 80, "N": 24, "K": 20})
    with pytest.raises(EmulationFault, match=r"kernel 'nt', workgroup \(\d+,\d+,0\), thread \d+ .*out-of-bounds global "
                                             r"load of \d+ bytes at 0x[0-9a-f]+: \d+ bytes past the end of 'A'"):
        nt.backend.launch(nt.handle, call)


def test_run_command_exit_codes(tmp_path, capsys, monkeypatch):
    path = tmp_path / "k.ck"
    path.write_text(SRC)
    sizes = {"m": 37, "n": 29, "k": 41}
    assert run.run_command(str(path), "nt", "emu", None, sizes, 3) == 0
    out = capsys.readouterr().out
    assert "nt on emu (gfx942): M=37 N=29 K=41" in out and "C: relative error vs float64" in out and "ok" in out
    assert run.run_command(str(path), "nope", "emu", None, sizes, 0) == 2
    assert "no kernel named 'nope'" in capsys.readouterr().err
    assert run.run_command(str(path), "nt", "emu", None, {"m": -1, "n": 4, "k": 4}, 0) == 2
    assert run.run_command(str(path), "nt", "emu", None, {"m": 4, "n": 4}, 0) == 2
    assert "needs size k" in capsys.readouterr().err
    assert run.run_command(str(path), "nt", "emu", None, {"m": 4, "n": 4, "k": 4, "q": 1}, 0) == 2
    assert "has no size q" in capsys.readouterr().err
    monkeypatch.setitem(TOLERANCE, DType.F16, 0.0)
    monkeypatch.setitem(TOLERANCE, DType.F32, 0.0)
    assert run.run_command(str(path), "nt", "emu", None, sizes, 3) == 1
    assert "FAILED" in capsys.readouterr().out


def test_kernels_without_a_target_take_the_backend_default(tmp_path):
    """A .ck file with no target line still runs: the JIT plans it for the arch asked for, else the default."""
    from ckgen.runtime.api import jit

    src = tmp_path / "no_target.ck"
    src.write_text("kernel nt { A = f32 row B = f32 row C = f32 row tile = 32x32x8 waves = 1x1 }\n")
    assert jit(src, target="emu").plan.arch == "gfx942"
    assert jit(src, target="emu", arch="gfx90a").plan.arch == "gfx90a"


def test_a_launch_returns_its_fiber_stacks_beyond_a_small_pool():
    """After a launch a library keeps at most 64 fiber stacks (two memory mappings each: the guard page splits it);
    the rest go back to the system. Keeping every stack of every launch in every loaded library passed Linux's
    65530 mappings per process in the test suite (mmap then failed, and Python threads could not start)."""
    src = "target gfx942\nkernel stack_pool { A = f16 row B = f16 col C = f32 row tile = 64x64x16 waves = 2x2 }\n"
    k = api.jit(src, kernel="stack_pool", target="emu")
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (64, 16)).astype(np.float16)
    b = np.asfortranarray(rng.uniform(-1, 1, (16, 64)).astype(np.float16))

    def mappings() -> int:
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)

    k(a[:0], b)                # an empty call: the library is loaded, nothing is launched
    before = mappings()
    for _ in range(3):
        c = k(a, b)            # one workgroup of 256 threads: 256 fiber stacks in flight
    assert np.allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2, atol=1e-2)
    assert mappings() - before <= 2 * 64 + 32


def test_an_arch_of_another_vendor_is_not_replaced_silently():
    """jit(target="emu") of a kernel that names only NVIDIA targets says which AMD arch it plans for."""
    src = "target sm_90\nkernel k { A = f16 row  B = f16 col  C = f16 row  tile = 64x64x32  waves = 2x2 }\n"
    with pytest.warns(CkgenWarning, match="kernel 'k' names only sm_90; planning it for gfx942"):
        plan = api.plan_for(src, None, "amd", None)
    assert plan.arch == "gfx942"


def test_emu_kernels_refuses_a_name_on_two_arches():
    text = "kernel dup { op = softmax x = bf16 }"
    plans = [api.plan_for(text, "dup", "amd", arch) for arch in ("gfx942", "gfx90a")]
    with pytest.raises(CkgenError, match="names must be distinct"):
        api.emu_kernels(plans, "dup_emu", jobs=2)


def test_an_empty_call_is_checked_by_its_bytes_not_the_reference(nt, monkeypatch):
    """`ckgen run`'s check of a no-op call (a size of the ABI's empty_if is 0): the outputs must be as they were; the
    op's reference is not consulted (it need not handle sizes whose other checks the no-op skips, e.g. heads not
    a multiple of heads_kv beside seqlen_q = 0, which raised inside the attention reference before)."""
    from ckgen.ir.registry import get_op
    from ckgen.runtime.run import check_call

    def no_reference(*_):
        raise AssertionError("the reference was consulted")

    monkeypatch.setattr(type(get_op("gemm")), "reference", no_reference)
    results, _ = check_call(nt, {"M": 0, "N": 24, "K": 20}, np.random.default_rng(0))
    assert [(name, err) for name, err, _ in results] == [("C", 0.0)]
    with pytest.raises(AssertionError, match="consulted"):
        check_call(nt, {"M": 3, "N": 24, "K": 20}, np.random.default_rng(0))
