"""Which kernel names are legal: a kernel's name becomes C symbols and file names, so it must not clash.

A kernel ``k`` defines the device entry ``k`` (global, ``extern "C"``), the host entries ``ckgen_k`` and
``ckgen_k_packed``, the struct
``ckgen_gen::k_cfg``, and the files ``k.hip`` / ``k.cu`` / ``libk.so`` (JIT). :func:`name_problem` says why a
name is refused, or returns None:

- longer than :data:`MAX_NAME` characters (file names are limited to 255 bytes);
- a C or C++ keyword or alternative token (``int``, ``class``, ``and``), ``main``, or a global name of the
  headers generated code is compiled with (libc, libstdc++, POSIX, CUDA: ``reserved_names.txt``, made by
  ``tools/gen_reserved_names.py``; ``std``, ``memcpy``, ``dim3``, ``min``);
- starting with ``_`` (reserved to the C/C++ implementation at global scope) or with ``ckgen`` in any case
  (ckgen's own symbols, macros and namespaces); ending with ``_`` (the host entries' locals are
  ``<argument>_``), with ``_cfg`` (the generated configuration structs) or with ``_packed`` (kernel ``k``'s
  host entry has a twin ``ckgen_k_packed`` taking its arguments in one array: the prepared call's);
- a name whose host entry ``ckgen_<name>`` is one of ckgen's own symbols (``status_string``, ``rt_launch``);
- a vendor runtime's prefix (``hipMalloc``, ``cudaFree``, ``cuLaunch``: hiprtc and CUDA builds see those);
- the name of one of the kernel's own ABI arguments (``A``, ``lda``, ``stream``: the entry's parameters).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

#: longest kernel name (``lib<name>.so`` and ``ckgen_<name>_tma`` stay well below 255 bytes)
MAX_NAME = 200

#: C17/C23 and C++20 keywords, alternative tokens and contextual identifiers that cannot be function names
KEYWORDS = frozenset("""
alignas alignof and and_eq asm atomic_cancel atomic_commit atomic_noexcept auto bitand bitor bool break case
catch char char8_t char16_t char32_t class co_await co_return co_yield compl concept const const_cast consteval
constexpr constinit continue decltype default delete do double dynamic_cast else enum explicit export extern
false float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr operator or
or_eq private protected public reflexpr register reinterpret_cast requires restrict return short signed sizeof
static static_assert static_cast struct switch synchronized template this thread_local throw true try typedef
typeid typename typeof typeof_unqual union unsigned using virtual void volatile wchar_t while xor xor_eq
final override import module main
""".split())

#: ckgen symbols defined by generated code (templates), besides those the headers declare
GENERATED_SYMBOLS = frozenset({"ckgen_code_objects", "ckgen_code_object_count", "ckgen_at_least_1",
                               "ckgen_ceil_div", "ckgen_advance", "ckgen_min64", "ckgen_max64", "ckgen_status_string",
                               "ckgen_slot"})
#: prefixes of ckgen's internal C symbol families (the AMD host runtime's, the emulator's)
GENERATED_PREFIXES = ("ckgen_rt_", "ckgen_emu_")

_VENDOR_PREFIX = re.compile(r"^(?:hip|cuda|cu|nv)[A-Z0-9_]|^(?:HIP|CUDA|CU|NV)_")


@lru_cache(maxsize=1)
def reserved_names() -> frozenset[str]:
    """Global names of the platform headers' translation units (reserved_names.txt)."""
    text = (Path(__file__).with_name("reserved_names.txt")).read_text()
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def name_problem(name: str, abi_names: tuple[str, ...] = ()) -> str | None:
    """Why ``name`` cannot be a kernel's name, or None when it can."""
    if len(name) > MAX_NAME:
        return f"it is {len(name)} characters long; kernel names have at most {MAX_NAME}"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return "kernel names are C identifiers: letters, digits and '_', not starting with a digit"
    if name in KEYWORDS:
        return f"'{name}' is a C/C++ keyword or reserved name"
    if name.startswith("_"):
        return "names starting with '_' are reserved to the C/C++ implementation at global scope"
    if name.lower().startswith("ckgen"):
        return "names starting with 'ckgen' are reserved for ckgen's own symbols"
    if name.endswith("_"):
        return "names ending in '_' are reserved for the generated entry points' locals"
    if name.endswith("_cfg"):
        return "names ending in '_cfg' are reserved for the generated configuration structs"
    if name.endswith("_packed"):
        return "names ending in '_packed' are reserved: kernel k's host entry has the packed twin ckgen_k_packed"
    if name in abi_names or name == "stream":
        return f"'{name}' is an argument of the kernel's entry point"
    host = f"ckgen_{name}"
    if host in GENERATED_SYMBOLS or host in reserved_names() or host.startswith(GENERATED_PREFIXES):
        return f"its host entry point '{host}' would clash with ckgen's own symbol of that name"
    if name in reserved_names():
        return (f"'{name}' is a global name of the C/C++ or GPU runtime headers that generated code includes "
                "(libc, libstdc++, POSIX, CUDA)")
    if _VENDOR_PREFIX.match(name):
        return "names with a GPU runtime's prefix (hip, cuda, cu, nv) are reserved for that runtime"
    return None
