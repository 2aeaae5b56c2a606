"""The shape of the targets table: a target is data, and so is each of its matrix instructions.

Nothing outside ``ckgen/targets`` tests an arch name. Later stages ask a :class:`Target`
for numbers and instruction lists instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ckgen.ir.types import FP8_FORMATS, DType

#: fp8 features (Target.features) shared by both vendors' tables: the target has 8-bit float matrix instructions
#: and conversions (``FEATURE_FP8``), in the FNUZ encodings (e4m3fnuz / e5m2fnuz: gfx942) or the OCP ones (e4m3fn /
#: e5m2: gfx950, sm_89+). Same AMD instructions and builtins either way, different bit meanings.
FEATURE_FP8 = "fp8"
FEATURE_FP8_FNUZ = "fp8_fnuz"
FEATURE_FP8_OCP = "fp8_ocp"
#: the encoding name of each encoding feature (what :attr:`Target.fp8_encoding` answers)
FP8_ENCODINGS = {FEATURE_FP8_FNUZ: "fnuz", FEATURE_FP8_OCP: "ocp"}


@dataclass(frozen=True)
class MatrixInstr:
    """One matrix-core instruction as one wave (AMD) or warp (NVIDIA) issues it.

    ``m x n x k`` is the per-block shape; ``blocks`` > 1 means several independent
    products at once. Register counts are 32-bit registers per lane (AMD) or per thread (NVIDIA).
    ``a_operand``/``b_operand``/``c_operand`` name the C++ vector types of ckgen's headers that the
    builtin takes; ``builtin`` is the compiler builtin (AMD) or the PTX instruction (NVIDIA);
    ``mnemonic`` is what the disassembler prints for this arch.
    """

    mnemonic: str
    builtin: str
    a_dtype: DType
    b_dtype: DType
    acc_dtype: DType
    m: int
    n: int
    k: int
    blocks: int
    a_regs: int
    b_regs: int
    c_regs: int
    a_operand: str
    b_operand: str
    c_operand: str
    cycles: int
    kind: str = "mfma"  # mfma | mma_sync | wgmma
    #: a lane's A (B) fragment as this many equal runs along K, ``k / frag_runs`` apart, each lane's first at
    #: (lane / m) x (items / frag_runs) (1: one contiguous run; the block-scaled MFMA with fp8 operands: two
    #: runs of 16 K's). The LDS layout's bank model and the body's fragment reads take the runs as they are.
    frag_runs: int = 1

    def __post_init__(self) -> None:
        if min(self.m, self.n, self.k, self.blocks) <= 0:
            raise ValueError(f"{self.mnemonic}: shape must be positive")
        if self.kind not in ("mfma", "mma_sync", "wgmma"):
            raise ValueError(f"{self.mnemonic}: unknown kind {self.kind}")

    @property
    def builtin_in_cfg(self) -> bool:
        """Whether kernel bodies call this instruction through the Cfg's ``mma`` (a compiler builtin, AMD), rather
        than choosing their own wrapper from the element type (NVIDIA)."""
        return self.kind == "mfma"

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.m, self.n, self.k)

    @property
    def shape_text(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    def a_items(self, lanes: int) -> int:
        """Elements of A each lane holds (one block)."""
        return self.m * self.k * self.blocks // lanes

    def b_items(self, lanes: int) -> int:
        return self.n * self.k * self.blocks // lanes

    def c_items(self, lanes: int) -> int:
        return self.m * self.n * self.blocks // lanes


@dataclass(frozen=True)
class Target:
    """One GPU architecture. All numbers per workgroup / per SIMD as the field says."""

    name: str                   # gfx942, sm_90 ...
    vendor: str                 # amd | nvidia
    family: str                 # CDNA3, Hopper ...
    wave_size: int              # 64 on CDNA, 32 on NVIDIA
    lds_bytes: int              # LDS / shared memory one workgroup may allocate
    lds_bytes_per_cu: int       # LDS / shared memory per CU (SM), for occupancy
    vgprs: int                  # architectural VGPRs one wave (lane) may address
    agprs: int                  # AGPRs one wave may address; with unified_vgpr_file, vgprs + agprs share vgprs_per_simd_lane
    unified_vgpr_file: bool     # VGPRs and AGPRs share one file of ``vgprs_per_simd_lane``
    vgprs_per_simd_lane: int    # physical register file per SIMD lane (sets occupancy)
    vgpr_granule: int           # allocation granule of VGPRs per wave
    sgprs: int                  # SGPRs per wave
    simds_per_cu: int
    max_waves_per_simd: int
    cus: int                    # compute units (SMs) of the flagship part
    min_clang: int              # oldest clang major that targets it (AMD); 0 for NVIDIA
    instructions: tuple[MatrixInstr, ...] = field(default=())
    features: frozenset[str] = field(default=frozenset())
    part: str = ""              # the flagship part whose figures these are (MI300X, H200 ...)
    sgprs_per_simd: int = 0                  # SGPR file per SIMD (0: only the per-wave cap limits occupancy)
    lds_granule_bytes: int = 512             # LDS allocation granule per workgroup (occupancy)
    lds_pad_bytes: int = 16                  # padding added to each K-contiguous LDS row (bank conflicts)
    platform: str = "amd"                    # platform header family: amd | cuda (emu reuses amd plans); ops pick their device body by it
    #: disassembly mnemonic prefixes of the matrix instructions (what ``ckgen report`` counts)
    matrix_mnemonics: tuple[str, ...] = ()
    #: the flagship part's peak engine clock and memory bandwidth (cost models of dispatchers; 0: unknown)
    clock_mhz: int = 0
    mem_gbps: int = 0
    lds_banks: int = 32                      # LDS banks a wave-level LDS instruction is spread over
    lds_bank_bytes: int = 4                  # bytes one bank serves per cycle
    valu_lanes_per_cu: int = 64              # f32 multiply-adds one CU (SM) issues per clock on its vector ALUs (cost models)
    lds_swizzle: bool = True                 # the matrix-core body takes XOR-swizzled LDS tiles (the op plans the swizzle)
    sgpr_granule: int = 16                   # SGPR allocation granule per wave (occupancy)
    sgpr_extra_max: int = 0                  # most special SGPRs (VCC, FLAT_SCRATCH, XNACK_MASK) counted on top of ``sgprs``
    max_workgroups_per_cu: int = 16          # multi-wave workgroups one CU holds at once (barrier resources)
    #: LLVM's own SGPR occupancy steps ((most SGPRs, waves), ...) and the waves beyond the last step: only the
    #: clang-compatible occupancy model uses them (ckgen/backends/amd/occupancy.py, model="llvm")
    llvm_sgpr_steps: tuple[tuple[int, int], ...] = ()
    llvm_sgpr_floor: int = 0

    def __post_init__(self) -> None:
        if self.vendor not in ("amd", "nvidia"):
            raise ValueError(f"{self.name}: vendor must be amd or nvidia")
        if self.wave_size not in (32, 64):
            raise ValueError(f"{self.name}: wave size must be 32 or 64")

    @property
    def fp8_encoding(self) -> str | None:
        """``"fnuz"`` or ``"ocp"``: the 8-bit float encoding of this target's fp8 hardware; None without fp8."""
        return next((enc for feat, enc in FP8_ENCODINGS.items() if feat in self.features), None)

    @property
    def fp8_dtypes(self) -> tuple[DType, ...]:
        """The 8-bit float dtypes of this target's encoding (e4m3fnuz, e5m2fnuz on FNUZ targets; e4m3fn, e5m2 on
        OCP ones; none without fp8): what its kernels may read or write as fp8."""
        return tuple(d for d, f in FP8_FORMATS.items() if f.encoding == self.fp8_encoding)

    def fp8_refusal(self, dt: DType) -> str | None:
        """Why fp8 dtype ``dt`` is not one of this target's (the other encoding, or no fp8 at all); None when it is,
        or when ``dt`` is not an fp8 dtype."""
        f = dt.fp8
        if f is None or dt in self.fp8_dtypes:
            return None
        if self.fp8_encoding:
            return (f"{dt.value} is the {f.encoding.upper()} encoding; {self.name}'s fp8 instructions take the "
                    f"{self.fp8_encoding.upper()} one (the same codes mean other numbers)")
        return f"{self.name} has no fp8 instructions (nothing there reads fp8)"

    def instructions_for(self, a: DType, b: DType, acc: DType, *, single_block: bool = True) -> tuple[MatrixInstr, ...]:
        """Instructions taking A/B of these dtypes into ``acc``; best (most flops per cycle, then larger m) first."""
        found = [i for i in self.instructions
                 if i.a_dtype == a and i.b_dtype == b and i.acc_dtype == acc
                 and (i.blocks == 1 or not single_block)]
        return tuple(sorted(found, key=lambda i: (-(i.m * i.n * i.k * i.blocks) / i.cycles, -i.m, i.mnemonic)))

    def find_instruction(self, shape: tuple[int, int, int], a: DType, b: DType, acc: DType) -> MatrixInstr | None:
        for i in self.instructions_for(a, b, acc):
            if i.shape == shape:
                return i
        return None

    def input_dtypes(self) -> frozenset[DType]:
        return frozenset(i.a_dtype for i in self.instructions)
