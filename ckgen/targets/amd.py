"""AMD CDNA targets: gfx908 (CDNA1), gfx90a (CDNA2), gfx942 (CDNA3), gfx950 (CDNA4).

Plain data. The MFMA tables between the GENERATED markers come from ``tools/gen_amd_mfma.py``
(run it after changing the reference data or the gfx950 list; ``--check`` tells whether this file
is current). Every (arch, builtin) pair is compiled and disassembled by
``tests/targets/test_amd_compile.py``; gfx908/90a/942 entries are compared field by field with AMD's
matrix instruction calculator data in ``tests/targets/test_amd_table.py``.

Where the numbers come from (checked 2026, see also the comments on each target):

* [specs]  ROCm docs, "AMD GPU specifications" (docs/reference/gpu-specs.rst): CUs, wave size,
  LDS per CU, VGPR file per CU (512 KiB = 4 SIMDs x 512 regs x 64 lanes x 4 B on gfx90a+; gfx908:
  256 KiB VGPR + 256 KiB AccVGPR).
* [llvm]   LLVM AMDGPUBaseInfo.cpp: getMaxWavesPerEU (8 with GFX90AInsts, else 10 on gfx9),
  getVGPRAllocGranule (8 with GFX90AInsts, else 4 in wave64), getTotalNumVGPRs (512 with
  GFX90AInsts, else 256), getAddressableNumSGPRs (102 on gfx8/9; 800 SGPRs per SIMD),
  getAddressableLocalMemorySize (163840 for gfx950, 65536 otherwise); llvm test
  CodeGen/AMDGPU "local memory (163844) exceeds limit (163840)" for gfx950.
* [calc]   ../shared/reference/mfma_layouts.json (AMD matrix instruction calculator 1.3.2): every
  gfx908/90a/942 MFMA field, and whether C/D may live in arch VGPRs (not on gfx908).
* [intr]   LLVM IntrinsicsAMDGPU.td (llvm-22): the gfx950 MFMA intrinsics and operand types;
  gfx950 cycles from llvm-mca-22's gfx950 scheduling model (see tools/gen_amd_mfma.py).
* [clang]  tests/targets/test_amd_compile.py: clang++-19 (gfx908/90a/942) and clang++-22 (gfx950)
  accept each builtin with exactly these operand types and emit exactly these mnemonics; xf32 is
  rejected on gfx950.
* [mx]     The gfx950 block-scaled MFMA (MX_INSTRUCTIONS): AMD's ROCm blog "Matrix Core Programming on AMD CDNA3
  and CDNA4 architecture" (operand layouts, format codes, E8M0 = 2^(e - 127)), triton's chooseScaledMfmaScaleLayout
  (which lane's scale byte applies to which row / K block); tests/data/mfma_scale_layouts.json holds the layout
  as data (tools/gen_mfma_scale_layout.py transcribes the blog's indexing) and tests/runtime/test_emu_mfma_scale.py
  checks the emulator against it.
* [occ]    Occupancy (waves per SIMD), the rules ``ckgen report`` applies (ckgen/backends/amd/occupancy.py):
  LLVM AMDGPUBaseInfo.cpp: getTotalNumSGPRs = 800 per SIMD on gfx8/9; getAddressableNumSGPRs = 102;
  getSGPRAllocGranule = 16 on gfx8/9 (reviews.llvm.org/D84194: "16 for GFX9" SGPR blocks); getNumExtraSGPRs:
  VCC 2, XNACK_MASK 4 (xnack on or "any", the default), FLAT_SCRATCH 6 (also always with architected flat
  scratch, gfx940+), the largest applicable, counted on top of the addressable 102 (AMDGPUUsage:
  GRANULATED_WAVEFRONT_SGPR_COUNT "includes the special SGPRs for VCC, Flat Scratch and XNACK mask";
  the metadata's ``.sgpr_count`` includes them, so a wave may need up to 108); getMaxWorkGroupsPerCU = 16
  for multi-wave workgroups (barriers); getVGPRAllocGranule, getTotalNumVGPRs and getMaxWavesPerEU as
  under [llvm]; AMDGPUUsage COMPUTE_PGM_RSRC2.LDS_SIZE: LDS is allocated in 128-dword (512 B) blocks.
* [lds]    LDS banks: 32 banks of 4 bytes on gfx9 (ROCm blog "Avoiding LDS Bank Conflicts on AMD GPUs Using
  CK-Tile Framework", 2025: "LDS is divided into 32 memory banks, each ... a 4-byte access per LDS clock
  cycle"); 64 banks on gfx950 (composable_kernel include/ck_tile/core/arch/arch.hpp get_n_lds_banks:
  64 for gfx950, 32 for gfx9; CK's conceptual doc "Understanding AMD GPU LDS and Bank Conflicts": 32 or
  64 banks of 4 bytes by architecture, a wave's access split into phases by instruction width, e.g.
  ds_write_b128 in 8 phases of 8 lanes on 32 banks). Bank model: the matrix-core op planners (lds_layout.py).
"""

from __future__ import annotations

from dataclasses import replace

from ckgen.ir.target import FEATURE_FP8, FEATURE_FP8_FNUZ, FEATURE_FP8_OCP, MatrixInstr, Target
from ckgen.ir.types import DType

F16, BF16, F32, F64, I8, I32, FP8, BF8 = (DType.F16, DType.BF16, DType.F32, DType.F64, DType.I8,
                                          DType.I32, DType.FP8, DType.BF8)

