"""The LDS layout of one matrix-instruction operand tile: unpadded, K-contiguous rows, XOR-swizzled granules.

This is the contract between the planner (:mod:`ckgen.lower.lds_banks`) and the AMD bodies that read MFMA operands
from such tiles (``gemm_mfma.h``, ``attention_fwd_amd.h``'s K tile) through ``ckgen/blocks/lds_layout.h``. Element
``(r, k)`` of a ``rows x tile_k`` tile (``r`` along M for A, along N for B) sits at element offset
:meth:`LdsOperandLayout.offset`:

    q   = r * (tile_k / granule) + k / granule        logical granule index (rows are exactly tile_k long)
    q'  = q ^ mask(q >> low_bits)                    mask = XOR of table[b] for every set bit b of q >> low_bits
    off = q' * granule + k % granule

Every ``table[b] < 2**low_bits``, so the XOR only permutes granules inside aligned blocks of
``2**low_bits`` granules: the map is a bijection of the tile onto itself (no padding, no holes), and a
granule's elements stay contiguous. The table is packed into one 64-bit integer, ``FIELD_BITS`` bits per
entry, entry ``b`` at bits ``[FIELD_BITS*b, FIELD_BITS*(b+1))`` (:meth:`packed_table`).
"""

from __future__ import annotations

from dataclasses import dataclass

FIELD_BITS = 6        # bits per table entry in the packed form (low_bits <= 6)
MAX_TABLE = 10        # table entries: high bits b = 0..9 of q >> low_bits (10 * 6 = 60 bits)


@dataclass(frozen=True)
class LdsOperandLayout:
    """One operand tile in one LDS buffer (see the module docstring for the address map).

    ``mn_lanes``, ``mn_piece``: for an MN-contiguous global layout (column-major A, row-major B) a thread's
    unit is ``vec`` rows x ``mn_piece`` k's (``mn_piece`` vector loads, transposed in registers into LDS
    writes of ``mn_piece`` elements along K); ``mn_lanes`` consecutive threads take consecutive units
    along M (N) before moving to the next ``mn_piece`` k's (both ``1`` for K-contiguous operands). ``read_conflicts`` / ``write_conflicts``: extra LDS cycles per K
    tile of the whole workgroup that the bank model of :mod:`ckgen.lower.lds_banks` predicts for the
    fragment reads and the global->LDS writes (0 when the layout is conflict-free).
    """

    rows: int
    tile_k: int
    elem_bytes: int
    granule: int            # elements per granule (power of two, divides tile_k)
    low_bits: int           # the XOR permutes the low ``low_bits`` bits of the granule index
    table: tuple[int, ...]  # MAX_TABLE entries, each < 2**low_bits
    mn_lanes: int = 1
    mn_piece: int = 1       # MN-contiguous: elements along K per unit (a divisor of granule); 1 for K-contiguous
    read_conflicts: int = 0
    write_conflicts: int = 0

    def __post_init__(self) -> None:
        g = self.granule
        if min(self.rows, self.tile_k, self.elem_bytes, g, self.mn_lanes, self.mn_piece) <= 0 or g & (g - 1) or self.tile_k % g:
            raise ValueError("LdsOperandLayout: granule must be a power of two dividing tile_k; sizes positive")
        if g % self.mn_piece:
            raise ValueError("LdsOperandLayout: mn_piece must divide the granule")
        if not 0 <= self.low_bits <= FIELD_BITS or len(self.table) != MAX_TABLE:
            raise ValueError(f"LdsOperandLayout: low_bits in 0..{FIELD_BITS}, {MAX_TABLE} table entries")
        if any(not 0 <= c < (1 << self.low_bits) for c in self.table):
            raise ValueError("LdsOperandLayout: table entries must be < 2**low_bits")
        if self.granules % (1 << self.low_bits):
            raise ValueError("LdsOperandLayout: the tile's granule count must be a multiple of 2**low_bits")

    @property
    def granules(self) -> int:
        return self.rows * self.tile_k // self.granule

    @property
    def elements(self) -> int:
        return self.rows * self.tile_k

    @property
    def bytes(self) -> int:
        """Bytes of one buffer: exactly rows x tile_k elements."""
        return self.elements * self.elem_bytes

    @property
    def packed_table(self) -> int:
        out = 0
        for b, c in enumerate(self.table):
            out |= c << (FIELD_BITS * b)
        return out

    def mask(self, hi: int) -> int:
        m = 0
        for b, c in enumerate(self.table):
            if (hi >> b) & 1:
                m ^= c
        return m

    def offset(self, r: int, k: int) -> int:
        """Element offset of (r, k) inside one buffer of this tile."""
        q = r * (self.tile_k // self.granule) + k // self.granule
        return (q ^ self.mask(q >> self.low_bits)) * self.granule + k % self.granule

    def to_json(self) -> dict:
        return {"rows": self.rows, "tile_k": self.tile_k, "elem_bytes": self.elem_bytes, "granule": self.granule,
                "low_bits": self.low_bits, "table": list(self.table), "mn_lanes": self.mn_lanes, "mn_piece": self.mn_piece,
                "bytes": self.bytes, "read_conflicts": self.read_conflicts, "write_conflicts": self.write_conflicts}
