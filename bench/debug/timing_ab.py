"""Compare two ``ckgen tune`` databases of the same family and shapes, one timed with ``--timing events`` and one
with ``--timing graph`` (bench/device_run.sh graph-tune): per shape, each side's pick and the member times side by
side, and whether the two timings choose the same member.

  python3 bench/debug/timing_ab.py EVENTS.jsonl GRAPH.jsonl [DISPATCH.json]

With DISPATCH.json (bench/dispatch.py --json, e.g. an earlier run on the same kind of card: an indication, not a
same-run figure), each shape it measured also gets cuBLAS's time and the dispatcher's pick there, so that a held-out
shape where ckgen lost tells whether another member would have won (the pick) or none does (the kernels).

Graph replay leaves out the host time between launches that back-to-back events charge to every member; the
members whose launches cost the most host time (split-K with its reduction, stream-K with its fix-up) gain most.
A pick that changes between the two is a shape where the events-timed database chose by host time.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def load(path: str) -> dict:
    """{shape "MxNxK": {kernel: time_us}} of the database's records with status ok (the last record wins)."""
    out: dict = defaultdict(dict)
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("status") == "ok":
                s = rec["shape"]
                out[f"{s['M']}x{s['N']}x{s['K']}"][rec["kernel"]] = rec["time_us"]
    return out


def dispatch_rows(path: str | None) -> dict:
    """{shape "MxNxK": row} of a bench/dispatch.py --json file's tuned and untuned rows ({} without one)."""
    if not path:
        return {}
    with open(path) as f:
        d = json.load(f)
    return {f"{r['M']}x{r['N']}x{r['K']}": r for part in ("tuned", "untuned") for r in d.get(part, [])}


def main(events_path: str, graph_path: str, dispatch_path: str | None = None) -> int:
    events, graph, disp = load(events_path), load(graph_path), dispatch_rows(dispatch_path)
    same = 0
    shapes = [s for s in events if s in graph]
    for shape in shapes:
        ev, gr = events[shape], graph[shape]
        pick_e, pick_g = min(ev, key=ev.get), min(gr, key=gr.get)
        same += pick_e == pick_g
        print(f"{shape}: events pick {pick_e} ({ev[pick_e]:.1f} us), graph pick {pick_g} ({gr[pick_g]:.1f} us)"
              f"{'' if pick_e == pick_g else '  <- differs'}")
        if shape in disp:
            r = disp[shape]
            print(f"  earlier dispatch run: cuBLAS {r['cublas_us']:.1f} us, the dispatcher's {r['kernel']} "
                  f"{r['ckgen_us']:.1f} us ({r['how']}); best member here / cuBLAS there: events "
                  f"{r['cublas_us'] / ev[pick_e]:.2f}, graph {r['cublas_us'] / gr[pick_g]:.2f} (speed)")
        print(f"  {'member':48s} {'events us':>10s} {'graph us':>10s} {'graph/events':>12s}")
        for k in sorted(set(ev) & set(gr), key=gr.get):
            print(f"  {k:48s} {ev[k]:10.1f} {gr[k]:10.1f} {gr[k] / ev[k]:12.3f}")
    print(f"same pick at {same} of {len(shapes)} shapes")
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    raise SystemExit(main(*sys.argv[1:]))
