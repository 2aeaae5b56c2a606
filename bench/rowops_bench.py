"""bench/rowops_bench.py: check and time the row ops of bench/rowops_kernels.cu on an NVIDIA GPU.

--check  every configuration (performance and coverage) on edge shapes against a float64 torch reference:
         1 row; 1, 7, 33, tile - 1, tile (and for looped ones 3 tiles + 5, 65537) columns; tight, padded aligned
         and odd (misaligned) row strides; outputs poisoned (NaN; int8: -128, never written by the symmetric
         quantization); padding must keep its poison; s must equal x + residual rounded. Staged configurations
         (cp.async ring, persistent grid) also get 3 row groups per resident workgroup + 1 (the ring wraps).
--bench  the issue's shapes (bf16: 65536x1024, 32768x4096, 16384x8192, 4096x32768) for softmax, layer norm
         (weight + bias), rms norm (weight) and residual + rms norm: every configuration that takes the shape
         (looped, or a single tile of cols .. 4 cols),
         the best one against the device copy bandwidth (torch copy_ of the same rows: read + write) and against
         torch eager and torch.compile of the same computation (f32 math, bf16 in and out).
Bytes moved per element (bf16): 4 for softmax / norms (x read once, y written once; weight and bias are one
row, read from L2), 8 for residual + rms norm (x, residual read; s, y written).

    python3 bench/rowops_bench.py --lib bench/_build/librowops.so --check --bench --json out.json
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
SHAPES = [(65536, 1024), (32768, 4096), (16384, 8192), (4096, 32768)]
PERF_OPS = ("softmax", "layernorm", "rmsnorm", "addrmsnorm")
TORCH = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "i8": torch.int8}
TOL = {"f32": 2e-5, "f16": 2e-3, "bf16": 1e-2}
CPP = {"bf16": "bf16", "f16": "f16", "float": "f32", "int8_t": "i8"}
SCALE, EPS = 0.7, 1e-5


# ------------------------------------------------------------------------------------------ configurations
class Config:
    """One NVR_KERNEL line of bench/rowops_configs.h and its entry points in the library."""

    def __init__(self, lib, name, tin, tout, op, weight, bias, residual, tres, tw):
        self.name, self.op, self.weight, self.bias, self.residual = name, op, weight, bias, residual
        self.tin, self.tout, self.tres, self.tw = tin, tout, tres, tw
        self.fn = getattr(lib, name)
        self.fn.argtypes = [ctypes.c_void_p] * 7 + [ctypes.c_int, ctypes.c_int] + [ctypes.c_longlong] * 4 + \
            [ctypes.c_float, ctypes.c_float, ctypes.c_void_p]
        self.fn.restype = ctypes.c_int
        info = getattr(lib, name + "_info")
        info.restype = ctypes.c_longlong
        self.info = info
        self.tile, self.looped, self.threads, self.rows_per_block, self.stages, self.stage_bytes = \
            (int(info(i)) for i in range(6))

    @property
    def resident(self) -> int:
        """Workgroups of the persistent grid (staged configs; 0 before the first launch)."""
        return int(self.info(6))

    @property
    def quant(self) -> bool:
        return self.tout == "i8"

    def takes(self, cols: int) -> bool:
        return self.looped or cols <= self.tile

    def fits(self, cols: int) -> bool:
        """A benchmark candidate for rows of cols: looped, or a single tile of at most 4x the row."""
        return self.looped or cols <= self.tile <= 4 * cols

    def __call__(self, x, r, w, b, y, s, ys, rows, cols, sx, sr, sy, ss, scale=SCALE, eps=EPS):
        p = lambda t: ctypes.c_void_p(t.data_ptr() if t is not None else 0)  # noqa: E731
        rc = self.fn(p(x), p(r), p(w), p(b), p(y), p(s), p(ys), rows, cols, sx, sr, sy, ss, scale, eps,
                     ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc != 0:
            raise RuntimeError(f"{self.name}: launch status {rc}")


def load_configs(lib_path: str) -> list[Config]:
    lib = ctypes.CDLL(lib_path)
    text = (HERE / "rowops_configs.h").read_text()
    ops = {"kSoftmax": "softmax", "kLogSoftmax": "logsoftmax", "kLayerNorm": "layernorm", "kRmsNorm": "rmsnorm"}
    out = []
    macros = {m.group(1): re.findall(r"NAME##(_\w+),", m.group(2))
              for m in re.finditer(r"#define (NVR_PERF\w*)\(OP, NAME, W, B, R\)(.*?)(?=\n(?:#|//|NVR_))", text, re.S)}
    for mac, op, name, w, b, r in re.findall(r"^(NVR_PERF\w*)\(ro::(\w+), (\w+), (\w+), (\w+), (\w+)\)", text, re.M):
        for suf in macros[mac]:
            out.append(Config(lib, name + suf, "bf16", "bf16", ops[op], w == "true", b == "true", r == "true",
                              "bf16", "bf16"))
    for m in re.finditer(r"^NVR_KERNEL\((.*)\)\s*$", text, re.M):
        a = [s.strip() for s in m.group(1).split(",")]
        name, tin, tout, op, w, b, r = a[:7]   # then row_threads, rows_per_block, reg_vecs, looped[, stages[, TRes, TW]]
        tres = CPP[a[12]] if len(a) > 12 else CPP[tin]
        tw = CPP[a[13]] if len(a) > 13 else CPP[tin]
        out.append(Config(lib, name, CPP[tin], CPP[tout], ops[op.split("::")[-1]], w == "true", b == "true",
                          r == "true", tres, tw))
    return out


# ------------------------------------------------------------------------------------------ reference
def reference(cfg: Config, v, w, b, scale=SCALE, eps=EPS):
    """float64 y of the op on v (rows x cols, float64)."""
    if cfg.op in ("softmax", "logsoftmax"):
        t = scale * v
        return torch.softmax(t, -1) if cfg.op == "softmax" else torch.log_softmax(t, -1)
    if cfg.op == "layernorm":
        mean = v.mean(-1, keepdim=True)
        y = (v - mean) / torch.sqrt(((v - mean) ** 2).mean(-1, keepdim=True) + eps)
    else:
        y = v / torch.sqrt((v * v).mean(-1, keepdim=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def strided(rows, cols, stride, dt, gen=None, poison=False):
    """(storage, view): rows x cols with a row stride, storage of exactly (rows - 1) * stride + cols elements."""
    n = (rows - 1) * stride + cols
    if poison:
        store = torch.full((n,), -128, dtype=torch.int8, device="cuda") if dt == "i8" else \
            torch.full((n,), float("nan"), dtype=TORCH[dt], device="cuda")
    else:
        x = torch.rand(n, generator=gen, device="cuda") * 1.75 + 0.25
        x = x * (torch.randint(0, 2, (n,), generator=gen, device="cuda") * 2 - 1)
        store = x.to(TORCH[dt])
    return store, store.as_strided((rows, cols), (stride, 1))


def check_one(cfg: Config, rows: int, cols: int, mode: str, gen) -> str | None:
    up = (cols + 15) // 16 * 16
    stride = {"tight": cols, "pad": up + 16, "odd": cols + 3}[mode]
    xs, x = strided(rows, cols, stride, cfg.tin, gen)
    rs, r = strided(rows, cols, stride, cfg.tres, gen) if cfg.residual else (None, None)
    w = (torch.rand(cols, generator=gen, device="cuda") + 0.5).to(TORCH[cfg.tw]) if cfg.weight else None
    b = (torch.rand(cols, generator=gen, device="cuda") - 0.5).to(TORCH[cfg.tw]) if cfg.bias else None
    ys_, y = strided(rows, cols, stride, cfg.tout, poison=True)
    ss_, s = strided(rows, cols, stride, cfg.tres, poison=True) if cfg.residual else (None, None)
    scale = torch.full((rows,), float("nan"), device="cuda") if cfg.quant else None
    y_before = ys_.clone()
    s_before = ss_.clone() if ss_ is not None else None
    cfg(xs, rs, w, b, ys_, ss_, scale, rows, cols, stride, stride, stride, stride)
    torch.cuda.synchronize()
    pad = torch.ones(ys_.numel(), dtype=torch.bool, device="cuda")
    pad.as_strided((rows, cols), (stride, 1)).fill_(False)

    def poisoned(now, before) -> bool:  # NaN poison for floats, -128 for int8
        if now.dtype == torch.int8:
            return torch.equal(now[pad], before[pad])
        return bool(now[pad].isnan().all())
    if not poisoned(ys_, y_before):
        return "y: a row's padding was written"
    if cfg.residual:
        want = (x.float() + r.float()).to(TORCH[cfg.tres])
        if not torch.equal(s, want):
            return f"s != x + residual ({(s != want).sum().item()} differ)"
        if not poisoned(ss_, s_before):
            return "s: a row's padding was written"
        v = want.double()
    else:
        v = x.double()
    ref = reference(cfg, v, w.double() if w is not None else None, b.double() if b is not None else None)
    if cfg.quant:
        q = y.double()
        if (q == -128).any():
            return f"{(q == -128).sum().item()} int8 outputs unwritten"
        amax = ref.abs().amax(-1)
        want_scale = torch.where(amax > 0, amax / 127, torch.ones_like(amax))
        if not torch.allclose(scale.double(), want_scale, rtol=1e-4, atol=0):
            return f"y_scale off: {scale[:3].tolist()} vs {want_scale[:3].tolist()}"
        dev = (q - ref / scale.double()[:, None]).abs().max().item()
        return None if dev <= 0.52 else f"int8 off by {dev:.3f} levels"
    got = y.double()
    if not torch.isfinite(got).all():
        return f"{(~torch.isfinite(got)).sum().item()} unwritten / NaN outputs"
    nref = torch.linalg.norm(ref).item()
    err = torch.linalg.norm(got - ref).item() / nref if nref else got.abs().max().item()
    return None if err <= TOL[cfg.tout] else f"relative error {err:.2e} > {TOL[cfg.tout]}"


def check_safe(cfg: Config, rows: int, cols: int, mode: str, gen) -> str | None:
    """check_one, with a launch error (status) reported as this shape's failure."""
    try:
        return check_one(cfg, rows, cols, mode, gen)
    except RuntimeError as exc:
        return str(exc)


