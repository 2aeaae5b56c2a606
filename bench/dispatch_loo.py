"""How much a dispatcher's fallback loses on a shape it never saw, from a tuning database alone (no GPU).

Leave-one-out over the tuned shapes of a family: each tuned shape in turn is hidden, the rule chooses a member
from the other shapes, and the member's measured time at the hidden shape is compared with the best measured
there (1.0: the rule found the fastest member). Rules compared:

- ``nearest``: the dispatcher's own fallback (ckgen.dispatch.table.choose: the nearest tuned shape, each member's
  time there scaled by the cost model);
- ``k-nearest``: the geometric mean of the scaled estimates from the k nearest tuned shapes, weighted by
  1 / distance (a candidate replacement; members not measured at all k are left out);
- ``model``: the cost model alone (a family with no tuning database), choosing among the members the database
  timed at the hidden shape (a member it never timed, e.g. one added to the family since, has no time to judge).

    python3 bench/dispatch_loo.py bench/runs/2026-12-03_tune_mistral7b_sm90_cold_l2.jsonl [--ck bench/dispatch_nv.ck]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from ckgen import driver  # noqa: E402
from ckgen.dispatch import db  # noqa: E402
from ckgen.dispatch.table import Table, choose, distance  # noqa: E402


def k_nearest(table: Table, sizes: tuple[int, ...], k: int) -> int:
    """The member with the lowest 1/distance-weighted geometric mean of its scaled times at the k nearest shapes."""
    near = sorted((distance(sizes, t.sizes), j) for j, t in enumerate(table.tuned))[:k]
    best, best_v = -1, math.inf
    for i in range(len(table.members)):
        if any(table.tuned[j].times[i] is None for _, j in near):
            continue
        w = [1.0 / max(d, 1) for d, _ in near]
        logs = [math.log(table.tuned[j].times[i] * table.estimate(i, sizes) / table.estimate(i, table.tuned[j].sizes))
                for _, j in near]
        v = sum(a * b for a, b in zip(w, logs, strict=True)) / sum(w)
        if v < best_v:
            best, best_v = i, v
    return best


def model_pick(table: Table, hidden) -> int:
    """The member the cost model alone rates fastest at the hidden shape, of those timed there."""
    timed = [i for i, x in enumerate(hidden.times) if x is not None]
    return min(timed, key=lambda i: table.estimate(i, hidden.sizes))


def rules() -> dict:
    """name -> rule(table without the hidden shape, the hidden shape) -> the member it chooses."""
    return {"nearest": lambda t, h: choose(t, h.sizes).index,
            "2-nearest": lambda t, h: k_nearest(t, h.sizes, 2),
            "3-nearest": lambda t, h: k_nearest(t, h.sizes, 3),
            "model": model_pick}


def leave_one_out(table: Table, names=None) -> dict:
    """rule name -> per tuned shape, the fastest measured time there over the time of the member the rule chooses
    with that shape hidden (1e-3 where that member has no time there); ``names``: those rules only."""
    chosen = {r: rule for r, rule in rules().items() if names is None or r in names}
    found: dict = {r: [] for r in chosen}
    for h, hidden in enumerate(table.tuned):
        rest = dataclasses.replace(table, tuned=table.tuned[:h] + table.tuned[h + 1:])
        best = min(x for x in hidden.times if x is not None)
        for r, rule in chosen.items():
            t = hidden.times[rule(rest, hidden)]
            found[r].append(best / t if t else 1e-3)
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", help="a tuning database (ckgen tune --db)")
    ap.add_argument("--ck", default="bench/dispatch_nv.ck", help="the .ck file of the family")
    ap.add_argument("--family", default="lin")
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args()
    from ckgen.dispatch.table import tables

    plans = driver.plan(driver.load([args.ck], (args.arch,)), (args.arch,))[Path(args.ck).stem]
    (table,) = tables(plans, db.read(args.db), args.family)
    found = leave_one_out(table)
    print(f"{len(table.tuned)} tuned shapes, {len(table.members)} members; fastest measured / chosen member's time")
    print(f"{'hidden shape':>18} " + " ".join(f"{r:>10}" for r in found))
    for h, hidden in enumerate(table.tuned):
        print(f"{'x'.join(map(str, hidden.sizes)):>18} " + " ".join(f"{q[h]:10.2f}" for q in found.values()))
    print(f"{'geomean':>18} " + " ".join(
        f"{math.exp(sum(map(math.log, q)) / len(q)):10.3f}" for q in found.values()))
    print(f"{'min':>18} " + " ".join(f"{min(q):10.2f}" for q in found.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
