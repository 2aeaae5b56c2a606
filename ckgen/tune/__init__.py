"""``ckgen tune``: time a family's members on a device for a list of shapes and record them in a tuning database
(:mod:`ckgen.dispatch.db`), which ``ckgen compile --tuning`` and ``ckgen.jit(..., tuning=...)`` turn into a
dispatcher (docs/dispatch.md).

- :mod:`ckgen.tune.shapes`: shape lists, inline (``1x4096x4096,16x4096x4096``) or from a file;
- :mod:`ckgen.tune.measure`: one worker's job on one device: inputs, the float64 check, the timing;
- :mod:`ckgen.tune.runner`: the command: which (member, shape) pairs are still to do (resume), one worker process
  per device, progress, the database written after every shape.
"""
