"""What the GEMM tests share: the host-compiler marker, the emulator build of a test file's kernel table, one run
checked against the op's float64 reference, the AMD code objects of a spec with the checks every rung-1 build makes,
and the nvcc (sm_90) build of a spec with the checks every Hopper-body build makes."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ckgen import driver
from ckgen.backends import emu
from ckgen.errors import CkgenError
from ckgen.ir.arrays import to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.registry import get_op
from ckgen.runtime.api import Kernel, plan_for
from ckgen.runtime.api import emu_kernels as api_emu_kernels

needs_clang = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")


def emu_kernels(sources: dict[str, tuple[str, str]]) -> dict[str, Kernel]:
    """name -> (arch, .ck source holding it): each kernel planned for its AMD arch and built for the emulator, in
    two libraries per arch built side by side (a library is one host compile)."""
    return api_emu_kernels([plan_for(src, n, "amd", arch) for n, (arch, src) in sources.items()], "gemm_emu", jobs=2)


def scaled_inputs(gemm: Kernel, sizes: dict, seed: int) -> dict:
    """The op's random inputs at ``sizes`` (C poisoned), with any dequantization scales positive over two decades."""
    rng = np.random.default_rng(seed)
    ops = get_op("gemm").random_inputs(gemm.plan, sizes, rng)
    for s in ("scale_a", "scale_b"):
        if ops.get(s) is not None:
            ops[s][...] = rng.uniform(0.05, 5.0, ops[s].shape).astype(np.float32)
    return ops


def assert_refused(arch: str, body: str, param: str, legal: str) -> None:
    """Kernel ``k { body }`` planned for ``arch`` is refused naming ``param``, with ``legal`` among its legal values,
    at its file:line:col."""
    from ckgen.frontend import load_text
    from ckgen.lower import plan_kernel
    from ckgen.targets import get_target

    (s,) = load_text(f"kernel k {{ {body} }}", "v.ck", (arch,))
    with pytest.raises(CkgenError) as ei:
        plan_kernel(s, get_target(arch))
    assert ei.value.param == param and legal in ei.value.legal, (ei.value.param, ei.value.legal)
    assert ei.value.render().startswith("v.ck:1:")


def check_against_float64(gemm: Kernel, ops: dict, sizes: dict) -> None:
    """Run ``gemm`` on ``ops`` (C poisoned unless it is read: beta != 0) and compare C with the op's float64
    reference within the op's tolerance."""
    plan, op = gemm.plan, get_op("gemm")
    g = plan.spec.params.gemm
    if g.beta == 0:
        assert np.all(ops["C"].ravel(order="K").view(np.uint8) == 0xFF)   # poisoned
    before = {k: (v.copy() if v is not None else None) for k, v in ops.items()}
    out = gemm(**ops)
    ref = op.reference(plan, before, sizes)["C"]
    err = relative_error(to_float64(out, g.c.dtype), ref)
    tol = op.tolerance(plan, "C")
    assert err <= tol, f"{gemm.name} {sizes}: relative error {err:.3e} > {tol:.1e}"


def sm90_library(tmp_path, stem: str, text: str, **compile_kw):
    """``text`` (a .ck source) written as ``<stem>.ck`` and compiled for sm_90 (ckgen compile's path); skips
    without nvcc."""
    from ckgen.backends.nvidia import compiler as nvidia

    try:
        nvidia.find_nvcc()
    except CkgenError as exc:
        pytest.skip(str(exc))
    src = tmp_path / f"{stem}.ck"
    src.write_text(text)
    (lib,) = driver.compile_files([src], ("sm_90",), tmp_path / "out", jobs=2, **compile_kw)
    return lib


def assert_entries_clean(lib, hopper: bool = True, portable: bool = True) -> None:
    """Every kernel's entry of ``lib`` without spills or stack (``portable``; an fp8 kernel of the Hopper body's
    K tile of 128 has a fallback mma.sync entry that spills, as the dense ones do); with ``hopper``, each also has its
    `<name>_tma` Hopper entry, without spills, issuing wgmma that ptxas did not serialize."""
    for (name, _), res in lib.resources.items():
        if portable:
            assert res["spill_stores"] == 0 and res["stack_bytes"] == 0, (name, res)
        if hopper:
            body = res["tma_body"]
            assert body["entry"] == f"{name}_tma" and body["spill_stores"] == 0, (name, body)
            assert any(k.startswith("wgmma.mma_async") for k, _ in body["ptx_tensor"]), (name, body)
            assert not body.get("wgmma_serialized"), (name, body)


#: the AMD arches rung-1 GEMM tests build for, each with the clang that targets it
RUNG1_ARCHES = [("gfx90a", "clang++-19"), ("gfx942", "clang++-19"), ("gfx950", "clang++-22")]


def amd_library(tmp_path, stem: str, text: str, arch: str, clang: str):
    """``text`` (a .ck source) compiled for ``arch`` (ckgen compile's path), every kernel's planned MFMA in its main
    loop and no spills or scratch; skips without ``clang``."""
    if shutil.which(clang) is None:
        pytest.skip(f"{clang} is not installed")
    src = tmp_path / f"{stem}.ck"
    src.write_text(text)
    (lib,) = driver.compile_files([src], (arch,), tmp_path / "out", jobs=2)
    for p in lib.plans:
        res = lib.resources[(p.name, arch)]
        assert res["mfma"].get(p.body.instr.mnemonic, 0) > 0 and res["mfma_in_main_loop"] > 0, (p.name, res["mfma"])
        assert res["vgpr_spills"] == res["sgpr_spills"] == res["scratch_bytes"] == 0, (p.name, res)
    return lib
