"""A float64 reference of the four fp8 encodings, written from their definitions (OCP 8-bit floating point
specification v1.0 for e4m3fn / e5m2; the FNUZ variants of Graphcore/AMD: exponent bias one more, 0x80 the only
NaN, no negative zero, no infinities), independent of the bit code in ckgen/blocks/fp8.h.

``decode(fmt)``: the 256 values, by code. ``encode(fmt, x)``: the code from_float must give for each float64 ``x``
(a float32 value): the nearest finite value, ties to the even code (mantissa LSB 0); a finite |x| above the largest
finite value and +-inf saturate to +-max; NaN gives the format's canonical NaN (0x7F OCP, 0x80 FNUZ); FNUZ gives
0x00 for every value that rounds to zero.
"""

from __future__ import annotations

import math

import numpy as np

#: name -> (exponent bits, mantissa bits, bias, fnuz, has inf); the published maxima are in MAX
FORMATS = {"e4m3fn": (4, 3, 7, False, False), "e5m2": (5, 2, 15, False, True),
           "e4m3fnuz": (4, 3, 8, True, False), "e5m2fnuz": (5, 2, 16, True, False)}
MAX = {"e4m3fn": 448.0, "e5m2": 57344.0, "e4m3fnuz": 240.0, "e5m2fnuz": 57344.0}
MIN_SUBNORMAL = {"e4m3fn": 2.0 ** -9, "e5m2": 2.0 ** -16, "e4m3fnuz": 2.0 ** -10, "e5m2fnuz": 2.0 ** -17}
NAN_CODE = {"e4m3fn": 0x7F, "e5m2": 0x7F, "e4m3fnuz": 0x80, "e5m2fnuz": 0x80}


def decode(fmt: str) -> np.ndarray:
    """float64 value of every code 0..255 (NaN codes NaN, e5m2's infinities inf)."""
    eb, mb, bias, fnuz, has_inf = FORMATS[fmt]
    out = np.empty(256)
    for code in range(256):
        s, e, m = code >> 7, (code >> mb) & ((1 << eb) - 1), code & ((1 << mb) - 1)
        top = e == (1 << eb) - 1
        if fnuz and code == 0x80:
            v = math.nan
        elif not fnuz and top and has_inf:
            v = math.inf if m == 0 else math.nan
        elif not fnuz and top and m == (1 << mb) - 1:
            v = math.nan
        elif e == 0:
            v = math.ldexp(m, 1 - bias - mb)
        else:
            v = math.ldexp((1 << mb) + m, e - bias - mb)
        out[code] = -v if s and not math.isnan(v) else v
    return out


def _positive_finite(fmt: str) -> tuple[np.ndarray, np.ndarray]:
    vals = decode(fmt)
    codes = np.arange(0x80)
    keep = np.isfinite(vals[:0x80])
    return vals[:0x80][keep], codes[keep]


def encode(fmt: str, x: np.ndarray) -> np.ndarray:
    """The code of each value (uint8), by nearest search over the finite values."""
    vals, codes = _positive_finite(fmt)
    fnuz = FORMATS[fmt][3]
    x = np.asarray(x, dtype=np.float64)
    out = np.empty(x.shape, dtype=np.uint8)
    for idx, v in np.ndenumerate(x):
        if math.isnan(v):
            out[idx] = NAN_CODE[fmt]
            continue
        a = min(abs(v), vals[-1])
        hi = int(np.searchsorted(vals, a, side="left"))
        if vals[hi] == a:
            c = codes[hi]
        else:
            lo_d, hi_d = a - vals[hi - 1], vals[hi] - a
            if lo_d != hi_d:
                c = codes[hi - 1] if lo_d < hi_d else codes[hi]
            else:
                c = codes[hi - 1] if codes[hi - 1] % 2 == 0 else codes[hi]
        neg = math.copysign(1.0, v) < 0
        out[idx] = 0 if (fnuz and c == 0) else (c | (0x80 if neg else 0))
    return out
