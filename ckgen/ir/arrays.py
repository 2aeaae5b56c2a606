"""Host arrays for kernels: numpy dtypes of ckgen's element types, bf16 bit patterns, poison, random
values, and arrays laid out as an ABI tensor describes (:func:`allocate`).

bf16 travels as uint16 bit patterns (numpy has no bf16); the fp8 dtypes (e4m3fn, e5m2, e4m3fnuz, e5m2fnuz) as
uint8 codes (:func:`fp8_values` decodes them); fp4 pairs (e2m1fn_x2) as uint8 bytes of two codes
(:func:`unpack_fp4`).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ckgen.ir.abi import Arg, dim_value
from ckgen.ir.types import DType


def numpy_dtype(dt: DType) -> np.dtype:
    return np.dtype(dt.numpy)


def torch_dtype_name(dt: DType) -> str:
    """The name of ``dt``'s torch dtype (``torch.<name>``): bf16 is ``bfloat16``, an fp8 dtype torch's float8 of
    the same encoding; the encoding-less operand kinds fp8 / bf8 travel as ``uint8``."""
    return {DType.F16: "float16", DType.BF16: "bfloat16", DType.F32: "float32", DType.F64: "float64",
            DType.I8: "int8", DType.I32: "int32", DType.I64: "int64", DType.E4M3FN: "float8_e4m3fn",
            DType.E5M2: "float8_e5m2", DType.E4M3FNUZ: "float8_e4m3fnuz", DType.E5M2FNUZ: "float8_e5m2fnuz"
            }.get(dt, "uint8")


def to_bf16(x: np.ndarray) -> np.ndarray:
    """float array -> bf16 bit patterns (uint16), rounded to nearest even."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(np.asarray(x, np.float32))
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(nan, np.uint16(0x7FC0), r)


