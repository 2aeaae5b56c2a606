"""Ladder rung 1: the MFMA table compiles for the real chips.

For each AMD arch one HIP source holds one kernel per table entry (plus the xf32 extras on gfx942).
Each kernel calls the entry's builtin with the entry's operand types (sizes pinned to the register
counts by static_assert); the disassembly of that kernel must hold exactly the entry's mnemonic.
A second test proves the table complete with respect to the others: every builtin another AMD
table has and this one lacks must fail to compile for this arch.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ckgen.ir.target import MatrixInstr, Target
from ckgen.targets import amd_targets
from ckgen.targets.amd import XF32_INSTRUCTIONS

# ckgen operand type name -> (element type, lanes); lanes 0 = a scalar type.
OPERAND_TYPES = {
    "float": ("float", 0), "int": ("int", 0), "long": ("long", 0), "double": ("double", 0),
    "ckgen::half4_t": ("_Float16", 4), "ckgen::half8_t": ("_Float16", 8),
    "ckgen::bf16x8_t": ("__bf16", 8),
    "ckgen::short2_t": ("short", 2), "ckgen::short4_t": ("short", 4), "ckgen::short8_t": ("short", 8),
    "ckgen::float2_t": ("float", 2), "ckgen::float4_t": ("float", 4), "ckgen::float16_t": ("float", 16),
    "ckgen::float32_t": ("float", 32), "ckgen::int4_t": ("int", 4), "ckgen::int16_t": ("int", 16),
    "ckgen::int32_t": ("int", 32), "ckgen::double4_t": ("double", 4),
}


def _clang(target: Target) -> str | None:
    return shutil.which(f"clang++-{target.min_clang}")


def _objdump(target: Target) -> str | None:
    return shutil.which(f"llvm-objdump-{target.min_clang}")


def _need_tools(target: Target) -> tuple[str, str]:
    clang, objdump = _clang(target), _objdump(target)
    if clang is None or objdump is None:
        pytest.skip(f"clang++-{target.min_clang} / llvm-objdump-{target.min_clang} not installed "
                    f"(needed for {target.name})")
    return clang, objdump


def _prelude() -> str:
    lines = ["namespace ckgen {"]
    for name, (elem, lanes) in OPERAND_TYPES.items():
        if lanes:
            lines.append(f"typedef {elem} {name.split('::')[1]} __attribute__((ext_vector_type({lanes})));")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _kernel(idx: int, ins: MatrixInstr) -> str:
    return (
        f"static_assert(sizeof({ins.a_operand}) == {4 * ins.a_regs}, \"{ins.mnemonic}: A operand size\");\n"
        f"static_assert(sizeof({ins.b_operand}) == {4 * ins.b_regs}, \"{ins.mnemonic}: B operand size\");\n"
        f"static_assert(sizeof({ins.c_operand}) == {4 * ins.c_regs}, \"{ins.mnemonic}: C operand size\");\n"
        f"extern \"C\" __attribute__((global)) void k{idx}(const {ins.a_operand}* a, const {ins.b_operand}* b, "
        f"{ins.c_operand}* c) {{\n"
        f"  *c = {ins.builtin}(*a, *b, *c, 0, 0, 0);\n}}\n")


def _compile(clang: str, arch: str, source: str, workdir: Path, stem: str) -> subprocess.CompletedProcess:
    src = workdir / f"{stem}.hip"
    src.write_text(source)
    cmd = [clang, "-x", "hip", f"--offload-arch={arch}", "--offload-device-only", "--no-gpu-bundle-output",
           "-nogpuinc", "-nogpulib", "-O3", "-c", str(src), "-o", str(workdir / f"{stem}.o")]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _mfma_per_kernel(objdump: str, obj: Path) -> dict[str, set[str]]:
    out = subprocess.run([objdump, "-d", str(obj)], capture_output=True, text=True, check=True).stdout
    found: dict[str, set[str]] = {}
    current = None
    for line in out.splitlines():
        head = re.match(r"^[0-9a-f]+ <(\w+)>:", line)
        if head:
            current = head.group(1)
            found.setdefault(current, set())
            continue
        m = re.search(r"\b(v_mfma_\w+)", line)
        if m and current is not None:
            found[current].add(m.group(1))
    return found


@pytest.mark.parametrize("target", amd_targets(), ids=lambda t: t.name)
def test_every_builtin_emits_its_mnemonic(target: Target, tmp_path: Path) -> None:
    clang, objdump = _need_tools(target)
    entries = list(target.instructions) + list(XF32_INSTRUCTIONS.get(target.name, ()))
    assert entries
    source = _prelude() + "".join(_kernel(i, ins) for i, ins in enumerate(entries))
    res = _compile(clang, target.name, source, tmp_path, "all")
    assert res.returncode == 0, res.stderr[-4000:]
    found = _mfma_per_kernel(objdump, tmp_path / "all.o")
    wrong = {ins.builtin: (ins.mnemonic, sorted(found.get(f"k{i}", set())))
             for i, ins in enumerate(entries) if found.get(f"k{i}") != {ins.mnemonic}}
    assert not wrong, f"{target.name}: builtin -> (table mnemonic, disassembled): {wrong}"


def _absent(target: Target) -> list[MatrixInstr]:
    """Builtins another AMD table (or xf32 extra) has and this target's table does not."""
    own = {i.builtin for i in target.instructions} | {i.builtin for i in XF32_INSTRUCTIONS.get(target.name, ())}
    others: dict[str, MatrixInstr] = {}
    for t in amd_targets():
        for ins in list(t.instructions) + list(XF32_INSTRUCTIONS.get(t.name, ())):
            if ins.builtin not in own:
                others.setdefault(ins.builtin, ins)
    return list(others.values())


@pytest.mark.parametrize("target", amd_targets(), ids=lambda t: t.name)
def test_builtins_missing_from_the_table_do_not_compile(target: Target, tmp_path: Path) -> None:
    """The table is complete relative to the others: what it lacks, the compiler refuses for this arch."""
    clang, _ = _need_tools(target)
    absent = _absent(target)
    if not absent:
        return
    # Builtins clang's front end refuses are reported together by one compile; the others (refused
    # only by instruction selection, a fatal error) are compiled one by one.
    res = _compile(clang, target.name, _prelude() + "".join(_kernel(i, x) for i, x in enumerate(absent)),
                   tmp_path, "batch")
    assert res.returncode != 0
    rest = [x for x in absent if f"'{x.builtin}' needs target feature" not in res.stderr]

    def one(item: tuple[int, MatrixInstr]) -> tuple[str, int]:
        i, ins = item
        r = _compile(clang, target.name, _prelude() + _kernel(0, ins), tmp_path, f"one{i}")
        return ins.builtin, r.returncode

    with ThreadPoolExecutor(max_workers=4) as pool:
        compiled = [b for b, rc in pool.map(one, enumerate(rest)) if rc == 0]
    assert not compiled, f"{target.name} compiles builtins its table lacks: {compiled}"
