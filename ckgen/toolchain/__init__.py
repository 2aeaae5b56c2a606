"""Toolchain pieces every backend shares: the content-hash build cache (:mod:`~ckgen.toolchain.cache`) and running
external tools (:mod:`~ckgen.toolchain.tools`). Each backend's compiler (finding its compilers, building, reading
back the code object) lives in its package under :mod:`ckgen.backends`."""
