"""Two candidate changes to the GEMM cost model (ckgen/ops/gemm/cost_model.py), judged without a GPU (CPU only).

The two changes:
- ``reads``: the Hopper body's shared-memory feed counts the wgmma reads alone (each consumer warpgroup's A rows,
  all of B). The current model adds TMA's writes of the stage to them. On the H100 that over-charges 128 x 128 tiles
  by 15-20% against 128 x 256 (bench/runs/2026-12-06c_h100_layer_gemms_*.txt).
- ``--part F``: a stream-K tile split in two or more parts costs F x its K tiles' time on top of the model's
  estimate (its fix-up and the parts' tail). Qwen's qkv with 5 parts ran 1.31x its estimate on the H100.

Two judges:
- the leave-one-out of a tuning database (bench/dispatch_loo.py's ``nearest`` and ``model`` rules; the tuning set);
- the Llama / Qwen layer's projections at 2048 tokens, whose every member was timed on the H100
  (MEASURED: the model's pick against the fastest, per projection; Qwen's shapes are untuned).

    python3 bench/debug/model_variants.py bench/runs/2026-12-05b_tune_mistral7b_h200.jsonl [--reads] [--part 0.3]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ckgen import driver  # noqa: E402
from ckgen.dispatch import db  # noqa: E402
from ckgen.dispatch.table import tables  # noqa: E402
from ckgen.frontend import load_file  # noqa: E402
from ckgen.ops.gemm import cost_model as cm  # noqa: E402
from ckgen.runtime.family import family_plans  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from dispatch_loo import leave_one_out  # noqa: E402

#: (family of examples/llama_layer.ck, M x N x K): member -> us, H100 (bench/runs/2026-12-06c_h100_layer_gemms_*.txt)
MEASURED = {
    ("llama_qkv", (2048, 6144, 4096)): (135.3, 136.4, 137.7, 139.3),
    ("llama_o_res", (2048, 4096, 4096)): (96.8, 97.1, 99.0, 99.8),
    ("llama_gate_up", (2048, 14336, 4096)): (736.7, 735.2, 694.1, 742.7),
    ("llama_down", (2048, 4096, 14336)): (329.7, 327.8, 330.4, 331.7),
    ("llama_qkv_bias", (2048, 4608, 3584)): (121.4, 129.6, 105.7, 111.5),
    ("llama_o_res", (2048, 3584, 3584)): (88.7, 88.8, 89.1, 99.5),
    ("llama_gate_up", (2048, 18944, 3584)): (829.5, 832.2, 818.4, 823.0),
    ("llama_down", (2048, 3584, 18944)): (393.5, 396.1, 419.5, 422.7),
}
#: the members of MEASURED's tuples, in order
MEMBERS = ("tile128x256x64_scheduletile", "tile128x256x64_schedulestreamk", "tile128x128x64_scheduletile",
           "tile128x128x64_schedulestreamk")


def patch(reads: bool, part: float) -> None:
    """Replace cm.traits / cm.estimate (the GEMM op calls them through the module) by the variant's."""
    traits, estimate = cm.traits, cm.estimate

    def traits_reads(plan):
        t = list(traits(plan))
        g, cfg = plan.spec.params.gemm, plan.spec.params.config
        if plan.body.tma is not None:
            t[16] = float(cfg.tile[2] * (cfg.tile[0] * g.a.dtype.bytes
                                         + (cfg.tile[0] // 64) * cfg.tile[1] * g.b.dtype.bytes))
        return tuple(t)

    def estimate_part(t, s):
        tm, tn, tk, kind = int(t[0]), int(t[1]), int(t[2]), int(t[3])
        base = estimate(t, s)
        if kind != 2:
            return base
        tiles = -(-s[0] // tm) * -(-s[1] // tn)
        kt = max(1, -(-s[2] // tk))
        units = min(int(t[6]), tiles * kt)
        rest = tiles % units
        if not rest or units // rest < 2:  # no tile split in parts (gemm_work.h StreamK::whole_tiles)
            return base
        return base + part * kt * 2.0 * tm * tn * tk / (t[8] / int(t[7]))

    if reads:
        cm.traits = traits_reads
    if part:
        cm.estimate = estimate_part


def loo(path: str) -> dict:
    ck = "bench/dispatch_nv.ck"
    plans = driver.plan(driver.load([str(ROOT / ck)], ("sm_90",)), ("sm_90",))[Path(ck).stem]
    (table,) = tables(plans, db.read(path), "lin")
    found = leave_one_out(table, ("nearest", "model"))
    return {r: (math.exp(sum(map(math.log, q)) / len(q)), min(q)) for r, q in found.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", help="a tuning database of bench/dispatch_nv.ck's family lin")
    ap.add_argument("--reads", action="store_true", help="the Hopper feed term: wgmma reads alone")
    ap.add_argument("--part", type=float, default=0.0, help="stream-K: a split tile's extra cost in K tiles' time")
    a = ap.parse_args()
    patch(a.reads, a.part)
    for rule, (geo, low) in loo(a.db).items():
        print(f"leave-one-out, {rule:8}: geomean {geo:.3f} of the fastest, min {low:.2f}")
    specs = load_file(str(ROOT / "examples/llama_layer.ck"))
    picked = fastest = 0.0
    for (fam, s), times in MEASURED.items():
        plans = {p.name.removeprefix(fam + "_"): p for p in family_plans(specs, fam, "nvidia", "sm_90")}
        pick = min(MEMBERS, key=lambda n: cm.estimate(cm.traits(plans[n]), s))
        t = times[MEMBERS.index(pick)]
        picked, fastest = picked + t, fastest + min(times)
        print(f"  {fam:15} {'x'.join(map(str, s)):16} picks {pick:32} {t:7.1f} us ({t / min(times):.3f}x the fastest)")
    print(f"layer projections (H100): picks {picked:.1f} us, fastest members {fastest:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