def check(configs: list[Config], quick: bool) -> dict:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    results, failures = {}, 0
    for cfg in configs:
        t = cfg.tile
        shapes = [(1, 1, "tight"), (3, 7, "odd"), (5, 33, "pad"), (2, min(t, 4097), "odd"), (3, t, "tight"),
                  (cfg.rows_per_block * 2 + 1, t - 1, "pad")]
        if cfg.looped:
            shapes += [(2, 3 * t + 5, "odd"), (1, 65537, "tight")]
        if quick:
            shapes = shapes[:4]
        errs = [f"{r}x{c} {m}: {e}" for r, c, m in shapes if (e := check_safe(cfg, r, c, m, gen))]
        if cfg.stages and not quick:
            # the persistent grid wraps the ring: more row groups than resident workgroups (3 per workgroup
            # and one more), aligned rows with a partial last vector
            rows = 3 * max(cfg.resident, 1) * cfg.rows_per_block + 1
            cols = t - 3 if t > 8 else t
            if e := check_safe(cfg, rows, cols, "pad", gen):
                errs.append(f"{rows}x{cols} pad (ring): {e}")
        results[cfg.name] = errs
        failures += bool(errs)
        print(f"{cfg.name:44s} {'ok' if not errs else 'FAIL: ' + '; '.join(errs)}", flush=True)
    print(f"check: {len(configs) - failures} of {len(configs)} configurations pass")
    return {"failures": failures, "results": results}


