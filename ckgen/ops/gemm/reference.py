"""The GEMM op's float64 reference: ``epilogue(alpha * A.B + beta * C0)`` (``+ R`` with a residual) per batch item, with integer outputs
rounded and saturated like the kernel."""

from __future__ import annotations

import math

import numpy as np

from ckgen.ir.activations import ACTIVATIONS
from ckgen.ir.arrays import overflowed, to_float64, unpack_fp4
from ckgen.ir.op import TOLERANCE
from ckgen.ir.plan import KernelPlan
from ckgen.ir.rope import apply as apply_rope
from ckgen.ir.types import DType
from ckgen.ops.gemm.spec import GATED, MX_BLOCK, SCALE_BLOCK


def activation(kind: str, x: np.ndarray) -> np.ndarray:
    """float64 reference of an epilogue activation: ``relu``, ``gelu`` (tanh form) or ``silu``."""
    return ACTIVATIONS[kind](x)


def gate_columns(g, n: int) -> tuple[np.ndarray, np.ndarray]:
    """B's gate and up column of each of the n output columns of a gated epilogue (halves or interleaved)."""
    o = np.arange(n)
    if g.gate == "interleaved":
        bk = g.gate_block
        gate = (o // bk) * 2 * bk + o % bk
        return gate, gate + bk
    return o, o + n


def _gate(g, r):
    """act(gate) * up over the last axis of r (B's 2 N columns, the chain already applied)."""
    gi, ui = gate_columns(g, r.shape[-1] // 2)
    return activation(GATED[g.gated], r[..., gi]) * r[..., ui]


def rope_columns(g, r, positions, cos_sin, rope_cols: int):
    """``r`` [M, N] (float64, numpy or torch) with columns [0, rope_cols) rotated per head of ``g.rope_head`` (pairs
    (2i, 2i + 1), ``rope.dim`` rotated elements a head) at each row's position; rows whose position lies outside
    the table become NaN in those columns (the kernel's rule)."""
    head, rot = g.rope_head, g.rope.dim
    cols = min(int(rope_cols), r.shape[-1]) // head * head
    if cols == 0:
        return r
    xp = np if isinstance(r, np.ndarray) else __import__("torch")
    pos = positions.reshape(-1)
    inside = (pos >= 0) & (pos < cos_sin.shape[0])
    cs = cos_sin[xp.where(inside, pos, 0)][:, None, :rot]
    q = apply_rope(r[:, :cols].reshape(r.shape[0], cols // head, head), cs, g.rope)
    out = r.copy() if xp is np else r.clone()
    out[:, :cols] = xp.where(inside[:, None], q.reshape(r.shape[0], cols), xp.nan)
    return out


def reference(plan: KernelPlan, arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> dict[str, np.ndarray]:
    """``{"C": float64 result}``. ``arrays`` holds A, B, C (its values before the call) and bias as passed
    (batched: 3-D, or 2-D / 1-D when broadcast)."""
    g = plan.spec.params.gemm
    if g.grouped:
        return {"C": grouped_reference(plan, arrays)}
    bias_dt = plan.abi["bias"].dtype
    batched = g.batched

    def batch3(x: np.ndarray, dt, rank: int) -> np.ndarray:
        v = to_float64(x, dt)
        return v[None] if batched and v.ndim == rank - 1 else v

    if g.a.dtype == DType.E2M1FN_X2:  # fp4 pairs along K (A row-major, B column-major: the planner's rule)
        a, b = unpack_fp4(arrays["A"], -1), unpack_fp4(arrays["B"], -2)
    else:
        a, b = batch3(arrays["A"], g.a.dtype, 3), batch3(arrays["B"], g.b.dtype, 3)
    if g.block_scaled:
        r = _block_scaled(a, b, to_float64(arrays["scale_a"], DType.F32), to_float64(arrays["scale_b"], DType.F32), np)
    elif g.mx_scaled:
        r = _mx_scaled(a, b, to_float64(arrays["scale_a"], DType.E8M0), to_float64(arrays["scale_b"], DType.E8M0), np)
    else:
        r = a @ b
    if g.scaled and not g.block_scaled and not g.mx_scaled:
        r = r * _scales(g, arrays, lambda x: to_float64(x, DType.F32))
    r = g.alpha * r
    if g.beta != 0:
        r = r + g.beta * to_float64(arrays["C"], g.c.dtype)
    for op in g.chain:
        if op.kind == "bias":
            bias = batch3(arrays["bias"], bias_dt, 2)
            r = r + (bias[..., :, None] if op.axis == "row" else bias[..., None, :])
        else:
            r = activation(op.kind, r)
    if g.gated:
        r = _gate(g, r)
    if g.rope is not None:
        r = rope_columns(g, r, np.asarray(arrays["positions"]), to_float64(arrays["cos_sin"], DType.F32),
                         sizes["rope_cols"])
    if g.residual:
        r = r + to_float64(arrays["residual"], g.c.dtype)
    r = as_stored(plan, r, np)
    if batched:
        r = np.broadcast_to(r, (sizes["batch"], sizes["M"], sizes["N"]))
    return {"C": r}


def _epilogue(plan: KernelPlan, r: np.ndarray, c0: np.ndarray | None, bias: np.ndarray | None,
              res: np.ndarray | None = None) -> np.ndarray:
    """``epilogue(alpha * r + beta * c0)`` with ``bias`` already shaped to broadcast over ``r``, plus the residual
    ``res`` (``-> residual``); C as stored (:func:`as_stored`)."""
    g = plan.spec.params.gemm
    r = g.alpha * r
    if g.beta != 0:
        r = r + g.beta * c0
    for op in g.chain:
        r = r + bias if op.kind == "bias" else activation(op.kind, r)
    if g.gated:
        r = _gate(g, r)
    if g.residual:
        r = r + res
    return as_stored(plan, r, np)


def as_stored(plan: KernelPlan, r, xp):
    """C as the kernel stores the float64 result ``r`` (numpy or torch, ``xp``). Float C: ±inf past its largest
    finite value (:func:`~ckgen.ir.arrays.overflowed`). Integer C: an integer epilogue saturates its exact sums; a
    float one rounds its f32 value half to even and saturates. Through f32 first because that is where such a
    kernel rounds: silu(20.5) is 20.5 in f32 (the sigmoid rounds to 1), a tie that goes to 20, where the float64
    value 20.4999... would round down whatever the parity (alpha = 0.5 makes half of all sums such ties)."""
    dt = plan.spec.params.gemm.c.dtype
    if dt.is_float:
        return overflowed(r, dt, xp)
    info = np.iinfo(np.dtype(dt.numpy))
    if not plan.body.integer_epilogue:
        r = r.astype(np.float32).astype(np.float64) if xp is np else r.float().double()
    return xp.clip(xp.round(r), info.min, info.max)


def group_rows(plan: KernelPlan, arrays: dict[str, np.ndarray]) -> list[tuple[int, int]]:
    """Each group's rows [r0, r1): by end offsets (grouped; from 0) or the first counts[g] of its item (masked)."""
    g = plan.spec.params.gemm
    if g.mode == "masked":
        return [(0, int(n)) for n in np.asarray(arrays["counts"]).reshape(-1)]
    ends = [int(e) for e in np.asarray(arrays["offsets"]).reshape(-1)]
    return list(zip([0, *ends][:-1], ends, strict=True))


def grouped_reference(plan: KernelPlan, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """C of a grouped / masked kernel: every group's rows computed with its B (and bias(col)); the rows no
    group covers keep C's values from before the call (the kernel does not write them)."""
    g = plan.spec.params.gemm
    bias_dt = plan.abi["bias"].dtype
    a, b = to_float64(arrays["A"], g.a.dtype), to_float64(arrays["B"], g.b.dtype)
    c0 = to_float64(arrays["C"], g.c.dtype)
    out = c0.copy()
    bias = to_float64(arrays["bias"], bias_dt) if g.has_bias else None
    res = to_float64(arrays["residual"], g.c.dtype) if g.residual else None
    masked = g.mode == "masked"
    # scales (mode = grouped): A's one value or per row; B's per group (tensor) or per group and column (col)
    sa = to_float64(arrays["scale_a"], DType.F32).reshape(-1, 1) if g.scale_a else np.ones((1, 1))
    sb = to_float64(arrays["scale_b"], DType.F32) if g.scale_b else None
    for e, (r0, r1) in enumerate(group_rows(plan, arrays)):
        if r1 <= r0:
            continue
        rows = (e, slice(r0, r1)) if masked else (slice(r0, r1),)
        scale = (sa if sa.shape[0] == 1 else sa[r0:r1]) * (1.0 if sb is None else sb[e].reshape(1, -1))
        bg = None
        if bias is not None:
            if g.bias_axis == "col":
                bg = (bias if bias.ndim == 1 else bias[e])[None, :]
            else:
                bg = (bias[e] if bias.ndim == 2 else bias)[r0:r1, None]
        out[rows] = _epilogue(plan, (a[rows] @ b[e]) * scale, c0[rows], bg, None if res is None else res[rows])
    return out


def _block_scaled(a, b, sa, sb, xp):
    """sum over K blocks kb of (A[:, kb] . B[kb, :]) * sa[:, kb] * sb[col // 128, kb] (A: M x K, B: K x N, float64;
    ``xp``: numpy or torch)."""
    (M, K), N = a.shape, b.shape[-1]
    r = a[:, :0] @ b[:0, :]
    cols = xp.arange(N) // SCALE_BLOCK
    for kb in range(-(-K // SCALE_BLOCK)):
        ks = slice(kb * SCALE_BLOCK, min(K, (kb + 1) * SCALE_BLOCK))
        r = r + (a[:, ks] @ b[ks, :]) * sa[:M, kb].reshape(-1, 1) * sb[cols, kb].reshape(1, -1)
    return r


def _mx_scaled(a, b, sa, sb, xp):
    """sum over 32-K blocks kb of (A[:, kb] . B[kb, :]) * sa[:, kb] * sb[:, kb]^T (A: M x K, B: K x N, the scales'
    values 2^(e - 127) as float64, M x kb and N x kb; the last block is shorter when 32 does not divide K)."""
    (M, K), N = a.shape, b.shape[-1]
    r = a[:, :0] @ b[:0, :]
    for kb in range(-(-K // MX_BLOCK)):
        ks = slice(kb * MX_BLOCK, min(K, (kb + 1) * MX_BLOCK))
        r = r + (a[:, ks] @ b[ks, :]) * sa[:M, kb].reshape(-1, 1) * sb[:N, kb].reshape(1, -1)
    return r


def _scales(g, arrays: dict, f64) -> object:
    """scale_a (a column: per row of A, or one value) times scale_b (a row: per column of B, or one value)."""
    sa = f64(arrays["scale_a"]).reshape(-1, 1) if g.scale_a is not None else 1.0
    sb = f64(arrays["scale_b"]).reshape(1, -1) if g.scale_b is not None else 1.0
    return sa * sb


def tolerance(plan: KernelPlan, base: float) -> float:
    """``base`` (by dtypes), loosened for integer C through the float epilogue (one rounding of the result); for fp8
    inputs C's own tolerance (the reference holds their exact values)."""
    g = plan.spec.params.gemm
    if not g.c.dtype.is_float and not plan.body.integer_epilogue:
        return max(base, 1e-3)
    if g.a.dtype.fp8 is not None:  # fp8 inputs are exact in the reference: only C's rounding (and f32 sums) remain
        return TOLERANCE[g.c.dtype]
    return base


def reference_torch(plan: KernelPlan, arrays: dict, sizes: dict[str, int]) -> dict:
    """:func:`reference` for torch tensors (bf16 as ``torch.bfloat16``), computed in float64 on their device."""
    import torch

    g = plan.spec.params.gemm
    batched = g.batched

    def batch3(x, rank: int):
        v = x.double()
        return v[None] if batched and v.dim() == rank - 1 else v

    if g.block_scaled:
        r = _block_scaled(arrays["A"].double(), arrays["B"].double(), arrays["scale_a"].double(),
                          arrays["scale_b"].double(), torch)
    elif g.mx_scaled:  # (E8M0 bytes as uint8 tensors: 2^(e - 127), 255 NaN)
        sa, sb = (torch.where(x == 255, torch.nan, torch.exp2(x.double() - 127)) for x in
                  (arrays["scale_a"], arrays["scale_b"]))
        r = _mx_scaled(arrays["A"].double(), arrays["B"].double(), sa, sb, torch)
    else:
        r = torch.matmul(batch3(arrays["A"], 3), batch3(arrays["B"], 3))
    if g.scaled and not g.block_scaled and not g.mx_scaled:
        r = r * _scales(g, arrays, lambda x: x.double())
    r = g.alpha * r
    if g.beta != 0:
        r = r + g.beta * arrays["C"].double()
    for op in g.chain:
        if op.kind == "bias":
            bias = batch3(arrays["bias"], 2)
            r = r + (bias[..., :, None] if op.axis == "row" else bias[..., None, :])
        elif op.kind == "relu":
            r = torch.clamp(r, min=0.0)
        elif op.kind == "gelu":
            r = 0.5 * r * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (r + 0.044715 * r ** 3)))
        else:
            r = r / (1.0 + torch.exp(-r))
    if g.gated:
        gi, ui = (torch.as_tensor(x, device=r.device) for x in gate_columns(g, r.shape[-1] // 2))
        gate, up = r[..., gi], r[..., ui]
        if GATED[g.gated] == "silu":
            gate = gate / (1.0 + torch.exp(-gate))
        else:
            gate = 0.5 * gate * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (gate + 0.044715 * gate ** 3)))
        r = gate * up
    if g.rope is not None:
        r = rope_columns(g, r, arrays["positions"].long(), arrays["cos_sin"].double(), sizes["rope_cols"])
    if g.residual:
        r = r + arrays["residual"].double()
    r = as_stored(plan, r, torch)
    if batched:
        r = r.expand(sizes["batch"], sizes["M"], sizes["N"])
    return {"C": r}
