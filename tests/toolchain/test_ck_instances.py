"""composable_kernel's XDL GEMM instance tuples (tests/data/ck_gemm_instances.json: source repository and commit
inside, translated by tools/ck_instances.py; tests/ck_sample.py maps a tuple onto the DSL) through ckgen:
``check`` accepts or refuses each with a reason, and an accepted tuple compiles for gfx942 without VGPR or SGPR
spills and without scratch. The default suite compiles a deterministic spread (every dtype, layout pair and XDL
size, largest and smallest tiles, and the tuples that used to fail); the committed calibration sweep
(tests/data/register_calibration.json) holds the same verdict for all of them (tests/lower/test_registers.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from ckgen.backends.amd import compiler as amd_compiler
from ckgen.errors import CkgenError, ToolchainError, ValidationError
from ckgen.frontend import load_text
from ckgen.lower.pipeline import plan_kernel
from ckgen.targets import get_target
from tests.ck_sample import ck_document, ck_instances, dsl, name_of, sample

ARCH = "gfx942"


def test_the_translation_keeps_every_tuple():
    doc = ck_document()
    assert doc["source"].endswith("composable_kernel") and len(doc["commit"]) == 40
    ts = ck_instances()
    assert sum(t["count"] for t in ts) == 687 and len(ts) == 180
    assert {t["dtype"] for t in ts} == {"f16", "bf16", "f32", "i8"}
    assert {(t["a_layout"], t["b_layout"]) for t in ts} == {("row", "col"), ("row", "row"), ("col", "row"), ("col", "col")}
    for t in ts:  # waves x XDL tiles cover the block tile, and the block is that many waves
        assert t["waves"][0] * t["xdl"][0] * t["xdl_per_wave"][0] == t["tile"][0], t
        assert t["waves"][1] * t["xdl"][1] * t["xdl_per_wave"][1] == t["tile"][1], t
        assert t["waves"][0] * t["waves"][1] * 64 == t["block"], t
    assert len({name_of(t) for t in ts}) == len(ts)


def _verdicts(tuples):
    accepted, refused = [], []
    for t in tuples:
        text = dsl(t, ARCH)
        assert text is not None, f"{name_of(t)}: no {ARCH} instruction"
        try:
            accepted.append(plan_kernel(load_text(text, "ck.ck")[0], ARCH))
        except ValidationError as exc:
            refused.append((t, exc))
    return accepted, refused


def test_every_tuple_is_accepted_or_refused_with_a_reason():
    accepted, refused = _verdicts(ck_instances())
    assert len(accepted) >= 170
    for t, exc in refused:
        assert exc.param == "tile" and exc.legal and exc.value == "x".join(map(str, t["tile"])), exc.render()
    # the 256x256x32 CShuffleV2 tuples fit their 64 KiB of LDS exactly and their 256 accumulators the AGPR file
    names = {p.name for p in accepted}
    assert sum("_256x256x32_w2x2_" in n for n in names) == 4
    assert [name_of(t) for t, _ in refused] == ["ck_f16_rc_128x144x64_w4x1_x16"]   # 69632 bytes of LDS: over 64 KiB
    assert all("LDS" in e.message for _, e in refused)


@pytest.fixture(scope="module")
def sample_reports():
    from ckgen.backends.amd.llvm import find_toolchain

    try:
        find_toolchain(get_target(ARCH))
    except ToolchainError as exc:
        pytest.skip(f"no {ARCH} toolchain: {exc.message}")
    accepted, _ = _verdicts(sample(ck_instances()))
    with tempfile.TemporaryDirectory() as tmp:
        return accepted, amd_compiler.compile_plans("ck_sample", accepted, Path(tmp), 2).reports


def test_accepted_sample_compiles_without_spills(sample_reports):
    accepted, reports = sample_reports
    assert len(accepted) >= 18
    assert {p.spec.params.gemm.a.dtype.value for p in accepted} == {"f16", "bf16", "f32", "i8"}
    assert {p.body.instr.m for p in accepted} == {16, 32}
    bad = []
    for p in accepted:
        r = reports[(p.name, ARCH)]
        assert r.mfma_in_main_loop > 0, p.name
        if r.vgpr_spills or r.sgpr_spills or r.scratch_bytes:
            bad.append((p.name, r.vgprs, r.agprs, r.sgprs, r.vgpr_spills, r.sgpr_spills, r.scratch_bytes))
    assert not bad, bad


def test_the_sample_includes_the_former_failures():
    names = {name_of(t) for t in sample(ck_instances())}
    assert any("_16x16x128_" in n for n in names) and any("_128x144x64_" in n for n in names)
    assert any(n.startswith("ck_i8_") and "_128x256x64_" in n for n in names)
    assert sum("_256x256x32_" in n for n in names) >= 2


def test_refusals_render(tmp_path):
    t = next(t for t in ck_instances() if t["tile"] == [128, 144, 64])
    try:
        plan_kernel(load_text(dsl(t, ARCH), "ck.ck")[0], ARCH)
    except CkgenError as exc:
        text = exc.render()
    else:
        pytest.fail("128x144x64 (69632 bytes of LDS) was accepted")
    assert "tile = 128x144x64" in text and "legal:" in text and "LDS" in text
