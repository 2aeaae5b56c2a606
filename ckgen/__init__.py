"""ckgen: a code-generation compiler for composable GPU kernels (AMD matrix cores first).

Stages (docs/design.md): frontend -> ir -> lower -> codegen -> toolchain -> runtime; ops in ckgen/ops.
"""

from ckgen.errors import CkgenError
from ckgen.version import __version__

__all__ = ["CkgenError", "__version__", "jit"]


def __getattr__(name: str):
    """``ckgen.jit`` (ckgen.runtime.api.jit), imported on first use so ``import ckgen`` stays light."""
    if name == "jit":
        from ckgen.runtime.api import jit

        return jit
    raise AttributeError(f"module 'ckgen' has no attribute {name!r}")
