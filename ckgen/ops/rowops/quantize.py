"""The ``quantize`` op of the registry: a :class:`~ckgen.ops.rowops.RowOp` (the package holds everything)."""

from ckgen.ops.rowops import RowOp

OP = RowOp("quantize")
