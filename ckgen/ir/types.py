"""Element types and memory layouts. Pure data: every stage imports these."""

from __future__ import annotations

from enum import Enum


class DType(Enum):
    """An element type. ``value`` is the DSL spelling."""

    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    F64 = "f64"
    I8 = "i8"
    I32 = "i32"
    I64 = "i64"
    FP8 = "fp8"
    BF8 = "bf8"

    @property
    def bits(self) -> int:
        return _BITS[self]

    @property
    def bytes(self) -> int:
        return _BITS[self] // 8

    @property
    def is_float(self) -> bool:
        return self not in (DType.I8, DType.I32, DType.I64)

    @property
    def cpp(self) -> str:
        """The C++ element type name used by ckgen's device headers."""
        return _CPP[self]

    @property
    def numpy(self) -> str:
        """numpy dtype name; bf16 is carried as uint16 bit patterns, fp8/bf8 as uint8."""
        return _NUMPY[self]

    @classmethod
    def parse(cls, text: str) -> DType:
        """The dtype spelled ``text``; ValueError otherwise."""
        return cls(text)


_BITS = {DType.F16: 16, DType.BF16: 16, DType.F32: 32, DType.F64: 64, DType.I8: 8,
         DType.I32: 32, DType.I64: 64, DType.FP8: 8, DType.BF8: 8}
_CPP = {DType.F16: "ckgen::f16", DType.BF16: "ckgen::bf16", DType.F32: "float", DType.F64: "double",
        DType.I8: "int8_t", DType.I32: "int32_t", DType.I64: "int64_t", DType.FP8: "uint8_t", DType.BF8: "uint8_t"}
_NUMPY = {DType.F16: "float16", DType.BF16: "uint16", DType.F32: "float32", DType.F64: "float64",
          DType.I8: "int8", DType.I32: "int32", DType.I64: "int64", DType.FP8: "uint8", DType.BF8: "uint8"}

ALL_DTYPES = tuple(d.value for d in DType)


class Layout(Enum):
    """Row-major (``row``: the last index is contiguous) or column-major (``col``)."""

    ROW = "row"
    COL = "col"

    @classmethod
    def parse(cls, text: str) -> Layout:
        return cls(text)
