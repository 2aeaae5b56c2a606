"""Quantizing row ops and element-wise kernels on the H200 against the copy bandwidth: fp8 (e4m3fn) y with
per-token or per-1x128-group f32 scales (bench/quant_nv.ck), each side timed as device time by CUDA-graph replay
(nvh.time_graph_ms), with torch eager's quantizer (amax, divide, clamp, cast: what serving stacks fall back to) for
comparison.

Bytes per case: what the op must move: x (and residual) read, s_out written (with a residual), y written (1 byte
per element), the scales written (4 bytes per row or per 128 columns); weight (one row) left out. Copy: a
device-to-device ``copy_`` of the same number of bytes (half read, half written), timed the same way. Each kernel is
first checked against float64 (scales, and codes against torch's own cast of the same f32 product). The issue-26
acceptance: >= 90% of copy at 64 MB and more.

    python3 bench/quant.py [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import nvh  # noqa: E402

SRC = "bench/quant_nv.ck"
LIMIT = 0.90
FP8 = torch.float8_e4m3fn
TOP = torch.finfo(FP8).max
EPS = 1e-6


def rms64(v, w):
    v = v.double()
    return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + EPS) * w.double()


def torch_quant(y, group: int | None):
    """torch eager's per-token / per-group quantizer of an f32 / bf16 y: (q, scales)."""
    rows, cols = y.shape
    yf = y.float()
    if group:
        yg = torch.nn.functional.pad(yf, (0, -cols % group)).view(rows, -1, group)
        s = (yg.abs().amax(-1) / TOP).clamp_min(1e-12)
        q = (yg / s[..., None]).clamp(-TOP, TOP).to(FP8).view(rows, -1)[:, :cols]
        return q, s
    s = (yf.abs().amax(-1, keepdim=True) / TOP).clamp_min(1e-12)
    return (yf / s).clamp(-TOP, TOP).to(FP8), s


