"""Stream-K against one tile per workgroup, from a tuning database (no GPU): for each tuned shape and each tile
that has both members, the tile schedule's time over stream-K's, and their median over the shapes whose tiles make
at least two waves of the H200's 132 SMs (where the two schedules do the same work: the figure
``SCHEDULE_EFFICIENCY[("tma", "streamk")]`` of ckgen/ops/gemm/cost_model.py stands for; it was 0.68 on the
2026-12-03 database, before stream-K took whole tiles in its first waves).

  python3 bench/debug/streamk_efficiency.py OUT/tune.jsonl [--sms 132]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--sms", type=int, default=132)
    args = ap.parse_args()
    times: dict[tuple, dict[str, float]] = {}
    for line in open(args.db):
        r = json.loads(line)
        if r.get("status") == "ok" and r.get("time_us"):
            s = r["shape"]
            times.setdefault((s["M"], s["N"], s["K"]), {})[r["kernel"]] = float(r["time_us"])
    full = []
    print(f"{'M x N x K':>20} {'member (stream-K)':44} {'tiles':>6} {'tile us':>9} {'stream-K us':>11} {'ratio':>6}")
    for (m, n, k), d in sorted(times.items()):
        for name, t_sk in sorted(d.items()):
            if "streamk" not in name or (t_tile := d.get(name.replace("streamk", "tile"))) is None:
                continue
            found = re.search(r"tile(\d+)x(\d+)x\d+", name)
            tm, tn = (int(found.group(1)), int(found.group(2))) if found else (128, 256)  # (the family's default)
            tiles = -(-m // tm) * -(-n // tn)
            ratio = t_tile / t_sk
            if tiles >= 2 * args.sms:
                full.append(ratio)
            print(f"{m}x{n}x{k:>6} {name:44} {tiles:6d} {t_tile:9.1f} {t_sk:11.1f} {ratio:6.2f}")
    if full:
        print(f"median tile / stream-K time over {len(full)} shapes of two waves or more: {statistics.median(full):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
