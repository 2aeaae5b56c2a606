"""The attention op's float64 reference and its random problems.

:func:`attend` is the reference of one sequence (every head at once): masks as the device bodies define them
(``device/attention_common.h``: causal and windows aligned bottom-right, a row that sees no key gets O = 0 and
LSE = -inf), GQA by query head ``h -> h // (heads / heads_kv)``. :func:`reference` applies it per sequence of a
kernel call (dense or packed variable-length batches), :func:`random_inputs` draws a problem for ``ckgen run``
(variable-length batches get random lengths up to ``seqlen_q`` / ``seqlen_k``, the first sequence the longest;
with ``rope``, Q is rotated at ``positions`` first: K is taken as given, rotated by the caller).
"""

from __future__ import annotations

import numpy as np

from ckgen.ir.arrays import allocate, poison, to_bf16, to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.plan import KernelPlan
from ckgen.ir.rope import rope_table
from ckgen.ir.types import DType
from ckgen.ops.attention.rope import Rope
from ckgen.ops.attention.rope import apply as apply_rope

#: relative norm error of O against float64 (P and O rounded to the element type once each, f32 accumulation)
O_TOLERANCE = {DType.F16: 5e-3, DType.BF16: 3e-2}
#: relative norm error of LSE (f32 statistics, hardware exp2 / log2), relative to its norm or, where its values are
#: near 0 (rows that see one key or a few), to a root-mean-square of LSE_FLOOR: a log-sum-exp is compared in
#: absolute terms there (1e-3 of it is 0.1% of the softmax's sum)
LSE_TOLERANCE = 1e-3
LSE_FLOOR = 1.0
#: added to LSE_TOLERANCE where the kernel rotates Q (``rope``): the rotated Q is rounded to the element type once
#: before the product (the reference rotates in float64), so each score carries that rounding, one unit roundoff of
#: the element type at most (measured on the emulator with a one-key window: 0.4 of it, bf16 and f16)
LSE_ROPE_EXTRA = {DType.F16: 2.0**-11, DType.BF16: 2.0**-8}


