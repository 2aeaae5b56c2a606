"""The compiled prepared call of the cuda backend: fastcall.cpp (beside this file) built as a torch extension.

Contract:

- :func:`module` builds the extension on first use (torch.utils.cpp_extension, into the build cache under
  ``torch_ext/<name>``, ``<name>`` = ``ckgen_fastcall_`` + the first 16 hex digits of the sha256 of the canonical
  JSON of the source's hash, the torch, CUDA and Python versions), loads it once per process and returns it; None
  when torch is missing, ``CKGEN_FASTCALL=0`` turned it off, or the build failed (warned once, with the reason):
  calls then take the Python prepared path (:mod:`ckgen.runtime.prepared`), which computes the same.
- :func:`native_class` derives a callable class (Kernel, DispatchKernel) from the extension's Launcher, so that
  its instances are launchers themselves.
- :func:`spec` turns one prepared signature (the key :func:`ckgen.runtime.prepared.call_key` made and the
  :class:`~ckgen.runtime.prepared.Prepared` recorded from its fully checked first call) into the tuple a
  ``Launcher.add`` takes; fastcall.cpp's header says what a Launcher checks and does with it.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import platform
import warnings
from pathlib import Path
from typing import Any

from ckgen.config import settings

SOURCE = Path(__file__).with_name("fastcall.cpp")


@functools.lru_cache(maxsize=1)
def module() -> Any:
    """The built extension module (see the module docstring), or None."""
    if not settings().fastcall:
        return None
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError:
        return None
    text = SOURCE.read_bytes()
    key = hashlib.sha256(json.dumps({"source": hashlib.sha256(text).hexdigest(), "torch": torch.__version__,
                                     "cuda": torch.version.cuda, "python": platform.python_version()},
                                    sort_keys=True).encode()).hexdigest()
    name = f"ckgen_fastcall_{key[:16]}"
    build_dir = settings().cache_dir / "torch_ext" / name
    try:
        build_dir.mkdir(parents=True, exist_ok=True)
        mod = cpp_extension.load(name=name, sources=[str(SOURCE)], build_directory=str(build_dir),
                                 extra_cflags=["-O2"], with_cuda=True, verbose=False)
    except Exception as e:  # noqa: BLE001 - any build failure leaves the Python path, which is always correct
        warnings.warn(f"ckgen: the compiled prepared call (ckgen/backends/nvidia/fastcall.cpp) could not be built: "
                      f"{str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__}; repeated calls "
                      "take the Python prepared path (set CKGEN_FASTCALL=0 to skip the build)", RuntimeWarning,
                      stacklevel=2)
        return None
    mod.set_tensor_types((torch.Tensor, torch.nn.Parameter))
    return mod


_classes: dict[type, type] = {}


def native_class(base: type) -> type | None:
    """``base`` (Kernel, DispatchKernel) derived from the extension's Launcher, placed first so that a call reaches
    the compiled code with no Python frame (fastcall.cpp's header); None without the extension."""
    mod = module()
    if mod is None:
        return None
    cls = _classes.get(base)
    if cls is None:
        cls = _classes[base] = type(base.__name__, (mod.Launcher, base),
                                    {"__module__": base.__module__, "__qualname__": base.__qualname__,
                                     "__doc__": base.__doc__, "native_call": True})
    return cls


def spec(entry: Any, key: tuple, prep: Any, poison: bool) -> tuple:
    """The ``Launcher.add`` tuple of one prepared signature: ``entry`` the kernel's packed host entry (ctypes),
    ``key`` its call signature (``call_key``'s), ``prep`` its :class:`~ckgen.runtime.prepared.Prepared` (outputs
    made by the cuda backend's ``fast_output``), ``poison`` whether new outputs are filled with 0xFF bytes."""
    sigs, named = key
    kwnames = tuple(n[0] for n in named)
    kw = tuple(n[1] if len(n) == 3 else None for n in named)  # a scalar (name, value, type): its value
    op_sigs = list(sigs) + [n[1] for n in named if len(n) == 2]  # an operand (name, signature or None)
    operands = tuple(None if s is None else (s[0], tuple(s[1]), tuple(s[2]), s[3], s[4], prep.spans[i])
                     for i, s in enumerate(op_sigs))
    device = next(s[3] for s in op_sigs if s is not None)
    of_live = {li: idx for _, li, idx in prep.fill}
    allocs = []
    for j, (slot, li, _, _, raw) in enumerate(prep.allocs):
        shape, stride = raw.args  # the cuda backend's fast_output: partial(torch.empty_strided, shape, stride, ...)
        allocs.append((slot, shape, stride, raw.keywords["dtype"]))
        of_live[li] = -1 - j
    ws = None if prep.ws_slot is None else (prep.ws_slot, int(prep.ws_need))
    return (ctypes.cast(entry, ctypes.c_void_p).value, device, poison, len(sigs), kwnames, kw, operands,
            prep.template.tobytes(), tuple((slot, idx) for slot, _, idx in prep.fill), tuple(allocs),
            tuple((wi, tuple(others)) for wi, others in prep.checks), tuple(of_live[li] for li in prep.ret), ws)
