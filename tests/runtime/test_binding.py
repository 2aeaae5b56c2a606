"""Aliasing is refused on every backend path (emu, hip, cuda; numpy arrays, views, broadcasts and device arrays
seen through ``__cuda_array_interface__``), before anything runs. No GPU and no compile: ``bind`` only."""

from __future__ import annotations

import numpy as np
import pytest

from ckgen.backends.amd.driver import HipBackend
from ckgen.backends.emu import EmuBackend
from ckgen.backends.nvidia.driver import CudaBackend
from ckgen.errors import RuntimeFailure
from ckgen.frontend import load_text
from ckgen.lower import plan_kernel
from ckgen.runtime.binding import bind

SPEC = """kernel sq {{ A = f32 row B = f32 row C = f32 row beta = {beta} batched = {batched}
                       tile = 64x64x16 waves = 2x2 }}"""


def plan(arch: str, beta: float = 0.0, batched: bool = False):
    (spec,) = load_text(SPEC.format(beta=beta, batched=str(batched).lower()), "b.ck", (arch,))
    return plan_kernel(spec, arch)


BACKENDS = [(EmuBackend, "gfx942"), (HipBackend, "gfx942"), (CudaBackend, "sm_90")]


class DeviceArray:
    """A device array as CuPy / torch show it: only __cuda_array_interface__ (fake addresses: never touched)."""

    def __init__(self, ptr: int, shape, strides=None, typestr="<f4"):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": tuple(shape), "typestr": typestr,
                                         "strides": strides, "version": 3}


def numpy_cases():
    x = np.zeros((64, 64), np.float32)
    return {
        "C is A": (x, np.ones((64, 64), np.float32), x),
        "C is B": (np.ones((64, 64), np.float32), x, x),
        "C a view overlapping A": (x[:, :32], np.ones((32, 32), np.float32), x[:, 16:48]),
        "C shares rows with B": (np.ones((16, 32), np.float32), x[:32, :16], x[16:32, :16]),
        "C the even rows of A": (x[:32, :32], np.ones((32, 32), np.float32), x[:63:2, :32]),
    }


@pytest.mark.parametrize("backend,arch", BACKENDS, ids=["emu", "hip", "cuda"])
@pytest.mark.parametrize("case", list(numpy_cases()))
def test_an_output_aliasing_an_input_is_refused(backend, arch, case):
    A, B, C = numpy_cases()[case]
    with pytest.raises(RuntimeFailure, match=r"output C overlaps [AB] in memory"):
        bind(plan(arch), backend(), {"A": A, "B": B, "C": C})


@pytest.mark.parametrize("backend,arch", BACKENDS, ids=["emu", "hip", "cuda"])
def test_separate_arrays_and_shared_inputs_are_fine(backend, arch):
    x = np.ones((48, 48), np.float32)
    call = bind(plan(arch), backend(), {"A": x, "B": x, "C": np.zeros((48, 48), np.float32)})  # A is B: both read
    assert call.sizes == {"M": 48, "N": 48, "K": 48}
    big = np.zeros((64, 128), np.float32)  # the two halves of one matrix interleave in memory but share nothing
    bind(plan(arch), backend(), {"A": big[:, :64], "B": np.ones((64, 64), np.float32), "C": big[:, 64:]})
    bind(plan(arch), backend(), {"A": big[::2, :64], "B": np.ones((64, 64), np.float32), "C": big[1::2, :64]})


@pytest.mark.parametrize("backend,arch", BACKENDS, ids=["emu", "hip", "cuda"])
def test_broadcast_and_stride_zero_outputs_are_refused(backend, arch):
    """A batched C whose items share memory (batch stride 0, or smaller than one matrix) would be written twice."""
    p = plan(arch, batched=True)
    A = np.ones((3, 16, 8), np.float32)
    B = np.ones((8, 16), np.float32)  # broadcast input: fine
    base = np.zeros((16, 16), np.float32)
    stride0 = np.lib.stride_tricks.as_strided(base, (3, 16, 16), (0, 64, 4))
    with pytest.raises(RuntimeFailure, match="output C .* has elements that share memory"):
        bind(p, backend(), {"A": A, "B": B, "C": stride0})
    flat = np.zeros(16 * 16 + 32, np.float32)
    short = np.lib.stride_tricks.as_strided(flat, (3, 16, 16), (16 * 4, 64, 4))  # batch stride 16 < 256 elements
    with pytest.raises(RuntimeFailure, match="share memory"):
        bind(p, backend(), {"A": A, "B": B, "C": short})
    ok = bind(p, backend(), {"A": A, "B": B, "C": np.zeros((3, 16, 16), np.float32)})
    assert ok.sizes["batch"] == 3


@pytest.mark.parametrize("backend,arch", [(HipBackend, "gfx942"), (CudaBackend, "sm_90")], ids=["hip", "cuda"])
def test_device_arrays_that_overlap_are_refused(backend, arch):
    base = 1 << 40
    A = DeviceArray(base, (64, 64))
    B = DeviceArray(base + 64 * 64 * 4, (64, 64))
    with pytest.raises(RuntimeFailure, match="output C overlaps A"):
        bind(plan(arch), backend(), {"A": A, "B": B, "C": DeviceArray(base + 60 * 64 * 4, (64, 64))})
    with pytest.raises(RuntimeFailure, match="output C overlaps B"):  # C is a view of B's last rows
        bind(plan(arch), backend(), {"A": A, "B": B, "C": DeviceArray(base + 2 * 64 * 64 * 4 - 4, (64, 64))})
    bind(plan(arch), backend(), {"A": A, "B": B, "C": DeviceArray(base + 2 * 64 * 64 * 4, (64, 64))})
    # beta != 0: C is read and written; still it may not overlap an input
    with pytest.raises(RuntimeFailure, match="overlaps"):
        bind(plan(arch, beta=1.0), backend(), {"A": A, "B": B, "C": A})