def visible(mask: str, sq: int, sk: int, window: tuple[int, int] = (-1, -1)) -> np.ndarray:
    """[sq, sk] bool: which keys each query sees (bottom-right aligned: query i's diagonal is key i + sk - sq)."""
    i = np.arange(sq)[:, None]
    j = np.arange(sk)[None, :]
    off = sk - sq
    vis = np.ones((sq, sk), dtype=bool)
    if mask == "causal":
        vis &= j <= i + off
    elif mask == "window":
        if window[0] >= 0:
            vis &= j >= i + off - window[0]
        if window[1] >= 0:
            vis &= j <= i + off + window[1]
    return vis


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: str, scale: float,
           window: tuple[int, int] = (-1, -1)) -> tuple[np.ndarray, np.ndarray]:
    """One sequence in float64: q [sq, heads, d], k and v [sk, heads_kv, d] -> (O [sq, heads, d], LSE [heads, sq])."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    sq, heads, d = q.shape
    sk, heads_kv = k.shape[0], k.shape[1]
    group = heads // heads_kv if heads_kv else 1
    kk, vv = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = scale * np.einsum("qhd,khd->hqk", q, kk)
    s = np.where(visible(mask, sq, sk, window)[None], s, -np.inf)
    m = s.max(axis=-1, initial=-np.inf)
    m0 = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m0[..., None])
    den = p.sum(axis=-1)
    ok = den > 0
    safe = np.where(ok, den, 1.0)
    lse = np.where(ok, m0 + np.log(safe), -np.inf)
    o = np.einsum("hqk,khd->qhd", p, vv) / safe.T[..., None]
    return np.where(ok.T[..., None], o, 0.0), lse


def _scalars(plan: KernelPlan) -> tuple[float, tuple[int, int]]:
    a = plan.abi
    return float(a["scale"].default), (int(a["window_left"].default), int(a["window_right"].default))


def reference(plan: KernelPlan, arrays: dict[str, np.ndarray], sizes: dict[str, int],
              scale: float | None = None, window: tuple[int, int] | None = None) -> dict[str, np.ndarray]:
    """``{"O": float64, "LSE": float64}`` of a call with ``arrays`` (ABI names; logical shapes) and the scalars
    (default: the ABI's defaults, which ``ckgen run`` passes). Rows no sequence covers keep their values."""
    spec = plan.spec.params.attn
    dt = spec.dtype
    d_scale, d_window = _scalars(plan)
    scale = d_scale if scale is None else scale
    window = d_window if window is None else window
    q, k, v = (to_float64(arrays[n], dt) for n in ("Q", "K", "V"))
    if spec.rope is not None:  # Q rotated at its rows' positions (K comes rotated)
        q = rotate_q(q, arrays, spec.rope)
    o = to_float64(arrays["O"], dt).copy() if arrays.get("O") is not None else np.zeros(q.shape)
    lse = np.asarray(arrays["LSE"], np.float64).copy() if arrays.get("LSE") is not None else None
    if spec.varlen:
        cq, ck = (np.asarray(arrays[n], np.int64) for n in ("cu_seqlens_q", "cu_seqlens_k"))
        lse = np.full((q.shape[1], q.shape[0]), np.nan) if lse is None else lse
        for b in range(len(cq) - 1):
            rows = slice(cq[b], cq[b + 1])
            ob, lb = attend(q[rows], k[ck[b]:ck[b + 1]], v[ck[b]:ck[b + 1]], spec.mask, scale, window)
            o[rows], lse[:, rows] = ob, lb
    else:
        lse = np.full((q.shape[0], q.shape[2], q.shape[1]), np.nan) if lse is None else lse
        for b in range(q.shape[0]):
            o[b], lse[b] = attend(q[b], k[b], v[b], spec.mask, scale, window)
    return {"O": o, "LSE": lse}


def rotate_q(q: np.ndarray, arrays: dict[str, np.ndarray], rope: Rope) -> np.ndarray:
    """q ``[..., heads, d]`` rotated in float64 at ``positions`` (q's leading dims) with the rows of ``cos_sin``."""
    cs = np.asarray(arrays["cos_sin"], np.float64)[np.asarray(arrays["positions"], np.int64)]
    return apply_rope(q, cs[..., None, :], rope)


def random_positions(rng: np.random.Generator, lengths: list[int], rope: Rope) -> tuple[np.ndarray, np.ndarray]:
    """Positions of consecutive rows from a random offset (0..16) per sequence, and a table (ckgen.rope_table, theta
    10000) one row past the largest."""
    pos = [int(rng.integers(0, 17)) + np.arange(n) for n in lengths]
    flat = np.concatenate(pos) if pos else np.zeros(0, np.int64)
    return [p.astype(np.int32) for p in pos], rope_table(int(flat.max(initial=0)) + 1, rope.dim)


def tolerance(plan: KernelPlan, output: str) -> float:
    """O: by the element type; LSE: LSE_TOLERANCE, plus LSE_ROPE_EXTRA where the kernel rotates Q (prefill and
    decode alike)."""
    a = plan.spec.params.attn
    if output != "LSE":
        return O_TOLERANCE[a.dtype]
    return LSE_TOLERANCE + (LSE_ROPE_EXTRA[a.dtype] if a.rope is not None else 0.0)


def error(output: str, got: np.ndarray, ref: np.ndarray) -> float:
    """The error :func:`tolerance` bounds: O's relative norm error; LSE's with the floor LSE_FLOOR."""
    return relative_error(got, ref, LSE_FLOOR if output == "LSE" else 0.0)


def lengths(rng: np.random.Generator, batch: int, longest: int) -> list[int]:
    """Random sequence lengths in 0..longest, the first one ``longest``."""
    return [longest if b == 0 else int(rng.integers(0, longest + 1)) for b in range(batch)]


def random_inputs(plan: KernelPlan, sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray | None]:
    """Q, K, V from a standard normal (rounded to the element type), O and LSE poisoned; varlen kernels get
    random sequence lengths (total tokens = the last offset) and their offsets."""
    spec = plan.spec.params.attn
    full = dict(sizes)
    out: dict[str, np.ndarray | None] = {}
    if spec.varlen:
        for side, n in (("q", "seqlen_q"), ("k", "seqlen_k")):
            cu = np.concatenate([[0], np.cumsum(lengths(rng, sizes["batch"], sizes[n]))]).astype(np.int32)
            out[f"cu_seqlens_{side}"] = cu
            full[f"total_{side}"] = int(cu[-1])
    if spec.rope is not None:
        qlens = np.diff(out["cu_seqlens_q"]).tolist() if spec.varlen else [sizes["seqlen_q"]] * sizes["batch"]
        pos, out["cos_sin"] = random_positions(rng, qlens, spec.rope)
        empty = np.zeros((0,) if spec.varlen else (0, sizes["seqlen_q"]))  # batch 0: no sequences
        out["positions"] = ((np.concatenate(pos) if spec.varlen else np.stack(pos)) if pos else empty).astype(np.int32)
        full["rope_positions"] = out["cos_sin"].shape[0]
    return fill_inputs(plan, full, out, spec.dtype, rng)


def fill_inputs(plan: KernelPlan, full: dict[str, int], out: dict, dt: DType,
                rng: np.random.Generator) -> dict[str, np.ndarray | None]:
    """``out`` completed: every tensor of the ABI not in it, used and not optional, allocated at ``full`` sizes:
    outputs poisoned, inputs from a standard normal rounded to ``dt``; the rest None."""
    for arg in plan.abi.tensors:
        if arg.unused or arg.optional or arg.name in out:  # (decode's seqlens_q: every sequence has seqlen_q)
            continue
        arr = allocate(arg, full)
        if arg.role == "out":
            out[arg.name] = poison(arr)
        else:
            x = rng.standard_normal(arr.shape)
            arr[...] = to_bf16(x) if dt == DType.BF16 else x.astype(np.float16)
            out[arg.name] = arr
    for arg in plan.abi.tensors:
        out.setdefault(arg.name, None)
    return out


def flops(batch: int, heads: int, seqlen_q: int, seqlen_k: int, head_dim: int, mask: str) -> float:
    """Matrix-product FLOPs of a dense call (4 * b * h * sq * sk * d; causal counted half)."""
    return 4.0 * batch * heads * seqlen_q * seqlen_k * head_dim * (0.5 if mask == "causal" else 1.0)
