"""The activation functions in float64 numpy, the references of ``ckgen/blocks/activation.h`` (which every op's
device code shares: matrix-product epilogues, element-wise kernels). ``ACTIVATIONS``: name -> function."""

from __future__ import annotations

import math

import numpy as np


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def silu(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return x / (1.0 + np.exp(-x))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


#: by the DSL's names (``gelu`` is the tanh form)
ACTIVATIONS = {"relu": relu, "sigmoid": sigmoid, "silu": silu, "gelu": gelu_tanh}
