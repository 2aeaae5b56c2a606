"""Is the folded-norm layer's loss at 8192 tokens on the H200 a clock effect? (issue 28: the folded layer ran 0.983x
the unfolded one's speed there, 2026-12-06, while on an H100 the two tie and each layer equals its steps' sum.)

  python bench/debug/layer_clocks.py [--configs llama3-8b] [--shapes 1x8192,1x2048] [--replays 40] [--rounds 5]

Each layer (unfolded, folded) is captured as one CUDA graph and replayed ``--replays`` times back to back (a
sustained load, as a serving loop runs it), the two layers taking turns for ``--rounds`` rounds, while nvidia-smi
samples the SM clock and the power draw every 50 ms (read only: the card's settings are left alone). Prints per
layer its time per replay and the median clock and power of the samples taken inside its windows.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from model import _example  # noqa: E402
from nvh import capture_graph  # noqa: E402


def samples(path: str) -> list:
    """(unix time, SM MHz, W) rows of nvidia-smi's CSV (timestamp, clocks.sm, power.draw)."""
    out = []
    for line in Path(path).read_text().splitlines():
        f = line.split(", ")
        try:
            t = datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            out.append((t, float(f[1].split()[0]), float(f[2].split()[0])))
        except (ValueError, IndexError):
            continue
    return out


def run(ex, ks, cfg_name: str, batch: int, seq: int, replays: int, rounds: int) -> tuple:
    """Times the two layers in turns; returns (title, layer -> per-window ms, layer -> wall-clock windows)."""
    cfg = ex.CONFIGS[cfg_name]
    w = ex.Weights.random(cfg, 0, "cuda")
    x = torch.randn(batch * seq, cfg.hidden, device="cuda").to(torch.bfloat16)
    rope = ex.rope_inputs(cfg, batch, seq, "cuda")
    sides = {"unfolded": ex.steps(ks, cfg, w, batch, seq, rope), "folded": ex.steps(ks, cfg, w.fold(), batch, seq, rope)}
    with torch.no_grad():  # (one warm-up call loads every kernel before the capture)
        graphs = {name: capture_graph(lambda st=st: ex.forward(st, x), warmup=1, inner=1)
                  for name, st in sides.items()}
    torch.cuda.synchronize()
    windows = {n: [] for n in graphs}
    times = {n: [] for n in graphs}
    for _ in range(rounds):
        for name, g in graphs.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.time()
            start.record()
            for _ in range(replays):
                g.replay()
            end.record()
            end.synchronize()
            windows[name].append((t0, time.time()))
            times[name].append(start.elapsed_time(end) / replays)
            time.sleep(0.3)  # (a pause, as between the benchmark's rounds)
    return f"{cfg_name} {batch}x{seq}: {replays} replays back to back per window, {rounds} windows per layer", \
        times, windows


def report(title: str, times: dict, windows: dict, rows: list) -> None:
    print(f"\n{title}")
    for name in times:
        inside = [r for r in rows if any(a <= r[0] <= b for a, b in windows[name])]
        clk = statistics.median(r[1] for r in inside) if inside else float("nan")
        pw = statistics.median(r[2] for r in inside) if inside else float("nan")
        print(f"  {name:>9}: {statistics.median(times[name]):.3f} ms per layer (windows "
              + " ".join(f"{t:.3f}" for t in times[name]) + f"); SM clock median {clk:.0f} MHz, power median "
              f"{pw:.0f} W over {len(inside)} samples")


def main() -> int:
    ex = _example()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="llama3-8b")
    ap.add_argument("--shapes", default="1x8192,1x2048")
    ap.add_argument("--replays", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    ks = ex.kernels("sm_90")
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        log = f.name
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader",
                            "-lms", "50"], stdout=open(log, "w"), stderr=subprocess.DEVNULL)
    cases = []
    try:
        for cfg_name in a.configs.split(","):
            for shape in a.shapes.split(","):
                b, s = (int(v) for v in shape.split("x"))
                cases.append(run(ex, ks, cfg_name, b, s, a.replays, a.rounds))
        time.sleep(0.2)
    finally:
        smi.terminate()
        smi.wait()
    rows = samples(log)
    for case in cases:
        report(*case, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