def from_bf16(b: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16) -> float32."""
    return (np.asarray(b, np.uint16).astype(np.uint32) << 16).view(np.float32)


@cache
def fp8_values(dt: DType) -> np.ndarray:
    """The float64 value of each of the 256 codes of an fp8 dtype (read-only; NaN codes NaN, e5m2's inf inf)."""
    f = dt.fp8
    codes = np.arange(256)
    e = (codes >> f.man_bits) & ((1 << f.exp_bits) - 1)
    m = (codes & ((1 << f.man_bits) - 1)).astype(np.float64)
    v = np.where(e == 0, np.ldexp(m, 1 - f.bias - f.man_bits),
                 np.ldexp(m + (1 << f.man_bits), e - f.bias - f.man_bits))
    v = np.where(codes >= 0x80, -v, v)
    top = e == (1 << f.exp_bits) - 1
    if f.encoding == "fnuz":
        v[0x80] = np.nan
    elif f.exp_bits == 5:       # e5m2: IEEE-like
        v[top & (m == 0)] = np.copysign(np.inf, v[top & (m == 0)])
        v[top & (m != 0)] = np.nan
    else:                       # e4m3fn: S.1111.111 only
        v[top & (m == 7)] = np.nan
    v.setflags(write=False)
    return v


def to_fp8(x: np.ndarray, dt: DType) -> np.ndarray:
    """Floats -> the codes of their nearest values of ``dt``, ties to the even code (the one whose last mantissa bit
    is 0), saturating to +-max: ckgen/blocks/fp8.h's from_float for finite inputs (the float64 reference of
    quantizing kernels; FNUZ's 0 for values rounding to zero). NaN -> a NaN code (e.g. a norm's 0 / 0 row)."""
    v = fp8_values(dt)
    codes = np.array([c for c in range(256) if np.isfinite(v[c]) and not (c == 0x80 and v[c] == 0)])
    order = np.argsort(v[codes], kind="stable")
    vals, codes = v[codes][order], codes[order]
    x = np.clip(np.asarray(x, np.float64), vals[0], vals[-1])
    hi = np.clip(np.searchsorted(vals, x), 1, len(vals) - 1)
    below, above = x - vals[hi - 1], vals[hi] - x
    pick = np.where(below < above, hi - 1, np.where(above < below, hi, np.where(codes[hi - 1] % 2 == 0, hi - 1, hi)))
    return np.where(np.isnan(x), np.flatnonzero(np.isnan(v))[0], codes[pick]).astype(np.uint8)


#: the values of the 16 OCP FP4 (E2M1) codes: sign bit 3, exponent bits 2..1 (bias 1, 0 subnormal), mantissa bit 0
FP4_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def unpack_fp4(x: np.ndarray, axis: int) -> np.ndarray:
    """Bytes of fp4 pairs (``e2m1fn_x2``, uint8) -> their float64 values, ``axis`` twice as long: byte i holds
    values 2i (low nibble) and 2i + 1 (high nibble)."""
    b = np.moveaxis(np.asarray(x, np.uint8), axis, -1)
    v = np.stack([FP4_VALUES[b & 0xF], FP4_VALUES[b >> 4]], axis=-1).reshape(*b.shape[:-1], 2 * b.shape[-1])
    return np.moveaxis(v, -1, axis)


def to_fp4(x: np.ndarray) -> np.ndarray:
    """Floats -> the E2M1 codes (0..15) of their nearest fp4 values, ties to the even code, saturating at +-6; the
    sign of -0.0 and of negative values kept (ckgen/blocks/mx_quant.h's fp4_code)."""
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    # upper bound of each code's range: 0 takes [0, 0.25], 1 (0.25, 0.75), 2 [0.75, 1.25], 3 (1.25, 1.75), ...
    m = np.select([a <= 0.25, a < 0.75, a <= 1.25, a < 1.75, a <= 2.5, a < 3.5, a <= 5.0], range(7), 7)
    return (m | np.where(np.signbit(x), 8, 0)).astype(np.uint8)


def pack_fp4(codes: np.ndarray, axis: int = -1) -> np.ndarray:
    """E2M1 codes -> bytes of pairs along ``axis`` (even index in the low nibble; the axis must be even)."""
    c = np.moveaxis(np.asarray(codes, np.uint8), axis, -1)
    return np.moveaxis((c[..., 0::2] & 0xF) | (c[..., 1::2] << 4), -1, axis)


def to_float64(x: np.ndarray, dt: DType) -> np.ndarray:
    """Values of ``x`` (of ckgen dtype ``dt``) as float64 (fp4 pairs: unpacked along the last axis, as a row-major
    output packs them; :func:`unpack_fp4` for another axis)."""
    if dt == DType.E2M1FN_X2:
        return unpack_fp4(x, -1)
    if dt.fp8 is not None:
        return fp8_values(dt)[np.asarray(x, np.uint8)]
    if dt == DType.E8M0:  # 2^(e - 127); 0xFF is NaN
        e = np.asarray(x, np.uint8).astype(np.float64)
        return np.where(e == 255, np.nan, np.exp2(e - 127))
    return from_bf16(x).astype(np.float64) if dt == DType.BF16 else np.asarray(x).astype(np.float64)


#: the smallest magnitude that rounds (to nearest) past each IEEE type's largest finite value: max + half an ulp
_OVERFLOW_AT = {DType.F16: 2.0**16 * (1 - 2.0**-12), DType.BF16: 2.0**128 * (1 - 2.0**-9),
                DType.F32: 2.0**128 * (1 - 2.0**-25)}


def overflowed(x, dt: DType, xp=np):
    """float64 ``x`` (numpy, or torch with ``xp = torch``) with each element that the IEEE type ``dt`` (f16, bf16,
    f32) cannot hold as ±inf, as rounding to ``dt`` makes it: a float64 reference of a result computed and stored
    in ``dt``. Other dtypes: ``x``."""
    limit = _OVERFLOW_AT.get(dt)
    if limit is None:
        return x
    return xp.where(abs(x) >= limit, xp.copysign(xp.full_like(x, np.inf), x), x)


def poison(a: np.ndarray) -> np.ndarray:
    """Fill a densely packed array (in any axis order) with 0xFF bytes: NaN for floats and bf16, -1 for integers."""
    if a.size == 0:
        return a
    flat = a.ravel(order="K")
    if not np.shares_memory(flat, a):
        raise ValueError("poison: array is not contiguous")
    flat.view(np.uint8).fill(0xFF)
    return a


def random_values(rng: np.random.Generator, shape: tuple[int, ...], dt: DType) -> np.ndarray:
    """Random values of ``dt`` (bf16 as uint16 bits), never zero for integers, uniform in [-1, 1) for floats, E8M0
    exponents 120..134 (scales 2^-7 .. 2^7)."""
    if dt == DType.I8:
        v = rng.integers(-8, 9, size=shape)
        v[v == 0] = 1
        return v.astype(np.int8)
    if dt == DType.I32:
        return rng.integers(-1000, 1000, size=shape).astype(np.int32)
    if dt == DType.E8M0:  # MX scales 2^-7 .. 2^7
        return rng.integers(120, 135, size=shape).astype(np.uint8)
    if dt == DType.E2M1FN_X2:  # any two fp4 codes per byte (every one is finite, at most 6 in magnitude)
        return rng.integers(0, 256, size=shape).astype(np.uint8)
    x = rng.uniform(-1.0, 1.0, size=shape)
    if dt.fp8 is not None:
        return to_fp8(x, dt)
    return to_bf16(x) if dt == DType.BF16 else x.astype(numpy_dtype(dt))


def random_fill(arr: np.ndarray, dt: DType, rng: np.random.Generator) -> np.ndarray:
    arr[...] = random_values(rng, arr.shape, dt)
    return arr


def memory_order(a: Arg) -> list[int]:
    """The dims of tensor ``a`` from outermost to innermost in memory: the dim with the literal stride 1 is
    innermost, the others keep their declared order."""
    unit = [i for i, s in enumerate(a.strides) if s == 1]
    rest = [i for i in range(len(a.dims)) if i not in unit]
    return rest + unit


def shape_of(a: Arg, sizes: dict[str, int]) -> tuple[int, ...]:
    """The shape of tensor ``a`` at ``sizes`` (sizes and extents by name)."""
    return tuple(dim_value(d, sizes) for d in a.dims)


def allocate(a: Arg, sizes: dict[str, int]) -> np.ndarray:
    """An uninitialised, densely packed array for tensor ``a`` at ``sizes``, in the memory order its strides
    describe (e.g. column-major for a matrix whose first dim has stride 1)."""
    shape = shape_of(a, sizes)
    order = memory_order(a)
    base = np.empty([shape[i] for i in order], numpy_dtype(a.dtype))
    inverse = [order.index(i) for i in range(len(order))]
    return base.transpose(inverse)
