"""Split rows on sm_90: how many CTAs a row's cluster should have (issue 23's vocabulary rows). The planned kernel
of each width (bench/rowops_widths_nv.ck; or every kernel of --spec, e.g. bench/debug/split_heldout_nv.ck for widths
on no public list, bench/debug/split_tiles_nv.ck for other tiles) is timed
with its row cut into S slices for every S the row takes (CKGEN_ROWOPS_CLUSTERS=S: S >= ceil(cols / tile), no slice
empty, S <= 16), beside the host entry's own choice ("auto": rowops_pipeline_split.h cluster_size_for), the least S
(ceil(cols / tile)) and a copy of x, in interleaved rounds of CUDA-graph
replays, at several row counts; every S is first checked against float64 (bench/rowops.py's check, outputs
poisoned).

  python bench/debug/split_clusters.py [--spec FILE] [--rows 256,1024,4096] [--only REGEX] [--slices 4,5,8,16]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import rowops as R  # noqa: E402
from nvh import raw_call, time_graphs_interleaved_ms  # noqa: E402

ENV = "CKGEN_ROWOPS_CLUSTERS"
#: (op, cols, rows): the public widths the planner splits (the vocabulary rows, and Llama-3.1-405B's intermediate
#: width for the norms), then the held-out ones (split_heldout_nv.ck)
CASES = [("softmax", c, 1024) for c in (50304, 65024, 100352, 128256, 151936, 256000)] + \
        [(op, 53248, 384) for op in ("rmsnorm", "addrmsnorm", "layernorm")]


def slices_taken(kern, cols: int, wanted: list[int]) -> list[int]:
    """The least S (ceil(cols / tile)), then those of ``wanted`` a row of ``cols`` takes (rowops_pipeline_split.h
    cluster_takes)."""
    b = kern.plan.body
    tile = b.threads_per_row * b.reg_vecs * b.vec
    vecs = -(-cols // b.vec)
    least = -(-cols // tile)
    return [least] + [s for s in wanted if least < s <= 16 and (s - 1) * (-(-vecs // s)) < vecs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default="", help="row counts instead of each case's (e.g. 256,1024,4096)")
    ap.add_argument("--only", default="", help="a regex on 'op cols' (e.g. 'softmax 1[05]')")
    ap.add_argument("--slices", default="4,5,6,7,8,10,12,16")
    ap.add_argument("--spec", help="every kernel of this .ck file instead (named <op>_w<cols>[_...]: 1024 rows of "
                    "cols), e.g. bench/debug/split_heldout_nv.ck")
    a = ap.parse_args()
    os.chdir(HERE.parent.parent)
    kerns = R.library(Path(a.spec).resolve() if a.spec else R.WIDTHS_SPEC)
    cases = CASES
    if a.spec:
        cases = [(n, int(re.match(r"[a-z]+_w(\d+)", n).group(1)), 1024) for n in kerns]
    wanted = [int(s) for s in a.slices.split(",") if s]
    print(f"device: {torch.cuda.get_device_name(0)}", flush=True)
    for op, cols, rows0 in cases:
        if a.only and not re.search(a.only, f"{op} {cols}"):
            continue
        name = op if op in kerns else R.RS.kernel_name(op, cols)  # (--spec: the kernel's name)
        op, kern = name.split("_")[0], kerns[name]
        for rows in ([int(r) for r in a.rows.split(",")] if a.rows else [rows0]):
            t = R.operands(rows, cols, op)
            nbytes = rows * cols * 2 * (4 if op == "addrmsnorm" else 2)
            x, y = t["x"], torch.empty_like(t["x"])
            sides = {"copy": lambda x=x, y=y: y.copy_(x)}
            notes = []
            for s in ["auto"] + slices_taken(kern, cols, wanted):
                os.environ[ENV] = str(s)  # ("auto": not a number, the host entry's own choice)
                why = R.check(kern, op, t, cols)
                if why:
                    notes.append(f"S={s}: {why}")
                    continue
                run = raw_call(kern, **{k: v for k, v in t.items() if k in R.kern_args(kern)})

                def side(run=run, s=s):
                    os.environ[ENV] = str(s)  # read by the host entry at each launch (and graph capture)
                    run()
                sides[s if s == "auto" else f"S={s}"] = side
            times = time_graphs_interleaved_ms(sides, rounds=9, inner=10)
            os.environ.pop(ENV, None)
            copy = times.pop("copy")
            cells = "  ".join(f"{k} {100 * nbytes / v / 1e6 / (2 * rows * cols * 2 / copy / 1e6):5.1f}%"
                              for k, v in times.items())
            print(f"{name:24s} {rows:5d}x{cols:<7d} copy {copy * 1e3:7.1f} us | % of copy: {cells}"
                  + (f"  ({'; '.join(notes)})" if notes else ""), flush=True)
            del t, sides
    return 0


if __name__ == "__main__":
    sys.exit(main())
