"""ckgen: a code-generation compiler for composable GPU kernels (AMD matrix cores first).

Stages (docs/design.md): frontend -> ir -> lower -> codegen -> toolchain -> runtime; ops in ckgen/ops.
"""

from ckgen.errors import CkgenError
from ckgen.version import __version__

__all__ = ["CkgenError", "__version__", "jit", "rope_table"]


def __getattr__(name: str):
    """``ckgen.jit`` (ckgen.runtime.api.jit) and ``ckgen.rope_table`` (the rotary embedding's cos / sin
    table, ckgen.ir.rope.rope_table), imported on first use so ``import ckgen`` stays light."""
    if name == "jit":
        from ckgen.runtime.api import jit

        return jit
    if name == "rope_table":
        from ckgen.ir.rope import rope_table

        return rope_table
    raise AttributeError(f"module 'ckgen' has no attribute {name!r}")
