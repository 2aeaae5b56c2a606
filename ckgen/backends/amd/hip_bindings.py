"""hip-python, loaded once and checked: the HIP bindings ckgen's AMD JIT calls, its error classes, and the
libraries it finds (``libamdhip64``, hiprtc).

:func:`_bindings` imports hip-python and checks that its version fits the HIP runtime it drives
(:func:`version_problem`): hip-python releases 6.x/7.x are made for one ROCm release (``6.4.1.552.39`` is for
ROCm 6.4) and must match the runtime's major.minor; releases from 10 on (``rocm-bindings``) load any ROCm. A
mismatch is a :class:`HipRuntimeUnavailable` saying which hip-python to install.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ckgen.errors import RuntimeFailure, option

# ckgen/include/ckgen/status.h (stable ABI)
STATUS_INVALID_VALUE = 1
STATUS_NO_DEVICE = 2
STATUS_NO_RUNTIME = 3
STATUS_UNSUPPORTED_ARCH = 4
STATUS_LAUNCH_FAILED = 5

_HIP_ERROR_NO_DEVICE = 100
_HIP_ERROR_INVALID_DEVICE = 101
_ROCM5_GCN_ARCH_NAME_OFFSET = 396  # offsetof(hipDeviceProp_t, gcnArchName) in ROCm 5.x hip_runtime_api.h
_ROCM5_PROP_SIZE = 792


class HipRuntimeUnavailable(RuntimeFailure):
    """hip-python or libamdhip64 is missing (status CKGEN_ERROR_NO_RUNTIME; the command's exit code 4)."""

    status = STATUS_NO_RUNTIME
    exit_code = 4


class HipNoDevice(RuntimeFailure):
    """HIP loads but sees no GPU (status CKGEN_ERROR_NO_DEVICE; the command's exit code 4)."""

    status = STATUS_NO_DEVICE
    exit_code = 4


class HipLaunchError(RuntimeFailure):
    """Module load, function lookup or launch failed on a present device (CKGEN_ERROR_LAUNCH_FAILED)."""

    status = STATUS_LAUNCH_FAILED


class HipArgumentError(RuntimeFailure):
    """A buffer or size passed to a kernel is wrong (CKGEN_ERROR_INVALID_VALUE)."""

    status = STATUS_INVALID_VALUE


# ------------------------------------------------------------------------------------------ bindings
@dataclass(frozen=True)
class _Bindings:
    hip: Any
    hiprtc: Any
    paths: Any  # rocm.bindings.util.paths (hip-python >= 6.4), or None


@lru_cache(maxsize=1)
def _bindings() -> _Bindings:
    try:
        from hip import hip, hiprtc  # hip-python
    except ImportError as e:
        raise HipRuntimeUnavailable(
            f"the AMD JIT needs hip-python, which is not importable ({e})",
            hint="pip install hip-python  (or: pip install 'ckgen-compiler[hip]')") from None
    try:
        from rocm.bindings.util import paths
    except ImportError:
        paths = None
    problem = version_problem(_package_version(), _runtime_version(hip))
    if problem:
        raise HipRuntimeUnavailable(problem[0], hint=problem[1])
    return _Bindings(hip, hiprtc, paths)


#: hip-python releases from this major on load any ROCm (rocm-bindings); older ones are made for one ROCm release
VERSION_INDEPENDENT_MAJOR = 10


def _package_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("hip-python")
    except metadata.PackageNotFoundError:
        return None


def _runtime_version(hip: Any) -> int | None:
    """HIP_VERSION of the runtime hip-python loads (major * 10**7 + minor * 10**5 + patch), or None."""
    try:
        err, version = hip.hipRuntimeGetVersion()
    except Exception:  # noqa: BLE001 - no libamdhip64: the first real call reports it
        return None
    return int(version) if _code(err) == 0 else None


def version_problem(package: str | None, runtime: int | None) -> tuple[str, str] | None:
    """(message, hint) when hip-python ``package`` was made for another ROCm than the ``runtime`` (a HIP_VERSION
    number), else None (also when either is unknown)."""
    if package is None or runtime is None:
        return None
    try:
        major, minor = (int(x) for x in package.split(".")[:2])
    except ValueError:
        return None
    if major >= VERSION_INDEPENDENT_MAJOR:
        return None
    rt_major, rt_minor = runtime // 10_000_000, runtime // 100_000 % 100
    if (major, minor) == (rt_major, rt_minor):
        return None
    return (f"hip-python {package} is made for ROCm {major}.{minor}, but the HIP runtime here is "
            f"{rt_major}.{rt_minor} (HIP_VERSION {runtime})",
            f"pip install 'hip-python>={rt_major}.{rt_minor},<{rt_major}.{rt_minor + 1}' for this ROCm, "
            f"or 'hip-python>={VERSION_INDEPENDENT_MAJOR}', which loads any ROCm")


def _code(err: Any) -> int:
    return int(getattr(err, "value", err))


def _hip_call(what: str, result: Any) -> Any:
    """Unpack a hip-python result tuple; map errors to ckgen's error classes."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    code = _code(err)
    if code != 0:
        name = getattr(err, "name", str(code))
        if code in (_HIP_ERROR_NO_DEVICE, _HIP_ERROR_INVALID_DEVICE):
            raise HipNoDevice(f"{what}: no AMD GPU is visible to HIP ({name})",
                              hint=f"run on a machine with an AMD GPU, or use {option('target', 'emu')}")
        raise HipLaunchError(f"{what} failed: {name}")
    return rest[0] if len(rest) == 1 else tuple(rest)


def _dl_path_of(lib: ctypes.CDLL, symbol: str) -> str | None:
    """The file a loaded library was mapped from (dladdr of one of its symbols)."""

    class DlInfo(ctypes.Structure):
        _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                    ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]

    libc = ctypes.CDLL(None)
    info = DlInfo()
    addr = ctypes.cast(getattr(lib, symbol), ctypes.c_void_p)
    if not libc.dladdr(addr, ctypes.byref(info)) or not info.fname:
        return None
    return os.path.realpath(info.fname.decode())


def _load(names: list[str]) -> ctypes.CDLL | None:
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            continue
    return None


def _amdhip64() -> ctypes.CDLL | None:
    b = _bindings()
    names = []
    if b.paths is not None:
        names.append(os.fsdecode(b.paths.get_library_path("amdhip64")))
    names += ["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"]
    return _load(names)


