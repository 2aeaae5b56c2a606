"""The GEMM op's plan for one target (:class:`GemmPlan`, the ``body`` of its KernelPlan) and its parts.

Every field is a decision the passes in :mod:`ckgen.ops.gemm.plan` made; the kernel template and the device
bodies (``device/``) read them through the rendered ``Cfg`` struct and decide nothing themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from ckgen.ir.target import MatrixInstr
from ckgen.ir.types import DType
from ckgen.lower.lds import LdsOperandLayout


@dataclass(frozen=True)
class LdsPlan:
    """LDS staging: one unpadded tile per operand and buffer (XOR-swizzled where the target's body takes it;
    ckgen/lower/lds.py has the address map), ``buffers`` copies of both. Bytes are exactly
    buffers x (rows_a + rows_b) x tile K x element."""

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

    def to_json(self) -> dict:
        return {"a": self.a.to_json(), "b": self.b.to_json(), "a_bytes": self.a_bytes, "b_bytes": self.b_bytes,
                "buffers": self.buffers, "total_bytes": self.total_bytes}


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

    def to_json(self) -> dict:
        return {"accumulators": self.accumulators, "fragments": self.fragments, "prefetch": self.prefetch,
                "overhead": self.overhead, "total": self.total}


@dataclass(frozen=True)
class TmaBodyPlan:
    """The Hopper body of a kernel (TMA + wgmma, warp-specialized, persistent: device/gemm_sm90_tma.h). The
    host entry launches it when the device is sm_90 and the operands are 16-byte aligned; else the portable
    body runs."""

    threads: int        # 128 per consumer warpgroup (the kernel's waves) + 128 for the producer warpgroup
    stages: int         # TMA pipeline depth (as many as fit)
    smem_bytes: int     # dynamic shared memory: stages x (A + B tiles + 2 mbarriers) + epilogue staging + 1024 slack
    cluster: int = 1    # thread blocks per cluster along M (2: M-adjacent tiles share B's loads by TMA multicast)

    def __post_init__(self) -> None:
        if self.threads % 128 or self.threads < 256 or self.stages < 2 or self.smem_bytes <= 0:
            raise ValueError("TmaBodyPlan: threads must be whole warpgroups (>= 2), stages >= 2, shared memory positive")

    def to_json(self) -> dict:
        d = {"threads": self.threads, "stages": self.stages, "smem_bytes": self.smem_bytes}
        if self.cluster > 1:  # (plans without a cluster keep their JSON and cache keys)
            d["cluster"] = self.cluster
        return d


@dataclass(frozen=True)
class SchedulePlan:
    """A split-K or stream-K schedule (device/gemm_work.h): ``splits`` fixed by the kernel (0: chosen per call,
    aiming at ``target_ctas`` workgroups), ``atomic`` partial sums, ``workers`` (stream-K: the most workgroups of
    the persistent grid, ``target_ctas``), and the workspace slots: ``slot_bytes`` each, row-major or not."""

    kind: str                # splitk | streamk
    splits: int
    atomic: bool
    workers: int
    target_ctas: int
    slot_bytes: int
    slot_row_major: bool

    def __post_init__(self) -> None:
        if self.kind not in ("splitk", "streamk") or self.workers < 1 or self.slot_bytes <= 0:
            raise ValueError("SchedulePlan: splitk or streamk, workers >= 1, slots of positive size")

    def to_json(self) -> dict:
        return {"kind": self.kind, "splits": self.splits, "atomic": self.atomic, "workers": self.workers,
                "target_ctas": self.target_ctas, "slot_bytes": self.slot_bytes, "slot_row_major": self.slot_row_major}


@dataclass(frozen=True)
class Body:
    """A device body of the GEMM on one platform: its header (in ``device/``), its entry template, the deepest
    LDS pipeline it supports."""

    header: str
    impl: str
    max_lds_buffers: int


@dataclass(frozen=True)
class VectorPlan:
    """The vector body's own numbers (``instr = none``; device/gemm_vec.h): ``rows`` columns of C (rows of B) per
    wave, ``unroll`` vectors of each in flight per lane, ``vec`` elements per vector (16 bytes)."""

    rows: int
    unroll: int
    vec: int

    def to_json(self) -> dict:
        return {"rows": self.rows, "unroll": self.unroll, "vec": self.vec}


@dataclass(frozen=True)
class GemmPlan:
    """The plan of one GEMM kernel. A matrix-core body has ``instr`` and ``lds``; the vector body (``instr = none``)
    has neither, and its ``vector``."""

    body: Body
    instr: MatrixInstr | None
    wave_tile: tuple[int, int]
    repeats: tuple[int, int]          # instructions per wave along M, N
    items: tuple[int, int, int]       # elements per lane of A, B, C for one instruction
    vec: tuple[int, int, int]         # vector widths (elements) of A, B, C global accesses
    lds: LdsPlan | None
    prefetch: int
    registers: RegisterEstimate
    bias_dtype: DType
    integer_epilogue: bool
    epilogue_types: tuple[str, ...]   # C++ type names of ckgen::epi ops, in order
    #: sm_90: the kernel also gets ``<name>_tma``, the Hopper body, which its host entry prefers
    tma: TmaBodyPlan | None = None
    #: split-K / stream-K (None: one workgroup per C tile)
    schedule: SchedulePlan | None = None
    #: mode = grouped / masked (ckgen.ops.gemm.grouped.GroupPlan), else None
    grouping: object | None = None
    #: planner decisions worth telling (``ckgen explain --kernel``): e.g. why an fp8 kernel has no Hopper body
    why: tuple[str, ...] = ()
    #: the vector body's numbers (instr = none), else None
    vector: VectorPlan | None = None

    def to_json(self) -> dict:
        i = self.instr
        return {
            "header": self.body.header, "impl": self.body.impl,
            "instruction": None if i is None else {"mnemonic": i.mnemonic, "builtin": i.builtin, "shape": list(i.shape)},
            "wave_tile": list(self.wave_tile), "repeats": list(self.repeats), "items": list(self.items),
            "vec": list(self.vec), "lds": None if self.lds is None else self.lds.to_json(), "prefetch": self.prefetch,
            "registers_estimate": self.registers.to_json(), "bias_dtype": self.bias_dtype.value,
            "integer_epilogue": self.integer_epilogue, "epilogue_types": list(self.epilogue_types),
            "tma": None if self.tma is None else self.tma.to_json(),
            **({"schedule": self.schedule.to_json()} if self.schedule is not None else {}),
            **({"grouping": self.grouping.to_json()} if self.grouping is not None else {}),
            **({"vector": self.vector.to_json()} if self.vector is not None else {}),
        }
