"""Where the host time of a prepared call goes: each step of :meth:`ckgen.runtime.api.Kernel.__call__` on a cached
signature timed alone, for one GEMM kernel (bench/gemm_nv.ck) on tiny bf16 operands, beside the torch calls
those steps make. A diagnostic for bench/overhead.py (issue 22), not a figure of record.

    python3 bench/overhead_profile.py [--calls 20000]
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from overhead import host_us  # noqa: E402

GEMM = ("gemm_nv.ck", "bf16_rc_t128_128_32_w22_s4")


def _fill(template, ptrs):
    args = template[:]
    args[0] = ptrs[0]
    args[1] = ptrs[1]
    args[2] = ptrs[0]
    return args


def main() -> int:
    from ckgen.runtime.api import jit
    from ckgen.runtime.prepared import call_key

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    a = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16)
    b = w.t()
    g = jit(str(HERE / GEMM[0]), kernel=GEMM[1], target="sm_90")
    g(a, b)
    g(a, b)
    (prep,) = g._prepared.values()
    op = g.backend.fast_operand
    key, objs, ptrs = call_key(op, (a, b), {})
    args_ = prep.template[:]
    for slot, _li, idx in prep.fill:
        args_[slot] = ptrs[idx]
    out = prep.allocs[0][2]()
    args_[prep.allocs[0][0]] = out.data_ptr()
    entry = g.handle.packed
    raw = torch._C._cuda_getCurrentRawStream
    addr = args_.buffer_info()[0]
    empty = prep.template[:]  # M = N = K = 0: the entry returns before launching
    for i, arg in enumerate(g.abi.args):
        if arg.kind.value == "size":
            empty[i] = 0
    eaddr = empty.buffer_info()[0]
    steps = {
        "whole call g(a, b)": lambda: g(a, b),
        "functools.partial(g, a, b)": functools.partial(g, a, b),
        "functools.partial(torch.mm, a, b)": functools.partial(torch.mm, a, b),
        "torch.mm(a, b)": lambda: torch.mm(a, b),
        "call_key (2 operands)": lambda: call_key(op, (a, b), {}),
        "fast_operand(a)": lambda: op(a),
        "prep.run (launch included)": lambda: prep.run(objs, ptrs),
        "output maker (empty_strided)": prep.allocs[0][2],
        "torch.empty((128,128))": lambda: torch.empty((128, 128), dtype=torch.bfloat16, device="cuda"),
        "packed entry (launch)": lambda: entry(addr, raw(0)),
        "packed entry, empty (no launch)": lambda: entry(eaddr, raw(0)),
        "template copy + 3 stores": lambda: _fill(prep.template, ptrs),
        "raw stream + current device": lambda: (torch._C._cuda_getDevice(), raw(0)),
        "a.data_ptr()": a.data_ptr,
        "a.shape, a.stride()": lambda: (a.shape, a.stride()),
    }
    print(f"{'step':40} {'median us':>9}")
    for name, fn in steps.items():
        print(f"{name:40} {host_us(fn, args.calls, 200):9.2f}")
    print(f"entry slots: {len(args_)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
