"""Frontend: DSL text → :class:`ckgen.ir.spec.KernelSpec` list."""

from ckgen.frontend.parser import parse
from ckgen.frontend.specs import load_file, load_text

__all__ = ["load_file", "load_text", "parse"]
