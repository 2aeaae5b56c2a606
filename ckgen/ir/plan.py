"""The target-resolved kernel plan: every decision the templates need, already made.

``KernelPlan`` is produced by the passes in :mod:`ckgen.lower.pipeline` and consumed by
:mod:`ckgen.codegen`. Templates render its fields; they decide nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ckgen.ir.lds import LdsOperandLayout
from ckgen.ir.spec import KernelSpec
from ckgen.ir.types import DType
from ckgen.targets.model import MatrixInstr, Target


@dataclass(frozen=True)
class LdsPlan:
    """LDS staging: one unpadded, XOR-swizzled tile per operand and buffer (ckgen/ir/lds.py has the
    address map), ``buffers`` copies of both. Bytes are exactly buffers x (rows_a + rows_b) x tile K x element."""

    a: LdsOperandLayout
    b: LdsOperandLayout
    buffers: int

    def __post_init__(self) -> None:
        if self.buffers < 1:
            raise ValueError("LdsPlan: buffers must be >= 1")

    @property
    def a_bytes(self) -> int:       # one buffer of A
        return self.a.bytes

    @property
    def b_bytes(self) -> int:       # one buffer of B
        return self.b.bytes

    @property
    def total_bytes(self) -> int:
        return (self.a_bytes + self.b_bytes) * self.buffers


@dataclass(frozen=True)
class RegisterEstimate:
    """32-bit registers per lane, estimated before compiling (the report shows the real counts)."""

    accumulators: int
    fragments: int
    prefetch: int
    overhead: int

    @property
    def total(self) -> int:
        return self.accumulators + self.fragments + self.prefetch + self.overhead


@dataclass(frozen=True)
class TmaBodyPlan:
    """The Hopper body of a kernel (TMA + wgmma, warp-specialized, persistent: gemm_sm90_tma.h). The host
    entry launches it when the device is sm_90 and the operands are 16-byte aligned; else the portable body."""

    threads: int        # 128 per consumer warpgroup (the kernel's waves) + 128 for the producer warpgroup
    stages: int         # TMA pipeline depth (as many as fit)
    smem_bytes: int     # dynamic shared memory: stages x (A + B tiles + 2 mbarriers) + 1024 bytes of alignment slack

    def __post_init__(self) -> None:
        if self.threads % 128 or self.threads < 256 or self.stages < 2 or self.smem_bytes <= 0:
            raise ValueError("TmaBodyPlan: threads must be whole warpgroups (>= 2), stages >= 2, shared memory positive")


@dataclass(frozen=True)
class KernelPlan:
    spec: KernelSpec
    target: Target
    instr: MatrixInstr
    threads: int
    wave_tile: tuple[int, int]
    repeats: tuple[int, int]          # instructions per wave along M, N
    items: tuple[int, int, int]       # elements per lane of A, B, C for one instruction
    vec: tuple[int, int, int]         # vector widths (elements) of A, B, C global accesses
    lds: LdsPlan
    prefetch: int
    registers: RegisterEstimate
    bias_dtype: DType
    integer_epilogue: bool
    epilogue_types: tuple[str, ...]   # C++ type names of ckgen::epi ops, in order
    #: sm_90: the kernel also gets ``<name>_tma``, the Hopper body, which its host entry prefers
    tma: TmaBodyPlan | None = None

    def __post_init__(self) -> None:
        t = self.spec.config
        if self.wave_tile[0] * t.waves[0] != t.tile[0] or self.wave_tile[1] * t.waves[1] != t.tile[1]:
            raise ValueError("KernelPlan: wave tile does not cover the workgroup tile")
        if self.repeats[0] * self.instr.m != self.wave_tile[0] or self.repeats[1] * self.instr.n != self.wave_tile[1]:
            raise ValueError("KernelPlan: instruction repeats do not cover the wave tile")
        if self.threads != t.waves[0] * t.waves[1] * self.target.wave_size:
            raise ValueError("KernelPlan: threads != waves * wave size")

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def arch(self) -> str:
        return self.target.name

    def to_json(self) -> dict:
        """Canonical, complete description: the manifest entry's ``plan`` and part of cache keys."""
        return {
            "spec": self.spec.to_json(), "arch": self.target.name,
            "instruction": {"mnemonic": self.instr.mnemonic, "builtin": self.instr.builtin,
                            "shape": list(self.instr.shape)},
            "threads": self.threads, "wave_tile": list(self.wave_tile), "repeats": list(self.repeats),
            "items": list(self.items), "vec": list(self.vec),
            "lds": {"a": self.lds.a.to_json(), "b": self.lds.b.to_json(), "a_bytes": self.lds.a_bytes,
                    "b_bytes": self.lds.b_bytes, "buffers": self.lds.buffers, "total_bytes": self.lds.total_bytes},
            "prefetch": self.prefetch,
            "registers_estimate": {"accumulators": self.registers.accumulators,
                                   "fragments": self.registers.fragments, "prefetch": self.registers.prefetch,
                                   "overhead": self.registers.overhead, "total": self.registers.total},
            "bias_dtype": self.bias_dtype.value, "integer_epilogue": self.integer_epilogue,
            "epilogue_types": list(self.epilogue_types),
            "tma": None if self.tma is None else {"threads": self.tma.threads, "stages": self.tma.stages,
                                                  "smem_bytes": self.tma.smem_bytes},
        }