# ---- feature names (Target.features). Arch knowledge the planner/codegen may ask about. ----
#: MFMA C/D operands may sit in arch VGPRs (gfx90a+). On gfx908 they must be AGPRs. [calc]
FEATURE_MFMA_CD_IN_VGPRS = "mfma_cd_in_vgprs"
#: bf16 MFMAs with 4 bf16 per register pair ("_1k": 32x32x8, 16x16x16 ...). gfx908 only has the
#: half-rate bf16 forms (32x32x4bf16 with 2 bf16 per lane). [calc]
FEATURE_BF16_1K = "bf16_1k"
#: f64 MFMAs (v_mfma_f64_*). [calc]
FEATURE_F64_MFMA = "f64_mfma"
#: fp8/bf8 MFMAs and conversions (FEATURE_FP8, FEATURE_FP8_FNUZ, FEATURE_FP8_OCP: ckgen/ir/target.py). gfx942
#: uses the FNUZ encodings (e4m3fnuz / e5m2fnuz), gfx950 the OCP ones (e4m3fn / e5m2): same instructions and
#: builtins (v_mfma_*_fp8_fp8 ..., v_cvt_pk_fp8_f32 ...), different bit meanings. [HIP docs "FP8 numbers":
#: gfx940/941/942 FNUZ only; composable_kernel PR 1710 "OCP FP8 ... for gfx950"; llvm PR 106160]
#: reduced-precision f32 MFMA (v_mfma_f32_*_xf32), gfx942 only. Not in Target.instructions (the planner
#: must not pick it for f32 matrix products); see XF32_INSTRUCTIONS. CDNA4 removed it. [calc], [clang]
FEATURE_XF32 = "xf32"
#: packed fp32 VALU ops (v_pk_fma_f32, v_pk_mul_f32, v_pk_add_f32): gfx90a+. [llvm FeaturePackedFP32Ops]
FEATURE_PACKED_FP32 = "packed_fp32"
#: MFMA block-scaled f8f6f4 (v_mfma_scale_f32_{16x16x128,32x32x64}_f8f6f4): gfx950. Not in Target.instructions
#: (the planner must not pick it for a plain matrix product: it takes per-32-K E8M0 scales and its operand format comes
#: from immediates); the entries ckgen uses for `mx` scales are in MX_INSTRUCTIONS. [intr], [mx]
FEATURE_MFMA_SCALE_F8F6F4 = "mfma_scale_f8f6f4"


def _mi(mnemonic: str, builtin: str, a: DType, b: DType, acc: DType, m: int, n: int, k: int, blocks: int,
        a_regs: int, b_regs: int, c_regs: int, a_op: str, b_op: str, c_op: str, cycles: int) -> MatrixInstr:
    return MatrixInstr(mnemonic=mnemonic, builtin=builtin, a_dtype=a, b_dtype=b, acc_dtype=acc, m=m, n=n, k=k,
                       blocks=blocks, a_regs=a_regs, b_regs=b_regs, c_regs=c_regs, a_operand=a_op,
                       b_operand=b_op, c_operand=c_op, cycles=cycles, kind="mfma")


