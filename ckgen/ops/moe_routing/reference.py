"""The MoE routing op's float64 reference, per stage (the same choices, order and ties as the kernels)."""

from __future__ import annotations

import numpy as np

from ckgen.ir.arrays import to_float64
from ckgen.ir.plan import KernelPlan


def scores(r, logits: np.ndarray) -> np.ndarray:
    """softmax over the experts, or the sigmoid, of each row (float64)."""
    if r.score == "sigmoid":
        return 1.0 / (1.0 + np.exp(-logits))
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _best(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest, best first, ties to the lower index."""
    return np.lexsort((np.arange(values.size), -values))[:k]


def topk(r, logits: np.ndarray, correction: np.ndarray | None, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(ids, weights) per token. Experts are chosen by score + correction (without one: by logit, the same order
    as the score); with expert_groups > 1 only among the top_groups groups whose (up to) two best experts have the
    largest sum of score + correction. Weights are the chosen experts' scores (renormalized over the k when asked),
    times ``scale``."""
    s = scores(r, logits)
    gsel = s + correction[None, :] if correction is not None else s
    sel = gsel if correction is not None else logits
    tokens, pg = logits.shape[0], r.per_group
    ids = np.zeros((tokens, r.top_k), np.int64)
    for t in range(tokens):
        v = sel[t].copy()
        if r.top_groups < r.expert_groups:
            gs = np.array([gsel[t, g * pg:(g + 1) * pg][_best(v[g * pg:(g + 1) * pg], min(2, pg))].sum()
                           for g in range(r.expert_groups)])
            keep = np.zeros(r.experts, bool)
            for g in _best(gs, r.top_groups):
                keep[g * pg:(g + 1) * pg] = True
            v = np.where(keep, v, -np.inf)
        ids[t] = _best(v, r.top_k)
    w = np.take_along_axis(s, ids, axis=1)
    if r.renormalize:
        w = w / w.sum(axis=1, keepdims=True)
    return ids, w * scale


def sort(r, ids: np.ndarray, tokens: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets, sorted_token, position): stable by (token, choice), ids outside 0..experts-1 dropped."""
    k = r.top_k
    flat = ids.reshape(-1).astype(np.int64)
    valid = (flat >= 0) & (flat < r.experts)
    order = np.flatnonzero(valid)
    order = order[np.argsort(flat[order], kind="stable")]
    counts = np.bincount(flat[valid], minlength=r.experts)
    sorted_token = np.full(tokens * k, -1, np.int64)
    sorted_token[:order.size] = order // k
    position = np.full(tokens * k, -1, np.int64)
    position[order] = np.arange(order.size)
    return np.cumsum(counts), sorted_token.reshape(tokens, k), position.reshape(tokens, k)


def reference(plan: KernelPlan, arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> dict[str, np.ndarray]:
    r = plan.spec.params
    if r.stage == "topk":
        corr = np.asarray(arrays["correction"], np.float64) if r.correction else None
        ids, w = topk(r, to_float64(arrays["logits"], r.logits), corr, float(np.float32(sizes.get("scale", 1.0))))
        return {"ids": ids.astype(np.float64), "weights": w}
    if r.stage == "sort":
        off, st, pos = sort(r, np.asarray(arrays["ids"]), sizes["tokens"])
        return {"offsets": off.astype(np.float64), "sorted_token": st.astype(np.float64),
                "position": pos.astype(np.float64)}
    if r.stage == "permute":
        x = to_float64(arrays["x"], r.x)
        out = to_float64(arrays["xs"], r.x).copy()
        src = np.asarray(arrays["sorted_token"]).reshape(-1)
        flat = out.reshape(-1, out.shape[-1])
        for p, t in enumerate(src):
            if 0 <= t < x.shape[0]:
                flat[p] = x[t]
        return {"xs": flat.reshape(out.shape)}
    ys = to_float64(arrays["ys"], r.x)
    flat = ys.reshape(-1, ys.shape[-1])
    pos = np.asarray(arrays["position"])
    w = np.asarray(arrays["weights"], np.float64)
    y = np.zeros((pos.shape[0], ys.shape[-1]))
    for t in range(pos.shape[0]):
        for j in range(r.top_k):
            if 0 <= pos[t, j] < flat.shape[0]:
                y[t] += w[t, j] * flat[pos[t, j]]
    return {"y": y}
