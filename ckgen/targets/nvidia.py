"""NVIDIA targets: sm_90 (Hopper: H100 / H200 SXM) and sm_80 (Ampere: A100 SXM).

Plain data, the counterpart of ``amd.py``. Ops pick their NVIDIA device bodies by ``platform = "cuda"``
(warp-level ``mma.sync`` fed by ``ldmatrix`` from a multi-stage ``cp.async`` pipeline). The instruction table
lists the mma.sync shapes, which the planners use. Targets with both ``wgmma`` and ``tma`` (sm_90, built as
sm_90a) also let an op plan a Hopper body (TMA, warp-specialized ``wgmma``) beside the portable one. A "wave"
of the DSL is a warp of 32 threads, so ``waves = 2x4`` means 8 warps.

Where the numbers come from:

* [ptx]   PTX ISA, "Warp-level matrix multiply-accumulate instructions" (mma.sync.aligned):
  m16n8k16 .f16/.bf16 -> .f32 (A 4 x .b32, B 2 x .b32, C/D 4 x .f32 per thread), m16n8k32
  .s8 -> .s32 (A 4, B 2, C/D 4 x .s32), m16n8k8 .tf32 -> .f32 (A 4, B 2, C/D 4); available from
  sm_80. ldmatrix and cp.async: sm_80. wgmma.mma_async and setmaxnreg need sm_90a.
* [guide] CUDA C++ Programming Guide, "Technical Specifications per Compute Capability": 8.0 and 9.0
  both have 64 K 32-bit registers per SM, at most 255 per thread, 64 resident warps per SM, 4 SM
  sub-partitions (warp schedulers); shared memory per SM 164 KB (8.0) / 228 KB (9.0), per block at
  most 163 KB / 227 KB after opting in (``cudaFuncAttributeMaxDynamicSharedMemorySize``).
* [spec]  SM counts: H100 / H200 SXM 132, A100 SXM 108 (read as 132 on the lent H200 by PyTorch); boost clocks
  and memory bandwidth of the H200 SXM (1980 MHz, 4.8 TB/s) and A100 SXM 80 GB (1410 MHz, 2.04 TB/s), for
  dispatchers' cost models only.
* [meas]  ``cycles``: issue interval of one instruction per SM sub-partition, from the register-only
  ``mma.sync`` bf16 loop in bench/nv_kernels.cu (646 TFLOP/s on the H200 -> ~6.6 clocks per
  m16n8k16; rounded to 8; i8 m16n8k32 issues at the same rate, tf32 m16n8k8 at the same rate with half
  the work). Only relative values matter (instruction ordering); one instruction per dtype exists.

``Target`` fields that are AMD-shaped carry these meanings here: ``vgprs`` = registers per thread
(255), ``agprs`` = 0 (no separate accumulator file), ``vgprs_per_simd_lane`` = register file per lane
of one sub-partition (65536 / 4 / 32 = 512), ``vgpr_granule`` = 8 (a warp allocates 256 registers at a
time), ``simds_per_cu`` = 4 sub-partitions, ``max_waves_per_simd`` = 16 warps (64 per SM),
``sgprs`` = 0 (no scalar file), ``lds_swizzle`` = False (the NVIDIA bodies swizzle shared memory themselves).
"""

from __future__ import annotations

from ckgen.ir.target import FEATURE_FP8, FEATURE_FP8_OCP, MatrixInstr, Target
from ckgen.ir.types import DType

F16, BF16, F32, I8, I32, FP8, BF8 = DType.F16, DType.BF16, DType.F32, DType.I8, DType.I32, DType.FP8, DType.BF8

#: feature names (Target.features)
FEATURE_CP_ASYNC = "cp_async"        # cp.async global -> shared copies (sm_80+)
FEATURE_LDMATRIX = "ldmatrix"        # ldmatrix / ldmatrix.trans (sm_75+)
FEATURE_MMA_SYNC = "mma_sync"        # warp-level mma.sync (the instructions below)
FEATURE_WGMMA = "wgmma"              # warpgroup wgmma.mma_async and setmaxnreg (sm_90a build)
FEATURE_TMA = "tma"                  # cp.async.bulk.tensor and mbarrier transactions (Hopper)



def _mma(mnemonic: str, builtin: str, a: DType, acc: DType, k: int, c_op: str) -> MatrixInstr:
    return MatrixInstr(mnemonic=mnemonic, builtin=builtin, a_dtype=a, b_dtype=a, acc_dtype=acc, m=16, n=8, k=k,
                       blocks=1, a_regs=4, b_regs=2, c_regs=4, a_operand="ckgen::u32x4_t",
                       b_operand="ckgen::u32x2_t", c_operand=c_op, cycles=8, kind="mma_sync")


