"""The ``ckgen`` command on attention kernels: ``run`` on the emulator with the issue's sizes (a varlen kernel: random
lengths, LSE -inf rows compared), ``emit`` for an NVIDIA target, ``check``, and a size error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def ckgen(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ckgen", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_run_on_the_emulator_with_the_issue_sizes():
    r = ckgen("run", "examples/attention.ck", "--kernel", "attn_d64_window_varlen", "--target", "emu", "--size",
              "batch=2,heads=4,heads_kv=2,seqlen_q=17,seqlen_k=129")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(": ok") == 2 and "O: relative error" in r.stdout and "LSE: relative error" in r.stdout


def test_emit_check_and_bad_sizes():
    r = ckgen("emit", "examples/attention.ck", "--arch", "sm_90", "--kernel", "attn_d128_causal")
    assert r.returncode == 0, r.stderr
    assert "ckgen::attention_fwd_nv<ckgen_gen::attn_d128_causal_cfg>" in r.stdout and "kKvBarriers = 2" in r.stdout
    r = ckgen("check", "examples/attention.ck", "--arch", "gfx942,gfx950,sm_90,sm_80")
    assert r.returncode == 0 and "3 kernel(s), 12 plan(s)" in r.stdout, r.stdout + r.stderr
    r = ckgen("run", "examples/attention.ck", "--kernel", "attn_d128_causal", "--target", "emu", "--size", "m=3")
    assert r.returncode == 2 and "has no size m" in r.stderr and "batch, heads, heads_kv, seqlen_q, seqlen_k" in r.stderr
