"""The AMD backend (target ``hip``): :mod:`~ckgen.backends.amd.compiler` (clang per arch, or hiprtc for the JIT; code
objects embedded in a host library, and read back: :mod:`~ckgen.backends.amd.report`) and
:mod:`~ckgen.backends.amd.driver` (hip-python: load code objects, launch)."""
