"""An autotuned Triton matmul (+ optional bias + tanh-GELU), the Triton peer of bench/gemm.py.

Written here for the benchmark: a grouped-ordering tiled kernel, fp32 accumulation, autotuned over
a handful of block shapes / warps / pipeline stages per (M, N, K).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

_CONFIGS = [
    triton.Config({"BM": 128, "BN": 256, "BK": 64, "G": 8}, num_stages=3, num_warps=8),
    triton.Config({"BM": 256, "BN": 128, "BK": 64, "G": 8}, num_stages=3, num_warps=8),
    triton.Config({"BM": 128, "BN": 128, "BK": 64, "G": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 128, "BN": 256, "BK": 32, "G": 8}, num_stages=4, num_warps=8),
    triton.Config({"BM": 64, "BN": 256, "BK": 64, "G": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 64, "BN": 128, "BK": 64, "G": 8}, num_stages=4, num_warps=4),
]


@triton.autotune(configs=_CONFIGS, key=["M", "N", "K"])
@triton.jit
def _mm(a, b, c, bias, M, N, K, sam, sak, sbk, sbn, scm, scn,
        HAS_BIAS: tl.constexpr, GELU: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
        BK: tl.constexpr, G: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = G * tiles_n
    first_m = (pid // per_group) * G
    gsize = min(tiles_m - first_m, G)
    pm = first_m + (pid % per_group) % gsize
    pn = (pid % per_group) // gsize
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    pa = a + rm[:, None] * sam + rk[None, :] * sak
    pb = b + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        x = tl.load(pa, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        y = tl.load(pb, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc)
        pa += BK * sak
        pb += BK * sbk
    if HAS_BIAS:
        acc += tl.load(bias + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    if GELU:
        u = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        e = tl.exp(-2.0 * tl.abs(u))
        t = (1.0 - e) / (1.0 + e)
        t = tl.where(u < 0, -t, t)
        acc = 0.5 * acc * (1.0 + t)
    pc = c + rm[:, None] * scm + rn[None, :] * scn
    tl.store(pc, acc.to(c.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None, gelu: bool = False,
           out: torch.Tensor | None = None) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = out if out is not None else torch.empty((M, N), device=a.device, dtype=a.dtype)

    def grid(meta):
        return (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)

    _mm[grid](a, b, c, bias if bias is not None else c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
              b.stride(1), c.stride(0), c.stride(1), HAS_BIAS=bias is not None, GELU=gelu)
    return c
