"""The emulator backend: :mod:`~ckgen.backends.emu.compiler` (the host clang++ build of generated kernels with
the emulator's headers) and :mod:`~ckgen.backends.emu.driver` (load, bind numpy arrays, launch, report faults).
The names below are the backend's API."""

from ckgen.backends.emu.compiler import (
    HOST_CXX_CANDIDATES,
    build_emu_kernel,
    build_library,
    build_shared,
    compile_flags,
    compiler_version,
    emu_defines,
    emu_sources,
    host_compiler,
    target_builtins,
)
from ckgen.backends.emu.driver import (
    CKGEN_ERROR_EMULATION_FAULT,
    EmuBackend,
    EmuKernel,
    EmuLibrary,
    LdsSiteStats,
    lds_bank_summary,
    load_library,
    prebuilt_backend,
)

__all__ = ["CKGEN_ERROR_EMULATION_FAULT", "HOST_CXX_CANDIDATES", "EmuBackend", "EmuKernel", "EmuLibrary", "LdsSiteStats", "build_emu_kernel", "build_library",
           "build_shared", "compile_flags", "compiler_version", "emu_defines", "emu_sources",
           "host_compiler", "lds_bank_summary", "load_library", "prebuilt_backend",
           "target_builtins"]