# ------------------------------------------------------------------------------------------ benchmark
def time_ms(fn, warmup=5, reps=20, inner=10) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(inner):
            fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / inner)
    return sorted(times)[len(times) // 2]


def torch_fn(op: str, x, r, w, b):
    bf = torch.bfloat16
    if op == "softmax":
        return lambda: torch.softmax(x.float() * SCALE, -1).to(bf)
    if op == "layernorm":
        return lambda: F.layer_norm(x, (x.shape[-1],), w, b, EPS)
    def rms(v):
        vf = v.float()
        return (vf * torch.rsqrt(vf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(bf)
    if op == "rmsnorm":
        return lambda: rms(x)
    def add_rms():
        s = x + r
        return rms(s), s
    return add_rms


def bench(configs: list[Config], compile_torch: bool) -> list[dict]:
    rows_out = []
    for rows, cols in SHAPES:
        gen = torch.Generator(device="cuda")
        gen.manual_seed(0)
        x = torch.randn(rows, cols, generator=gen, device="cuda").to(torch.bfloat16)
        r = torch.randn(rows, cols, generator=gen, device="cuda").to(torch.bfloat16)
        w = (torch.rand(cols, generator=gen, device="cuda") + 0.5).to(torch.bfloat16)
        b = (torch.rand(cols, generator=gen, device="cuda") - 0.5).to(torch.bfloat16)
        y = torch.empty_like(x)
        s = torch.empty_like(x)
        copy_ms = time_ms(lambda x=x, y=y: y.copy_(x))
        copy_gbs = 2 * x.numel() * 2 / copy_ms / 1e6
        print(f"\n{rows}x{cols} bf16: device copy {copy_ms:.4f} ms = {copy_gbs:.0f} GB/s (read + write)", flush=True)
        for op in PERF_OPS:
            nbytes = x.numel() * 2 * (4 if op == "addrmsnorm" else 2)
            cands = [c for c in configs if c.name.startswith(op + "_t") and c.fits(cols)]
            times = {}
            for c in cands:
                args = (x, r if c.residual else None, w if c.weight else None, b if c.bias else None, y,
                        s if c.residual else None, None, rows, cols, cols, cols, cols, cols)
                try:
                    times[c.name] = time_ms(lambda c=c, args=args: c(*args))
                except RuntimeError as exc:
                    print("  ", exc)
            best = min(times, key=times.get)
            eager = time_ms(torch_fn(op, x, r, w, b))
            comp = None
            if compile_torch:
                try:
                    cf = torch.compile(torch_fn(op, x, r, w, b))
                    comp = time_ms(cf)
                except Exception as exc:  # noqa: BLE001
                    print("   torch.compile failed:", exc)
            t = times[best]
            gbs = nbytes / t / 1e6
            row = {"rows": rows, "cols": cols, "op": op, "best": best, "ms": t, "gbs": gbs,
                   "copy_gbs": copy_gbs, "frac_copy": gbs / copy_gbs, "eager_ms": eager, "compile_ms": comp,
                   "all_ms": times}
            rows_out.append(row)
            cmp = f", torch.compile {comp:.4f} ms ({comp / t:.2f}x)" if comp else ""
            print(f"  {op:11s} {t:.4f} ms {gbs:6.0f} GB/s = {100 * gbs / copy_gbs:5.1f}% of copy  [{best}]  "
                  f"eager {eager:.4f} ms ({eager / t:.2f}x){cmp}", flush=True)
            by_name = {c.name: c for c in cands}
            for name, ms in sorted(times.items(), key=lambda kv: kv[1]):
                c = by_name[name]
                grid = f"grid {c.resident}" if c.stages else ""
                print(f"      {name:36s} {ms:.4f} ms  {100 * nbytes / ms / 1e6 / copy_gbs:5.1f}%  {grid}")
    return rows_out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=str(HERE / "_build" / "librowops.so"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--quick", action="store_true", help="fewer check shapes (for compute-sanitizer)")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--only", default="", help="regular expression on configuration names")
    ap.add_argument("--json", default="")
    a = ap.parse_args(argv)
    configs = [c for c in load_configs(a.lib) if re.search(a.only, c.name)]
    print(torch.cuda.get_device_name(), f"{len(configs)} configurations", flush=True)
    out: dict = {"device": torch.cuda.get_device_name()}
    rc = 0
    if a.check:
        out["check"] = check(configs, a.quick)
        rc |= out["check"]["failures"] > 0
    if a.bench:
        out["bench"] = bench(configs, not a.no_compile)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return rc


if __name__ == "__main__":
    sys.exit(main())
