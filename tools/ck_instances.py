#!/usr/bin/env python3
"""Translate composable_kernel's XDL GEMM instance lists into ckgen tile tuples (tests/data/ck_gemm_instances.json).

Reads ``library/src/tensor_operation_instance/gpu/gemm/device_gemm_xdl*instance*.cpp`` (and the
``device_gemm_xdl_*`` subfolders) of a composable_kernel git checkout at one commit and keeps, for every
``DeviceGemmXdl`` / ``DeviceGemm_Xdl_CShuffle`` / ``DeviceGemm_Xdl_CShuffleV2`` /
``DeviceGemm_Xdl_CShuffle_LdsDirectLoad`` template argument list whose A/B are f16, bf16, f32 or i8, the
facts that map onto ckgen's DSL:

    dtype (A=B), C dtype, A and B layouts, BlockSize, tile = MPerBlock x NPerBlock x KPerBlock
    (KPerBlock = K0PerBlock * K1 for DeviceGemmXdl), MPerXDL x NPerXDL, MXdlPerWave x NXdlPerWave,
    waves = MPerBlock / (MPerXDL * MXdlPerWave) x NPerBlock / (NPerXDL * NXdlPerWave)

Duplicates (same facts, e.g. the GemmSpecialization and scheduler variants) are kept once, with a count.
Only numbers are taken; nothing of CK's code is copied.

    python tools/ck_instances.py /path/to/composable_kernel [-o tests/data/ck_gemm_instances.json]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "data" / "ck_gemm_instances.json"
GEMM_DIR = "library/src/tensor_operation_instance/gpu/gemm"
DTYPES = {"F16": "f16", "ck::half_t": "f16", "BF16": "bf16", "ck::bhalf_t": "bf16", "F32": "f32", "float": "f32",
          "I8": "i8", "int8_t": "i8", "I32": "i32", "int32_t": "i32"}
LAYOUTS = {"Row": "row", "Col": "col"}
# template argument positions: (layouts, dtypes A B C, block, M, N, K-or-K0, K1 or None, MPerXDL, NPerXDL, MXdl, NXdl)
_CSHUFFLE = dict(layouts=(0, 1, 2), dtypes=(3, 4, 5), block=13, m=14, n=15, k=16, k1=None, xdl=(19, 20), rep=(21, 22))
SIGNATURES = {
    "DeviceGemmXdl": dict(layouts=(4, 5, 6), dtypes=(0, 1, 2), block=11, m=12, n=13, k=14, k1=15, xdl=(16, 17),
                          rep=(18, 19)),
    "DeviceGemm_Xdl_CShuffle": _CSHUFFLE,
    "DeviceGemm_Xdl_CShuffleV2": _CSHUFFLE,
    "DeviceGemm_Xdl_CShuffle_LdsDirectLoad": _CSHUFFLE,
}
_START = re.compile(r"\b(DeviceGemmXdl|DeviceGemm_Xdl_CShuffle(?:V2|_LdsDirectLoad)?)\s*<")


def _args(text: str, start: int) -> tuple[list[str], int]:
    """Top-level template arguments from just after a '<' (nested <> and () kept whole)."""
    depth, cur, out, i = 0, [], [], start
    while i < len(text):
        ch = text[i]
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            if depth == 0:
                out.append("".join(cur).strip())
                return out, i + 1
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(ch)
        i += 1
    raise ValueError("unterminated template argument list")


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse_file(rel: str, text: str) -> list[dict]:
    out = []
    text = _strip_comments(text)
    for m in _START.finditer(text):
        op = m.group(1)
        args, _ = _args(text, m.end())
        sig = SIGNATURES[op]
        if len(args) <= max(sig["rep"]):
            continue
        try:
            dts = [DTYPES[args[i]] for i in sig["dtypes"]]
            lays = [LAYOUTS[args[i]] for i in sig["layouts"]]
            nums = {key: int(args[sig[key]]) for key in ("block", "m", "n", "k")}
            k1 = int(args[sig["k1"]]) if sig["k1"] is not None else 1
            xdl = [int(args[i]) for i in sig["xdl"]]
            rep = [int(args[i]) for i in sig["rep"]]
        except (KeyError, ValueError):
            continue  # another dtype (f64, fp8, mixed) or a symbolic argument
        if dts[0] != dts[1]:
            continue
        waves = [nums["m"] // (xdl[0] * rep[0]), nums["n"] // (xdl[1] * rep[1])]
        out.append({"source": rel, "op": op, "dtype": dts[0], "c_dtype": dts[2], "a_layout": lays[0],
                    "b_layout": lays[1], "c_layout": lays[2], "block": nums["block"],
                    "tile": [nums["m"], nums["n"], nums["k"] * k1], "xdl": xdl, "xdl_per_wave": rep, "waves": waves})
    return out


def collect(ck: Path) -> tuple[str, list[dict]]:
    commit = subprocess.run(["git", "-C", str(ck), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    files = subprocess.run(["git", "-C", str(ck), "ls-tree", "-r", "--name-only", "HEAD", GEMM_DIR],
                           capture_output=True, text=True, check=True).stdout.split()
    found: dict[tuple, dict] = {}
    for rel in sorted(f for f in files if "device_gemm_xdl" in f and f.endswith(".cpp")):
        text = subprocess.run(["git", "-C", str(ck), "show", f"HEAD:{rel}"], capture_output=True, text=True,
                              check=True).stdout
        for t in parse_file(rel, text):
            key = tuple(json.dumps(t[k]) for k in ("dtype", "c_dtype", "a_layout", "b_layout", "c_layout", "block",
                                                   "tile", "xdl", "xdl_per_wave"))
            if key in found:
                found[key]["count"] += 1
            else:
                found[key] = dict(t, count=1)
    return commit, list(found.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ck", type=Path, help="a composable_kernel git checkout")
    ap.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    commit, tuples = collect(args.ck)
    doc = {"source": "https://github.com/ROCm/composable_kernel", "commit": commit, "path": GEMM_DIR,
           "note": "tile tuples of CK's XDL GEMM instance lists (facts only), by tools/ck_instances.py",
           "instances": tuples}
    inst = doc.pop("instances")
    head = json.dumps(doc, sort_keys=True)[:-1]
    body = ",\n ".join(json.dumps(i, sort_keys=True) for i in inst)
    args.out.write_text(head + ', "instances": [\n ' + body + "\n]}\n")   # one tuple per line
    print(f"{len(tuples)} distinct tuples from {commit[:12]} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
