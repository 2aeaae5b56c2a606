"""Clock, power and energy per layer of ckgen's layers and torch's under a sustained load (issue 28: timed in the
steady state, 8 replays per sample, ckgen's lead over torch.compile was 2-5 points smaller than with one replay per
sample on an H100, 2026-12-06; a layer that draws more power runs at a lower clock once the card is at its limit).

  python bench/debug/layer_clocks.py [--configs llama3-8b] [--shapes 1x8192,1x2048] [--window-ms 300] [--rounds 5]
                                     [--no-torch] [--inner 1]

Each layer (ckgen unfolded and folded; torch.compile and eager, as bench/model.py builds them) is captured as one
CUDA graph and replayed back to back for about ``--window-ms`` per window (a sustained load, as a serving loop runs
it), the layers taking turns for ``--rounds`` rounds, each round starting with the next layer, while nvidia-smi
samples the SM clock and the power draw every 50 ms (read only: the card's settings are left alone). Prints per
layer its time per replay, the median clock and power of the samples inside its windows, and their product, the
energy per layer (mJ), and the clock event reasons seen in its windows with the temperature (nvidia-smi's bit
mask of why the clock sits below its ceiling, as nvidia-smi -q names them: 0x1 idle, 0x4 software power cap, 0x8
hardware slowdown, 0x20 software thermal slowdown, 0x40 hardware thermal slowdown, 0x80 hardware power brake).
"""

from __future__ import annotations

import argparse
import collections
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
from model import _example, rope_tables, torch_steps  # noqa: E402
from nvh import capture_graph, round_order  # noqa: E402


def samples(path: str, numeric: bool = True) -> list:
    """(unix time, field, field) rows of nvidia-smi's CSV (timestamp and two fields: clocks.sm and power.draw as
    numbers, or any two as text)."""
    out = []
    for line in Path(path).read_text().splitlines():
        f = line.split(", ")
        try:
            t = datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            out.append((t, float(f[1].split()[0]), float(f[2].split()[0])) if numeric else (t, f[1], f[2]))
        except (ValueError, IndexError):
            continue
    return out


def run(ex, ks, cfg_name: str, batch: int, seq: int, window_ms: float, rounds: int, with_torch: bool,
        inner: int) -> tuple:
    """Times the layers in turns; returns (title, layer -> per-window ms, layer -> wall-clock windows)."""
    cfg = ex.CONFIGS[cfg_name]
    w = ex.Weights.random(cfg, 0, "cuda")
    x = torch.randn(batch * seq, cfg.hidden, device="cuda").to(torch.bfloat16)
    rope = ex.rope_inputs(cfg, batch, seq, "cuda")
    unfolded, folded = ex.steps(ks, cfg, w, batch, seq, rope), ex.steps(ks, cfg, w.fold(), batch, seq, rope)
    sides = {"unfolded": lambda: ex.forward(unfolded, x), "folded": lambda: ex.forward(folded, x)}
    if with_torch:
        cos, sin = rope_tables(ex, cfg, batch, seq, torch.bfloat16)
        t_steps = torch_steps(cfg, w, batch, cos, sin)
        sides["eager"] = lambda: ex.forward(t_steps, x)
        sides["compile"] = torch.compile(sides["eager"])
    with torch.no_grad():  # (warm-up calls load every kernel and compile torch's layer before the capture)
        graphs = {name: capture_graph(fn, warmup=2, inner=inner) for name, fn in sides.items()}
        torch.cuda.synchronize()
        replays = {}
        for name, g in graphs.items():  # replays per window: about window_ms of this layer
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            g.replay()
            end.record()
            end.synchronize()
            replays[name] = max(1, round(window_ms / start.elapsed_time(end)))  # (graphs of `inner` layers)
    names = list(graphs)
    windows = {n: [] for n in names}
    times = {n: [] for n in names}
    for r in range(rounds):
        for name in round_order(names, r):
            g = graphs[name]
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.time()
            start.record()
            for _ in range(replays[name]):
                g.replay()
            end.record()
            end.synchronize()
            windows[name].append((t0, time.time()))
            times[name].append(start.elapsed_time(end) / (replays[name] * inner))
            time.sleep(0.3)  # (a pause, as between the benchmark's rounds)
    return f"{cfg_name} {batch}x{seq}: windows of about {window_ms:.0f} ms of back-to-back replays of {inner} " \
        f"layer(s), {rounds} per layer", \
        times, windows


def report(title: str, times: dict, windows: dict, rows: list, reasons: list) -> None:
    print(f"\n{title}")
    for name in times:
        inside = [r for r in rows if any(a <= r[0] <= b for a, b in windows[name])]
        why = collections.Counter(f"{r[1]} at {r[2]} C" for r in reasons
                                  if any(a <= r[0] <= b for a, b in windows[name]))
        clk = statistics.median(r[1] for r in inside) if inside else float("nan")
        pw = statistics.median(r[2] for r in inside) if inside else float("nan")
        ms = statistics.median(times[name])
        print(f"  {name:>9}: {ms:.3f} ms per layer (windows " + " ".join(f"{t:.3f}" for t in times[name])
              + f"); SM clock median {clk:.0f} MHz, power median {pw:.0f} W over {len(inside)} samples: "
              f"{pw * ms:.0f} mJ per layer; clock event reasons {dict(why.most_common(3))}")


def main() -> int:
    ex = _example()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="llama3-8b")
    ap.add_argument("--shapes", default="1x8192,1x2048")
    ap.add_argument("--window-ms", type=float, default=300.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-torch", action="store_true", help="ckgen's two layers only")
    ap.add_argument("--inner", type=int, default=1, help="layers per graph (bench/model.py captures 3)")
    a = ap.parse_args()
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    ks = ex.kernels("sm_90")
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        log = f.name
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader",
                            "-lms", "50"], stdout=open(log, "w"), stderr=subprocess.DEVNULL)
    # why the clock is below its ceiling (a bit mask, nvidia-smi -q's "Clocks Event Reasons"), sampled by a second
    # nvidia-smi so that a driver without the field leaves the clock and power samples alone
    reasons_log = log + ".reasons"
    reasons = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks_event_reasons.active,temperature.gpu",
                                "--format=csv,noheader", "-lms", "200"], stdout=open(reasons_log, "w"),
                               stderr=subprocess.STDOUT)
    cases = []
    try:
        for cfg_name in a.configs.split(","):
            for shape in a.shapes.split(","):
                b, s = (int(v) for v in shape.split("x"))
                cases.append(run(ex, ks, cfg_name, b, s, a.window_ms, a.rounds, not a.no_torch, a.inner))
        time.sleep(0.2)
    finally:
        for proc in (smi, reasons):
            proc.terminate()
            proc.wait()
    rows, why = samples(log), samples(reasons_log, numeric=False)
    if not why:
        print("(no clock event reasons sampled:", Path(reasons_log).read_text()[:200], ")")
    for case in cases:
        report(*case, rows, why)
    return 0


if __name__ == "__main__":
    sys.exit(main())
