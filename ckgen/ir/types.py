"""Element types and memory layouts. Pure data: every stage imports these."""

from __future__ import annotations

from dataclasses import dataclass
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
    FP8 = "fp8"          # matrix-instruction operand kinds (e4m3 / e5m2 in the target's encoding); not DSL dtypes
    BF8 = "bf8"
    E4M3FN = "e4m3fn"    # OCP E4M3 (gfx950, sm_90): max 448, NaN S.1111.111, -0
    E5M2 = "e5m2"        # OCP E5M2 (gfx950, sm_90): IEEE-like, inf, max 57344
    E4M3FNUZ = "e4m3fnuz"  # FNUZ E4M3 (gfx942): bias 8, max 240, one NaN (0x80), no -0
    E5M2FNUZ = "e5m2fnuz"  # FNUZ E5M2 (gfx942): bias 16, max 57344, one NaN (0x80), no -0
    E8M0 = "e8m0"        # OCP MX scale: an unsigned power-of-two exponent, 2^(e - 127), 0xFF NaN; scales only
    E2M1FN_X2 = "e2m1fn_x2"  # OCP FP4 (gfx950), two per byte: the even index in the low nibble (torch.float4_e2m1fn_x2)

    @property
    def bits(self) -> int:
        return _BITS[self]

    @property
    def bytes(self) -> int:
        return _BITS[self] // 8

    @property
    def pack(self) -> int:
        """Values per element: 2 for the packed fp4 pairs (an element is one byte holding two values along the
        packed dim), 1 otherwise."""
        return 2 if self == DType.E2M1FN_X2 else 1

    @property
    def value_bytes(self) -> float:
        """Bytes per value: ``bytes`` over ``pack`` (0.5 for fp4 pairs)."""
        return self.bytes / self.pack

    @property
    def is_float(self) -> bool:
        return self not in (DType.I8, DType.I32, DType.I64)

    @property
    def cpp(self) -> str:
        """The C++ element type name used by ckgen's device headers."""
        return _CPP[self]

    @property
    def numpy(self) -> str:
        """numpy dtype name; bf16 is carried as uint16 bit patterns, the fp8 dtypes as uint8 codes."""
        return _NUMPY[self]

    @property
    def fp8(self) -> Fp8Format | None:
        """The 8-bit float format of an encoded fp8 dtype (e4m3fn, e5m2, e4m3fnuz, e5m2fnuz); None otherwise."""
        return FP8_FORMATS.get(self)

    @property
    def matrix_kind(self) -> DType:
        """The operand kind matrix-instruction tables list this dtype under: ``fp8`` / ``bf8`` for the e4m3 / e5m2
        encodings, the dtype itself otherwise."""
        f = FP8_FORMATS.get(self)
        return f.kind if f else self

    @classmethod
    def parse(cls, text: str) -> DType:
        """The dtype spelled ``text``; ValueError otherwise."""
        return cls(text)


@dataclass(frozen=True)
class Fp8Format:
    """An 8-bit float encoding: ``kind`` (``DType.FP8``: e4m3, ``DType.BF8``: e5m2), ``encoding`` (``ocp`` or
    ``fnuz``), exponent and mantissa bits, exponent bias, and the largest finite value."""

    kind: DType
    encoding: str
    exp_bits: int
    man_bits: int
    bias: int
    max: float


FP8_FORMATS = {
    DType.E4M3FN: Fp8Format(DType.FP8, "ocp", 4, 3, 7, 448.0),
    DType.E5M2: Fp8Format(DType.BF8, "ocp", 5, 2, 15, 57344.0),
    DType.E4M3FNUZ: Fp8Format(DType.FP8, "fnuz", 4, 3, 8, 240.0),
    DType.E5M2FNUZ: Fp8Format(DType.BF8, "fnuz", 5, 2, 16, 57344.0),
}


_BITS = {DType.F16: 16, DType.BF16: 16, DType.F32: 32, DType.F64: 64, DType.I8: 8,
         DType.I32: 32, DType.I64: 64, DType.FP8: 8, DType.BF8: 8, DType.E4M3FN: 8, DType.E5M2: 8, DType.E4M3FNUZ: 8,
         DType.E5M2FNUZ: 8, DType.E8M0: 8, DType.E2M1FN_X2: 8}
_CPP = {DType.F16: "ckgen::f16", DType.BF16: "ckgen::bf16", DType.F32: "float", DType.F64: "double",
        DType.I8: "int8_t", DType.I32: "int32_t", DType.I64: "int64_t", DType.FP8: "uint8_t", DType.BF8: "uint8_t",
        DType.E4M3FN: "ckgen::fp8_e4m3fn", DType.E5M2: "ckgen::fp8_e5m2", DType.E4M3FNUZ: "ckgen::fp8_e4m3fnuz",
        DType.E5M2FNUZ: "ckgen::fp8_e5m2fnuz", DType.E8M0: "uint8_t", DType.E2M1FN_X2: "ckgen::fp4x2_e2m1fn"}
_NUMPY = {DType.F16: "float16", DType.BF16: "uint16", DType.F32: "float32", DType.F64: "float64",
          DType.I8: "int8", DType.I32: "int32", DType.I64: "int64", DType.FP8: "uint8", DType.BF8: "uint8", DType.E4M3FN: "uint8",
          DType.E5M2: "uint8", DType.E4M3FNUZ: "uint8", DType.E5M2FNUZ: "uint8", DType.E8M0: "uint8",
          DType.E2M1FN_X2: "uint8"}

#: the dtypes a kernel may name (fp8 / bf8 are instruction operand kinds without an encoding: the DSL spells
#: the encoding, e4m3fn / e5m2 / e4m3fnuz / e5m2fnuz; e8m0 is only the element type of `mx` scale tensors)
ALL_DTYPES = tuple(d.value for d in DType if d not in (DType.FP8, DType.BF8, DType.E8M0))


class Layout(Enum):
    """Row-major (``row``: the last index is contiguous) or column-major (``col``)."""

    ROW = "row"
    COL = "col"

    @classmethod
    def parse(cls, text: str) -> Layout:
        return cls(text)
