"""Register-only mma.sync m16n8k16 bf16 peak (bench/nv_kernels.cu nvh_mma_peak): the ceiling of any
mma.sync kernel on this card. Also the device-to-device copy bandwidth. Prints TFLOP/s and TB/s."""

from __future__ import annotations

import ctypes
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from nvh import time_ms  # noqa: E402

ITERS = 20000


def main():
    lib = ctypes.CDLL(sys.argv[1])
    f = lib.nvh_mma_peak
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    try:
        import cupy

        rt = cupy.cuda.runtime
        print("SMs", sms, "smem/block opt-in", rt.deviceGetAttribute(97, 0), "smem/SM", rt.deviceGetAttribute(81, 0),
              "regs/SM", rt.deviceGetAttribute(82, 0), "max threads/SM", rt.deviceGetAttribute(39, 0))
    except Exception as exc:  # noqa: BLE001
        print("device attributes:", exc)
    for blocks_per_sm, threads in ((1, 512), (1, 256), (2, 128), (4, 256)):
        blocks = sms * blocks_per_sm
        out = torch.empty(blocks * threads, device="cuda")
        st = lambda: f(out.data_ptr(), blocks, threads, ITERS, torch.cuda.current_stream().cuda_stream)  # noqa: E731,B023
        assert st() == 0
        ms = time_ms(st, warmup=2, reps=5, inner=1)
        flops = 2.0 * 16 * 8 * 16 * 8 * ITERS * (threads // 32) * blocks
        print(f"mma.sync bf16 register-only peak ({blocks} blocks x {threads}): {flops / ms / 1e9:.0f} TFLOP/s")
    x = torch.empty(2 * 1024 ** 3 // 4, device="cuda")
    y = torch.empty_like(x)
    ms = time_ms(lambda: y.copy_(x), warmup=3, reps=10, inner=1)
    print(f"device-to-device copy: {2 * x.numel() * 4 / ms / 1e9:.2f} TB/s (read + write)")
    a = torch.randn(8192, 8192, device="cuda").bfloat16()
    b = torch.randn(8192, 8192, device="cuda").bfloat16()
    ms = time_ms(lambda: a @ b)
    print(f"cuBLAS bf16 8192^3: {2 * 8192 ** 3 / ms / 1e9:.0f} TFLOP/s")


if __name__ == "__main__":
    main()
