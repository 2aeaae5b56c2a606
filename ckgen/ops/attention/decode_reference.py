"""The float64 reference of ``op = attention_decode`` and its random problems.

:func:`gather_kv` turns a call's K / V (contiguous ``[batch, seqlen_k, heads_kv, d]`` or paged ``[num_pages,
page_size, heads_kv, d]`` with a block table) into each sequence's ``[len, heads_kv, d]`` keys and values;
:func:`reference` then applies the attention op's one-sequence reference (``reference.attend``: bottom-right
causal, GQA, O = 0 and LSE = -inf for a row that sees no key). :func:`random_inputs` draws a problem for ``ckgen
run``: random lengths (the first sequence full), pages in a random order.
"""

from __future__ import annotations

import numpy as np

from ckgen.errors import CkgenError
from ckgen.ir.arrays import to_float64
from ckgen.ir.plan import KernelPlan
from ckgen.ir.rope import rope_table
from ckgen.ops.attention.reference import attend, fill_inputs
from ckgen.ops.attention.rope import apply as apply_rope


def gather_kv(kv: np.ndarray, length: int, b: int, page_size: int, block_table: np.ndarray | None) -> np.ndarray:
    """The first ``length`` keys (or values) of sequence ``b``: ``[length, heads_kv, d]``."""
    if not page_size:
        return kv[b, :length]
    pages = [int(p) for p in block_table[b, : -(-length // page_size)]]
    rows = np.concatenate([kv[p] for p in pages], axis=0) if pages else kv[:0, 0]
    return rows[:length]


def reference(plan: KernelPlan, arrays: dict[str, np.ndarray], sizes: dict[str, int],
              scale: float | None = None) -> dict[str, np.ndarray]:
    """``{"O", "LSE"}`` in float64 for a call with ``arrays`` (ABI names, logical shapes). With ``seqlens_q``,
    sequence b has its first seqlens_q[b] query tokens; the rows past them keep the values ``arrays`` holds for O
    and LSE (NaN when not given): the kernel does not write them."""
    a, page = plan.spec.params.attn, plan.spec.params.page_size
    scale = float(plan.abi["scale"].default) if scale is None else scale
    q, k, v = (to_float64(arrays[n], a.dtype) for n in ("Q", "K", "V"))
    lens = np.asarray(arrays["seqlens_k"], np.int64)
    sqs = arrays.get("seqlens_q")
    sqs = np.full(q.shape[0], q.shape[1]) if sqs is None else np.asarray(sqs, np.int64)
    bt = np.asarray(arrays["block_table"]) if page else None
    o = to_float64(arrays["O"], a.dtype).copy() if arrays.get("O") is not None else np.full(q.shape, np.nan)
    lse = (np.asarray(arrays["LSE"], np.float64).copy() if arrays.get("LSE") is not None
           else np.full((q.shape[0], q.shape[2], q.shape[1]), np.nan))
    for b in range(q.shape[0]):
        n, sq = int(lens[b]), int(sqs[b])
        qb = q[b, :sq]
        if a.rope is not None:  # Q rotated at positions n - sq + s (K comes rotated)
            cs = np.asarray(arrays["cos_sin"], np.float64)[n - sq + np.arange(sq)]
            qb = apply_rope(qb, cs[:, None, :], a.rope)
        o[b, :sq], lse[b, :, :sq] = attend(qb, gather_kv(k, n, b, page, bt), gather_kv(v, n, b, page, bt),
                                           a.mask, scale)
    return {"O": o, "LSE": lse}


def random_inputs(plan: KernelPlan, sizes: dict[str, int], rng: np.random.Generator,
                  lengths: list[int] | None = None) -> dict[str, np.ndarray | None]:
    """Q, K, V from a standard normal (rounded to the element type), O and LSE poisoned, ``seqlens_k`` (given, or
    random in 0..capacity with the first sequence full) and, paged, every sequence's pages drawn without
    replacement in a random order from ``num_pages`` (at least batch x max_pages; set when not given)."""
    a, page = plan.spec.params.attn, plan.spec.params.page_size
    full = dict(sizes)
    batch = sizes["batch"]
    cap = sizes["max_pages"] * page if page else sizes["seqlen_k"]
    if a.rope and batch and sizes["seqlen_q"] > cap:  # rope: positions len - seqlen_q + s >= 0 (else a device trap)
        raise CkgenError(f"rope: every sequence needs at least seqlen_q = {sizes['seqlen_q']} keys (the step's "
                         f"tokens are its last ones), but the cache holds {cap}",
                         hint="pass a larger seqlen_k / max_pages, or a smaller seqlen_q")
    low = sizes["seqlen_q"] if a.rope else 0
    if lengths is None:
        lengths = [cap if b == 0 else int(rng.integers(low, cap + 1)) for b in range(batch)]
    out: dict[str, np.ndarray | None] = {"seqlens_k": np.asarray(lengths, np.int32)}
    if a.rope:
        full["rope_positions"] = max(full.get("rope_positions", 0), cap)
        out["cos_sin"] = rope_table(full["rope_positions"], a.rope.dim)
    if page:
        full["num_pages"] = max(full.get("num_pages", 0), batch * sizes["max_pages"])
        perm = rng.permutation(full["num_pages"])[: batch * sizes["max_pages"]]
        out["block_table"] = perm.reshape(batch, sizes["max_pages"]).astype(np.int32)
    return fill_inputs(plan, full, out, a.dtype, rng)
