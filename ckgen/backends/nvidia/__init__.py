"""The NVIDIA backend (target ``cuda``): :mod:`~ckgen.backends.nvidia.compiler` (nvcc, one library per build, its
ptxas/PTX/SASS report) and :mod:`~ckgen.backends.nvidia.driver` (ctypes on the library's entries; torch, CuPy and
numpy operands; the current stream)."""
