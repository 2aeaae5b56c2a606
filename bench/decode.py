"""Decode attention (op = attention_decode: split-KV, GQA-packed rows, contiguous or paged KV cache) on the GPU
through ckgen's generated kernels (JIT, target sm_90, from bench/decode_nv.ck) against torch SDPA's flash and
cuDNN backends and against the copy roofline, measured in the same run, bf16, one query token per sequence.

  python3 bench/decode.py [--quick] [--all] [--prefill] [--ordered] [--only TEXT] [--kernels REGEX]
                          [--heads H/HK[/D],...] [--batches B,...] [--seqlens S,...] [--splits LIST] [--json OUT]

First the copy bandwidth: the device time of copying a 128 MiB buffer (read + write bytes / time). Then numerics:
every kernel on a small problem (GQA 32/8, lengths 777, 1, 0 and 100 in one batch, pages in a random order)
against a float64 reference; a kernel that fails is not timed. Then per case (batch 1..256, seqlen_k 512..131072,
GQA 32/8 and 64/8 and MQA 32/1 at d128; --all adds d64 and d256; cases whose K/V would exceed 32 GiB are
skipped): SDPA flash and cuDNN (enable_gqa, K/V as [B, H, S, D] views of the cache) timed before and after ckgen
(the faster time counts); every candidate of the case's head dim checked against flash's output on the case's
inputs (contiguous, and paged with pages in order over the same memory; O poisoned first) and timed through its
C entry point, paged kernels with the block table shuffled (pages in a random order). The split is the
automatic one (from the shape and the SM count) unless --splits gives counts to try too (the fastest counts, and
the table says which). Device time: the median of 15 replays of a CUDA graph of 5 calls, per call
(nvh.time_graph_ms). Reported per case: ckgen's best contiguous and paged time, the K/V bytes read per second as
a fraction of the copy bandwidth, and the ratios to the faster SDPA backend. Exit status 1 when a kernel fails
numerics or a case has no correct kernel. --prefill adds chunked-prefill cases (a chunk of 128..2048 causal query
tokens at the end of 4096..32768 keys, GQA 32/8 d128) against SDPA flash with the lower-right causal mask, in
TFLOP/s, contiguous and paged, and op = attention's Hopper kernels on the contiguous cache (these cases' sequences
share one length); with --splits, each decode kernel's row per split count too (--splits 1: a body = wgmma
kernel's Hopper prefill entry where the automatic split is more than one). --ordered also times each paged kernel with the pages in order (block table
0, 1, 2, ...: each sequence's pages adjacent, as the contiguous cache) and prints, per case, the best paged kernel's
time with shuffled and with ordered pages next to the best contiguous time: what the kernel costs for the block
table apart from what scattered pages cost the memory system (address translation, DRAM locality).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from attention import time_sdpa  # noqa: E402  (bench/attention.py: SDPA's graph-timed device time per backend)
from nvh import jit_file, kernels_run, raw_call, time_graph_ms  # noqa: E402

SPEC = HERE / "decode_nv.ck"
SPEC_ARG = os.path.relpath(SPEC, HERE.parent)
TOL = 2.5e-2
LSE_TOL = 5e-3
KV_LIMIT = 32 << 30
PAGE = 16
BATCHES = (1, 8, 32, 128, 256)
SEQLENS = (512, 8192, 32768, 131072)
HEADS = ((32, 8, 128), (64, 8, 128), (32, 1, 128))
HEADS_ALL = HEADS + ((32, 8, 64), (32, 8, 256))
QUICK = ((1, 8192), (8, 8192), (16, 32768), (128, 8192))



def copy_bandwidth() -> float:
    """Bytes per second of a device-to-device copy of 128 MiB (read + write). (torch's int16 copy on the H200 measured
    4.11 TB/s at 128 MiB but 2.76-2.77 TB/s at 512 MiB and 2 GiB, where ckgen's element-wise op moves 705 MB at
    4.3 TB/s: the large copies understated the roofline.)"""
    n = 1 << 26
    src = torch.empty(n, dtype=torch.int16, device="cuda").fill_(1)
    dst = torch.empty_like(src)
    t = time_graph_ms(lambda: dst.copy_(src), warmup=3, reps=15, inner=5)
    return 2 * 2 * n / (t * 1e-3)


def reference(q, k, v, lens, block_table=None):
    """float64 O [b, 1, h, d] and LSE [b, h, 1]; k, v contiguous [b, s, hk, d] or paged [pages, P, hk, d]."""
    b, sq, h, d = q.shape
    o = torch.zeros(q.shape, dtype=torch.float64, device="cuda")
    lse = torch.full((b, h, sq), float("-inf"), dtype=torch.float64, device="cuda")
    for i in range(b):
        n = int(lens[i])
        if n == 0:
            continue
        if block_table is not None:
            pages = block_table[i, : -(-n // k.shape[1])].long()
            ki, vi = (x[pages].reshape(-1, *x.shape[2:])[:n].double() for x in (k, v))
        else:
            ki, vi = k[i, :n].double(), v[i, :n].double()
        g = h // ki.shape[1]
        s = torch.einsum("qhd,khd->hqk", q[i].double(), ki.repeat_interleave(g, 1)) * d ** -0.5
        lse[i] = torch.logsumexp(s, -1)
        o[i] = torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), vi.repeat_interleave(g, 1))
    return o, lse


def check_kernel(kern) -> tuple[bool, str]:
    """GQA 32/8, one token, lengths 777, 1, 0, 100 (pages of the cache in a random order when paged), O poisoned."""
    a, page = kern.plan.spec.params.attn, kern.plan.spec.params.page_size
    d, lens = a.head_dim, [777, 1, 0, 100]
    gen = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(4, 1, 32, d, device="cuda", generator=gen).to(torch.bfloat16)
    named = {"seqlens_k": torch.tensor(lens, dtype=torch.int32, device="cuda")}
    if page:
        mp = -(-max(lens) // page)
        k, v = (torch.randn(4 * mp + 5, page, 8, d, device="cuda", generator=gen).to(torch.bfloat16) for _ in "kv")
        bt = torch.randperm(4 * mp + 5, device="cuda", generator=gen)[: 4 * mp].reshape(4, mp).to(torch.int32)
        named["block_table"] = bt
    else:
        bt = None
        k, v = (torch.randn(4, max(lens), 8, d, device="cuda", generator=gen).to(torch.bfloat16) for _ in "kv")
    why = []
    for splits in (0, 1, 7):
        o = torch.full_like(q, float("nan"))
        _, lse = kern(q, k, v, O=o, num_splits=splits, **named)
        torch.cuda.synchronize()
        ro, rl = reference(q, k, v, lens, bt)
        err = float((o.double() - ro).norm() / ro.norm())
        if not err <= TOL:
            why.append(f"splits {splits}: O relative error {err:.2e}")
        fin = torch.isfinite(rl)
        if not torch.equal(torch.isneginf(lse), torch.isneginf(rl)) or float((lse - rl)[fin].abs().max()) > LSE_TOL:
            why.append(f"splits {splits}: LSE differs")
        if float(o[2].abs().max()) != 0.0:
            why.append(f"splits {splits}: the empty sequence's O is not 0")
    return not why, "; ".join(why)


def sdpa_fn(backend: str, q, k, v):
    """(fn, backend, output) for SDPA restricted to one backend on [B, H, S, D] views; fn None when it refuses."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        be = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]
    except (ImportError, AttributeError):
        return None, None, None
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    kw = {"enable_gqa": True} if q.shape[2] != k.shape[2] else {}

    def fn():
        return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, **kw)
    try:
        with sdpa_kernel([be]):
            out = fn()
        torch.cuda.synchronize()
        return fn, be, out.transpose(1, 2)
    except Exception:  # noqa: BLE001 - the backend refuses this case
        return None, None, None


