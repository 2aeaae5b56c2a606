"""Sweep AMD kernel configurations on the CPU emulator and report every LDS access site with bank conflicts.

Usage::

    PYTHONPATH=. python3 tools/lds_sweep.py [--quick] [--ops gemm,attention,decode,rowops,moe_routing,elementwise]
                                            [--arch gfx942,...] [--chunk 24] [--json out.json] [--limit N]

What it covers (deterministic: a fixed list, no randomness but the seeded inputs of each checked call):

- ``gemm`` (the MFMA body, ckgen/ops/gemm/device/gemm_mfma.h): on gfx908, gfx90a, gfx942, gfx950 every input
  dtype the arch has a matrix instruction for (f16, bf16, f32, i8; fp8: e4m3fnuz on gfx942, e4m3fn / e5m2 on
  gfx950; mx(32) e4m3fn and e2m1fn_x2 on gfx950), all four A/B layout pairs, every single-block instruction shape
  the arch offers for the dtype (``Target.instructions_for``), tiles / waves 64x64 (2x2), 128x128 (2x2), 256x128
  (2x4), 128x256 (2x4), 64x256 (1x4) with one or two K extents, ``lds_buffers`` / ``prefetch`` rotating through
  (2, 1), (1, 0), (2, 0), (1, 1); then variants on f16 / bf16 row x col: gated (swiglu halves / interleaved),
  residual, bias -> gelu, rope, splitk, streamk, batched, grouped, masked, fp8 scalings.
- ``attention`` (attention_fwd_amd.h), ``decode`` (attention_decode), ``rowops`` (tests/ops/rowops/harness.py's
  kernels), ``moe_routing`` and ``elementwise`` (the examples): on gfx90a, gfx942, gfx950 (gfx908 where planned).

Every configuration is planned first (``plan_kernel``; refused ones are counted, not run), built into one emulator
library per arch and chunk, and run once on whole tiles with random inputs (``ckgen.runtime.run.check_call``); the
emulator's per-site counters (``library.lds_sites()``) are read after the call.

A finding is a site with ``extra_cycles > 0`` (the emulator's bank model: ckgen/include/ckgen/emu/lds_banks.h), or a
GEMM plan whose bank model predicts conflicts (``plan.body.lds.{a,b}.{read,write}_conflicts``); wrong results
(error over tolerance) are reported too, and so are kernels that allocate LDS where the emulator counted no access
(the counters cover every launch of the call, e.g. decode attention's split kernel and its combine). ``--quick``: a
few configurations per op and arch (a minute or two).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ckgen.errors import CkgenError  # noqa: E402
from ckgen.frontend import load_text  # noqa: E402
from ckgen.ir.types import DType  # noqa: E402
from ckgen.lower.pipeline import plan_kernel  # noqa: E402
from ckgen.runtime import api, run  # noqa: E402
from ckgen.targets import get_target  # noqa: E402

ARCHES = ("gfx908", "gfx90a", "gfx942", "gfx950")
LAYOUTS = (("row", "col"), ("col", "row"), ("row", "row"), ("col", "col"))
TILES = (("64x64", "2x2"), ("128x128", "2x2"), ("256x128", "2x4"), ("128x256", "2x4"), ("64x256", "1x4"))
PIPES = ((2, 1), (1, 0), (2, 0), (1, 1))  # (lds_buffers, prefetch), rotated over the grid


@dataclass
class Config:
    op: str
    arch: str
    name: str
    body: str                      # the kernel's DSL body
    sizes: dict = field(default_factory=dict)
    desc: str = ""


# ------------------------------------------------------------------------------------------------ GEMM
def _gemm_dtypes(arch: str) -> list[tuple[str, str, str, str]]:
    """(label, A dtype, B dtype, extra DSL) per dtype case of ``arch``."""
    t = get_target(arch)
    have = {d.name for d in t.input_dtypes()}
    out = [(d, d, d, "") for d in ("f16", "bf16", "f32", "i8") if d.upper() in have]
    enc = t.fp8_encoding
    if enc == "fnuz":
        out += [("e4m3fnuz", "e4m3fnuz", "e4m3fnuz", "scale_a = tensor scale_b = tensor")]
    elif enc is not None:
        out += [("e4m3fn", "e4m3fn", "e4m3fn", "scale_a = row scale_b = col"),
                ("e4m3fn_e5m2", "e4m3fn", "e5m2", "scale_a = tensor scale_b = tensor"),
                ("mxfp8", "e4m3fn", "e4m3fn", "scale_a = mx(32) scale_b = mx(32)"),
                ("mxfp4", "e2m1fn_x2", "e2m1fn_x2", "scale_a = mx(32) scale_b = mx(32)")]
    return out


def _instrs(arch: str, a: str, b: str) -> list[str]:
    """The single-block shapes of ``arch`` for A, B (the matrix-instruction kinds of fp8 dtypes), or auto."""
    t = get_target(arch)
    kind = {"e4m3fnuz": "FP8", "e4m3fn": "FP8", "e5m2": "BF8", "e5m2fnuz": "BF8"}
    da, db = DType[kind.get(a, a.upper())], DType[kind.get(b, b.upper())]
    if a == "e2m1fn_x2":
        return ["auto"]
    acc = DType.I32 if a == "i8" else DType.F32
    return [i.shape_text for i in t.instructions_for(da, db, acc)] or ["auto"]


def _tile_k(a: str, instr: str, wide: bool) -> int:
    ebits = {"f32": 32, "f16": 16, "bf16": 16, "e2m1fn_x2": 8}.get(a, 8)
    tk = 64 * 8 // ebits  # 64 bytes of K per row
    if instr != "auto":
        tk = max(tk, int(instr.split("x")[2]))
    if a == "e2m1fn_x2":
        tk = 128
    return tk * 2 if wide else tk


def gemm_configs(arches, quick: bool) -> list[Config]:
    out: list[Config] = []
    for arch in arches:
        n = 0
        for label, da, db, extra in _gemm_dtypes(arch):
            c = "i32" if da == "i8" else "bf16" if da not in ("f16", "bf16", "f32") else da
            mx = "mx(32)" in extra
            for la, lb in (LAYOUTS[:1] if mx else LAYOUTS):
                if quick and (la, lb) != ("row", "col"):
                    continue
                instrs = ["auto"] if mx else _instrs(arch, da, db)  # (mx(32): the block-scaled MFMA only)
                for ii, instr in enumerate(instrs[:1] if quick else instrs):
                    tiles = TILES[:2] if quick else TILES
                    for ti, (tile, waves) in enumerate(tiles):
                        wide = (ti + ii) % 2 == 1
                        tk = _tile_k(da, instr, wide)
                        buf, pf = PIPES[(n + ti) % len(PIPES)]
                        n += 1
                        ins = "" if instr == "auto" else f"instr = {instr}"
                        body = (f"A = {da} {la} B = {db} {lb} C = {c} row tile = {tile}x{tk} waves = {waves} {ins} "
                                f"lds_buffers = {buf} prefetch = {pf} {extra}")
                        out.append(Config("gemm", arch, f"g{len(out)}", body,
                                          desc=f"{label} {la}/{lb} {instr} {tile}x{tk} w{waves} buf{buf} pf{pf}"))
        out += _gemm_variants(arch, quick, len(out))
    return out


def _gemm_variants(arch: str, quick: bool, base: int) -> list[Config]:
    """Epilogues, schedules and modes on f16 / bf16 (their LDS use is the body's; each may change the loads)."""
    dt = "bf16" if arch != "gfx908" else "f16"
    rows = [
        ("swiglu halves", f"A = {dt} row B = {dt} col C = {dt} row tile = 128x128x32 waves = 2x2 epilogue = swiglu "
                          "gate = halves"),
        ("geglu interleaved(32) B row", f"A = {dt} row B = {dt} row C = {dt} row tile = 128x128x32 waves = 2x2 "
                                        "epilogue = geglu gate = interleaved(32)"),
        ("swiglu A col", f"A = {dt} col B = {dt} col C = {dt} row tile = 64x128x32 waves = 2x2 epilogue = swiglu "
                         "gate = halves lds_buffers = 1"),
        ("residual", f"A = {dt} row B = {dt} col C = {dt} row tile = 128x128x32 waves = 2x2 epilogue = residual"),
        ("bias gelu C col", f"A = {dt} row B = {dt} col C = {dt} col tile = 128x64x32 waves = 2x2 "
                            "epilogue = bias(col) -> gelu"),
        ("rope gptj(64)", f"A = {dt} row B = {dt} col C = {dt} row tile = 128x128x32 waves = 2x2 rope = gptj(64)"),
        ("splitk(2)", f"A = {dt} row B = {dt} col C = {dt} row tile = 128x128x32 waves = 2x2 schedule = splitk(2)"),
        ("splitk(4) 16x64", f"A = {dt} row B = {dt} col C = {dt} row tile = 16x64x64 waves = 1x4 schedule = splitk(4)"),
        ("streamk", f"A = {dt} row B = {dt} col C = {dt} row tile = 128x128x32 waves = 2x2 schedule = streamk"),
        ("streamk B row", f"A = {dt} col B = {dt} row C = {dt} row tile = 64x64x64 waves = 2x2 schedule = streamk"),
        ("batched", f"A = {dt} row B = {dt} row C = {dt} row tile = 128x128x32 waves = 2x2 batched = true"),
        ("grouped", f"A = {dt} row B = {dt} row C = {dt} row tile = 128x128x32 waves = 2x2 mode = grouped "
                    "epilogue = bias(col) -> silu"),
        ("grouped B col", f"A = {dt} row B = {dt} col C = {dt} row tile = 64x128x64 waves = 2x2 mode = grouped"),
        ("masked", f"A = {dt} row B = {dt} col C = {dt} row tile = 32x64x64 waves = 1x2 mode = masked"),
        ("16-row tile", f"A = {dt} row B = {dt} col C = {dt} row tile = 16x128x64 waves = 1x4"),
        ("32x32 tile 1x1", f"A = {dt} col B = {dt} row C = {dt} row tile = 32x32x64 waves = 1x1"),
        ("k8 f16 tile", f"A = {dt} col B = {dt} col C = {dt} row tile = 128x128x16 waves = 2x2 instr = 16x16x16"),
    ]
    t = get_target(arch)
    if t.fp8_encoding == "fnuz":
        rows += [("fp8 block(128)", "A = e4m3fnuz row B = e4m3fnuz col C = bf16 row tile = 128x128x64 waves = 2x2 "
                                    "scale_a = block(128) scale_b = block(128)"),
                 ("fp8 rowwise bias", "A = e4m3fnuz row B = e4m3fnuz col C = bf16 row tile = 128x128x64 waves = 2x2 "
                                      "scale_a = row scale_b = col epilogue = bias(col)")]
    elif t.fp8_encoding is not None:
        rows += [("mxfp8 64x256", "A = e4m3fn row B = e4m3fn col C = bf16 row tile = 64x256x128 waves = 1x4 "
                                  "scale_a = mx(32) scale_b = mx(32)"),
                 ("mxfp8 16x16 instr", "A = e4m3fn row B = e4m3fn col C = bf16 row tile = 128x128x128 waves = 2x2 "
                                       "instr = 16x16x128 scale_a = mx(32) scale_b = mx(32)"),
                 ("fp8 block(128)", "A = e4m3fn row B = e4m3fn col C = bf16 row tile = 128x128x64 waves = 2x2 "
                                    "scale_a = block(128) scale_b = block(128)")]
    if quick:
        rows = rows[:4]
    return [Config("gemm", arch, f"g{base + i}", body, desc=desc) for i, (desc, body) in enumerate(rows)]


def gemm_sizes(plan) -> dict[str, int]:
    c, g = plan.spec.params.config, plan.spec.params.gemm
    sizes = {"m": 2 * c.tile[0], "n": c.tile[1], "k": 3 * c.tile[2]}
    if g.rope is not None:
        sizes["rope_cols"] = sizes["n"] // g.rope_head * g.rope_head
    if "batch" in {a.name for a in plan.abi.sizes}:
        sizes["batch"] = 2
    return sizes


# ----------------------------------------------------------------------------------------- other ops
def attention_configs(arches, quick: bool) -> list[Config]:
    out: list[Config] = []
    rows = [("bf16", 128, "causal", "128x32", 4, 2, "auto"), ("bf16", 64, "causal", "", 0, 0, "auto"),
            ("f16", 64, "window window = [64, 0]", "128x64", 4, 1, "16x16x16"),
            ("f16", 128, "none", "64x64", 2, 2, "16x16x16"), ("bf16", 64, "none", "128x64", 4, 2, "32x32x8"),
            ("f16", 256, "causal", "64x32", 2, 1, "auto"), ("bf16", 128, "none", "128x64", 4, 1, "32x32x16"),
            ("f16", 64, "causal", "128x128", 4, 2, "16x16x32"), ("bf16", 64, "none", "64x16", 4, 2, "16x16x16"),
            ("bf16", 128, "causal", "128x32", 4, 2, "16x16x16"), ("f16", 128, "none", "128x64", 4, 1, "16x16x32")]
    for arch in arches:
        for dt, hd, mask, tile, waves, buf, instr in rows[:2] if quick else rows:
            body = f"op = attention dtype = {dt} head_dim = {hd} mask = {mask}"
            if tile:
                body += f" tile = {tile} waves = {waves} lds_buffers = {buf}"
            if instr != "auto":
                body += f" instr = {instr}"
            out.append(Config("attention", arch, f"at{len(out)}", body,
                              dict(batch=1, heads=2, heads_kv=2, seqlen_q=128, seqlen_k=160), desc=body[len("op = attention "):]))
        for dt, hd, page in [("bf16", 128, 16), ("f16", 64, 0)][:1 if quick else 2]:
            body = f"op = attention_decode dtype = {dt} head_dim = {hd} mask = causal"
            if page:
                body += f" page_size = {page}"
            out.append(Config("decode", arch, f"dec{len(out)}", body,
                              dict(batch=2, heads=4, heads_kv=2, seqlen_q=1, seqlen_k=100), desc=body[len("op = attention_decode "):]))
    return out


def example_configs(arches, ops, quick: bool) -> list[Config]:
    """The examples' rowops / moe_routing / elementwise kernels, and the row-op test kernels."""
    out: list[Config] = []
    texts = []
    for ex in ("rowops", "moe_routing", "elementwise"):
        texts.append((ROOT / "examples" / f"{ex}.ck").read_text())
    try:
        from tests.ops.rowops.harness import SOURCE  # every row-op variant the tests name
        texts.append(SOURCE)
    except ImportError:
        pass
    seen = set()
    for text in texts:
        body_text = "\n".join(ln for ln in text.splitlines() if not ln.strip().startswith("target"))
        for arch in arches:
            try:
                specs = load_text(f"target {arch}\n{body_text}", "sweep.ck")
            except CkgenError:
                continue
            for s in specs:
                op = {"softmax": "rowops", "layernorm": "rowops", "rmsnorm": "rowops"}.get(s.op, s.op)
                if op not in ops or (arch, s.name) in seen:
                    continue
                seen.add((arch, s.name))
                out.append(Config(op, arch, s.name, "", dict(rows=6, cols=1000, tokens=96, hidden=512), desc=s.name))
                out[-1].spec = s  # type: ignore[attr-defined]
    if quick:
        keep, per = [], defaultdict(int)
        for c in out:
            per[(c.op, c.arch)] += 1
            if per[(c.op, c.arch)] <= 3:
                keep.append(c)
        out = keep
    return out


# --------------------------------------------------------------------------------------------- running
def plan_config(c: Config):
    spec = getattr(c, "spec", None)
    if spec is None:
        spec = load_text(f"target {c.arch}\nkernel {c.name} {{ {c.body} }}\n", "sweep.ck")[0]
    return plan_kernel(spec, c.arch)


def run_one(kernel, c: Config):
    plan = kernel.plan
    if plan.op == "gemm":
        given = gemm_sizes(plan)
    else:
        names = {a.name.lower() for a in plan.abi.sizes}
        given = {k: v for k, v in c.sizes.items() if k in names}
        for a in plan.abi.sizes:  # (row ops: within the kernel's column bound)
            if a.name.lower() in given and a.at_most is not None:
                given[a.name.lower()] = min(given[a.name.lower()], a.at_most)
    results, _ = run.check_call(kernel, run.resolve_sizes(plan, given), np.random.default_rng(0))
    return results, kernel.handle.library.lds_sites()


def predicted(plan) -> int:
    if plan.op != "gemm" or not hasattr(plan.body, "lds") or plan.body.lds is None:
        return 0
    lds = plan.body.lds
    return sum(getattr(x, f, 0) for x in (lds.a, lds.b) for f in ("read_conflicts", "write_conflicts"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--ops", default="gemm,attention,decode,rowops,moe_routing,elementwise")
    ap.add_argument("--arch", default=",".join(ARCHES))
    ap.add_argument("--chunk", type=int, default=24, help="kernels per emulator library")
    ap.add_argument("--limit", type=int, default=0, help="at most this many configurations (0: all)")
    ap.add_argument("--match", default="", help="only configurations whose description contains this")
    ap.add_argument("--json", default="", help="write every row (config, sites) here")
    args = ap.parse_args(argv)
    ops, arches = set(args.ops.split(",")), tuple(args.arch.split(","))
    configs: list[Config] = []
    if "gemm" in ops:
        configs += gemm_configs(arches, args.quick)
    if ops & {"attention", "decode"}:
        configs += [c for c in attention_configs([a for a in arches if a != "gfx908"], args.quick) if c.op in ops]
    if ops & {"rowops", "moe_routing", "elementwise"}:
        configs += example_configs(arches, ops, args.quick)
    if args.match:
        configs = [c for c in configs if args.match in c.desc]
    if args.limit:
        configs = configs[:args.limit]

    t0 = time.time()
    planned, refused = [], defaultdict(int)
    for c in configs:
        try:
            planned.append((c, plan_config(c)))
        except CkgenError as e:
            refused[(c.op, c.arch)] += 1
            print(f"refused {c.op} {c.arch} {c.desc}: {str(e).splitlines()[0][:140]}", file=sys.stderr)
    rows, findings, wrong, unmeasured, swept = [], [], [], [], defaultdict(int)
    by_arch = defaultdict(list)
    for c, p in planned:
        by_arch[p.arch].append((c, p))
    for arch, items in sorted(by_arch.items()):
        for i in range(0, len(items), args.chunk):
            part = items[i:i + args.chunk]
            tb = time.time()
            try:
                kernels = api.emu_kernels([p for _, p in part], f"lds_sweep_{arch}_{i // args.chunk}")
            except CkgenError as e:
                print(f"build failed {arch} chunk {i // args.chunk}: {str(e)[:400]}", file=sys.stderr)
                continue
            tb = time.time() - tb
            tr = time.time()
            for c, p in part:
                try:
                    results, sites = run_one(kernels[p.name], c)
                except CkgenError as e:
                    print(f"run failed {c.op} {arch} {c.desc}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
                    continue
                swept[(c.op, arch)] += 1
                bad = [(n, e, t) for n, e, t in results if not e <= t]
                if bad:
                    wrong.append((c, bad))
                pred = predicted(p)
                row = {"op": c.op, "arch": arch, "desc": c.desc, "predicted": pred,
                       "sites": [(Path(s.file).name, s.line, "write" if s.write else "read", s.instructions,
                                  s.extra_cycles, s.max_ways) for s in sites]}
                rows.append(row)
                for s in sites:
                    if s.extra_cycles > 0:
                        findings.append((c, p, s, pred))
                if pred and not any(s.extra_cycles for s in sites):
                    findings.append((c, p, None, pred))
                if not sites and p.entries[0].lds_bytes > 0:  # LDS the emulator's counters never saw
                    unmeasured.append(c)
            print(f"[{time.time() - t0:6.0f}s] {arch} chunk {i // args.chunk}: {len(part)} kernels, build {tb:.0f}s, "
                  f"run {time.time() - tr:.0f}s", file=sys.stderr, flush=True)

    print("\n# configurations swept (op, arch): run / refused")
    for key in sorted(set(swept) | set(refused)):
        print(f"  {key[0]:12s} {key[1]:7s} {swept[key]:4d} / {refused[key]}")
    print(f"\n# findings ({len(findings)}): config | file:line | kind | instructions | extra cycles | max ways | "
          "model prediction")
    for c, _, s, pred in findings:
        if s is None:
            print(f"  {c.op} {c.arch} {c.desc} | (no LDS access measured) | model predicts {pred}")
        else:
            print(f"  {c.op} {c.arch} {c.desc} | {Path(s.file).name}:{s.line} | {'write' if s.write else 'read'} | "
                  f"{s.instructions} | {s.extra_cycles} | {s.max_ways} | {pred}")
    if unmeasured:
        print(f"\n# LDS allocated but no access counted ({len(unmeasured)}; e.g. a later launch of the call reset "
              "the counters)")
        for c in unmeasured:
            print(f"  {c.op} {c.arch} {c.desc}")
    if wrong:
        print(f"\n# wrong results ({len(wrong)})")
        for c, bad in wrong:
            print(f"  {c.op} {c.arch} {c.desc}: {bad}")
    print(f"\n# {time.time() - t0:.0f}s")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if findings or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
