"""The targets table: every architecture ckgen knows, by name.

``get_target(name)`` is the one lookup later stages use; they never test arch names themselves.
AMD entries live in ``amd.py``; NVIDIA entries in ``nvidia.py`` (``NVIDIA_TARGETS``).
"""

from __future__ import annotations

from ckgen.errors import ValidationError, did_you_mean
from ckgen.ir.target import MatrixInstr, Target
from ckgen.progress import current
from ckgen.targets.amd import AMD_TARGETS
from ckgen.targets.nvidia import NVIDIA_TARGETS

TARGETS: dict[str, Target] = {**AMD_TARGETS, **NVIDIA_TARGETS}

if len(TARGETS) != len(AMD_TARGETS) + len(NVIDIA_TARGETS):  # pragma: no cover - table bug
    raise RuntimeError("ckgen.targets: a target name is defined twice")


def get_target(name: str) -> Target:
    """The target called ``name`` (``gfx942``, ``sm_90`` ...); ValidationError on ``arch`` otherwise."""
    try:
        return TARGETS[name]
    except (KeyError, TypeError):
        exc = ValidationError(param="arch", value=name, legal=", ".join(sorted(TARGETS)), reason="unknown target")
        close = did_you_mean(str(name), TARGETS)
        raise (exc.suggest(close.strip(), first=True) if close else exc) from None


#: the arch a vendor's backend plans for when neither the spec nor the caller names one
DEFAULT_TARGETS: dict[str, str] = {"amd": "gfx942", "nvidia": "sm_90"}


def default_target(vendor: str) -> str:
    return DEFAULT_TARGETS[vendor]


def arch_for(arches: tuple[str, ...], vendor: str, what: str) -> str:
    """The arch a backend of ``vendor`` plans ``what`` (e.g. "kernel 'k'") for when the caller names none: the first
    of ``arches`` (the spec's targets) of that vendor, else the vendor's default, with a warning saying so (the
    spec targets another vendor only)."""
    own = [a for a in arches if get_target(a).vendor == vendor]
    if own:
        return own[0]
    arch = default_target(vendor)
    current().warning(f"{what} names only {', '.join(arches)}; planning it for {arch} (this target runs {vendor} "
                      f"arches; pass arch= / --arch to choose one)")
    return arch
#: the preprocessor define that tells device code its target's native fp8 encoding (ckgen/blocks/fp8.h converts the
#: types of that encoding with the hardware's instructions, the others with exact bit code)
FP8_NATIVE_DEFINES = {"fnuz": "CKGEN_FP8_NATIVE_FNUZ", "ocp": "CKGEN_FP8_NATIVE_OCP"}


def device_defines(target: Target) -> tuple[str, ...]:
    """Preprocessor names a kernel source for ``target`` defines before its includes (empty for most targets)."""
    enc = target.fp8_encoding
    return (FP8_NATIVE_DEFINES[enc],) if enc else ()


def target_names() -> list[str]:
    """All known target names, sorted."""
    return sorted(TARGETS)


def amd_targets() -> tuple[Target, ...]:
    """The AMD targets, oldest first (gfx908, gfx90a, gfx942, gfx950)."""
    return tuple(AMD_TARGETS.values())


def nvidia_targets() -> tuple[Target, ...]:
    """The NVIDIA targets (empty until ckgen/targets/nvidia.py lands)."""
    return tuple(NVIDIA_TARGETS.values())


__all__ = ["TARGETS", "MatrixInstr", "Target", "amd_targets", "device_defines", "get_target", "nvidia_targets",
           "target_names"]
