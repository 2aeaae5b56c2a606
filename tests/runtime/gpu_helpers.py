"""What the NVIDIA GPU tests (``test_nvidia_*.py``, marked ``gpu``) share."""

from __future__ import annotations


def launched(fn) -> set[str]:
    """The names of the CUDA kernels ``fn()`` launches (torch's profiler; it does not start under compute-sanitizer,
    so the tests that call it are named ``*_runs_wh*`` and the memcheck stages leave them out)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}
