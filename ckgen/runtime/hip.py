"""AMD JIT backend: kernel source -> code object (hiprtc, else clang) -> hipModuleLoadData -> launch.

Everything goes through hip-python (``pip install hip-python``), which calls the system's
``libamdhip64``. Contracts:

- :func:`compile_code_object` turns one kernel source (the generated ``.hip`` text, which includes
  ckgen's self-contained device headers from ``ckgen/include``) into a raw code object for one arch.
  It uses hiprtc when the system's ROCm has it *and* its code-object manager knows the arch
  (:func:`hiprtc_info`); otherwise the clang toolchain (``clang++ -x hip --offload-device-only``).
  Results are cached on disk, keyed by sha256 of canonical JSON (source, arch, compiler, options,
  header hashes) and published with ``os.replace``.
- :class:`HipModule` loads a code object and launches one of its kernels with
  ``hipModuleLaunchKernel``. With no GPU it raises :class:`HipNoDevice` (never a HIP traceback).
- :func:`device_pointer` accepts hip-python buffers (``hipMalloc``'s ``DeviceArray``), any object with
  ``__cuda_array_interface__`` (ROCm PyTorch tensors, CuPy), and checks dtype, shape and size.

ROCm 5.x ships hiprtc inside ``libamdhip64.so.5`` and no ``libhiprtc.so``, while hip-python opens
``libhiprtc.so``. :func:`hiprtc_info` resolves that in-process: when hip-python cannot find a hiprtc
library but ``libamdhip64`` exports ``hiprtcCompileProgram``, it links ``<cache>/hiprtc-shim/lib/libhiprtc.so``
to that ``libamdhip64`` and lets hip-python's documented ``ROCM_PATH`` lookup find it for the one call
that loads hiprtc (hip-python resolves the library lazily, once). A system-wide alternative, for CI
images: ``ln -s libamdhip64.so.5 /usr/lib/x86_64-linux-gnu/libhiprtc.so``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ckgen import resources
from ckgen.config import settings
from ckgen.errors import BuildError, RuntimeFailure, ToolchainError

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
    """hip-python or libamdhip64 is missing (status CKGEN_ERROR_NO_RUNTIME)."""

    status = STATUS_NO_RUNTIME


class HipNoDevice(RuntimeFailure):
    """HIP loads but sees no GPU (status CKGEN_ERROR_NO_DEVICE)."""

    status = STATUS_NO_DEVICE


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
            hint="pip install hip-python  (or: pip install 'ckgen[hip]')") from None
    try:
        from rocm.bindings.util import paths
    except ImportError:
        paths = None
    return _Bindings(hip, hiprtc, paths)


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
                              hint="run on a machine with an AMD GPU, or use target='emu'")
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


# ------------------------------------------------------------------------------------------ hiprtc
@dataclass(frozen=True)
class HiprtcInfo:
    """Whether hiprtc works here. ``isas`` lists the archs its code-object manager knows (None: unknown)."""

    available: bool
    library: str | None
    version: tuple[int, int] | None
    isas: frozenset[str] | None
    reason: str

    def supports(self, arch: str) -> bool:
        return self.available and (self.isas is None or arch in self.isas)


def _comgr_isas() -> frozenset[str] | None:
    """Processor names (``gfx90a`` ...) that the system's amd_comgr (which hiprtc uses) can target.

    hiprtc from ROCm 5.2 aborts the process on an unknown processor, so callers check this first.
    """
    lib = _load(["libamd_comgr.so.3", "libamd_comgr.so.2", "libamd_comgr.so"])
    if lib is None:
        return None
    n = ctypes.c_size_t()
    if lib.amd_comgr_get_isa_count(ctypes.byref(n)) != 0:
        return None
    out = set()
    for i in range(n.value):
        name = ctypes.c_char_p()
        if lib.amd_comgr_get_isa_name(ctypes.c_size_t(i), ctypes.byref(name)) == 0 and name.value:
            out.add(name.value.decode().rsplit("--", 1)[-1].split(":")[0])
    return frozenset(out)


_hiprtc_lock = threading.Lock()


def _shim_dir(target: str) -> Path:
    """``<cache>/hiprtc-shim/<hash>`` holding ``lib/libhiprtc.so -> target``; made atomically."""
    digest = hashlib.sha256(target.encode()).hexdigest()[:16]
    root = settings().cache_dir / "hiprtc-shim" / digest
    link = root / "lib" / "libhiprtc.so"
    if os.path.realpath(link) != target:
        link.parent.mkdir(parents=True, exist_ok=True)
        tmp = link.with_name(f".libhiprtc.so.{os.getpid()}")
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        os.symlink(target, tmp)
        os.replace(tmp, link)
    return root


@lru_cache(maxsize=1)
def hiprtc_info() -> HiprtcInfo:
    """Find hiprtc, making hip-python able to load it (see the module docstring). Never raises."""
    try:
        b = _bindings()
    except HipRuntimeUnavailable as e:
        return HiprtcInfo(False, None, None, None, e.message)
    with _hiprtc_lock:
        resolved = os.fsdecode(b.paths.get_library_path("hiprtc")) if b.paths else "libhiprtc.so"
        lib = _load([resolved])
        shim_root = None
        if lib is None or not hasattr(lib, "hiprtcCompileProgram"):
            hip = _amdhip64()
            if hip is None or not hasattr(hip, "hiprtcCompileProgram"):
                return HiprtcInfo(False, None, None, None,
                                  "no hiprtc library, and libamdhip64 does not export hiprtc")
            target = _dl_path_of(hip, "hiprtcCompileProgram")
            if target is None or b.paths is None:
                return HiprtcInfo(False, None, None, None, "cannot point hip-python at libamdhip64's hiprtc")
            shim_root = _shim_dir(target)
            resolved = target
        saved = os.environ.get("ROCM_PATH")
        try:
            if shim_root is not None:
                os.environ["ROCM_PATH"] = str(shim_root)  # read once by hip-python's lazy lookup below
            res = b.hiprtc.hiprtcVersion()
        except RuntimeError as e:  # hip-python: failed to dlopen / dlsym
            return HiprtcInfo(False, None, None, None, f"hip-python cannot load hiprtc: {e}")
        finally:
            if shim_root is not None:
                if saved is None:
                    os.environ.pop("ROCM_PATH", None)
                else:
                    os.environ["ROCM_PATH"] = saved
    if _code(res[0]) != 0:
        return HiprtcInfo(False, resolved, None, None, f"hiprtcVersion failed: {res[0]}")
    return HiprtcInfo(True, resolved, (int(res[1]), int(res[2])), _comgr_isas(), "ok")


# ------------------------------------------------------------------------------------------ compile
@dataclass(frozen=True)
class CodeObject:
    """A raw amdgcn code object (ELF) for one arch, and which compiler made it."""

    arch: str
    kernel: str
    data: bytes
    compiler: str  # "hiprtc <major>.<minor>" or the clang path and version
    log: str = ""


def _include_dirs(extra: tuple[str, ...]) -> list[str]:
    return [*extra, str(resources.INCLUDE_DIR)]


def _hiprtc_compile(source: str, kernel: str, arch: str, includes: list[str], options: tuple[str, ...]) -> CodeObject:
    info = hiprtc_info()
    rtc = _bindings().hiprtc
    err, prog = rtc.hiprtcCreateProgram(source.encode(), f"{kernel}.hip".encode(), 0, [], [])
    if _code(err) != 0:
        raise BuildError(f"hiprtcCreateProgram failed for kernel '{kernel}': {err}")
    try:
        opts = [f"--offload-arch={arch}", "-O3", "-std=c++17", *[f"-I{d}" for d in includes], *options]
        (err,) = rtc.hiprtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        _, n = rtc.hiprtcGetProgramLogSize(prog)
        log = bytearray(n)
        if n:
            rtc.hiprtcGetProgramLog(prog, log)
        text = log.decode(errors="replace").rstrip("\x00")
        if _code(err) != 0:
            raise BuildError(f"hiprtc could not compile kernel '{kernel}' for {arch}", log=text)
        _, size = rtc.hiprtcGetCodeSize(prog)
        code = bytearray(size)
        rtc.hiprtcGetCode(prog, code)
    finally:
        rtc.hiprtcDestroyProgram(prog.createRef())
    return CodeObject(arch, kernel, bytes(code), f"hiprtc {info.version[0]}.{info.version[1]}", text)


def _clang() -> tuple[str, str]:
    """A HIP-capable clang++ and its version line."""
    s = settings()
    candidates = [c for c in (s.clang,) if c] + ["clang++-22", "clang++-19", "clang++"]
    for c in candidates:
        try:
            out = subprocess.run([c, "--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0:
            return c, out.stdout.splitlines()[0]
    raise ToolchainError("no clang++ found for the AMD device compile",
                         hint="install clang-19 (Debian: apt-get install clang-19 lld-19) or set CKGEN_CLANG")


def _clang_compile(source: str, kernel: str, arch: str, includes: list[str], options: tuple[str, ...]) -> CodeObject:
    clang, version = _clang()
    with tempfile.TemporaryDirectory(prefix="ckgen-hip-") as tmp:
        src = Path(tmp) / f"{kernel}.hip"
        out = Path(tmp) / f"{kernel}.{arch}.co"
        src.write_text(source)
        cmd = [clang, "-x", "hip", f"--offload-arch={arch}", "--offload-device-only", "--no-gpu-bundle-output",
               "-nogpuinc", "-nogpulib", "-O3", "-std=c++17", *[f"-I{d}" for d in includes], *options,
               "-c", str(src), "-o", str(out)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise BuildError(f"clang could not compile kernel '{kernel}' for {arch}", log=res.stderr)
        return CodeObject(arch, kernel, out.read_bytes(), f"{clang} ({version})", res.stderr)


def compile_code_object(source: str, kernel: str, arch: str, *, compiler: str = "auto",
                        include_dirs: tuple[str, ...] = (), options: tuple[str, ...] = (),
                        use_cache: bool = True) -> CodeObject:
    """Compile ``source`` (which defines ``extern "C"`` kernel ``kernel``) to a code object for ``arch``.

    ``compiler``: ``"auto"`` (hiprtc when :func:`hiprtc_info` supports ``arch``, else clang),
    ``"hiprtc"`` (a :class:`ToolchainError` when it cannot) or ``"clang"``.
    """
    if compiler not in ("auto", "hiprtc", "clang"):
        raise ToolchainError(f"compiler = {compiler!r}: unknown", hint="legal: auto, hiprtc, clang")
    info = hiprtc_info()
    use_rtc = compiler == "hiprtc" or (compiler == "auto" and info.supports(arch))
    if use_rtc and not info.supports(arch):
        why = info.reason if not info.available else f"its code-object manager does not know {arch}"
        raise ToolchainError(f"hiprtc cannot compile for {arch}: {why}",
                             hint=f"hiprtc targets here: {sorted(info.isas or [])}; or use compiler='clang'")
    includes = _include_dirs(include_dirs)
    ident = f"hiprtc {info.version}" if use_rtc else _clang()[1]
    key = hashlib.sha256(json.dumps({
        "source": hashlib.sha256(source.encode()).hexdigest(), "kernel": kernel, "arch": arch,
        "compiler": ident, "options": list(options), "includes": include_dirs,
        "headers": resources.content_hashes()["include"],
    }, sort_keys=True).encode()).hexdigest()
    entry = settings().cache_dir / "hip-jit" / key[:2] / f"{key}.json"
    if use_cache and not settings().no_cache and entry.is_file():
        try:
            meta = json.loads(entry.read_text())
            data = entry.with_suffix(".co").read_bytes()
            if hashlib.sha256(data).hexdigest() == meta["sha256"]:
                return CodeObject(arch, kernel, data, meta["compiler"], meta.get("log", ""))
        except (OSError, ValueError, KeyError):
            pass  # corrupt entry: rebuild below
    if use_rtc:
        try:
            co = _hiprtc_compile(source, kernel, arch, includes, options)
        except BuildError as rtc_err:
            if compiler == "hiprtc":
                raise
            # auto: a source hiprtc rejects (its built-in header differs from -nogpuinc) may still build with clang
            co = _clang_compile(source, kernel, arch, includes, options)
            co = CodeObject(co.arch, co.kernel, co.data, co.compiler,
                            f"hiprtc failed, built with clang instead:\n{rtc_err.render()}\n{co.log}")
    else:
        co = _clang_compile(source, kernel, arch, includes, options)
    if use_cache:
        entry.parent.mkdir(parents=True, exist_ok=True)
        for path, payload in ((entry.with_suffix(".co"), co.data),
                              (entry, json.dumps({"sha256": hashlib.sha256(co.data).hexdigest(),
                                                  "compiler": co.compiler, "log": co.log}).encode())):
            fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
            os.replace(tmp, path)
    return co


# ------------------------------------------------------------------------------------------ device
def device_count() -> int:
    """Number of HIP devices; raises :class:`HipNoDevice` when there is none."""
    b = _bindings()
    try:
        n = _hip_call("hipGetDeviceCount", b.hip.hipGetDeviceCount())
    except RuntimeError as e:  # hip-python could not dlopen libamdhip64
        raise HipRuntimeUnavailable(f"HIP runtime library not loadable: {e}",
                                    hint="install ROCm's libamdhip64 (Debian: apt-get install libamdhip64-5)") from None
    if int(n) == 0:
        raise HipNoDevice("hipGetDeviceCount: no AMD GPU is visible to HIP",
                          hint="run on a machine with an AMD GPU, or use target='emu'")
    return int(n)


def device_arch(device: int = 0) -> str:
    """The processor name (``gfxNNN``, features stripped) of HIP device ``device``."""
    device_count()
    hip = _amdhip64()
    if hip is not None and not hasattr(hip, "hipGetDevicePropertiesR0600"):
        # ROCm 5.x: hip-python's bindings use the ROCm 6 struct; read the 5.x one directly.
        buf = ctypes.create_string_buffer(max(_ROCM5_PROP_SIZE, 4096))
        _hip_call("hipGetDeviceProperties", hip.hipGetDeviceProperties(buf, ctypes.c_int(device)))
        name = buf.raw[_ROCM5_GCN_ARCH_NAME_OFFSET:_ROCM5_GCN_ARCH_NAME_OFFSET + 256].split(b"\0", 1)[0]
    else:
        props = _hip_call("hipGetDeviceProperties", _bindings().hip.hipGetDeviceProperties(device))
        name = props.gcnArchName
    name = name.decode() if isinstance(name, bytes) else str(name)
    return name.split(":", 1)[0]


# ------------------------------------------------------------------------------------------ buffers
@dataclass(frozen=True)
class DeviceBuffer:
    """A device address with what the caller told us about it (None: unknown, e.g. raw hipMalloc)."""

    ptr: int
    nbytes: int | None
    shape: tuple[int, ...] | None
    typestr: str | None
    strides: tuple[int, ...] | None


_RAW_TYPESTRS = {"B", "|u1", "<u1", "b", "|b1"}


def device_pointer(obj: Any, what: str) -> DeviceBuffer:
    """Accept a hip-python buffer (``hipMalloc``), a ``__cuda_array_interface__`` object or None."""
    if obj is None:
        return DeviceBuffer(0, None, None, None, None)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if isinstance(cai, dict) and "data" in cai:
        ptr = int(cai["data"][0])
        shape = tuple(int(s) for s in cai.get("shape", ()))
        typestr = str(cai.get("typestr", ""))
        itemsize = int(getattr(obj, "itemsize", 0) or 0) if typestr in _RAW_TYPESTRS else 0
        if not itemsize:
            digits = "".join(ch for ch in typestr if ch.isdigit())
            itemsize = int(digits) if digits else 1
        n = 1
        for s in shape:
            n *= s
        strides = cai.get("strides")
        return DeviceBuffer(ptr, n * itemsize, shape, typestr,
                            tuple(int(s) for s in strides) if strides else None)
    if type(obj).__module__.startswith("rocm.bindings") or type(obj).__module__.startswith("hip"):
        try:
            return DeviceBuffer(int(obj), None, None, None, None)
        except (TypeError, ValueError):
            pass
    raise HipArgumentError(
        f"{what}: expected a device buffer (hip-python hipMalloc result or an object with "
        f"__cuda_array_interface__), got {type(obj).__name__}",
        hint="numpy arrays live on the host: copy them with hip.hipMemcpy, or use target='emu'")


def check_matrix(buf: DeviceBuffer, what: str, rows: int, cols: int, ld: int, row_major: bool,
                 typestrs: tuple[str, ...], itemsize: int) -> None:
    """Check a matrix operand: dtype (when known), and that ``ld`` and the bytes it spans fit."""
    if buf.ptr == 0:
        raise HipArgumentError(f"{what}: null device pointer")
    minor = cols if row_major else rows
    if ld < max(1, minor):
        raise HipArgumentError(f"ld{what.lower()} = {ld}: shorter than the {'row' if row_major else 'column'} "
                               f"length {minor}", hint=f"legal: ld{what.lower()} >= {max(1, minor)}")
    if buf.typestr is not None and buf.typestr not in _RAW_TYPESTRS and buf.typestr not in typestrs:
        raise HipArgumentError(f"{what}: dtype {buf.typestr} does not match the kernel",
                               hint=f"legal: {', '.join(typestrs)}")
    major = rows if row_major else cols
    need = ((major - 1) * ld + minor) * itemsize if major and minor else 0
    if buf.nbytes is not None and buf.nbytes < need:
        raise HipArgumentError(f"{what}: buffer of {buf.nbytes} bytes, the {rows}x{cols} matrix with "
                               f"ld = {ld} spans {need} bytes")


# ------------------------------------------------------------------------------------------ modules
class HipModule:
    """A loaded code object. Loading happens on first use, so construction never needs a device."""

    def __init__(self, code: CodeObject):
        self.code = code
        self._module = None
        self._functions: dict[str, Any] = {}
        self._lock = threading.Lock()

    def function(self, name: str) -> Any:
        with self._lock:
            if self._module is None:
                device_count()
                arch = device_arch()
                if arch != self.code.arch:
                    err = HipLaunchError(f"the code object is for {self.code.arch}, the device is {arch}",
                                         hint=f"build for arch='{arch}'")
                    err.status = STATUS_UNSUPPORTED_ARCH
                    raise err
                self._module = _hip_call("hipModuleLoadData",
                                         _bindings().hip.hipModuleLoadData(self.code.data))
            if name not in self._functions:
                self._functions[name] = _hip_call(
                    f"hipModuleGetFunction({name})",
                    _bindings().hip.hipModuleGetFunction(self._module, name.encode()))
            return self._functions[name]

    def launch(self, name: str, grid: tuple[int, int, int], block: int,
               args: list[ctypes._SimpleCData], stream: Any = None, lds_bytes: int = 0) -> None:
        """``hipModuleLaunchKernel`` with ``args`` packed as kernelParams (one pointer per argument)."""
        fn = self.function(name)
        params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
        _hip_call(f"hipModuleLaunchKernel({name})", _bindings().hip.hipModuleLaunchKernel(
            fn, grid[0], grid[1], grid[2], block, 1, 1, lds_bytes, stream,
            ctypes.addressof(params), None))


# ------------------------------------------------------------------------------------------ plan kernels
_TYPESTRS = {"f16": ("<f2",), "bf16": ("<V2", "<u2", "<i2"), "f32": ("<f4",), "f64": ("<f8",),
             "i8": ("|i1", "<i1"), "i32": ("<i4",)}


def _dims(buf: DeviceBuffer, what: str, row_major: bool, itemsize: int) -> tuple[int | None, int | None, int | None]:
    """(rows, cols, ld) of a 2-D __cuda_array_interface__ operand, or Nones for a raw buffer."""
    if buf.shape is None or buf.typestr in _RAW_TYPESTRS or len(buf.shape) != 2:
        if buf.shape is not None and buf.typestr not in _RAW_TYPESTRS and len(buf.shape) != 2:
            raise HipArgumentError(f"{what}: a {len(buf.shape)}-D array; the kernel takes a 2-D matrix")
        return None, None, None
    rows, cols = buf.shape
    if buf.strides is None:  # C-contiguous
        if not row_major:
            raise HipArgumentError(f"{what}: a C-contiguous (row-major) array, the kernel takes {what} column-major",
                                   hint=f"pass the transpose's view (e.g. x.t() in torch) or declare {what} row")
        return rows, cols, cols
    s0, s1 = (s // itemsize for s in buf.strides)
    if row_major and s1 == 1:
        return rows, cols, s0
    if not row_major and s0 == 1:
        return rows, cols, s1
    raise HipArgumentError(f"{what}: strides {buf.strides} do not describe a {'row' if row_major else 'column'}"
                           "-major matrix with unit stride along the contiguous dimension")


class HipGemm:
    """One planned GEMM kernel, compiled for its arch and launched on a HIP device.

    ``HipGemm(plan)`` compiles at once (hiprtc or clang, cached) and needs no device; calling it loads
    the module on first use. Arguments: device buffers as :func:`device_pointer` accepts. For 2-D
    ``__cuda_array_interface__`` operands M, N, K and the leading dimensions come from their shapes and
    strides; for raw buffers (``hipMalloc``) pass ``M=, N=, K=`` (and ``lda=`` etc. when not packed).
    """

    def __init__(self, plan: Any, *, compiler: str = "auto"):
        from ckgen.codegen import render_kernel

        self.plan = plan
        self.name = plan.name
        self.source = render_kernel(plan)
        self.code = compile_code_object(self.source, plan.name, plan.arch, compiler=compiler)
        self.module = HipModule(self.code)

    def __call__(self, A: Any, B: Any, C: Any, bias: Any = None, *, M: int | None = None, N: int | None = None,
                 K: int | None = None, lda: int | None = None, ldb: int | None = None, ldc: int | None = None,
                 stream: Any = None) -> None:
        g = self.plan.spec.gemm
        rm = {x: getattr(g, x).layout.value == "row" for x in ("a", "b", "c")}
        dt = {x: getattr(g, x).dtype for x in ("a", "b", "c")}
        bufs = {"A": device_pointer(A, "A"), "B": device_pointer(B, "B"), "C": device_pointer(C, "C")}
        da = _dims(bufs["A"], "A", rm["a"], dt["a"].bytes)
        db = _dims(bufs["B"], "B", rm["b"], dt["b"].bytes)
        dc = _dims(bufs["C"], "C", rm["c"], dt["c"].bytes)

        def pick(what: str, given: int | None, *seen: int | None) -> int:
            vals = {v for v in seen if v is not None}
            if given is not None:
                vals.add(int(given))
            if len(vals) != 1:
                raise HipArgumentError(f"{what}: " + (f"inconsistent values {sorted(vals)} from the operands' shapes"
                                                      if vals else "unknown; pass it for raw device buffers"))
            v = vals.pop()
            if v < 0:
                raise HipArgumentError(f"{what} = {v}: must be >= 0")
            return v

        m = pick("M", M, da[0], dc[0])
        n = pick("N", N, db[1], dc[1])
        k = pick("K", K, da[1], db[0])
        lds = []
        for what, given, d, rows, cols, row_major in (("A", lda, da, m, k, rm["a"]), ("B", ldb, db, k, n, rm["b"]),
                                                       ("C", ldc, dc, m, n, rm["c"])):
            ld = int(given) if given is not None else d[2] if d[2] is not None else (cols if row_major else rows)
            dtype = dt[what.lower()]
            check_matrix(bufs[what], what, rows, cols, ld, row_major, _TYPESTRS.get(dtype.value, ()), dtype.bytes)
            lds.append(ld)
        has_bias = any(op.kind == "bias" for op in g.epilogue)
        bias_buf = device_pointer(bias, "bias")
        if has_bias and bias_buf.ptr == 0:
            raise HipArgumentError(f"kernel '{self.name}' has a bias epilogue: pass bias")
        if not has_bias and bias_buf.ptr != 0:
            raise HipArgumentError(f"kernel '{self.name}' has no bias epilogue; bias must be None")
        if m == 0 or n == 0:
            return
        cfg = self.plan.spec.config
        grid = (-(-n // cfg.tile[1]), -(-m // cfg.tile[0]), 1)
        args = [ctypes.c_void_p(bufs["A"].ptr), ctypes.c_void_p(bufs["B"].ptr), ctypes.c_void_p(bufs["C"].ptr),
                ctypes.c_void_p(bias_buf.ptr), ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(k),
                ctypes.c_longlong(lds[0]), ctypes.c_longlong(lds[1]), ctypes.c_longlong(lds[2])]
        self.module.launch(self.name, grid, self.plan.threads, args, stream=stream)
