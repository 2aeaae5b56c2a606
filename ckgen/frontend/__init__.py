"""Frontend: DSL text → :class:`ckgen.ir.spec.KernelSpec` list."""

from ckgen.frontend.lowering import load_file, load_text
from ckgen.frontend.parser import parse

__all__ = ["load_file", "load_text", "parse"]
