"""ckgen: a code-generation compiler for composable GPU kernels (GEMM on AMD MFMA first).

Stages (docs/design.md): frontend -> ir -> lower -> codegen -> build -> runtime.
"""

__version__ = "0.1.0"

from ckgen.errors import CkgenError  # noqa: E402

__all__ = ["CkgenError", "__version__"]
