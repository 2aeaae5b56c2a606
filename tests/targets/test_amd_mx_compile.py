"""Rung 1 for the block-scaled MFMA table (ckgen.targets.amd.MX_INSTRUCTIONS): each entry's builtin, called with
the table's operand types, both fp8 formats and a per-lane scale word, compiles for its arch with the arch's
clang and disassembles to exactly the entry's mnemonic; an arch without the instruction refuses the builtin."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckgen.ir.target import MatrixInstr
from ckgen.targets import get_target
from ckgen.targets.amd import MX_INSTRUCTIONS
from tests.targets.test_amd_compile import _compile, _mfma_per_kernel, _need_tools, _prelude

ENTRIES = [(arch, ins) for arch, instrs in MX_INSTRUCTIONS.items() for ins in instrs]


def _kernels(ins: MatrixInstr) -> str:
    out = [_prelude(), "namespace ckgen { typedef int i32x8_t __attribute__((ext_vector_type(8))); }\n"]
    for n, (fa, fb) in enumerate(((0, 0), (1, 0), (0, 1), (1, 1))):
        out.append(
            f"static_assert(sizeof({ins.a_operand}) == {4 * ins.a_regs}, \"A operand size\");\n"
            f"static_assert(sizeof({ins.c_operand}) == {4 * ins.c_regs}, \"C operand size\");\n"
            f"extern \"C\" __attribute__((global)) void k{n}(const {ins.a_operand}* a, const {ins.b_operand}* b, "
            f"{ins.c_operand}* c, const int* s) {{\n"
            f"  *c = {ins.builtin}(*a, *b, *c, {fa}, {fb}, 0, s[0], 0, s[1]);\n}}\n")
    return "".join(out)


@pytest.mark.parametrize(("arch", "ins"), ENTRIES, ids=[f"{a}-{i.mnemonic}" for a, i in ENTRIES])
def test_scaled_builtin_emits_its_mnemonic(arch: str, ins: MatrixInstr, tmp_path: Path) -> None:
    clang, objdump = _need_tools(get_target(arch))
    res = _compile(clang, arch, _kernels(ins), tmp_path, "mx")
    assert res.returncode == 0, res.stderr[-4000:]
    found = _mfma_per_kernel(objdump, tmp_path / "mx.o")
    assert [found.get(f"k{n}") for n in range(4)] == [{ins.mnemonic}] * 4, found


def test_scaled_builtin_refused_without_the_instruction(tmp_path: Path) -> None:
    target = get_target("gfx942")
    clang, _ = _need_tools(target)
    (ins,) = MX_INSTRUCTIONS["gfx950"]
    res = _compile(clang, target.name, _kernels(ins), tmp_path, "mx942")
    assert res.returncode != 0 and "mfma_scale" in res.stderr