def cases(quick: bool):
    """(name, kernel, make inputs, float64 y of the inputs, torch eager function, group, bytes moved)."""
    out = []

    def mk(rows, cols, n, res_w=False):
        def make():
            g = torch.Generator(device="cuda").manual_seed(rows + cols)
            xs = [torch.randn(rows, cols, generator=g, device="cuda").bfloat16() for _ in range(n)]
            if res_w:
                xs.append(torch.randn(cols, generator=g, device="cuda").bfloat16())
            return tuple(xs)
        return make

    shapes = [(8192, 4096), (16384, 4096)] if quick else [(4096, 4096), (8192, 4096), (16384, 4096), (32768, 4096)]
    for rows, cols in shapes:
        el = rows * cols
        out.append((f"add+rmsnorm fp8 row {rows}x{cols}", "q_add_rms_row_4096", mk(rows, cols, 2, True),
                    lambda x, r, w: rms64((x.float() + r.float()).bfloat16(), w),
                    lambda x, r, w: torch_quant(torch.nn.functional.rms_norm(x + r, (x.shape[1],), w, EPS), None),
                    None, el * (2 + 2 + 2 + 1) + rows * 4))
        out.append((f"add+rmsnorm fp8 1x128 {rows}x{cols}", "q_add_rms_group_4096", mk(rows, cols, 2, True),
                    lambda x, r, w: rms64((x.float() + r.float()).bfloat16(), w),
                    lambda x, r, w: torch_quant(torch.nn.functional.rms_norm(x + r, (x.shape[1],), w, EPS), 128),
                    128, el * (2 + 2 + 2 + 1) + el // 128 * 4))
        out.append((f"quantize fp8 row {rows}x{cols}", "q_quant_row_4096", mk(rows, cols, 1),
                    lambda x: x.double(), lambda x: torch_quant(x, None), None, el * 3 + rows * 4))
        out.append((f"quantize fp8 1x128 {rows}x{cols}", "q_quant_group_4096", mk(rows, cols, 1),
                    lambda x: x.double(), lambda x: torch_quant(x, 128), 128, el * 3 + el // 128 * 4))
    for rows, cols in ([(8192, 7168)] if quick else [(8192, 7168), (16384, 7168)]):
        el = rows * cols
        out.append((f"rmsnorm fp8 1x128 {rows}x{cols}", "q_rms_group_7168", mk(rows, cols, 1, True),
                    rms64, lambda x, w: torch_quant(torch.nn.functional.rms_norm(x, (x.shape[1],), w, EPS), 128),
                    128, el * 3 + el // 128 * 4))
    rows = 8192 if quick else 16384
    out.append((f"rmsnorm fp8 row {rows}x8192", "q_rms_row_8192", mk(rows, 8192, 1, True), rms64,
                lambda x, w: torch_quant(torch.nn.functional.rms_norm(x, (x.shape[1],), w, EPS), None),
                None, rows * 8192 * 3 + rows * 4))
    out.append((f"quantize fp8 row {rows // 2}x14336", "q_quant_row_14336", mk(rows // 2, 14336, 1),
                lambda x: x.double(), lambda x: torch_quant(x, None), None, rows // 2 * 14336 * 3 + rows // 2 * 4))
    for tokens in ([4096] if quick else [4096, 8192]):
        inter = 14336

        def halves(t=tokens, n=inter):
            g = torch.Generator(device="cuda").manual_seed(t)
            gu = torch.randn(t, 2 * n, generator=g, device="cuda").bfloat16()
            return gu[:, :n], gu[:, n:]
        el = tokens * inter
        out.append((f"silu*up fp8 1x128 {tokens}x{inter}", "q_swiglu_group", halves,
                    lambda a, b: torch.nn.functional.silu(a.double()) * b.double(),
                    lambda a, b: torch_quant(torch.nn.functional.silu(a) * b, 128), 128,
                    el * (2 + 2 + 1) + el // 128 * 4))
    return out


def check(outs, y64, group) -> tuple[float, float]:
    """(scale error, fraction of codes equal to torch's cast of the same f32 product)."""
    q, s = outs[0], outs[-1]
    rows, cols = y64.shape
    g = group or cols
    pad = torch.nn.functional.pad(y64, (0, -cols % g))
    amax = pad.view(rows, -1, g).abs().amax(-1)
    want_s = torch.where(amax > 0, amax / TOP, torch.ones_like(amax))
    mul = torch.where(amax > 0, TOP / amax.float(), torch.zeros_like(amax, dtype=torch.float32))
    want_q = (y64.float() * mul.repeat_interleave(g, -1)[:, :cols]).clamp(-TOP, TOP).to(FP8)
    s = s if group else s[:, None]
    err = float((s.double() - want_s).norm() / want_s.norm())
    same = (q.view(torch.uint8) == want_q.view(torch.uint8)).float().mean().item()
    return err, same


def measure(name, k, x, ref64, eager, group, nbytes) -> dict:
    outs = k(*x)
    outs = outs if isinstance(outs, tuple) else (outs,)
    err, same = check(outs, ref64(*x), group)
    run = nvh.raw_call(k, *x)
    src = torch.empty(nbytes // 4, dtype=torch.float16, device="cuda")
    dst = torch.empty_like(src)
    t_ck = nvh.time_graph_ms(run)
    t_eager = nvh.time_graph_ms(lambda: eager(*x))
    t_copy = nvh.time_graph_ms(lambda: dst.copy_(src))
    row = {"case": name, "kernel": k.name, "mb": nbytes / 1e6, "ckgen_ms": t_ck, "copy_ms": t_copy,
           "eager_ms": t_eager, "pct_copy": t_copy / t_ck, "x_eager": t_eager / t_ck, "gbs": nbytes / t_ck / 1e6,
           "scale_err": err, "codes_same": same}
    row["ok"] = (row["mb"] < 64 or row["pct_copy"] >= LIMIT) and err < 1e-5 and same > 0.999
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    ks = nvh.jit_file(SRC)
    rows = [measure(name, ks[kname], make(), ref64, eager, group, nbytes)
            for name, kname, make, ref64, eager, group, nbytes in cases(a.quick)]
    head = (f"{'case':36} {'MB':>6} {'ckgen ms':>9} {'GB/s':>6} {'% copy':>7} {'x eager':>8} {'scale err':>9} "
            f"{'codes':>7}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['case']:36} {r['mb']:6.0f} {r['ckgen_ms']:9.4f} {r['gbs']:6.0f} {100 * r['pct_copy']:6.1f}% "
              f"{r['x_eager']:8.2f} {r['scale_err']:9.1e} {100 * r['codes_same']:6.2f}%  "
              f"{'ok' if r['ok'] else 'UNDER'}")
    print(f"acceptance: >= {100 * LIMIT:.0f}% of copy at 64 MB and more, scales and codes right: "
          f"{sum(r['ok'] for r in rows)}/{len(rows)}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
