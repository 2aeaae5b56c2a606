"""The ops: one package per op (or one package serving several ops), each holding its DSL keys, plan passes, ABI,
float64 reference, kernel template and device bodies (``device/``); ``OP`` in its module is its
:class:`~ckgen.ir.op.Op`. Ops are plug-ins: the stages reach them only through the registry
(:mod:`ckgen.ir.registry`). See docs/adding-an-op.md.
"""