def _ints(text, default, sep=","):
    return tuple(int(x) for x in text.split(sep)) if text else default


def cases(args):
    heads = HEADS_ALL if args.all else HEADS
    if args.heads:  # H/HK[/D], head dim 128 unless given
        heads = tuple((*_ints(h, (), "/"), 128)[:3] for h in args.heads.split(","))
    if args.quick:
        return [(b, sk, *heads[0]) for b, sk in QUICK]
    return [(b, sk, hq, hk, d) for hq, hk, d in heads for b in _ints(args.batches, BATCHES)
            for sk in _ints(args.seqlens, SEQLENS)]


def time_split(kern, q, k, v, o, named, sp):
    """(ms, the split it ran: ``auto=N`` for the automatic one) of one call with ``num_splits = sp``."""
    t = time_graph_ms(raw_call(kern, q, k, v, O=o, num_splits=sp, **named), warmup=3, reps=15, inner=5)
    env = {"batch": q.shape[0], "heads": q.shape[2], "heads_kv": k.shape[2], "seqlen_q": q.shape[1],
           "seqlen_k": k.shape[1], "num_pages": k.shape[0], "max_pages": named.get("block_table", q).shape[1],
           "num_splits": sp}
    used = kern.plan.launch.environment(env)["splits"]
    return t, used if sp else f"auto={used}"