# ---- BEGIN GENERATED by tools/gen_amd_mfma.py (do not edit by hand) ----
# Columns: mnemonic, builtin, a, b, acc, m, n, k, blocks, a_regs, b_regs, c_regs,
#          a_operand, b_operand, c_operand, cycles.
# gfx908/90a/942 from ../shared/reference/mfma_layouts.json (AMD matrix instruction calculator
# 1.3.2); gfx950: gfx942 minus xf32 plus CDNA4's new dense ops, cycles from llvm-mca-22's gfx950
# model (4 cycles per pass; the same method reproduces every gfx942 reference cycle count).
GFX908_MFMA: tuple[MatrixInstr, ...] = (
    _mi("v_mfma_f32_32x32x1f32", "__builtin_amdgcn_mfma_f32_32x32x1f32", F32, F32, F32, 32, 32, 1, 2, 1, 1, 32, "float", "float", "ckgen::float32_t", 64),
    _mi("v_mfma_f32_16x16x1f32", "__builtin_amdgcn_mfma_f32_16x16x1f32", F32, F32, F32, 16, 16, 1, 4, 1, 1, 16, "float", "float", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_4x4x1f32", "__builtin_amdgcn_mfma_f32_4x4x1f32", F32, F32, F32, 4, 4, 1, 16, 1, 1, 4, "float", "float", "ckgen::float4_t", 8),
    _mi("v_mfma_f32_32x32x2f32", "__builtin_amdgcn_mfma_f32_32x32x2f32", F32, F32, F32, 32, 32, 2, 1, 1, 1, 16, "float", "float", "ckgen::float16_t", 64),
    _mi("v_mfma_f32_16x16x4f32", "__builtin_amdgcn_mfma_f32_16x16x4f32", F32, F32, F32, 16, 16, 4, 1, 1, 1, 4, "float", "float", "ckgen::float4_t", 32),
    _mi("v_mfma_f32_32x32x4f16", "__builtin_amdgcn_mfma_f32_32x32x4f16", F16, F16, F32, 32, 32, 4, 2, 2, 2, 32, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float32_t", 64),
    _mi("v_mfma_f32_16x16x4f16", "__builtin_amdgcn_mfma_f32_16x16x4f16", F16, F16, F32, 16, 16, 4, 4, 2, 2, 16, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_4x4x4f16", "__builtin_amdgcn_mfma_f32_4x4x4f16", F16, F16, F32, 4, 4, 4, 16, 2, 2, 4, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float4_t", 8),
    _mi("v_mfma_f32_32x32x8f16", "__builtin_amdgcn_mfma_f32_32x32x8f16", F16, F16, F32, 32, 32, 8, 1, 2, 2, 16, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float16_t", 64),
    _mi("v_mfma_f32_16x16x16f16", "__builtin_amdgcn_mfma_f32_16x16x16f16", F16, F16, F32, 16, 16, 16, 1, 2, 2, 4, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float4_t", 32),
    _mi("v_mfma_i32_32x32x4i8", "__builtin_amdgcn_mfma_i32_32x32x4i8", I8, I8, I32, 32, 32, 4, 2, 1, 1, 32, "int", "int", "ckgen::int32_t", 64),
    _mi("v_mfma_i32_16x16x4i8", "__builtin_amdgcn_mfma_i32_16x16x4i8", I8, I8, I32, 16, 16, 4, 4, 1, 1, 16, "int", "int", "ckgen::int16_t", 32),
    _mi("v_mfma_i32_4x4x4i8", "__builtin_amdgcn_mfma_i32_4x4x4i8", I8, I8, I32, 4, 4, 4, 16, 1, 1, 4, "int", "int", "ckgen::int4_t", 8),
    _mi("v_mfma_i32_32x32x8i8", "__builtin_amdgcn_mfma_i32_32x32x8i8", I8, I8, I32, 32, 32, 8, 1, 1, 1, 16, "int", "int", "ckgen::int16_t", 64),
    _mi("v_mfma_i32_16x16x16i8", "__builtin_amdgcn_mfma_i32_16x16x16i8", I8, I8, I32, 16, 16, 16, 1, 1, 1, 4, "int", "int", "ckgen::int4_t", 32),
    _mi("v_mfma_f32_32x32x2bf16", "__builtin_amdgcn_mfma_f32_32x32x2bf16", BF16, BF16, F32, 32, 32, 2, 2, 1, 1, 32, "ckgen::short2_t", "ckgen::short2_t", "ckgen::float32_t", 64),
    _mi("v_mfma_f32_16x16x2bf16", "__builtin_amdgcn_mfma_f32_16x16x2bf16", BF16, BF16, F32, 16, 16, 2, 4, 1, 1, 16, "ckgen::short2_t", "ckgen::short2_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_4x4x2bf16", "__builtin_amdgcn_mfma_f32_4x4x2bf16", BF16, BF16, F32, 4, 4, 2, 16, 1, 1, 4, "ckgen::short2_t", "ckgen::short2_t", "ckgen::float4_t", 8),
    _mi("v_mfma_f32_32x32x4bf16", "__builtin_amdgcn_mfma_f32_32x32x4bf16", BF16, BF16, F32, 32, 32, 4, 1, 1, 1, 16, "ckgen::short2_t", "ckgen::short2_t", "ckgen::float16_t", 64),
    _mi("v_mfma_f32_16x16x8bf16", "__builtin_amdgcn_mfma_f32_16x16x8bf16", BF16, BF16, F32, 16, 16, 8, 1, 1, 1, 4, "ckgen::short2_t", "ckgen::short2_t", "ckgen::float4_t", 32),
)
GFX90A_MFMA: tuple[MatrixInstr, ...] = (
    _mi("v_mfma_f32_32x32x1f32", "__builtin_amdgcn_mfma_f32_32x32x1f32", F32, F32, F32, 32, 32, 1, 2, 1, 1, 32, "float", "float", "ckgen::float32_t", 64),
    _mi("v_mfma_f32_16x16x1f32", "__builtin_amdgcn_mfma_f32_16x16x1f32", F32, F32, F32, 16, 16, 1, 4, 1, 1, 16, "float", "float", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_4x4x1f32", "__builtin_amdgcn_mfma_f32_4x4x1f32", F32, F32, F32, 4, 4, 1, 16, 1, 1, 4, "float", "float", "ckgen::float4_t", 8),
    _mi("v_mfma_f32_32x32x2f32", "__builtin_amdgcn_mfma_f32_32x32x2f32", F32, F32, F32, 32, 32, 2, 1, 1, 1, 16, "float", "float", "ckgen::float16_t", 64),
    _mi("v_mfma_f32_16x16x4f32", "__builtin_amdgcn_mfma_f32_16x16x4f32", F32, F32, F32, 16, 16, 4, 1, 1, 1, 4, "float", "float", "ckgen::float4_t", 32),
    _mi("v_mfma_f32_32x32x4f16", "__builtin_amdgcn_mfma_f32_32x32x4f16", F16, F16, F32, 32, 32, 4, 2, 2, 2, 32, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float32_t", 64),
    _mi("v_mfma_f32_16x16x4f16", "__builtin_amdgcn_mfma_f32_16x16x4f16", F16, F16, F32, 16, 16, 4, 4, 2, 2, 16, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_4x4x4f16", "__builtin_amdgcn_mfma_f32_4x4x4f16", F16, F16, F32, 4, 4, 4, 16, 2, 2, 4, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float4_t", 8),
    _mi("v_mfma_f32_32x32x8f16", "__builtin_amdgcn_mfma_f32_32x32x8f16", F16, F16, F32, 32, 32, 8, 1, 2, 2, 16, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float16_t", 64),
    _mi("v_mfma_f32_16x16x16f16", "__builtin_amdgcn_mfma_f32_16x16x16f16", F16, F16, F32, 16, 16, 16, 1, 2, 2, 4, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float4_t", 32),
    _mi("v_mfma_i32_32x32x4i8", "__builtin_amdgcn_mfma_i32_32x32x4i8", I8, I8, I32, 32, 32, 4, 2, 1, 1, 32, "int", "int", "ckgen::int32_t", 64),
    _mi("v_mfma_i32_16x16x4i8", "__builtin_amdgcn_mfma_i32_16x16x4i8", I8, I8, I32, 16, 16, 4, 4, 1, 1, 16, "int", "int", "ckgen::int16_t", 32),
    _mi("v_mfma_i32_4x4x4i8", "__builtin_amdgcn_mfma_i32_4x4x4i8", I8, I8, I32, 4, 4, 4, 16, 1, 1, 4, "int", "int", "ckgen::int4_t", 8),
    _mi("v_mfma_i32_32x32x8i8", "__builtin_amdgcn_mfma_i32_32x32x8i8", I8, I8, I32, 32, 32, 8, 1, 1, 1, 16, "int", "int", "ckgen::int16_t", 64),
    _mi("v_mfma_i32_16x16x16i8", "__builtin_amdgcn_mfma_i32_16x16x16i8", I8, I8, I32, 16, 16, 16, 1, 1, 1, 4, "int", "int", "ckgen::int4_t", 32),
    _mi("v_mfma_f32_32x32x4bf16_1k", "__builtin_amdgcn_mfma_f32_32x32x4bf16_1k", BF16, BF16, F32, 32, 32, 4, 2, 2, 2, 32, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float32_t", 64),
    _mi("v_mfma_f32_16x16x4bf16_1k", "__builtin_amdgcn_mfma_f32_16x16x4bf16_1k", BF16, BF16, F32, 16, 16, 4, 4, 2, 2, 16, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_4x4x4bf16_1k", "__builtin_amdgcn_mfma_f32_4x4x4bf16_1k", BF16, BF16, F32, 4, 4, 4, 16, 2, 2, 4, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float4_t", 8),
    _mi("v_mfma_f32_32x32x8bf16_1k", "__builtin_amdgcn_mfma_f32_32x32x8bf16_1k", BF16, BF16, F32, 32, 32, 8, 1, 2, 2, 16, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float16_t", 64),
    _mi("v_mfma_f32_16x16x16bf16_1k", "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k", BF16, BF16, F32, 16, 16, 16, 1, 2, 2, 4, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float4_t", 32),
    _mi("v_mfma_f32_32x32x2bf16", "__builtin_amdgcn_mfma_f32_32x32x2bf16", BF16, BF16, F32, 32, 32, 2, 2, 1, 1, 32, "ckgen::short2_t", "ckgen::short2_t", "ckgen::float32_t", 64),
    _mi("v_mfma_f32_16x16x2bf16", "__builtin_amdgcn_mfma_f32_16x16x2bf16", BF16, BF16, F32, 16, 16, 2, 4, 1, 1, 16, "ckgen::short2_t", "ckgen::short2_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_4x4x2bf16", "__builtin_amdgcn_mfma_f32_4x4x2bf16", BF16, BF16, F32, 4, 4, 2, 16, 1, 1, 4, "ckgen::short2_t", "ckgen::short2_t", "ckgen::float4_t", 8),
    _mi("v_mfma_f32_32x32x4bf16", "__builtin_amdgcn_mfma_f32_32x32x4bf16", BF16, BF16, F32, 32, 32, 4, 1, 1, 1, 16, "ckgen::short2_t", "ckgen::short2_t", "ckgen::float16_t", 64),
    _mi("v_mfma_f32_16x16x8bf16", "__builtin_amdgcn_mfma_f32_16x16x8bf16", BF16, BF16, F32, 16, 16, 8, 1, 1, 1, 4, "ckgen::short2_t", "ckgen::short2_t", "ckgen::float4_t", 32),
    _mi("v_mfma_f64_16x16x4f64", "__builtin_amdgcn_mfma_f64_16x16x4f64", F64, F64, F64, 16, 16, 4, 1, 2, 2, 8, "double", "double", "ckgen::double4_t", 32),
    _mi("v_mfma_f64_4x4x4f64", "__builtin_amdgcn_mfma_f64_4x4x4f64", F64, F64, F64, 4, 4, 4, 4, 2, 2, 2, "double", "double", "double", 16),
)
GFX942_MFMA: tuple[MatrixInstr, ...] = (
    _mi("v_mfma_f32_32x32x1_2b_f32", "__builtin_amdgcn_mfma_f32_32x32x1f32", F32, F32, F32, 32, 32, 1, 2, 1, 1, 32, "float", "float", "ckgen::float32_t", 64),
    _mi("v_mfma_f32_16x16x1_4b_f32", "__builtin_amdgcn_mfma_f32_16x16x1f32", F32, F32, F32, 16, 16, 1, 4, 1, 1, 16, "float", "float", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_4x4x1_16b_f32", "__builtin_amdgcn_mfma_f32_4x4x1f32", F32, F32, F32, 4, 4, 1, 16, 1, 1, 4, "float", "float", "ckgen::float4_t", 8),
    _mi("v_mfma_f32_32x32x2_f32", "__builtin_amdgcn_mfma_f32_32x32x2f32", F32, F32, F32, 32, 32, 2, 1, 1, 1, 16, "float", "float", "ckgen::float16_t", 64),
    _mi("v_mfma_f32_16x16x4_f32", "__builtin_amdgcn_mfma_f32_16x16x4f32", F32, F32, F32, 16, 16, 4, 1, 1, 1, 4, "float", "float", "ckgen::float4_t", 32),
    _mi("v_mfma_f32_32x32x4_2b_f16", "__builtin_amdgcn_mfma_f32_32x32x4f16", F16, F16, F32, 32, 32, 4, 2, 2, 2, 32, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float32_t", 64),
    _mi("v_mfma_f32_16x16x4_4b_f16", "__builtin_amdgcn_mfma_f32_16x16x4f16", F16, F16, F32, 16, 16, 4, 4, 2, 2, 16, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_4x4x4_16b_f16", "__builtin_amdgcn_mfma_f32_4x4x4f16", F16, F16, F32, 4, 4, 4, 16, 2, 2, 4, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float4_t", 8),
    _mi("v_mfma_f32_32x32x8_f16", "__builtin_amdgcn_mfma_f32_32x32x8f16", F16, F16, F32, 32, 32, 8, 1, 2, 2, 16, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_16x16x16_f16", "__builtin_amdgcn_mfma_f32_16x16x16f16", F16, F16, F32, 16, 16, 16, 1, 2, 2, 4, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float4_t", 16),
    _mi("v_mfma_i32_32x32x4_2b_i8", "__builtin_amdgcn_mfma_i32_32x32x4i8", I8, I8, I32, 32, 32, 4, 2, 1, 1, 32, "int", "int", "ckgen::int32_t", 64),
    _mi("v_mfma_i32_16x16x4_4b_i8", "__builtin_amdgcn_mfma_i32_16x16x4i8", I8, I8, I32, 16, 16, 4, 4, 1, 1, 16, "int", "int", "ckgen::int16_t", 32),
    _mi("v_mfma_i32_4x4x4_16b_i8", "__builtin_amdgcn_mfma_i32_4x4x4i8", I8, I8, I32, 4, 4, 4, 16, 1, 1, 4, "int", "int", "ckgen::int4_t", 8),
    _mi("v_mfma_i32_32x32x16_i8", "__builtin_amdgcn_mfma_i32_32x32x16_i8", I8, I8, I32, 32, 32, 16, 1, 2, 2, 16, "long", "long", "ckgen::int16_t", 32),
    _mi("v_mfma_i32_16x16x32_i8", "__builtin_amdgcn_mfma_i32_16x16x32_i8", I8, I8, I32, 16, 16, 32, 1, 2, 2, 4, "long", "long", "ckgen::int4_t", 16),
    _mi("v_mfma_f32_32x32x4_2b_bf16", "__builtin_amdgcn_mfma_f32_32x32x4bf16_1k", BF16, BF16, F32, 32, 32, 4, 2, 2, 2, 32, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float32_t", 64),
    _mi("v_mfma_f32_16x16x4_4b_bf16", "__builtin_amdgcn_mfma_f32_16x16x4bf16_1k", BF16, BF16, F32, 16, 16, 4, 4, 2, 2, 16, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_4x4x4_16b_bf16", "__builtin_amdgcn_mfma_f32_4x4x4bf16_1k", BF16, BF16, F32, 4, 4, 4, 16, 2, 2, 4, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float4_t", 8),
    _mi("v_mfma_f32_32x32x8_bf16", "__builtin_amdgcn_mfma_f32_32x32x8bf16_1k", BF16, BF16, F32, 32, 32, 8, 1, 2, 2, 16, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_16x16x16_bf16", "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k", BF16, BF16, F32, 16, 16, 16, 1, 2, 2, 4, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float4_t", 16),
    _mi("v_mfma_f64_16x16x4_f64", "__builtin_amdgcn_mfma_f64_16x16x4f64", F64, F64, F64, 16, 16, 4, 1, 2, 2, 8, "double", "double", "ckgen::double4_t", 32),
    _mi("v_mfma_f64_4x4x4_4b_f64", "__builtin_amdgcn_mfma_f64_4x4x4f64", F64, F64, F64, 4, 4, 4, 4, 2, 2, 2, "double", "double", "double", 16),
    _mi("v_mfma_f32_16x16x32_bf8_bf8", "__builtin_amdgcn_mfma_f32_16x16x32_bf8_bf8", BF8, BF8, F32, 16, 16, 32, 1, 2, 2, 4, "long", "long", "ckgen::float4_t", 16),
    _mi("v_mfma_f32_16x16x32_bf8_fp8", "__builtin_amdgcn_mfma_f32_16x16x32_bf8_fp8", BF8, FP8, F32, 16, 16, 32, 1, 2, 2, 4, "long", "long", "ckgen::float4_t", 16),
    _mi("v_mfma_f32_16x16x32_fp8_bf8", "__builtin_amdgcn_mfma_f32_16x16x32_fp8_bf8", FP8, BF8, F32, 16, 16, 32, 1, 2, 2, 4, "long", "long", "ckgen::float4_t", 16),
    _mi("v_mfma_f32_16x16x32_fp8_fp8", "__builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8", FP8, FP8, F32, 16, 16, 32, 1, 2, 2, 4, "long", "long", "ckgen::float4_t", 16),
    _mi("v_mfma_f32_32x32x16_bf8_bf8", "__builtin_amdgcn_mfma_f32_32x32x16_bf8_bf8", BF8, BF8, F32, 32, 32, 16, 1, 2, 2, 16, "long", "long", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_32x32x16_bf8_fp8", "__builtin_amdgcn_mfma_f32_32x32x16_bf8_fp8", BF8, FP8, F32, 32, 32, 16, 1, 2, 2, 16, "long", "long", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_32x32x16_fp8_bf8", "__builtin_amdgcn_mfma_f32_32x32x16_fp8_bf8", FP8, BF8, F32, 32, 32, 16, 1, 2, 2, 16, "long", "long", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_32x32x16_fp8_fp8", "__builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8", FP8, FP8, F32, 32, 32, 16, 1, 2, 2, 16, "long", "long", "ckgen::float16_t", 32),
)
GFX942_XF32_MFMA: tuple[MatrixInstr, ...] = (
    _mi("v_mfma_f32_16x16x8_xf32", "__builtin_amdgcn_mfma_f32_16x16x8_xf32", F32, F32, F32, 16, 16, 8, 1, 2, 2, 4, "ckgen::float2_t", "ckgen::float2_t", "ckgen::float4_t", 16),
    _mi("v_mfma_f32_32x32x4_xf32", "__builtin_amdgcn_mfma_f32_32x32x4_xf32", F32, F32, F32, 32, 32, 4, 1, 2, 2, 16, "ckgen::float2_t", "ckgen::float2_t", "ckgen::float16_t", 32),
)
GFX950_MFMA: tuple[MatrixInstr, ...] = (
    _mi("v_mfma_f32_16x16x32_f16", "__builtin_amdgcn_mfma_f32_16x16x32_f16", F16, F16, F32, 16, 16, 32, 1, 4, 4, 4, "ckgen::half8_t", "ckgen::half8_t", "ckgen::float4_t", 16),
    _mi("v_mfma_f32_32x32x16_f16", "__builtin_amdgcn_mfma_f32_32x32x16_f16", F16, F16, F32, 32, 32, 16, 1, 4, 4, 16, "ckgen::half8_t", "ckgen::half8_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_16x16x32_bf16", "__builtin_amdgcn_mfma_f32_16x16x32_bf16", BF16, BF16, F32, 16, 16, 32, 1, 4, 4, 4, "ckgen::bf16x8_t", "ckgen::bf16x8_t", "ckgen::float4_t", 16),
    _mi("v_mfma_f32_32x32x16_bf16", "__builtin_amdgcn_mfma_f32_32x32x16_bf16", BF16, BF16, F32, 32, 32, 16, 1, 4, 4, 16, "ckgen::bf16x8_t", "ckgen::bf16x8_t", "ckgen::float16_t", 32),
    _mi("v_mfma_i32_16x16x64_i8", "__builtin_amdgcn_mfma_i32_16x16x64_i8", I8, I8, I32, 16, 16, 64, 1, 4, 4, 4, "ckgen::int4_t", "ckgen::int4_t", "ckgen::int4_t", 16),
    _mi("v_mfma_i32_32x32x32_i8", "__builtin_amdgcn_mfma_i32_32x32x32_i8", I8, I8, I32, 32, 32, 32, 1, 4, 4, 16, "ckgen::int4_t", "ckgen::int4_t", "ckgen::int16_t", 32),
    _mi("v_mfma_f32_32x32x1_2b_f32", "__builtin_amdgcn_mfma_f32_32x32x1f32", F32, F32, F32, 32, 32, 1, 2, 1, 1, 32, "float", "float", "ckgen::float32_t", 64),
    _mi("v_mfma_f32_16x16x1_4b_f32", "__builtin_amdgcn_mfma_f32_16x16x1f32", F32, F32, F32, 16, 16, 1, 4, 1, 1, 16, "float", "float", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_4x4x1_16b_f32", "__builtin_amdgcn_mfma_f32_4x4x1f32", F32, F32, F32, 4, 4, 1, 16, 1, 1, 4, "float", "float", "ckgen::float4_t", 8),
    _mi("v_mfma_f32_32x32x2_f32", "__builtin_amdgcn_mfma_f32_32x32x2f32", F32, F32, F32, 32, 32, 2, 1, 1, 1, 16, "float", "float", "ckgen::float16_t", 64),
    _mi("v_mfma_f32_16x16x4_f32", "__builtin_amdgcn_mfma_f32_16x16x4f32", F32, F32, F32, 16, 16, 4, 1, 1, 1, 4, "float", "float", "ckgen::float4_t", 32),
    _mi("v_mfma_f32_32x32x4_2b_f16", "__builtin_amdgcn_mfma_f32_32x32x4f16", F16, F16, F32, 32, 32, 4, 2, 2, 2, 32, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float32_t", 64),
    _mi("v_mfma_f32_16x16x4_4b_f16", "__builtin_amdgcn_mfma_f32_16x16x4f16", F16, F16, F32, 16, 16, 4, 4, 2, 2, 16, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_4x4x4_16b_f16", "__builtin_amdgcn_mfma_f32_4x4x4f16", F16, F16, F32, 4, 4, 4, 16, 2, 2, 4, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float4_t", 8),
    _mi("v_mfma_f32_32x32x8_f16", "__builtin_amdgcn_mfma_f32_32x32x8f16", F16, F16, F32, 32, 32, 8, 1, 2, 2, 16, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_16x16x16_f16", "__builtin_amdgcn_mfma_f32_16x16x16f16", F16, F16, F32, 16, 16, 16, 1, 2, 2, 4, "ckgen::half4_t", "ckgen::half4_t", "ckgen::float4_t", 16),
    _mi("v_mfma_i32_32x32x4_2b_i8", "__builtin_amdgcn_mfma_i32_32x32x4i8", I8, I8, I32, 32, 32, 4, 2, 1, 1, 32, "int", "int", "ckgen::int32_t", 64),
    _mi("v_mfma_i32_16x16x4_4b_i8", "__builtin_amdgcn_mfma_i32_16x16x4i8", I8, I8, I32, 16, 16, 4, 4, 1, 1, 16, "int", "int", "ckgen::int16_t", 32),
    _mi("v_mfma_i32_4x4x4_16b_i8", "__builtin_amdgcn_mfma_i32_4x4x4i8", I8, I8, I32, 4, 4, 4, 16, 1, 1, 4, "int", "int", "ckgen::int4_t", 8),
    _mi("v_mfma_i32_32x32x16_i8", "__builtin_amdgcn_mfma_i32_32x32x16_i8", I8, I8, I32, 32, 32, 16, 1, 2, 2, 16, "long", "long", "ckgen::int16_t", 32),
    _mi("v_mfma_i32_16x16x32_i8", "__builtin_amdgcn_mfma_i32_16x16x32_i8", I8, I8, I32, 16, 16, 32, 1, 2, 2, 4, "long", "long", "ckgen::int4_t", 16),
    _mi("v_mfma_f32_32x32x4_2b_bf16", "__builtin_amdgcn_mfma_f32_32x32x4bf16_1k", BF16, BF16, F32, 32, 32, 4, 2, 2, 2, 32, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float32_t", 64),
    _mi("v_mfma_f32_16x16x4_4b_bf16", "__builtin_amdgcn_mfma_f32_16x16x4bf16_1k", BF16, BF16, F32, 16, 16, 4, 4, 2, 2, 16, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_4x4x4_16b_bf16", "__builtin_amdgcn_mfma_f32_4x4x4bf16_1k", BF16, BF16, F32, 4, 4, 4, 16, 2, 2, 4, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float4_t", 8),
    _mi("v_mfma_f32_32x32x8_bf16", "__builtin_amdgcn_mfma_f32_32x32x8bf16_1k", BF16, BF16, F32, 32, 32, 8, 1, 2, 2, 16, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_16x16x16_bf16", "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k", BF16, BF16, F32, 16, 16, 16, 1, 2, 2, 4, "ckgen::short4_t", "ckgen::short4_t", "ckgen::float4_t", 16),
    _mi("v_mfma_f64_16x16x4_f64", "__builtin_amdgcn_mfma_f64_16x16x4f64", F64, F64, F64, 16, 16, 4, 1, 2, 2, 8, "double", "double", "ckgen::double4_t", 64),
    _mi("v_mfma_f64_4x4x4_4b_f64", "__builtin_amdgcn_mfma_f64_4x4x4f64", F64, F64, F64, 4, 4, 4, 4, 2, 2, 2, "double", "double", "double", 16),
    _mi("v_mfma_f32_16x16x32_bf8_bf8", "__builtin_amdgcn_mfma_f32_16x16x32_bf8_bf8", BF8, BF8, F32, 16, 16, 32, 1, 2, 2, 4, "long", "long", "ckgen::float4_t", 16),
    _mi("v_mfma_f32_16x16x32_bf8_fp8", "__builtin_amdgcn_mfma_f32_16x16x32_bf8_fp8", BF8, FP8, F32, 16, 16, 32, 1, 2, 2, 4, "long", "long", "ckgen::float4_t", 16),
    _mi("v_mfma_f32_16x16x32_fp8_bf8", "__builtin_amdgcn_mfma_f32_16x16x32_fp8_bf8", FP8, BF8, F32, 16, 16, 32, 1, 2, 2, 4, "long", "long", "ckgen::float4_t", 16),
    _mi("v_mfma_f32_16x16x32_fp8_fp8", "__builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8", FP8, FP8, F32, 16, 16, 32, 1, 2, 2, 4, "long", "long", "ckgen::float4_t", 16),
    _mi("v_mfma_f32_32x32x16_bf8_bf8", "__builtin_amdgcn_mfma_f32_32x32x16_bf8_bf8", BF8, BF8, F32, 32, 32, 16, 1, 2, 2, 16, "long", "long", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_32x32x16_bf8_fp8", "__builtin_amdgcn_mfma_f32_32x32x16_bf8_fp8", BF8, FP8, F32, 32, 32, 16, 1, 2, 2, 16, "long", "long", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_32x32x16_fp8_bf8", "__builtin_amdgcn_mfma_f32_32x32x16_fp8_bf8", FP8, BF8, F32, 32, 32, 16, 1, 2, 2, 16, "long", "long", "ckgen::float16_t", 32),
    _mi("v_mfma_f32_32x32x16_fp8_fp8", "__builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8", FP8, FP8, F32, 32, 32, 16, 1, 2, 2, 16, "long", "long", "ckgen::float16_t", 32),
)
# ---- END GENERATED ----

#: Instructions that exist but that the planner must not choose implicitly, per arch.
XF32_INSTRUCTIONS: dict[str, tuple[MatrixInstr, ...]] = {"gfx942": GFX942_XF32_MFMA}

# ---- [mx] the block-scaled (OCP microscaling) MFMA that `scale_a = mx(32)` kernels use, per arch. ----
# Called as builtin(a, b, c, a_format, b_format, opsel_a, scale_a, opsel_b, scale_b): format 0 = e4m3 (fp8),
# 1 = e5m2 (bf8), 4 = e2m1 (fp4: 32 values in the operand's low 16 bytes, two per byte along K; 2, 3 are fp6,
# unused); scale_x is a 32-bit VGPR whose byte opsel_x is the lane's E8M0
# scale. Sources (facts only; tests/data/mfma_scale_layouts.README.md has the details):
#   shape, operand types and mnemonic: LLVM IntrinsicsAMDGPU.td (llvm-22) int_amdgcn_mfma_scale_f32_32x32x64_f8f6f4
#   and clang++-22 -> llvm-objdump-22 (tests/targets/test_amd_mx_compile.py); cycles (cost models only): 64 with fp8
#   operands, from the peak rate: the ROCm blog below gives MI355X fp8 as ~32x its fp32 (157.3 TF: ~5 PF dense),
#   i.e. 2048 flops per SIMD per clock at 256 CUs and 2.4 GHz, and 2 * 32 * 32 * 64 / 2048 = 64 (llvm-mca-22's gfx950
#   model gives 8 passes, 32 cycles, for every format and for 32x32x16 fp8 alike: not used);
#   operand lane layout (A, B, C/D) and the format codes: AMD's ROCm blog "Matrix Core Programming on AMD CDNA3
#   and CDNA4 architecture" (github ROCm/rocm-blogs, blogs/software-tools-optimization/matrix-cores-cdna), its
#   fp8 32x32x64 example kernel; scale lanes: lane l holds row (A) / column (B) l % 32 of K block l / 32
#   (triton-lang/triton, LinearLayoutConversions.cpp chooseScaledMfmaScaleLayout, mfmaMDim == 32), and the
#   blog: "Ax of size 32x2 ... each thread stores 1 entry". The 16x16x128 form is left out: no published fp8
#   operand layout was found for it.
GFX950_MX_MFMA: tuple[MatrixInstr, ...] = (
    replace(_mi("v_mfma_scale_f32_32x32x64_f8f6f4", "__builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4", FP8, FP8, F32,
                32, 32, 64, 1, 8, 8, 16, "ckgen::i32x8_t", "ckgen::i32x8_t", "ckgen::float16_t", 64),
            frag_runs=2),  # (fp8: a lane's 32 K's are two runs of 16, at 16 (lane / 32) and 32 more; the blog above)
)
#: K elements that share one E8M0 scale in the scaled MFMA (the OCP MX block size).
MX_BLOCK_K = 32
#: the scaled MFMA's operand format code (its cbsz / blgp fields) per operand kind: e4m3 (fp8), e5m2 (bf8), fp4 pairs
MX_OPERAND_FORMATS = {DType.FP8: 0, DType.BF8: 1, DType.E2M1FN_X2: 4}
MX_INSTRUCTIONS: dict[str, tuple[MatrixInstr, ...]] = {"gfx950": GFX950_MX_MFMA}

_CDNA = dict(vendor="amd", wave_size=64, vgprs=256, agprs=256, simds_per_cu=4,
             sgprs=102,                 # [occ] addressable SGPRs per wave
             sgprs_per_simd=800,        # [occ] 800 SGPRs per SIMD on gfx9
             sgpr_granule=16,           # [occ] SGPRs are allocated in blocks of 16 on gfx9
             sgpr_extra_max=6,          # [occ] VCC / XNACK_MASK / FLAT_SCRATCH on top of the 102
             max_workgroups_per_cu=16,  # [occ] barrier-limited workgroups per CU
             # [occ] LLVM getOccupancyWithNumSGPRs for gfx8/9: <= 80 SGPRs -> 10 waves, 88 -> 9, 100 -> 8, else 7
             llvm_sgpr_steps=((80, 10), (88, 9), (100, 8)), llvm_sgpr_floor=7,
             lds_bank_bytes=4,          # [lds]
             valu_lanes_per_cu=64,      # [specs] 4 SIMDs x 16 lanes (a wave64 VALU op takes 4 cycles), unpacked f32
             matrix_mnemonics=("v_mfma", "v_smfmac"))

GFX908 = Target(
    name="gfx908", family="CDNA1", part="MI100", **_CDNA,
    lds_bytes=65536,            # [llvm] addressable local memory 64 KiB
    lds_bytes_per_cu=65536,     # [specs] LDS 64 KiB
    unified_vgpr_file=False,    # [specs] 256 VGPR + 256 AccVGPR, separate files
    vgprs_per_simd_lane=256,    # [llvm] getTotalNumVGPRs = 256 (and 256 AGPRs beside them)
    vgpr_granule=4,             # [llvm] wave64 without GFX90AInsts (VGPR and AGPR files alike)
    max_waves_per_simd=10,      # [llvm] getMaxWavesPerEU = 10 on gfx9 before gfx90a
    lds_banks=32,               # [lds]
    cus=120,                    # [specs] MI100
    clock_mhz=1502, mem_gbps=1228,  # [specs] peak engine clock, HBM2 (cost models only)
    min_clang=19,               # oldest clang ckgen verifies with (LLVM has had gfx908 since 10)
    instructions=GFX908_MFMA,
    features=frozenset(),
)

GFX90A = Target(
    name="gfx90a", family="CDNA2", part="MI250X (one GCD: 110 of its 220 CUs; each GCD is one HIP device)",
    **_CDNA,
    lds_bytes=65536, lds_bytes_per_cu=65536,   # [llvm], [specs]
    unified_vgpr_file=True,     # [specs] 512 KiB per CU: one file of 512 per lane, arch VGPRs then AGPRs
    vgprs_per_simd_lane=512,    # [llvm] getTotalNumVGPRs = 512 with GFX90AInsts
    vgpr_granule=8,             # [llvm] getVGPRAllocGranule = 8 with GFX90AInsts
    max_waves_per_simd=8,       # [llvm] getMaxWavesPerEU = 8 with GFX90AInsts
    lds_banks=32,               # [lds]
    cus=110,                    # [specs] MI250X: 220 CUs = 2 GCDs x 110
    clock_mhz=1700, mem_gbps=1638,  # [specs] per GCD: half of 3.2768 TB/s (cost models only)
    min_clang=19,
    instructions=GFX90A_MFMA,
    features=frozenset({FEATURE_MFMA_CD_IN_VGPRS, FEATURE_BF16_1K, FEATURE_F64_MFMA, FEATURE_PACKED_FP32}),
)

GFX942 = Target(
    name="gfx942", family="CDNA3", part="MI300X", **_CDNA,
    lds_bytes=65536, lds_bytes_per_cu=65536,   # [llvm], [specs]
    unified_vgpr_file=True, vgprs_per_simd_lane=512, vgpr_granule=8,   # [llvm], [specs]
    max_waves_per_simd=8,       # [llvm]
    lds_banks=32,               # [lds]
    cus=304,                    # [specs] MI300X: 8 XCDs x 38
    clock_mhz=2100, mem_gbps=5300,  # [specs] (cost models only)
    min_clang=19,
    instructions=GFX942_MFMA,
    features=frozenset({FEATURE_MFMA_CD_IN_VGPRS, FEATURE_BF16_1K, FEATURE_F64_MFMA, FEATURE_PACKED_FP32,
                        FEATURE_FP8, FEATURE_FP8_FNUZ, FEATURE_XF32}),
)

GFX950 = Target(
    name="gfx950", family="CDNA4", part="MI355X", **_CDNA,
    lds_bytes=163840,           # [llvm] a workgroup may allocate all 160 KiB (limit 163840 bytes)
    lds_bytes_per_cu=163840,    # [specs] LDS 160 KiB
    unified_vgpr_file=True, vgprs_per_simd_lane=512, vgpr_granule=8,   # [llvm], [specs] 512 KiB per CU
    max_waves_per_simd=8,       # [llvm]
    lds_banks=64,               # [lds] CDNA4 doubled the LDS banks (and the LDS: 160 KiB)
    cus=256,                    # [specs] MI355X: 8 XCDs x 32
    clock_mhz=2400, mem_gbps=8000,  # [specs] (cost models only)
    lds_granule_bytes=1280,     # [llvm] AMDGPUUsage: COMPUTE_PGM_RSRC2.LDS_SIZE granule of 320 dwords on gfx950
    min_clang=22,               # the clang here that targets gfx950 (clang-19 does not)
    instructions=GFX950_MFMA,
    features=frozenset({FEATURE_MFMA_CD_IN_VGPRS, FEATURE_BF16_1K, FEATURE_F64_MFMA, FEATURE_PACKED_FP32,
                        FEATURE_FP8, FEATURE_FP8_OCP, FEATURE_MFMA_SCALE_F8F6F4}),
)

AMD_TARGETS: dict[str, Target] = {t.name: t for t in (GFX908, GFX90A, GFX942, GFX950)}
