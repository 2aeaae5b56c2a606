"""The untuned fp8 dispatchers' picks against their fastest member, re-judged on CPU from a device run (no GPU).

Reads the JSON of ``bench/fp8.py --dispatch --members`` (every member of bench/fp8_dispatch_nv.ck's three families
timed at every shape), plans the same families for sm_90 here, lets each dispatcher choose as it would with no
tuning database (the GEMM cost model, ckgen/ops/gemm/cost_model.py, as it is in this checkout) and prints, per
shape list and scaling, the chosen member's measured time over the fastest's (1.00: the model picked the fastest)
and the ratio to torch._scaled_mm the choice would have given. A change to the cost model is judged here before a
device run: the nn.Linear list is the one to fit on; the Qwen2-7B list stays held out (bench/fp8.py's figure of
record).

    python3 bench/debug/fp8_model_check.py bench/runs/2026-12-07c_h100_fp8_dispatch_members.json [-v]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ckgen import driver  # noqa: E402
from ckgen.dispatch.table import choose, tables  # noqa: E402

CK = "bench/fp8_dispatch_nv.ck"
SCALINGS = ("tensor", "rowwise", "block")
BLK = 128


def geomean(xs) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="bench/fp8.py --dispatch --members --json output")
    ap.add_argument("-v", "--verbose", action="store_true", help="every shape's pick")
    a = ap.parse_args()
    run = json.loads(Path(a.run).read_text())
    plans = driver.plan(driver.load([str(ROOT / CK)], ("sm_90",)), ("sm_90",))[Path(CK).stem]
    fams = {s: tables(plans, (), f"fp8d_{s}")[0] for s in SCALINGS}
    for title, rows in run["dispatch"].items():
        print(f"{title.split(' (')[0]}:")
        for s in SCALINGS:
            lost, vs_torch = [], []
            for r in rows:
                cell = r[s]
                times = {n: k["ms"] for n, k in cell["kernels"].items() if k["err"] < 1e-2}
                if not times:
                    continue
                sizes = {"M": r["M"], "N": r["N"], "K": r["K"], "kb": -(-r["K"] // BLK), "nb": -(-r["N"] // BLK)}
                t = fams[s]
                # (among the members the run timed: a family grown since, e.g. by the vector body, keeps its old
                # choice set; the model's estimates of the others are dropped)
                timed = [m.name in times for m in t.members]

                def est(i, z, t=t, timed=timed):
                    return t.estimate(i, z) if timed[i] else math.inf
                pick = choose(t, tuple(sizes[n] for n in t.size_names), estimate=est).kernel
                x = times[pick] / min(times.values())
                lost.append(x)
                if cell["torch_ms"]:
                    vs_torch.append(cell["torch_ms"] / times[pick])
                if a.verbose:
                    print(f"  {r['M']}x{r['N']}x{r['K']} {s}: {pick.split('_', 2)[2]} {x:.2f}")
            print(f"  {s:8} pick / fastest geomean {geomean(lost):.3f} (worst {max(lost):.2f});"
                  f" x torch._scaled_mm geomean {geomean(vs_torch):.3f} (min {min(vs_torch):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
