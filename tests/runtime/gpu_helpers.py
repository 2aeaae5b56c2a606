"""What the NVIDIA GPU tests (``test_nvidia_*.py``, marked ``gpu``) share."""

from __future__ import annotations

import os

#: CKGEN_TEST_NO_PROFILER=1 (bench/device_run.sh's memcheck stages set it): torch's profiler does not start under
#: compute-sanitizer (CUPTI), so :func:`launched` runs its function without it and returns None
NO_PROFILER = os.environ.get("CKGEN_TEST_NO_PROFILER") == "1"


def launched(fn) -> set[str] | None:
    """The names of the CUDA kernels ``fn()`` launches (torch's profiler), or None with :data:`NO_PROFILER` (fn()
    runs all the same). Tests that only check which entry ran are named ``*_runs_wh*`` (the memcheck stages leave
    them out); tests that check numbers too skip only their entry checks when it returns None."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    if NO_PROFILER:
        fn()
        torch.cuda.synchronize()
        return None
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}
