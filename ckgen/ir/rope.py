"""Rotary position embeddings (RoPE), shared by every op that rotates (the DSL key ``rope`` of each).

A :class:`Rope` is a style and a rotary dim ``rot`` (even; dims past ``rot`` of each head pass through). Pair ``i``
(``i < rot / 2``) of a head's row at position ``pos`` is ``(x, y)`` = elements ``(i, i + rot / 2)`` (``neox``,
rotate-half) or ``(2 i, 2 i + 1)`` (``gptj``, interleaved), rotated by table row ``pos``:
``x' = x cos - y sin, y' = y cos + x sin`` (:func:`apply`, float64). :func:`rope_table` builds that table on the
host in float64: vLLM's ``cos_sin_cache`` layout, f32 ``[positions, rot]``, exported as ``ckgen.rope_table``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def _llama3(inv: np.ndarray, factor: float, low: float, high: float, original: float) -> np.ndarray:
    """Llama 3.1's frequency scaling: long wavelengths divided by ``factor``, short ones kept, a smooth blend
    between the wavelengths original / low and original / high."""
    wavelen = 2 * math.pi / inv
    smooth = np.clip((original / wavelen - low) / (high - low), 0.0, 1.0)
    return (1 - smooth) * inv / factor + smooth * inv


def rope_table(positions: int, rot: int, theta: float = 10000.0, scaling: dict | None = None) -> np.ndarray:
    """The cos / sin table ``cos_sin`` that rotary kernels read: f32 ``[positions, rot]``, row p holding
    ``cos(p * f_i)`` for ``i < rot / 2`` then ``sin(p * f_i)``, with ``f_i = theta ** (-2 i / rot)`` (computed in
    float64, rounded once). ``scaling`` (optional, HF ``rope_scaling`` style):

    * ``{"type": "linear", "factor": F}``: positions divided by F (every frequency / F);
    * ``{"type": "llama3", "factor": F, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position": 8192}``: Llama 3.1's per-frequency scaling (the last three have these defaults).

    ``rope_type`` is accepted for ``type``. Bad arguments raise ValueError naming the argument."""
    if isinstance(positions, bool) or not isinstance(positions, (int, np.integer)) or positions < 0:
        raise ValueError(f"rope_table: positions = {positions!r}: expected an integer >= 0")
    if isinstance(rot, bool) or not isinstance(rot, (int, np.integer)) or rot < 2 or rot % 2:
        raise ValueError(f"rope_table: rot = {rot!r}: expected an even integer >= 2")
    if not (math.isfinite(theta) and theta > 1.0):
        raise ValueError(f"rope_table: theta = {theta!r}: expected a finite number > 1")
    inv = float(theta) ** (-np.arange(0, rot, 2, dtype=np.float64) / rot)
    if scaling is not None:
        kind = scaling.get("type", scaling.get("rope_type"))
        factor = float(scaling.get("factor", 0.0))
        if kind not in ("linear", "llama3"):
            raise ValueError(f"rope_table: scaling type = {kind!r}: expected 'linear' or 'llama3'")
        if not (math.isfinite(factor) and factor > 0):
            raise ValueError(f"rope_table: scaling factor = {scaling.get('factor')!r}: expected a number > 0")
        if kind == "linear":
            inv = inv / factor
        else:
            low, high = float(scaling.get("low_freq_factor", 1.0)), float(scaling.get("high_freq_factor", 4.0))
            original = float(scaling.get("original_max_position", 8192))
            if not (0 < low < high) or original <= 0:
                raise ValueError("rope_table: llama3 scaling needs 0 < low_freq_factor < high_freq_factor and "
                                 "original_max_position > 0")
            inv = _llama3(inv, factor, low, high, original)
    ang = np.arange(positions, dtype=np.float64)[:, None] * inv[None, :]
    return np.concatenate([np.cos(ang), np.sin(ang)], axis=1).astype(np.float32)


#: the styles, each with the code the device header knows it by (attn::kRopeNeox, attn::kRopeGptj)
STYLES = {"neox": "ckgen::attn::kRopeNeox", "gptj": "ckgen::attn::kRopeGptj"}


@dataclass(frozen=True)
class Rope:
    """A rotary embedding: ``style`` (neox or gptj) over the first ``dim`` elements of the head dim."""

    style: str
    dim: int

    def __post_init__(self) -> None:
        if self.style not in STYLES or self.dim < 2 or self.dim % 2:
            raise ValueError("Rope: style neox or gptj, an even rotary dim >= 2")

    def to_json(self) -> dict:
        return {"style": self.style, "dim": self.dim}

    @property
    def text(self) -> str:
        return f"{self.style}({self.dim})"

    def constants(self) -> list[tuple[str, str, str]]:
        """The Cfg members the bodies read (device/attention_rope.h): kRopeStyle, kRopeDim."""
        return [("int", "kRopeStyle", STYLES[self.style]), ("int", "kRopeDim", str(self.dim))]


def pair_index(rope: Rope) -> tuple[np.ndarray, np.ndarray]:
    """The element indices (x, y) of the rot / 2 rotated pairs."""
    i = np.arange(rope.dim // 2)
    return (i, i + rope.dim // 2) if rope.style == "neox" else (2 * i, 2 * i + 1)


def apply(x, cs, rope: Rope):
    """``x [..., d]`` rotated in float64 by the table rows ``cs [..., rot]`` (broadcast against x's leading dims);
    elements past the rotary dim unchanged. numpy arrays (or what ``np.array`` takes), or torch tensors (computed on
    their device); a new array."""
    xi, yi = pair_index(rope)
    if hasattr(x, "clone"):  # torch
        import torch

        out, cs = x.double().clone(), cs.double()
        xi, yi = (torch.as_tensor(v, device=x.device) for v in (xi, yi))
    else:
        out, cs = np.array(x, np.float64, copy=True), np.asarray(cs, np.float64)
    h = rope.dim // 2
    c, s = cs[..., :h], cs[..., h:]
    a, b = out[..., xi], out[..., yi]  # (index arrays: copies, in both)
    out[..., xi] = a * c - b * s
    out[..., yi] = b * c + a * s
    return out


def rope_interleave(w, head_dim: int, rot: int | None = None):
    """The rows of a rotate-half (``neox``) q or k projection, ``w`` [heads * head_dim, ...] (an nn.Linear weight,
    or its bias), reordered per head so that each pair (i, i + rot / 2) lands on rows (2 i, 2 i + 1): the ``gptj``
    order a projection's rotary epilogue (``rope = gptj(head_dim, rot)``) rotates. Applied to both q's and k's weights
    it leaves every q.k unchanged (the inverse of the permutation HF's Llama conversion applies to Meta's interleaved
    checkpoints); rows past ``rot`` of each head keep their place. numpy or torch; returns a new array. Bad
    arguments raise ValueError naming the argument."""
    rot = head_dim if rot is None else rot
    if isinstance(head_dim, bool) or not isinstance(head_dim, (int, np.integer)) or head_dim < 2 or head_dim % 2:
        raise ValueError(f"rope_interleave: head_dim = {head_dim!r}: expected an even integer >= 2")
    if isinstance(rot, bool) or not isinstance(rot, (int, np.integer)) or rot < 2 or rot % 2 or rot > head_dim:
        raise ValueError(f"rope_interleave: rot = {rot!r}: expected an even integer in 2..head_dim ({head_dim})")
    rows = int(w.shape[0])
    if rows % head_dim:
        raise ValueError(f"rope_interleave: w has {rows} rows: expected a multiple of head_dim ({head_dim})")
    h = rot // 2
    head = np.concatenate([np.stack([np.arange(h), np.arange(h) + h], axis=1).reshape(-1), np.arange(rot, head_dim)])
    idx = (np.arange(rows // head_dim)[:, None] * head_dim + head[None, :]).reshape(-1)
    if isinstance(w, np.ndarray):
        return w[idx]
    import torch

    return w[torch.as_tensor(idx, device=w.device)]