#: mma.sync instructions of sm_80 and sm_90 [ptx]. ``mnemonic`` is the SASS name cuobjdump prints;
#: ``builtin`` the wrapper in ckgen/include/ckgen/blocks/nv_mma.h.
MMA_SYNC_COMMON = (
    _mma("HMMA.16816.F32", "ckgen::nv::mma_m16n8k16_f32_f16", F16, F32, 16, "ckgen::f32x4_t"),
    _mma("HMMA.16816.F32.BF16", "ckgen::nv::mma_m16n8k16_f32_bf16", BF16, F32, 16, "ckgen::f32x4_t"),
    _mma("IMMA.16832.S8.S8", "ckgen::nv::mma_m16n8k32_s32_s8", I8, I32, 32, "ckgen::i32x4_t"),
    _mma("HMMA.1688.F32.TF32", "ckgen::nv::mma_m16n8k8_f32_tf32", F32, F32, 8, "ckgen::f32x4_t"),
)
#: sm_89+: mma.sync.m16n8k32 .e4m3 / .e5m2 (OCP fp8, both operands of one kind) -> .f32 [ptx]. The SASS name is
#: the sm_89 QMMA spelling; not read back from an sm_90 binary here (no cuobjdump on the build machine).
MMA_SYNC_FP8 = (
    _mma("QMMA.16832.F32.E4M3.E4M3", "ckgen::nv::mma_m16n8k32_f32_e4m3", FP8, F32, 32, "ckgen::f32x4_t"),
    _mma("QMMA.16832.F32.E5M2.E5M2", "ckgen::nv::mma_m16n8k32_f32_e5m2", BF8, F32, 32, "ckgen::f32x4_t"),
)
MMA_SYNC = MMA_SYNC_COMMON

_COMMON = dict(vendor="nvidia", wave_size=32, vgprs=255, agprs=0, unified_vgpr_file=False,
               vgprs_per_simd_lane=512, vgpr_granule=8, sgprs=0, simds_per_cu=4, max_waves_per_simd=16,
               min_clang=0, lds_granule_bytes=128, lds_pad_bytes=0, lds_swizzle=False,
               platform="cuda", matrix_mnemonics=("HMMA", "IMMA", "QMMA", "HGMMA", "IGMMA", "QGMMA"))

SM_90 = Target(
    name="sm_90", family="Hopper", part="H100 / H200 SXM", **_COMMON,
    lds_bytes=227 * 1024,          # per block, opt-in [guide]
    lds_bytes_per_cu=228 * 1024,   # per SM [guide]
    cus=132,                       # [spec]
    valu_lanes_per_cu=128,         # [guide] 128 FP32 cores per SM (compute capability 9.0)
    clock_mhz=1980, mem_gbps=4800, # [spec] H200 SXM boost clock, HBM3e bandwidth
    instructions=MMA_SYNC_COMMON + MMA_SYNC_FP8,
    # fp8: OCP e4m3 / e5m2 (cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 from sm_89, wgmma .e4m3/.e5m2 on sm_90a) [ptx]
    features=frozenset({FEATURE_CP_ASYNC, FEATURE_LDMATRIX, FEATURE_MMA_SYNC, FEATURE_WGMMA, FEATURE_TMA,
                        FEATURE_FP8, FEATURE_FP8_OCP}),
)

SM_80 = Target(
    name="sm_80", family="Ampere", part="A100 SXM", **_COMMON,
    lds_bytes=163 * 1024,
    lds_bytes_per_cu=164 * 1024,
    cus=108,
    valu_lanes_per_cu=64,          # [guide] 64 FP32 cores per SM (compute capability 8.0)
    clock_mhz=1410, mem_gbps=2039, # [spec] A100 SXM 80 GB
    instructions=MMA_SYNC_COMMON,
    features=frozenset({FEATURE_CP_ASYNC, FEATURE_LDMATRIX, FEATURE_MMA_SYNC}),
)

#: name -> Target; imported by ckgen/targets/__init__.py
NVIDIA_TARGETS: dict[str, Target] = {t.name: t for t in (SM_90, SM_80)}


def nvcc_arch_flags(target: Target) -> list[str]:
    """nvcc ``-gencode`` flags that produce SASS and PTX for ``target``. Targets with wgmma build the
    arch-specific variant (sm_90 -> compute_90a / sm_90a, which runs on every sm_90 part and enables the
    wgmma paths); others the plain one (sm_80 -> compute_80 / sm_80)."""
    num = target.name.split("_", 1)[1] + ("a" if FEATURE_WGMMA in target.features else "")
    return [f"-gencode=arch=compute_{num},code=sm_{num}", f"-gencode=arch=compute_{num},code=compute_{num}"]
