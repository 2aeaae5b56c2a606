"""The NVIDIA rows of the targets table (ckgen/targets/nvidia.py), and how specs plan on them."""

import pytest

from ckgen.errors import ValidationError
from ckgen.frontend import load_text
from ckgen.ir.types import DType
from ckgen.lower import plan_kernel
from ckgen.targets import get_target, nvidia_targets
from ckgen.targets.nvidia import nvcc_arch_flags


def test_both_targets_present():
    assert {t.name for t in nvidia_targets()} == {"sm_80", "sm_90"}


@pytest.mark.parametrize("arch,smem,sms", [("sm_90", 227 * 1024, 132), ("sm_80", 163 * 1024, 108)])
def test_numbers(arch, smem, sms):
    t = get_target(arch)
    assert t.vendor == "nvidia" and t.wave_size == 32 and t.platform == "cuda"
    assert t.lds_bytes == smem and t.lds_bytes_per_cu == smem + 1024 and t.cus == sms
    assert t.vgprs == 255 and t.agprs == 0 and t.lds_pad_bytes == 0 and not t.lds_swizzle
    assert t.matrix_mnemonics[:2] == ("HMMA", "IMMA")


@pytest.mark.parametrize("a,acc,shape,ptx", [
    (DType.F16, DType.F32, (16, 8, 16), "m16n8k16_f32_f16"),
    (DType.BF16, DType.F32, (16, 8, 16), "m16n8k16_f32_bf16"),
    (DType.I8, DType.I32, (16, 8, 32), "m16n8k32_s32_s8"),
    (DType.F32, DType.F32, (16, 8, 8), "m16n8k8_f32_tf32"),
])
def test_mma_sync_instructions(a, acc, shape, ptx):
    for t in nvidia_targets():
        found = t.instructions_for(a, a, acc)
        assert len(found) == 1
        i = found[0]
        assert i.shape == shape and i.kind == "mma_sync" and i.builtin.endswith(ptx)
        # per-thread registers: A 16xK, B Kx8, C 16x8 over 32 threads in 32-bit registers
        assert i.a_regs * 4 * 32 == 16 * i.k * a.bytes and i.b_regs * 4 * 32 == 8 * i.k * a.bytes
        assert i.c_regs * 32 == 16 * 8


def test_arch_flags():
    assert nvcc_arch_flags(get_target("sm_90")) == ["-gencode=arch=compute_90a,code=sm_90a",
                                                    "-gencode=arch=compute_90a,code=compute_90a"]
    assert nvcc_arch_flags(get_target("sm_80")) == ["-gencode=arch=compute_80,code=sm_80",
                                                    "-gencode=arch=compute_80,code=compute_80"]


SPEC = """
target sm_90
kernel k {
  A = bf16 row
  B = bf16 row
  C = bf16 row
  tile = 128x256x32
  waves = 2x4
  lds_buffers = 4
}
"""


def test_waves_are_warps():
    plan = plan_kernel(load_text(SPEC)[0], get_target("sm_90"))
    assert plan.threads == 256 and plan.body.instr.shape == (16, 8, 16) and plan.body.lds.buffers == 4
    assert plan.body.lds.total_bytes == 4 * (128 + 256) * 32 * 2  # no padding: swizzled tiles


def test_amd_instruction_named_on_nvidia():
    spec = load_text(SPEC.replace("lds_buffers = 4", "instr = 32x32x8"))[0]
    with pytest.raises(ValidationError) as e:
        plan_kernel(spec, get_target("sm_90"))
    assert e.value.param == "instr" and "16x8x16" in e.value.legal


def test_too_deep_pipeline():
    spec = load_text(SPEC.replace("lds_buffers = 4", "lds_buffers = 7"))[0]
    with pytest.raises(ValidationError) as e:
        plan_kernel(spec, get_target("sm_90"))
    assert e.value.param == "lds_buffers"


def test_smem_limit_differs_per_arch():
    # 6 stages of a 256x256x64 bf16 tile: 6 * 64 KiB > 227 KiB
    big = SPEC.replace("tile = 128x256x32", "tile = 256x128x64").replace("waves = 2x4", "waves = 4x2")
    big = big.replace("lds_buffers = 4", "lds_buffers = 5")
    spec = load_text(big)[0]
    with pytest.raises(ValidationError) as e:
        plan_kernel(spec, get_target("sm_90"))
    assert e.value.param == "tile"
