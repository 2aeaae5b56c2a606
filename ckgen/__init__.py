"""ckgen: a code-generation compiler for composable GPU kernels (AMD matrix cores first).

Stages (docs/design.md): frontend -> ir -> lower -> codegen -> toolchain -> runtime; ops in ckgen/ops.
"""

from ckgen.errors import CkgenError
from ckgen.version import __version__

__all__ = ["CkgenError", "__version__", "jit", "rope_interleave", "rope_table"]


def __getattr__(name: str):
    """``ckgen.jit`` (ckgen.runtime.api.jit), ``ckgen.rope_table`` (the rotary embedding's cos / sin table) and
    ``ckgen.rope_interleave`` (rotate-half q / k weights in the pair order a rotary epilogue takes; both in
    ckgen.ir.rope), imported on first use so ``import ckgen`` stays light."""
    if name == "jit":
        from ckgen.runtime.api import jit

        return jit
    if name in ("rope_table", "rope_interleave"):
        from ckgen.ir import rope

        return getattr(rope, name)
    raise AttributeError(f"module 'ckgen' has no attribute {name!r}")
