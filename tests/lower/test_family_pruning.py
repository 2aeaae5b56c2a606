"""Families at scale (issue 13): illegal members are pruned and reported, a family none of whose members is legal
is an error, and a family whose cross product exceeds the limit is refused before it is expanded."""

from __future__ import annotations

import time

import pytest

from ckgen import driver
from ckgen.errors import CkgenError, ErrorList, SpecError
from ckgen.frontend import load_text
from ckgen.frontend.specs import MAX_FAMILY
from ckgen.lower import plan_all
from ckgen.lower.pipeline import pruned_notes

FAMILY = """
family f {
  A = f16 row  B = f16 col  C = f16 row
  tile in [64x64x32, 16x64x64]
  waves in [2x2, 1x4]
}
"""


def test_illegal_members_are_pruned_and_reported():
    specs = load_text(FAMILY, "f.ck", ("gfx942", "gfx90a"))
    pruned = []
    plans = plan_all(specs, None, pruned)
    assert {p.name for p in plans} == {"f_tile64x64x32_waves2x2", "f_tile64x64x32_waves1x4", "f_tile16x64x64_waves1x4"}
    assert {(d.kernel, d.arch) for d in pruned} == {("f_tile16x64x64_waves2x2", "gfx942"),
                                                    ("f_tile16x64x64_waves2x2", "gfx90a")}
    (note,) = pruned_notes(pruned, specs)
    assert note.startswith("family 'f': 1 of 4 members are illegal and were pruned: ")
    assert "tile = 16x64x64" in note and "legal" not in note.split(":", 1)[0]
    with pytest.raises(CkgenError, match="no f16 instruction fits waves 2x2"):
        plan_all(specs)  # without pruning (a kernel, not a family, fails as before)


def test_a_member_illegal_on_one_arch_leaves_every_arch():
    src = "family g { A = bf16 row B = bf16 col C = bf16 row tile = 64x64x32 waves = 2x2 instr in [32x32x8, auto] }"
    specs = load_text(src, "g.ck", ("gfx942", "gfx908"))  # gfx908 has no bf16 32x32x8
    pruned = []
    plans = plan_all(specs, None, pruned)
    assert {(p.name, p.arch) for p in plans} == {("g_instrauto", "gfx942"), ("g_instrauto", "gfx908")}
    assert [(d.kernel, d.arch) for d in pruned] == [("g_instr32x32x8", "gfx908")]


def test_a_family_with_no_legal_member_is_an_error():
    specs = load_text("family h { A = f16 row B = f16 col C = f16 row tile in [24x24x24, 16x64x64] waves = 2x2 }",
                      "h.ck", ("gfx942",))
    with pytest.raises(ErrorList) as ei:
        plan_all(specs, None, [])
    assert len(ei.value.errors) == 2


def test_compile_notes_come_back(tmp_path):
    src = tmp_path / "f.ck"
    src.write_text(FAMILY)
    notes: list[str] = []
    plans = driver.plan(driver.load([src], ("gfx942",)), ("gfx942",), notes)
    assert len(plans["f"]) == 3 and len(notes) == 1 and "1 of 4" in notes[0]


def test_a_huge_family_is_refused_before_expansion():
    lists = {"tile": 16, "waves": 16, "vec_a": 16, "vec_b": 16, "vec_c": 16, "lds_buffers": 16}  # 16^6 = 16.7M
    body = "\n".join(f"  {k} in [{', '.join(str(i + 1) + ('x64x32' if k == 'tile' else 'x1' if k == 'waves' else '') for i in range(n))}]"
                     for k, n in lists.items())
    text = f"family huge {{\n  A = f16 row B = f16 col C = f16 row\n{body}\n}}\n"
    t0 = time.perf_counter()
    with pytest.raises(SpecError) as ei:
        load_text(text, "huge.ck", ("gfx942",))
    assert time.perf_counter() - t0 < 2.0
    msg = ei.value.render()
    assert "expands to 16,777,216 kernels, over the limit of 10,000" in msg
    assert "tile: 16, waves: 16, vec_a: 16" in msg and "huge.ck:1:8" in msg


def test_the_limit_itself_is_legal():
    text = "family ok { A = f16 row B = f16 col C = f16 row tile = 64x64x32 waves = 2x2 alpha in [" + \
           ", ".join(str(i) for i in range(100)) + "] beta in [" + ", ".join(str(i) for i in range(100)) + "] }"
    assert len(load_text(text, "ok.ck", ("gfx942",))) == MAX_FAMILY
