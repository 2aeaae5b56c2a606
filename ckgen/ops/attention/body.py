"""The attention op's plan for one target (:class:`AttentionPlan`, the ``body`` of its KernelPlan).

Every field is a decision of the passes in :mod:`ckgen.ops.attention.plan`; the kernel template renders them
into the ``Cfg`` struct the device bodies read (``device/attention_fwd_amd.h``, ``device/attention_fwd_nv.h``,
``device/attention_fwd_sm90.h``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ckgen.ir.target import MatrixInstr
from ckgen.lower.lds import LdsOperandLayout


@dataclass(frozen=True)
class Body:
    """A device body: its header (in ``device/``), its entry template, its pipeline depths and what it needs."""

    header: str
    impl: str
    lds_buffers: tuple[int, ...]      # legal K/V pipeline depths
    q_in_regs: tuple[bool, ...]       # legal Q placements
    rows_per_wave: tuple[int, ...]    # legal queries per wave, as multiples of the instruction's query extent
    waves_per_eu: bool                # whether the body takes an occupancy hint (kWavesPerEu)
    kv_barriers: tuple[int, ...]      # legal barriers per K/V tile


@dataclass(frozen=True)
class RegisterEstimate:
    """32-bit registers per lane (thread), estimated before compiling (``ckgen report`` shows the real ones)."""

    accumulators: int   # O (f32)
    scores: int         # S / P of one K/V tile
    fragments: int      # resident Q fragments and other operands
    overhead: int       # addresses, row statistics, loop state
    budget: int         # what the target (and waves_per_eu) allows

    @property
    def total(self) -> int:
        return self.accumulators + self.scores + self.fragments + self.overhead

    def to_json(self) -> dict:
        return {"accumulators": self.accumulators, "scores": self.scores, "fragments": self.fragments,
                "overhead": self.overhead, "total": self.total, "budget": self.budget}


@dataclass(frozen=True)
class WgmmaBodyPlan:
    """The Hopper body of a kernel (TMA + wgmma, warp-specialized: ``device/attention_fwd_sm90.h``), its second
    entry ``<name>_tma``: the host entry launches it when the device is sm_90 and Q, K, V, O are 16-byte aligned
    (bases and strides); else the portable body runs, with the same results."""

    block_m: int        # queries per block: 64 per consumer warpgroup
    block_n: int        # keys per K/V tile
    stages: int         # K/V tiles in flight (a K and a V stage each)
    threads: int        # 128 per consumer warpgroup + 128 for the producer warpgroup
    smem_bytes: int     # Q tile + stages x (K + V tiles) (+ O tile) + mbarriers + 1024 alignment slack
    persistent: bool    # one block per SM walking pairs of query tiles, else one block per query tile
    o_buffer: bool      # O staged in a tile of its own (persistent: the next Q loads during the epilogue), else in Q's

    def __post_init__(self) -> None:
        if self.block_m % 64 or self.threads != 128 * (self.block_m // 64 + 1) or self.stages < 2:
            raise ValueError("WgmmaBodyPlan: 64-row consumer warpgroups plus a producer, stages >= 2")

    def to_json(self) -> dict:
        return {"tile": [self.block_m, self.block_n], "stages": self.stages, "threads": self.threads,
                "smem_bytes": self.smem_bytes, "persistent": self.persistent,
                "o_buffer": self.o_buffer}


@dataclass(frozen=True)
class AttentionPlan:
    body: Body
    instr: MatrixInstr
    block_m: int                      # queries per workgroup
    block_n: int                      # keys per K/V tile
    waves: int                        # waves (warps) per workgroup, all along the queries
    lds_buffers: int                  # K/V tiles in flight (AMD LDS buffers; NVIDIA cp.async stages)
    q_in_regs: bool
    waves_per_eu: int                 # AMD occupancy hint (1: none)
    kv_barriers: int                  # NVIDIA: barriers per K/V tile (2: K and V separate cp.async groups)
    vec: int                          # elements per global vector access of K / V (AMD)
    lds_k_stride: int                 # AMD: elements between padded key rows of the LDS K tile (0: swizzled, lds_k)
    lds_v_stride: int                 # AMD: elements between d rows of the LDS V^T tile
    lds_bytes: int                    # LDS / shared memory of one workgroup
    mma_per_tile: int                 # matrix instructions one wave issues per K/V tile (S and O products)
    registers: RegisterEstimate
    planned: tuple[str, ...] = field(default=())  # the parameters the table chose (not written in the DSL)
    wgmma: WgmmaBodyPlan | None = None  # sm_90: the Hopper body the host entry tries first
    lds_k: LdsOperandLayout | None = None  # AMD: the K tile's XOR-swizzled layout (None: padded rows, lds_k_stride)
    split_keys: bool = False          # decode warp_split = keys: the waves share the rows, each N / waves keys

    @property
    def rows_per_wave(self) -> int:
        return self.block_m if self.split_keys else self.block_m // self.waves

    def to_json(self) -> dict:
        i = self.instr
        return {"header": self.body.header, "impl": self.body.impl,
                "instruction": {"mnemonic": i.mnemonic, "builtin": i.builtin, "shape": list(i.shape)},
                "tile": [self.block_m, self.block_n], "waves": self.waves, "lds_buffers": self.lds_buffers,
                "q_in_regs": self.q_in_regs, "waves_per_eu": self.waves_per_eu,
                "kv_barriers": self.kv_barriers, "vec": self.vec,
                "lds_k_stride": self.lds_k_stride, "lds_k": self.lds_k.to_json() if self.lds_k else None,
                "lds_v_stride": self.lds_v_stride, "lds_bytes": self.lds_bytes,
                "mma_per_tile": self.mma_per_tile, "registers_estimate": self.registers.to_json(),
                "planned": list(self.planned), "warp_split": "keys" if self.split_keys else "rows",
                "wgmma": self.wgmma.to_json() if self.wgmma else None}


def cfg_members(b: AttentionPlan, head_dim: int, wave_size: int, threads: int, amd: bool):
    """The Cfg members both attention ops' bodies read: (extra type aliases, int members), in the order the
    kernels render them (device/attention_fwd_amd.h and _nv.h list them); AMD: :func:`k_swizzle_member` too."""
    i, k = b.instr, b.lds_k
    ints = [("kHeadDim", head_dim), ("kBlockM", b.block_m), ("kBlockN", b.block_n)]
    if amd:
        types = [("AOperand", i.a_operand), ("BOperand", i.b_operand), ("COperand", i.c_operand)]
        ints += [("kWaves", b.waves), ("kWaveSize", wave_size), ("kThreads", threads), ("kInstrM", i.m),
                 ("kInstrN", i.n), ("kInstrK", i.k), ("kAItems", i.a_items(wave_size)),
                 ("kBItems", i.b_items(wave_size)), ("kCItems", i.c_items(wave_size)), ("kLdsBuffers", b.lds_buffers),
                 ("kVec", b.vec), ("kWavesPerEu", b.waves_per_eu), ("kLdsKStride", b.lds_k_stride),
                 ("kLdsKGranule", k.granule if k else 0), ("kLdsKSwizzleBits", k.low_bits if k else 0),
                 ("kLdsVStride", b.lds_v_stride), ("kLdsBytes", b.lds_bytes)]
        return types, ints
    ints += [("kWarps", b.waves), ("kWaveSize", wave_size), ("kThreads", threads), ("kStages", b.lds_buffers),
             ("kKvBarriers", b.kv_barriers), ("kLdsBytes", b.lds_bytes)]
    return [], ints


def k_swizzle_member(b: AttentionPlan) -> list[tuple[str, str, str]]:
    """The AMD K tile's packed XOR table (device/attention_fwd_amd.h kLdsKSwizzle; 0 for padded rows) as a
    (type, name, value) constant."""
    return [("unsigned long long", "kLdsKSwizzle", f"{b.lds_k.packed_table if b.lds_k else 0:#x}ull")]


def wgmma_members(w: WgmmaBodyPlan | None) -> tuple[list, list, list[str]]:
    """The Cfg members of the Hopper body (``device/attention_fwd_sm90.h`` checks the bytes) and its note, both
    attention ops': (int members, bool members as (name, value), notes); all empty without one."""
    if w is None:
        return [], [], []
    ints = [("kSm90BlockM", w.block_m), ("kSm90BlockN", w.block_n), ("kSm90Stages", w.stages),
            ("kSm90SmemBytes", w.smem_bytes)]
    bools = [("kSm90Persistent", w.persistent), ("kSm90OBuffer", w.o_buffer)]
    note = (f"Hopper body (<name>_tma): {w.block_m}x{w.block_n}, {w.stages} K/V stages, {w.threads} threads, "
            f"{w.smem_bytes} bytes of shared memory"
            f"{', O staged in a tile of its own' if w.o_buffer else ', O staged in the Q tile'}; "
            f"{'a persistent grid over pairs of query tiles' if w.persistent else 'a block per query tile'}.")
    return ints, bools, [note]

