"""The AMD targets table against AMD's published data, and its internal consistency."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ckgen.errors import ValidationError
from ckgen.ir.target import MatrixInstr, Target
from ckgen.ir.types import DType
from ckgen.targets import TARGETS, amd_targets, get_target, target_names
from ckgen.targets import amd as amd_mod
from ckgen.targets.amd import XF32_INSTRUCTIONS

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "tests" / "data" / "mfma_layouts.json"  # committed copy of ../shared/reference
REF_DTYPES = {"FP16": DType.F16, "BF16": DType.BF16, "FP32": DType.F32, "FP64": DType.F64,
              "int8": DType.I8, "int32": DType.I32, "FP8": DType.FP8, "BF8": DType.BF8}
ALLOWED_OPERANDS = {
    "ckgen::half4_t", "ckgen::half8_t", "ckgen::short2_t", "ckgen::short4_t", "ckgen::short8_t", "float",
    "ckgen::float2_t", "ckgen::float4_t", "ckgen::float16_t", "ckgen::float32_t", "int", "long",
    "ckgen::int4_t", "ckgen::int16_t", "ckgen::int32_t", "double", "ckgen::double4_t",
    "ckgen::bf16x8_t",  # added for the CDNA4 bf16 builtins (vectors of __bf16)
}


def _all(t: Target) -> tuple[MatrixInstr, ...]:
    return t.instructions + XF32_INSTRUCTIONS.get(t.name, ())


@pytest.fixture(scope="module")
def reference() -> dict:
    if not REFERENCE.is_file():
        pytest.skip(f"reference data not found at {REFERENCE}")
    return json.loads(REFERENCE.read_text())


@pytest.mark.parametrize("arch", ["gfx908", "gfx90a", "gfx942"])
def test_entries_match_the_calculator(arch: str, reference: dict) -> None:
    ref = {e["name"]: e for e in reference["instructions"] if e["arch"] == arch}
    table = {i.mnemonic: i for i in _all(get_target(arch))}
    assert set(table) == set(ref), (set(table) ^ set(ref))
    for name, e in ref.items():
        i = table[name]
        got = (i.m, i.n, i.k, i.blocks, i.a_regs, i.b_regs, i.c_regs, i.a_dtype, i.b_dtype, i.acc_dtype, i.cycles)
        want = (e["m"], e["n"], e["k"], e["blocks"], e["a_vgprs"], e["b_vgprs"], e["c_vgprs"],
                REF_DTYPES[e["a_type"]], REF_DTYPES[e["b_type"]], REF_DTYPES[e["c_type"]], e["cycles"])
        assert got == want, name
        assert e["d_type"] == e["c_type"] and e["d_vgprs"] == e["c_vgprs"], name


def test_mfma_cd_in_vgprs_feature_matches_the_calculator(reference: dict) -> None:
    for arch in ("gfx908", "gfx90a", "gfx942"):
        flags = {e["detail"]["Register capabilities"]["C and D matrix can use ArchVGPRs"] == "True"
                 for e in reference["instructions"] if e["arch"] == arch}
        assert len(flags) == 1
        assert (amd_mod.FEATURE_MFMA_CD_IN_VGPRS in get_target(arch).features) == flags.pop(), arch


def test_generated_block_is_current() -> None:
    """tools/gen_amd_mfma.py --check: the committed table equals a fresh generation (incl. gfx950 cycles)."""
    if not REFERENCE.is_file() or shutil.which("llvm-mca-22") is None:
        pytest.skip("needs ../shared/reference/mfma_layouts.json and llvm-mca-22")
    res = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_amd_mfma.py"), "--check"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_gfx950_is_gfx942_without_xf32_plus_cdna4() -> None:
    g942 = {i.mnemonic: i for i in get_target("gfx942").instructions}
    g950 = {i.mnemonic: i for i in get_target("gfx950").instructions}
    new = {"v_mfma_f32_16x16x32_f16", "v_mfma_f32_32x32x16_f16", "v_mfma_f32_16x16x32_bf16",
           "v_mfma_f32_32x32x16_bf16", "v_mfma_i32_16x16x64_i8", "v_mfma_i32_32x32x32_i8"}
    assert set(g950) == set(g942) | new
    assert not any(m.endswith("_xf32") for m in g950)
    assert "gfx950" not in XF32_INSTRUCTIONS and amd_mod.FEATURE_XF32 not in get_target("gfx950").features
    for name, i in g942.items():   # same instruction, same operands; only the timing may differ
        j = g950[name]
        assert (j.builtin, j.shape, j.blocks, j.a_regs, j.b_regs, j.c_regs, j.a_operand, j.c_operand,
                j.a_dtype, j.b_dtype, j.acc_dtype) == (i.builtin, i.shape, i.blocks, i.a_regs, i.b_regs,
                                                       i.c_regs, i.a_operand, i.c_operand, i.a_dtype,
                                                       i.b_dtype, i.acc_dtype)
    # CDNA4 doubled dense f16/bf16/i8 matrix throughput per CU per clock over the CDNA3 instructions.
    for wide, narrow in (("v_mfma_f32_16x16x32_f16", "v_mfma_f32_16x16x16_f16"),
                         ("v_mfma_f32_32x32x16_bf16", "v_mfma_f32_32x32x8_bf16"),
                         ("v_mfma_i32_16x16x64_i8", "v_mfma_i32_16x16x32_i8")):
        w, n = g950[wide], g950[narrow]
        assert w.m * w.n * w.k / w.cycles == 2 * n.m * n.n * n.k / n.cycles


@pytest.mark.parametrize("target", amd_targets(), ids=lambda t: t.name)
def test_instruction_invariants(target: Target) -> None:
    entries = _all(target)
    assert len({i.mnemonic for i in entries}) == len(entries), "duplicate mnemonic"
    assert len({i.builtin for i in entries}) == len(entries), "duplicate builtin"
    lanes = target.wave_size
    for i in entries:
        assert i.kind == "mfma" and i.builtin.startswith("__builtin_amdgcn_mfma_")
        assert i.mnemonic.startswith("v_mfma_")
        assert {i.a_operand, i.b_operand, i.c_operand} <= ALLOWED_OPERANDS, i.mnemonic
        # registers per lane follow from the shape and the element sizes (32-bit registers)
        assert i.a_items(lanes) * i.a_dtype.bits == 32 * i.a_regs, i.mnemonic
        assert i.b_items(lanes) * i.b_dtype.bits == 32 * i.b_regs, i.mnemonic
        assert i.c_items(lanes) * i.acc_dtype.bits == 32 * i.c_regs, i.mnemonic
        assert i.cycles % 4 == 0 and i.cycles >= 8, i.mnemonic    # whole passes of 4 cycles
        assert (i.acc_dtype == DType.I32) == (i.a_dtype == DType.I8), i.mnemonic
    assert all(i.a_dtype == i.b_dtype for i in entries if i.a_dtype not in (DType.FP8, DType.BF8))


@pytest.mark.parametrize("target", amd_targets(), ids=lambda t: t.name)
def test_target_numbers_are_consistent(target: Target) -> None:
    assert target.vendor == "amd" and target.wave_size == 64 and target.simds_per_cu == 4
    assert target.lds_bytes <= target.lds_bytes_per_cu
    assert target.vgprs == 256 and target.agprs == 256 and target.sgprs == 102
    assert 256 % target.vgpr_granule == 0
    if target.unified_vgpr_file:
        assert target.vgprs + target.agprs <= target.vgprs_per_simd_lane
    # VGPR file per CU from the ROCm spec table: 512 KiB on every CDNA part (gfx908: VGPR + AccVGPR).
    files = 1 if target.unified_vgpr_file else 2
    assert files * target.vgprs_per_simd_lane * target.wave_size * 4 * target.simds_per_cu == 512 * 1024
    assert target.part and target.cus > 0 and target.min_clang >= 19


def test_features_agree_with_the_instructions() -> None:
    for t in amd_targets():
        dtypes = {i.a_dtype for i in t.instructions}
        bf16_1k = any(i.a_dtype == DType.BF16 and i.a_regs == 2 for i in t.instructions)
        assert (amd_mod.FEATURE_FP8 in t.features) == (DType.FP8 in dtypes), t.name
        assert (amd_mod.FEATURE_F64_MFMA in t.features) == (DType.F64 in dtypes), t.name
        assert (amd_mod.FEATURE_BF16_1K in t.features) == bf16_1k, t.name
        assert (amd_mod.FEATURE_XF32 in t.features) == (t.name in XF32_INSTRUCTIONS), t.name
        if amd_mod.FEATURE_FP8 in t.features:
            assert len({amd_mod.FEATURE_FP8_FNUZ, amd_mod.FEATURE_FP8_OCP} & t.features) == 1, t.name


def test_planner_choices() -> None:
    """instructions_for: what the planner sees per dtype (single-block, best first)."""
    for t in amd_targets():
        for a, acc in ((DType.F16, DType.F32), (DType.BF16, DType.F32), (DType.F32, DType.F32),
                       (DType.I8, DType.I32)):
            best = t.instructions_for(a, a, acc)
            assert best and all(i.blocks == 1 for i in best), (t.name, a)
            rate = [i.m * i.n * i.k / i.cycles for i in best]
            assert rate == sorted(rate, reverse=True)
        # xf32 is never offered for f32
        assert not any("xf32" in i.mnemonic for i in t.instructions_for(DType.F32, DType.F32, DType.F32))
    assert not get_target("gfx908").instructions_for(DType.FP8, DType.FP8, DType.F32)
    assert not get_target("gfx90a").instructions_for(DType.FP8, DType.FP8, DType.F32)
    assert get_target("gfx942").instructions_for(DType.FP8, DType.BF8, DType.F32)
    # gfx908 bf16: only the half-rate forms (no _1k); gfx90a prefers _1k.
    assert {i.k for i in get_target("gfx908").instructions_for(DType.BF16, DType.BF16, DType.F32)} == {4, 8}
    assert get_target("gfx90a").instructions_for(DType.BF16, DType.BF16, DType.F32)[0].builtin.endswith("_1k")
    # gfx950 prefers the CDNA4 double-rate instructions.
    assert get_target("gfx950").instructions_for(DType.F16, DType.F16, DType.F32)[0].shape == (32, 32, 16)
    assert get_target("gfx942").find_instruction((16, 16, 16), DType.F16, DType.F16, DType.F32).mnemonic \
        == "v_mfma_f32_16x16x16_f16"


def test_get_target_and_unknown_names() -> None:
    for t in amd_targets():
        assert get_target(t.name) is t and TARGETS[t.name] is t
    assert [t.name for t in amd_targets()] == ["gfx908", "gfx90a", "gfx942", "gfx950"]
    assert target_names() == sorted(TARGETS)
    for bad in ("gfx1100", "GFX942", "", None):
        with pytest.raises(ValidationError) as exc:
            get_target(bad)  # type: ignore[arg-type]
        err = exc.value
        assert err.param == "arch" and err.value == bad
        assert err.legal == ", ".join(sorted(TARGETS))
        text = err.render()
        assert f"arch = {bad}: unknown target" in text and "legal: " in text and "gfx90a, gfx942" in text


def test_nvidia_entries_are_merged_when_present() -> None:
    try:
        from ckgen.targets.nvidia import NVIDIA_TARGETS
    except ImportError:
        NVIDIA_TARGETS = {}
    assert set(TARGETS) == set(amd_mod.AMD_TARGETS) | set(NVIDIA_TARGETS)
    for name, t in NVIDIA_TARGETS.items():
        assert get_target(name) is t and t.vendor == "nvidia"
