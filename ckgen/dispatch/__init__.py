"""Tuned shape dispatch (docs/dispatch.md): from a family of kernels and a tuning database to one entry point that
picks a kernel by shape.

- :mod:`ckgen.dispatch.db`: the tuning database (JSON lines a person can read; written atomically), what ``ckgen
  tune`` writes and the dispatchers read;
- :mod:`ckgen.dispatch.table`: a family's members for one arch and signature, their tuned times per shape, and
  the choice for a shape (:func:`~ckgen.dispatch.table.choose`: exact hit, else the nearest tuned shape scaled
  by the op's cost model, else the cost model alone), with its reasons (``ckgen explain``);
- :mod:`ckgen.dispatch.codegen`: the same choice as generated C (``ckgen compile --dispatch / --tuning``);
- :mod:`ckgen.runtime.family`: the Python callable of a family (``ckgen.jit(..., kernel=<family>)``).
"""