def time_kernel(kern, q, k, v, o, named, splits_list):
    """(ms, splits) of the fastest of the automatic split and ``splits_list``."""
    return min((time_split(kern, q, k, v, o, named, sp) for sp in (0, *splits_list)), key=lambda x: x[0])


#: batch, chunk, keys; the last two: chunks whose automatic split (the decode body's rule) is more than one, where
#: --splits 1 shows what the Hopper prefill entry would give
PREFILL = ((4, 512, 4096), (4, 512, 16384), (1, 2048, 32768), (16, 256, 8192), (1, 256, 8192), (2, 128, 4096))
#: op = attention kernels of bench/attention_nv.ck that --prefill also runs on the contiguous cache (a batch whose
#: sequences share one length: K and V dense [batch, keys, heads_kv, d]): the Hopper body's causal d128 tiles
DENSE_PREFILL = ("bf16_d128_causal_wg128x128s2", "bf16_d128_causal_wg128x64s4")


def prefill(args, good, bw, splits) -> int:
    """Chunked prefill: a chunk of ``sq`` query tokens at the end of ``sk`` keys per sequence, causal bottom-right,
    GQA 32/8 d128, against SDPA flash with the lower-right causal mask (torch.nn.attention.bias.causal_lower_right),
    contiguous and paged (pages of 16, shuffled); TFLOP/s = 4 * b * h * d * (visible pairs) / time; each decode
    kernel's note names the entries its call ran (a kernel with body = wgmma: its Hopper prefill entry), a row for
    the automatic split and one for each of ``splits``. Besides the decode kernels (any lengths, pages), op =
    attention's Hopper kernels (DENSE_PREFILL, marked "dense") on the contiguous cache, whose sequences here share
    one length: the route for such a batch."""
    dense = {f"{n} (dense)": k for n, k in jit_file("bench/attention_nv.ck", "|".join(DENSE_PREFILL)).items()}
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right
    rc = 0
    print(f"\n{'prefill case':30} {'kernel':40} {'TFLOP/s':>8} {'flash':>8} {'ratio':>6}")
    for b, sq, sk in PREFILL:
        hq, hk, d = 32, 8, 128
        name = f"b{b} q{sq} k{sk} h{hq}/{hk} d{d}"
        if args.only and args.only not in name:
            continue
        gen = torch.Generator(device="cuda").manual_seed(3)
        q = torch.randn(b, sq, hq, d, device="cuda", generator=gen).to(torch.bfloat16)
        k = torch.randn(b, sk, hk, d, device="cuda", generator=gen).to(torch.bfloat16)
        v = torch.randn(b, sk, hk, d, device="cuda", generator=gen).to(torch.bfloat16)
        pairs = sq * sk - sq * (sq - 1) / 2
        fl = 4.0 * b * hq * d * pairs
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        mask = causal_lower_right(sq, sk)

        def sdpa(qt=qt, kt=kt, vt=vt, mask=mask):
            return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, enable_gqa=True)
        ref, t_fl = None, None
        try:
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                ref = sdpa().transpose(1, 2)
                t_fl = time_graph_ms(sdpa, warmup=3, reps=15, inner=5)
        except Exception as e:  # noqa: BLE001 - flash refuses this case, or its graph capture fails
            print(f"  {name}: SDPA flash {'not timed' if ref is not None else 'n/a'} ({type(e).__name__}: {e})")
            torch.cuda.synchronize()
        lens = torch.full((b,), sk, dtype=torch.int32, device="cuda")
        pages = b * sk // PAGE
        kp, vp = k.view(pages, PAGE, hk, d), v.view(pages, PAGE, hk, d)
        order = torch.arange(pages, dtype=torch.int32, device="cuda").reshape(b, sk // PAGE)
        shuffled = torch.randperm(pages, device="cuda", generator=gen).to(torch.int32).reshape(b, sk // PAGE)
        o = torch.empty_like(q)
        # (name, kernel, K, V, arguments checked, arguments timed: pages shuffled) of every candidate
        runs = [(n, kern, k, v, {}, {}) for n, kern in dense.items()]
        for n, kern in good.items():
            a = kern.plan.spec.params.attn
            if a.mask != "causal" or a.head_dim != d:
                continue
            paged = kern.plan.spec.params.page_size == PAGE
            named = {"seqlens_k": lens, **({"block_table": order} if paged else {})}
            runs.append((n, kern, kp if paged else k, vp if paged else v, named,
                         {**named, "block_table": shuffled} if paged else named))
        for n, kern, kk, vv, checked, timed in runs:
            o.fill_(float("nan"))
            entry = ", ".join(kernels_run(functools.partial(kern, q, kk, vv, O=o, **checked), n.split()[0]))
            diff = float((o.float() - ref.float()).norm() / ref.float().norm()) if ref is not None else None
            if diff is not None and not diff <= TOL:
                print(f"  {name}: {n} differs from SDPA ({diff})")
                rc = 1
                continue
            if n in dense:
                timings = [(time_graph_ms(raw_call(kern, q, kk, vv, O=o), warmup=3, reps=15, inner=5), "")]
            else:  # the automatic split, then each of --splits (a row each: which entry each one runs)
                timings = []
                for sp in (0, *splits):
                    if sp:
                        entry = ", ".join(kernels_run(functools.partial(kern, q, kk, vv, O=o, num_splits=sp,
                                                                        **checked), n.split()[0]))
                    t, used = time_split(kern, q, kk, vv, o, timed, sp)
                    timings.append((t, f"  (splits {used}; ran {entry})"))
            for t, note in timings:
                ratio = f"{t_fl / t:5.2f}x" if t_fl else "  n/a"
                flash = f"{fl / t_fl / 1e9:8.1f}" if t_fl else "     n/a"
                print(f"{name:30} {n:40} {fl / t / 1e9:8.1f} {flash} {ratio}{note}", flush=True)
        del q, k, v, o, kp, vp, ref
        torch.cuda.empty_cache()
    return rc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="four GQA 32/8 d128 cases")
    ap.add_argument("--all", action="store_true", help="also d64 and d256 (GQA 32/8)")
    ap.add_argument("--only", help="only cases whose name contains this")
    ap.add_argument("--kernels", help="only kernels whose name matches this regex")
    ap.add_argument("--heads", help="head counts instead of the table's, e.g. 28/4,40/8,64/1 (d128 unless H/HK/D)")
    ap.add_argument("--batches", help=f"batch sizes instead of {BATCHES}")
    ap.add_argument("--seqlens", help=f"seqlen_k values instead of {SEQLENS}")
    ap.add_argument("--splits", default="", help="split counts to try besides the automatic one, e.g. 1,4,16")
    ap.add_argument("--prefill", action="store_true", help="also chunked prefill (causal) vs SDPA flash")
    ap.add_argument("--ordered", action="store_true",
                    help="also time the paged kernels with the pages in order (scattered pages' cost apart)")
    ap.add_argument("--json")
    args = ap.parse_args()
    splits_list = [int(x) for x in args.splits.split(",") if x]
    os.chdir(HERE.parent)
    t0 = time.perf_counter()
    kernels = jit_file(SPEC_ARG, args.kernels)
    props = torch.cuda.get_device_properties(0)
    bw = copy_bandwidth()
    torch.cuda.empty_cache()
    print(f"device: {props.name}, torch {torch.__version__}, CUDA {torch.version.cuda}; {len(kernels)} kernels "
          f"built/loaded in {time.perf_counter() - t0:.1f} s; copy bandwidth {bw / 1e12:.2f} TB/s", flush=True)
    rc, good = 0, {}
    for n, kern in kernels.items():
        ok, msg = check_kernel(kern)
        print(f"  numerics {n:36} {'ok ' if ok else 'FAIL'} {msg}", flush=True)
        rc |= 0 if ok else 1
        if ok:
            good[n] = kern
    rows = []
    for b, sk, hq, hk, d in cases(args):
        name = f"b{b} s{sk} h{hq}/{hk} d{d}"
        kv_bytes = 2 * b * sk * hk * d * 2
        if args.only and args.only not in name:
            continue
        if kv_bytes > KV_LIMIT:
            print(f"  {name}: skipped (K/V {kv_bytes / 2**30:.0f} GiB > {KV_LIMIT >> 30} GiB)", flush=True)
            continue
        gen = torch.Generator(device="cuda").manual_seed(2)
        q = torch.randn(b, 1, hq, d, device="cuda", generator=gen).to(torch.bfloat16)
        k = torch.randn(b, sk, hk, d, device="cuda", generator=gen).to(torch.bfloat16)
        v = torch.randn(b, sk, hk, d, device="cuda", generator=gen).to(torch.bfloat16)
        o = torch.empty_like(q)
        lens = torch.full((b,), sk, dtype=torch.int32, device="cuda")
        pages = b * sk // PAGE
        kp, vp = k.view(pages, PAGE, hk, d), v.view(pages, PAGE, hk, d)  # the same memory in pages of 16
        bt_order = torch.arange(pages, dtype=torch.int32, device="cuda").reshape(b, sk // PAGE)
        bt_shuffled = torch.randperm(pages, device="cuda", generator=gen).to(torch.int32).reshape(b, sk // PAGE)
        fl_fn, fl_be, fl_out = sdpa_fn("flash", q, k, v)
        cu_fn, cu_be, cu_out = sdpa_fn("cudnn", q, k, v)
        ref_out = fl_out if fl_out is not None else cu_out
        t_fl = time_sdpa(fl_fn, fl_be) if fl_fn else None
        t_cu = time_sdpa(cu_fn, cu_be) if cu_fn else None
        row = {"case": name, "kv_bytes": kv_bytes, "configs": {}}
        for n, kern in good.items():
            if kern.plan.spec.params.attn.head_dim != d or kern.plan.spec.params.attn.mask != "none":
                continue
            paged = kern.plan.spec.params.page_size == PAGE
            kk, vv = (kp, vp) if paged else (k, v)
            named = {"seqlens_k": lens, **({"block_table": bt_order} if paged else {})}
            o.fill_(float("nan"))
            kern(q, kk, vv, O=o, **named)
            torch.cuda.synchronize()
            diff = float((o.float() - ref_out.float()).norm() / ref_out.float().norm()) if ref_out is not None else None
            if diff is None or not diff <= TOL:
                print(f"  {name}: {n} differs from SDPA ({diff})", flush=True)
                row["configs"][n] = {"ok": False, "diff": diff}
                continue
            if paged:
                named["block_table"] = bt_shuffled
            t, used = time_kernel(kern, q, kk, vv, o, named, splits_list)
            row["configs"][n] = {"ok": True, "ms": t, "splits": used, "paged": paged, "diff": diff,
                                 "of_copy": kv_bytes / (t * 1e-3) / bw}
            if paged and args.ordered:
                row["configs"][n]["ms_ordered"] = time_kernel(kern, q, kk, vv, o, {**named, "block_table": bt_order},
                                                              [])[0]
        t_fl = min((t for t in (t_fl, time_sdpa(fl_fn, fl_be) if t_fl else None) if t), default=None)
        t_cu = min((t for t in (t_cu, time_sdpa(cu_fn, cu_be) if t_cu else None) if t), default=None)
        for kind, paged in (("contiguous", False), ("paged", True)):
            ok = {n: c for n, c in row["configs"].items() if c["ok"] and c["paged"] == paged}
            best = min(ok, key=lambda n: ok[n]["ms"]) if ok else None
            row[kind] = {"best": best, "ms": ok[best]["ms"] if best else None,
                         "of_copy": ok[best]["of_copy"] if best else None, "splits": ok[best]["splits"] if best else None}
            rc |= 0 if best else 1
        row.update(flash_ms=t_fl, cudnn_ms=t_cu,
                   flash_of_copy=kv_bytes / (t_fl * 1e-3) / bw if t_fl else None,
                   cudnn_of_copy=kv_bytes / (t_cu * 1e-3) / bw if t_cu else None)
        rows.append(row)
        for n, c in sorted(((n, c) for n, c in row["configs"].items() if c["ok"]), key=lambda x: x[1]["ms"]):
            print(f"  {name:26} {n:34} {c['ms'] * 1e3:9.1f} us  {c['of_copy'] * 100:5.1f}% of copy  "
                  f"splits {c['splits']}", flush=True)
        del q, k, v, o, kp, vp, fl_out, cu_out, ref_out
        torch.cuda.empty_cache()

    if args.prefill:
        rc |= prefill(args, good, bw, splits_list)

    def pct(x):
        return f"{x * 100:5.1f}%" if x else "   n/a"

    def ratio(t, peers):
        peers = [p for p in peers if p]
        return f"{min(peers) / t:5.2f}x" if t and peers else "   n/a"

    print(f"\n{'case':26} {'contig':>7} {'paged16':>7} {'flash':>7} {'cuDNN':>7} {'c vs SDPA':>9} {'p vs SDPA':>9} "
          f"{'p / c':>6}  best contiguous / paged (splits)")
    for r in rows:
        c, p = r["contiguous"], r["paged"]
        pc = f"{c['ms'] / p['ms']:5.2f}" if c["ms"] and p["ms"] else "  n/a"
        print(f"{r['case']:26} {pct(c['of_copy'])} {pct(p['of_copy'])} {pct(r['flash_of_copy'])} "
              f"{pct(r['cudnn_of_copy'])} {ratio(c['ms'], (r['flash_ms'], r['cudnn_ms'])):>9} "
              f"{ratio(p['ms'], (r['flash_ms'], r['cudnn_ms'])):>9} {pc:>6}  {c['best']} ({c['splits']}) / "
              f"{p['best']} ({p['splits']})")
    print(f"(% of copy = K/V bytes read / time / copy bandwidth {bw / 1e12:.2f} TB/s; vs SDPA = the faster SDPA "
          "backend's time / ckgen's; p / c = paged speed relative to contiguous; bf16, one query token)")
    if args.ordered:
        print(f"\n{'case':26} {'contig us':>10} {'paged us':>10} {'ordered us':>10} {'p / c':>6} {'o / c':>6}  best paged")
        for r in rows:
            c, p = r["contiguous"], r["paged"]
            if not (c["ms"] and p["ms"]):
                continue
            po = r["configs"][p["best"]]["ms_ordered"]
            print(f"{r['case']:26} {c['ms'] * 1e3:10.1f} {p['ms'] * 1e3:10.1f} {po * 1e3:10.1f} "
                  f"{c['ms'] / p['ms']:6.2f} {c['ms'] / po:6.2f}  {p['best']}")
        print("(paged us: pages shuffled, as in the table above; ordered us: the same kernel, automatic split, pages "
              "in order; p / c, o / c: speed relative to the best contiguous kernel)")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": props.name, "torch": torch.__version__,
                                               "copy_bytes_per_s": bw, "cases": rows}, indent=1))
    return rc


if __name__ == "__main__":
    sys.exit(main())
