"""The cos / sin table of rotary position embeddings (RoPE), built on the host in float64.

:func:`rope_table` is the run-time form of a rotary embedding's frequencies (theta, linear or llama3 scaling) that
kernels with ``rope`` read: vLLM's ``cos_sin_cache`` layout, f32 ``[positions, rot]``. Exported as
``ckgen.rope_table``; the ops that rotate document the styles and which elements pair up.
"""

from __future__ import annotations

import math

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


