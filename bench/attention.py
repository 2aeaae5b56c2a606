"""Fused attention forward on the GPU through ckgen's generated kernels (JIT, target sm_90, from
bench/attention_nv.ck) against torch SDPA's flash and cuDNN backends, measured in the same run, bf16.

  python3 bench/attention.py [--only TEXT] [--kernels REGEX] [--json OUT]

First numerics: every kernel on a small problem with GQA, seqlen_q != seqlen_k and rows not 16-byte aligned
(BSHD padded by 3 elements) against a float64 reference (O relative error, LSE, rows without keys, padding
untouched); a kernel that fails is not timed. Then per case (the issue's shapes, then UNTUNED: open models' prefill
shapes that no configuration choice was made on, printed as a table of their own): SDPA flash and cuDNN timed
before and after ckgen (the faster time counts), every candidate of the case's head dim and mask checked against
flash's output on the case's inputs (O poisoned with NaN first) and timed through its C entry point. Both sides
are timed alike, as device time: the median of 15 replays of a CUDA graph of 5 calls, per call (nvh.time_graph_ms;
host time per call is bench/overhead.py's); an SDPA backend whose graph capture fails is noted and not timed. TFLOP/s =
4*b*h*s^2*d / time (causal counted half). The figure of record per case is the kernel the planner itself builds
for the case's head dim and mask (``planned``: the kernel of the spec that names nothing else); the table prints
its ratios to both backends, then the fastest of the bench's kernels and its ratio to the planned one (a choice
made on that very case: not a figure of record). Exit status 1 when a kernel fails numerics or a case has no
correct kernel.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nvh import jit_file, raw_call, time_graph_ms  # noqa: E402

SPEC = HERE / "attention_nv.ck"
SPEC_ARG = os.path.relpath(SPEC, HERE.parent)  # relative, as bench/nv_prebuild.py builds it (same cache keys)
TOL = {"bf16": 2.5e-2, "f16": 5e-3}
LSE_TOL = 5e-3
CASES = [  # name, batch, heads_q, heads_kv, seqlen, d, mask
    ("b16 h32 s1024 d128", 16, 32, 32, 1024, 128, "none"),
    ("b16 h32 s1024 d128 causal", 16, 32, 32, 1024, 128, "causal"),
    ("b4 h32 s4096 d128", 4, 32, 32, 4096, 128, "none"),
    ("b4 h32 s4096 d128 causal", 4, 32, 32, 4096, 128, "causal"),
    ("b1 h32 s16384 d128 causal", 1, 32, 32, 16384, 128, "causal"),
    ("b4 h32/8 s4096 d128 causal (GQA)", 4, 32, 8, 4096, 128, "causal"),
    ("b8 h32 s2048 d64", 8, 32, 32, 2048, 64, "none"),
    ("b8 h32 s2048 d64 causal", 8, 32, 32, 2048, 64, "causal"),
    # issue 23's short sequences and head dim 256 (Gemma's 16 heads of 256)
    ("b32 h32 s512 d128", 32, 32, 32, 512, 128, "none"),
    ("b32 h32 s512 d128 causal", 32, 32, 32, 512, 128, "causal"),
    ("b64 h32 s256 d128 causal", 64, 32, 32, 256, 128, "causal"),
    ("b16 h16 s1024 d256", 16, 16, 16, 1024, 256, "none"),
    ("b4 h16 s4096 d256 causal", 4, 16, 16, 4096, 256, "causal"),
]
#: shapes no configuration choice was made on (the planner's tables, WGMMA_TABLE's grid per head dim, came from
#: CASES): open models' prefill attention, reported as a table of their own, the figure of record for those choices
UNTUNED = [
    ("Llama-3-8B b1 h32/8 s2048 causal", 1, 32, 8, 2048, 128, "causal"),
    ("Llama-3-8B b4 h32/8 s512 causal", 4, 32, 8, 512, 128, "causal"),
    ("Llama-3-8B b1 h32/8 s8192 causal", 1, 32, 8, 8192, 128, "causal"),
    ("Qwen2.5-7B b2 h28/4 s3000 causal", 2, 28, 4, 3000, 128, "causal"),
    ("Gemma-2-9B b2 h16/8 s1400 d256 causal", 2, 16, 8, 1400, 256, "causal"),
    ("BERT-base b32 h12 s384 d64", 32, 12, 12, 384, 64, "none"),
]


def _absmax(t) -> float:
    """The largest |element| of a torch tensor, 0 for an empty one (torch's max has no ``initial``)."""
    return float(t.abs().max()) if t.numel() else 0.0


def flops(b, h, s, d, mask) -> float:
    return 4.0 * b * h * s * s * d * (0.5 if mask == "causal" else 1.0)



def reference(q, k, v, mask, scale):
    """float64 O [b, sq, h, d] and LSE [b, h, sq] (bottom-right causal; rows without keys: 0 / -inf)."""
    g = q.shape[2] // k.shape[2]
    qd = q.double().transpose(1, 2)
    kd = k.double().transpose(1, 2).repeat_interleave(g, 1)
    vd = v.double().transpose(1, 2).repeat_interleave(g, 1)
    s = scale * qd @ kd.transpose(-1, -2)
    sq, sk = q.shape[1], k.shape[1]
    if mask == "causal":
        i = torch.arange(sq, device="cuda")[:, None]
        j = torch.arange(sk, device="cuda")[None, :]
        s = s.masked_fill(j > i + sk - sq, -math.inf)
    lse = torch.logsumexp(s, -1)
    empty = torch.isinf(lse)
    p = torch.exp(s - lse.masked_fill(empty, 0)[..., None]).masked_fill(empty[..., None], 0)
    return (p @ vd).transpose(1, 2), lse


def check_kernel(kern) -> tuple[bool, str]:
    """Numerics on b2, 8 query heads over 2 KV heads, sq 300 vs sk 517 (and 517 vs 300), padded rows (3 elements:
    not 16-byte aligned, the mma.sync body) and, for a kernel with the Hopper body, rows padded by 8 (aligned: the
    Hopper body; padding still untouched)."""
    a = kern.plan.spec.params.attn
    d = a.head_dim
    gen = torch.Generator(device="cuda").manual_seed(1)
    worst, why = 0.0, []
    pads = (3, 8) if kern.plan.body.wgmma is not None else (3,)
    for sq, sk, pad in ((sq, sk, pad) for sq, sk in ((300, 517), (517, 300)) for pad in pads):
        def t(s, h, fill=None, pad=pad):
            store = torch.empty(2, s, h * d + pad, device="cuda", dtype=torch.bfloat16)
            if fill is None:
                store.copy_(torch.randn(store.shape, generator=gen, device="cuda"))
            else:
                store.fill_(fill)
            return store, store[:, :, :h * d].unflatten(2, (h, d))
        _, q = t(sq, 8)
        _, k = t(sk, 2)
        _, v = t(sk, 2)
        o_store, o = t(sq, 8, fill=float("nan"))
        scale = 1 / math.sqrt(d)
        _, lse = kern(q, k, v, O=o, scale=scale)
        torch.cuda.synchronize()
        ro, rl = reference(q, k, v, a.mask, scale)
        err = float((o.double() - ro).norm() / ro.norm())
        worst = max(worst, err)
        if not err <= TOL["bf16"]:
            why.append(f"sq {sq} sk {sk} pad {pad}: O relative error {err:.2e}")
        fin = torch.isfinite(rl)
        if not torch.equal(torch.isneginf(lse), torch.isneginf(rl)) or \
                _absmax(lse[fin] - rl[fin]) > LSE_TOL:
            why.append(f"sq {sq} sk {sk} pad {pad}: LSE differs")
        if not torch.isnan(o_store[..., 8 * d:].float()).all():
            why.append("padding written")
    return not why, f"max O err {worst:.1e}" + ("" if not why else ": " + "; ".join(why))


def sdpa_fn(backend: str, q, k, v, causal: bool):
    """(fn, backend, note, output) for torch SDPA restricted to one backend ([B, H, S, D] views); fn None when it
    refuses the case. GQA through enable_gqa, else K and V expanded to every query head (noted)."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        be = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]
    except (ImportError, AttributeError) as e:
        return None, None, f"n/a ({e})", None
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    gqa = q.shape[2] != k.shape[2]
    for expand in ((False, True) if gqa else (False,)):
        g = q.shape[2] // k.shape[2]
        kx, vx = (kt.repeat_interleave(g, 1), vt.repeat_interleave(g, 1)) if expand else (kt, vt)
        kw = {"enable_gqa": True} if gqa and not expand else {}

        def fn(kx=kx, vx=vx, kw=kw):
            return sdpa(qt, kx, vx, is_causal=causal, **kw)
        try:
            with sdpa_kernel([be]):
                out = fn()
            torch.cuda.synchronize()
            return fn, be, "(K/V expanded)" if expand else "", out.transpose(1, 2)
        except Exception as e:  # noqa: BLE001 - the backend refuses this case
            note = f"refused ({type(e).__name__})"
    return None, None, note, None


def time_sdpa(fn, be) -> float | None:
    """SDPA's device time per call under backend ``be``; None when that backend cannot be captured in a graph."""
    from torch.nn.attention import sdpa_kernel
    try:
        with sdpa_kernel([be]):
            return time_graph_ms(fn, warmup=3, reps=15, inner=5)
    except RuntimeError as e:
        print(f"  SDPA {be}: graph capture failed, not timed ({e})", flush=True)
        torch.cuda.synchronize()
        return None


def planned(kernels: dict, d: int, mask: str) -> str | None:
    """The name of the kernel of ``kernels`` that the planner builds for bf16 attention of head dim ``d`` and
    ``mask`` when the spec names nothing else (None: the bench holds none)."""
    from ckgen.runtime.api import plan_for

    ref = plan_for(f"kernel p {{ op = attention  dtype = bf16  head_dim = {d}  mask = {mask} }}", "p", "nvidia",
                   "sm_90")
    return next((n for n, k in kernels.items() if k.plan.spec.params.attn.head_dim == d
                 and k.plan.spec.params.attn.mask == mask and k.plan.body == ref.body), None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="only cases whose name contains this")
    ap.add_argument("--kernels", help="only kernels whose name matches this regex")
    ap.add_argument("--json")
    args = ap.parse_args()
    os.chdir(HERE.parent)
    t0 = time.perf_counter()
    kernels = jit_file(SPEC_ARG, args.kernels)
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name}, torch {torch.__version__}, CUDA {torch.version.cuda}; {len(kernels)} kernels "
          f"built/loaded in {time.perf_counter() - t0:.1f} s", flush=True)
    rc = 0
    good = {}
    for n, kern in kernels.items():
        ok, msg = check_kernel(kern)
        print(f"  numerics {n:40} {'ok ' if ok else 'FAIL'} {msg}", flush=True)
        rc |= 0 if ok else 1
        if ok:
            good[n] = kern
    rows = []
    for name, b, hq, hkv, s, d, mask in CASES + UNTUNED:
        if args.only and args.only not in name:
            continue
        causal = mask == "causal"
        fl = flops(b, hq, s, d, mask)
        gen = torch.Generator(device="cuda").manual_seed(2)
        q = torch.randn(b, s, hq, d, device="cuda", generator=gen).to(torch.bfloat16)
        k = torch.randn(b, s, hkv, d, device="cuda", generator=gen).to(torch.bfloat16)
        v = torch.randn(b, s, hkv, d, device="cuda", generator=gen).to(torch.bfloat16)
        o = torch.empty_like(q)
        lse = torch.empty(b, hq, s, device="cuda")
        fl_fn, fl_be, fl_note, fl_out = sdpa_fn("flash", q, k, v, causal)
        cu_fn, cu_be, cu_note, _ = sdpa_fn("cudnn", q, k, v, causal)
        t_fl = time_sdpa(fl_fn, fl_be) if fl_fn else None
        t_cu = time_sdpa(cu_fn, cu_be) if cu_fn else None
        row = {"case": name, "untuned": (name, b, hq, hkv, s, d, mask) in UNTUNED, "configs": {}}
        for n, kern in good.items():
            a = kern.plan.spec.params.attn
            if a.head_dim != d or a.mask != mask:
                continue
            o.fill_(float("nan"))
            run = raw_call(kern, q, k, v, O=o, LSE=lse)
            torch.cuda.synchronize()
            diff = float((o.float() - fl_out.float()).norm() / fl_out.float().norm()) if fl_out is not None else None
            if diff is None or not diff <= TOL["bf16"]:
                print(f"  {name}: {n} differs from flash ({diff})", flush=True)
                row["configs"][n] = {"ok": False, "diff": diff}
                continue
            t = time_graph_ms(run, warmup=3, reps=15, inner=5)
            row["configs"][n] = {"ok": True, "ms": t, "tflops": fl / t / 1e9, "diff": diff}
        # peers again after ckgen: the faster time counts (clocks drift as the card warms up)
        t_fl = min((t for t in (t_fl, time_sdpa(fl_fn, fl_be) if t_fl else None) if t), default=None)
        t_cu = min((t for t in (t_cu, time_sdpa(cu_fn, cu_be) if t_cu else None) if t), default=None)
        ok = {n: c for n, c in row["configs"].items() if c["ok"]}
        best = min(ok, key=lambda n: ok[n]["ms"]) if ok else None
        plan = planned(good, d, mask)
        row.update(best=best, best_tflops=ok[best]["tflops"] if best else None, planned=plan,
                   planned_tflops=ok[plan]["tflops"] if plan in ok else None,
                   flash_tflops=fl / t_fl / 1e9 if t_fl else None, flash_note=fl_note,
                   cudnn_tflops=fl / t_cu / 1e9 if t_cu else None, cudnn_note=cu_note)
        rows.append(row)
        for n, c in sorted(ok.items(), key=lambda kv: kv[1]["ms"]):
            print(f"  {name:34} {n:40} {c['tflops']:7.1f} TFLOP/s  (diff to flash {c['diff']:.1e})", flush=True)
        rc |= 0 if best else 1
        del q, k, v, o, lse, fl_out
        torch.cuda.empty_cache()

    def f(x):
        return f"{x:7.1f}" if x else "    n/a"

    def r(a, b_):
        return f"{a / b_:5.2f}x" if a and b_ else "   n/a"

    for untuned in (False, True):
        part = [row for row in rows if row["untuned"] == untuned]
        if not part:
            continue
        title = "untuned (open models' shapes; no choice was made on them)" if untuned else "the issue's cases"
        print(f"\n{title}\n{'case':38} {'ckgen':>7} {'flash':>7} {'cuDNN':>7} {'vs flash':>8} {'vs cuDNN':>8}  "
              "planned kernel; fastest of the bench's (x planned)")
        for row in part:
            ck = row["planned_tflops"]
            print(f"{row['case']:38} {f(ck)} {f(row['flash_tflops'])} {f(row['cudnn_tflops'])} "
                  f"{r(ck, row['flash_tflops']):>8} {r(ck, row['cudnn_tflops']):>8}  "
                  f"{row['planned']}; {row['best']} ({r(row['best_tflops'], ck).strip()}) {row['flash_note']} "
                  f"{row['cudnn_note']}".rstrip())
    print("(TFLOP/s = 4*b*h*s^2*d / time, causal halved; bf16; ckgen: the planned kernel through its C entry, SDPA per "
          "backend)")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": props.name, "torch": torch.__version__, "cases": rows},
                                              indent=1))
    return rc


if __name__ == "__main__":
    sys.exit(main())
