"""Can a GEMM body without matrix instructions beat cuBLAS on decode shapes? (device only; an experiment before a
ckgen body, not a benchmark of record: issues 23 and 26, whose dispatchers are weakest at M <= 32).

    python3 bench/skinny_probe.py [--ms 1,4,8,16]

Builds bench/skinny_probe.cu with nvcc (sm_90a) and, for nn.Linear shapes of models no ckgen dispatcher was tuned
on (Qwen2-7B, Gemma-2-9B) and two of Llama's, times y = x . W^T by CUDA-graph replay with W rotated over copies
past the L2 (bench/dispatch.py's time_graph and rotation): each skinny variant (ROWS rows of W per warp, UNROLL
16-byte chunks per row in flight), the peer in the same run (bf16: torch.matmul, i.e. cuBLAS; e4m3:
torch._scaled_mm with per-tensor scales, default accumulation) and a read-only pass over the same W bytes (the
floor). Beside each hand-written variant, ckgen's vector body (``instr = none``, ckgen/ops/gemm/device/gemm_vec.h)
generated for the same rows and unroll (bench/skinny_nv.ck, ``ck r<rows>u<unroll>``; M in 1, 4, 8) runs through its
raw C entry. Each variant's output is checked against float64 (relative norm error) before it is timed.
"""

from __future__ import annotations

import argparse
import ctypes
import subprocess
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from dispatch import time_graph  # noqa: E402
from nvh import jit_file, raw_call, rotation_copies  # noqa: E402

SHAPES = [(4608, 3584), (3584, 18944), (37888, 3584), (3584, 3584), (8192, 3584), (6144, 4096), (4096, 14336)]
DTYPES = {"bf16": (0, torch.bfloat16), "e4m3": (1, torch.float8_e4m3fn)}


def build() -> ctypes.CDLL:
    out = Path("/tmp/libskinny_probe.so")
    subprocess.run(["nvcc", "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC",
                    "-gencode=arch=compute_90a,code=sm_90a", str(HERE / "skinny_probe.cu"), "-o", str(out)], check=True)
    lib = ctypes.CDLL(str(out))
    lib.skinny_run.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                               ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_float, ctypes.c_void_p]
    lib.read_floor_run.argtypes = [ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p]
    return lib


def stream() -> int:
    return torch.cuda.current_stream().cuda_stream


def shape(lib, ck, names, dtype: str, M: int, N: int, K: int, gen) -> str:
    code, tdt = DTYPES[dtype]
    esize = torch.empty((), dtype=tdt).element_size()
    copies = rotation_copies(N * K * esize)
    x = (torch.randn(M, K, generator=gen, device="cuda") * (2 if code else 0.5)).to(tdt)
    ws = [(torch.randn(N, K, generator=gen, device="cuda") * (2 if code else 0.5)).to(tdt) for _ in range(copies)]
    y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    sa, sb = torch.tensor([0.37], device="cuda"), torch.tensor([1.9], device="cuda")
    scale = 0.37 * 1.9 if code else 1.0
    ref = (x.double() @ ws[0].double().t()) * scale
    sink = torch.zeros(1, dtype=torch.int32, device="cuda")

    def err() -> float:
        return (torch.linalg.norm((y.double() - ref).flatten()) / torch.linalg.norm(ref.flatten())).item()

    cells = []
    best = best_ck = None
    for v, name in enumerate(names):
        y.view(torch.int16).fill_(-1)  # poison: NaN
        if lib.skinny_run(code, M, v, x.data_ptr(), ws[0].data_ptr(), y.data_ptr(), N, K, scale, stream()) != 0:
            continue
        torch.cuda.synchronize()
        e = err()
        t = time_graph([(lambda w=w, v=v: lib.skinny_run(code, M, v, x.data_ptr(), w.data_ptr(), y.data_ptr(), N, K,
                                                         scale, stream())) for w in ws]) * 1e6
        cells.append(f"{name} {t:6.2f} ({e:.0e})")
        if e < 1e-2 and (best is None or t < best[1]):
            best = (name, t)
    sx, sw = torch.tensor([0.37], device="cuda"), torch.tensor([1.9], device="cuda")
    scaled = {"scale_a": sx, "scale_b": sw} if code else {}
    for name in names:
        kern = ck.get(f"skinny_{dtype}_m{M}_{name}")
        if kern is None:
            continue
        y.view(torch.int16).fill_(-1)
        calls = [raw_call(kern, x, w.t(), C=y, **scaled) for w in ws]  # (each binding runs once: w[-1]'s last)
        torch.cuda.synchronize()
        calls[0]()
        torch.cuda.synchronize()
        e = err()
        t = time_graph(calls) * 1e6
        cells.append(f"ck {name} {t:6.2f} ({e:.0e})")
        if e < 1e-2 and (best_ck is None or t < best_ck[1]):
            best_ck = (name, t)
    if code:
        peer = [(lambda w=w: torch._scaled_mm(x, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, out=y))
                for w in ws]
    else:
        peer = [(lambda w=w: torch.matmul(x, w.t(), out=y)) for w in ws]
    t_peer = time_graph(peer) * 1e6
    t_peer = min(t_peer, time_graph(peer) * 1e6)  # the peer again after ckgen's: the faster counts
    nbytes = N * K * esize
    t_floor = time_graph([(lambda w=w: lib.read_floor_run(w.data_ptr(), nbytes, sink.data_ptr(), stream()))
                          for w in ws]) * 1e6
    b = (f"best {best[0]} {nbytes / best[1] / 1e3:5.0f} GB/s, {t_peer / best[1]:.2f}x peer, "
         f"{t_floor / best[1]:.2f} of floor") if best else "no correct variant"
    if best_ck:
        b += f"; ckgen best {best_ck[0]} {t_peer / best_ck[1]:.2f}x peer, {t_floor / best_ck[1]:.2f} of floor"
    return (f"{dtype} {M}x{N}x{K}: floor {t_floor:6.2f} us ({nbytes / t_floor / 1e3:4.0f} GB/s), peer {t_peer:6.2f} | "
            + "  ".join(cells) + f" | {b}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ms", default="1,4,8,16", help="token counts M")
    args = ap.parse_args()
    lib = build()
    ck = jit_file("bench/skinny_nv.ck")
    names = ctypes.c_char_p.in_dll(lib, "skinny_variants").value.decode().split(",")
    gen = torch.Generator(device="cuda").manual_seed(0)
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}: us per call (graph replay, W rotated past "
          "the L2); variant = r<rows of W per warp>u<16-byte chunks per row in flight> (rel. error vs float64); "
          "peer = torch.matmul (bf16) / torch._scaled_mm per-tensor (e4m3)", flush=True)
    for dtype in DTYPES:
        for N, K in SHAPES:
            for M in (int(m) for m in args.ms.split(",")):
                print(shape(lib, ck, names, dtype, M, N, K, gen), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
