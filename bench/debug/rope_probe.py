"""Where the rotary GEMM epilogue's time goes (issue 28): the Llama-3-8B qkv projection (M x 6144 x 4096) plain
against rope = gptj(128) with q and k rotated (rope_cols 5120), with nothing rotated (rope_cols 0: the table
still gathered), and with an empty table (no gather; every rotated output NaN), each side graph-timed in
interleaved rounds, and the entry that ran (the profiler).

    python3 bench/debug/rope_probe.py [--tokens 2048,8192]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nvh import jit_file, raw_call, time_graphs_interleaved_ms  # noqa: E402


def main() -> int:
    import ckgen

    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="2048,8192")
    a = ap.parse_args()
    ks = jit_file("bench/debug/rope_probe.ck")
    print(f"device: {torch.cuda.get_device_name(0)}")
    for m in (int(t) for t in a.tokens.split(",")):
        n, k = 6144, 4096
        x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        w = (torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        pos = torch.arange(m, device="cuda", dtype=torch.int32)
        cs = torch.from_numpy(ckgen.rope_table(m, 128, theta=500000.0)).cuda()
        empty = cs[:0]
        sides = {"plain": raw_call(ks["rp_plain"], x, w.T, C=c),
                 "rope 5120": raw_call(ks["rp_rope"], x, w.T, positions=pos, cos_sin=cs, C=c, rope_cols=5120),
                 "rope 0": raw_call(ks["rp_rope"], x, w.T, positions=pos, cos_sin=cs, C=c, rope_cols=0),
                 "rope no table": raw_call(ks["rp_rope"], x, w.T, positions=pos, cos_sin=empty, C=c, rope_cols=5120)}
        from torch.profiler import ProfilerActivity, profile

        for name, fn in sides.items():
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
            ran = sorted({e.key for e in prof.key_averages() if e.key.startswith("rp_")})
            print(f"  {m} {name}: ran {ran}")
        t = time_graphs_interleaved_ms(sides, rounds=15, inner=5)
        base = t["plain"]
        for name, ms in t.items():
            print(f"M={m:5d} {name:>14}: {ms * 1e3:8.1f} us  (+{(ms - base) * 1e3:6.1f} us over plain)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
