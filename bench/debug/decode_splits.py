"""Decode time by split count, one kernel and case at a time: where the split-KV hand-off's cost goes.

For each kernel of bench/decode_nv.ck matching --kernels and each split count, the graph-timed device time of one
decode step (bf16, one query token, contiguous cache) at full length, and at a length of one K/V tile in the same
capacity ("1 tile": every split but the first has no keys, so what remains is the launch, the empty splits and the
combine over all the splits). A diagnostic (issue 27), not a figure of record.

    python3 bench/debug/decode_splits.py --kernels 'm16w4n64s2k$' --case 1,32768,32,1 --splits 1,2,4,8,16,32,64,128
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from nvh import jit_file, raw_call, time_graph_ms  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", required=True, help="regex over bench/decode_nv.ck's kernel names")
    ap.add_argument("--case", action="append", required=True, help="batch,seqlen_k,heads,heads_kv (repeatable)")
    ap.add_argument("--splits", default="1,2,4,8,16,32,64,128", help="split counts; 0: the automatic one")
    args = ap.parse_args()
    os.chdir(HERE.parent)
    kernels = jit_file("bench/decode_nv.ck", args.kernels)
    splits = [int(s) for s in args.splits.split(",")]
    head = " ".join(f"{s or 'auto':>11}" for s in splits)
    print(f"{'kernel':36} {'case':22} {head}   (us; full length / 1 tile)")
    for name, kern in kernels.items():
        if kern.plan.spec.params.page_size:
            continue
        d = kern.plan.spec.params.attn.head_dim
        for case in args.case:
            b, sk, h, hk = (int(x) for x in case.split(","))
            q = torch.randn(b, 1, h, d, device="cuda", dtype=torch.bfloat16)
            k, v = (torch.randn(b, sk, hk, d, device="cuda", dtype=torch.bfloat16) for _ in "kv")
            o = torch.empty_like(q)
            rows = []
            for n in (sk, 64):
                lens = torch.full((b,), n, dtype=torch.int32, device="cuda")
                ts = [time_graph_ms(raw_call(kern, q, k, v, O=o, num_splits=s, seqlens_k=lens), warmup=3, reps=15,
                                    inner=5) * 1e3 for s in splits]
                rows.append(ts)
            cells = " ".join(f"{a:5.1f}/{c:<5.1f}" for a, c in zip(*rows, strict=True))
            print(f"{name:36} {f'b{b} s{sk} h{h}/{hk}':22} {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
