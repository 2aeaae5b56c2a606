"""Correctness of the harness kernels (bench/nv_kernels.cu) on the GPU, against a float64 reference.

  python bench/nv_check.py --lib LIB [--quick] [--json OUT]

Every config runs on edge shapes (not multiples of the tile, 1x1x1, K below the tile's K, prime sizes),
with aligned, padded and misaligned leading dimensions. C is poisoned (NaN / sentinel) before each run,
including its padding, which must stay untouched. Exits 1 on any failure. ``--quick`` is the set run
under compute-sanitizer (PYTORCH_NO_CUDA_MEMORY_CACHING=1 so that every tensor is its own cudaMalloc).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nv_configs import CONFIGS  # noqa: E402
from nvh import POISON_INT, TOL, matrix, reference, rel_err  # noqa: E402

SHAPES = [(1, 1, 1), (7, 13, 5), (64, 64, 64), (127, 129, 33), (200, 300, 100), (256, 512, 128),
          (1000, 1100, 300), (257, 255, 1000), (13, 1031, 17)]
QUICK_SHAPES = [(1, 1, 1), (17, 33, 7), (129, 257, 65), (255, 130, 33)]


def bind(lib):
    fns = {}
    for c in CONFIGS:
        f = getattr(lib, c.name)
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_longlong] * 6 + [ctypes.c_void_p]
        fns[c.name] = f
    return fns


def run_one(fn, c, M, N, K, pad, gen):
    a, lda, _ = matrix(M, K, c.a_row, c.dtype, pad, gen)
    b, ldb, _ = matrix(K, N, c.b_row, c.dtype, pad, gen)
    out_is_int = c.out in POISON_INT
    if c.beta:
        cm, ldc, cstore = matrix(M, N, c.c_row, c.out, pad, gen)
    else:
        fill = POISON_INT[c.out] if out_is_int else float("nan")
        cm, ldc, cstore = matrix(M, N, c.c_row, c.out, pad, gen, fill=fill)
    c0 = cm.clone()
    before = cstore.clone()
    bias = None
    if "bias_col" in c.epi:
        bias = (torch.randn(N, generator=gen, device="cuda") * 0.5).to(cm.dtype)
    elif "bias_row" in c.epi:
        bias = (torch.randn(M, generator=gen, device="cuda") * 0.5).to(cm.dtype)
    st = fn(a.data_ptr(), b.data_ptr(), cm.data_ptr(), bias.data_ptr() if bias is not None else None,
            M, N, K, lda, ldb, ldc, torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    if st != 0:
        return {"status": st, "ok": False}
    ref = reference(a, b, c0, bias, c.epi, c.beta, c.out)
    err = rel_err(cm, ref)
    # padding of C untouched
    mask = torch.ones_like(cstore, dtype=torch.bool)
    if c.c_row:
        mask[:, :N] = False
    else:
        mask[:, :M] = False
    same = before[mask]
    now = cstore[mask]
    pad_ok = bool(torch.equal(same, now)) if not same.dtype.is_floating_point else bool(
        torch.equal(torch.isnan(same), torch.isnan(now)) and torch.equal(same.nan_to_num(0), now.nan_to_num(0)))
    tol = TOL[c.out] if c.dtype != "f32" else TOL["f32"]
    ok = (err == err) and err <= tol and pad_ok
    return {"status": st, "err": err, "tol": tol, "pad_ok": pad_ok, "ok": ok}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    fns = bind(ctypes.CDLL(args.lib))
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    shapes = QUICK_SHAPES if args.quick else SHAPES
    results = []
    fails = 0
    for c in CONFIGS:
        elem_pad = 16 if c.dtype == "i8" else 8
        pads = [0, 1] if args.quick else [0, elem_pad, 1]
        for (M, N, K) in shapes:
            for pad in pads:
                r = run_one(fns[c.name], c, M, N, K, pad, gen)
                r.update(cfg=c.name, M=M, N=N, K=K, pad=pad)
                results.append(r)
                if not r["ok"]:
                    fails += 1
                    print("FAIL", r, flush=True)
        worst = max((r.get("err", float("inf")) for r in results if r["cfg"] == c.name), default=0)
        print(f"{c.name:40s} worst rel err {worst:.2e}", flush=True)
    print(f"nv_check: {len(results)} runs, {fails} failures")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
