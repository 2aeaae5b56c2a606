"""``ckgen compile``'s note on kernels that spill registers (ckgen.driver.spill_notes), from manifest resources of
both vendors' shapes (the keys are the manifest's: AMD ``vgpr_spills`` ..., NVIDIA ``spill_stores`` ...)."""

from ckgen.driver import SPILL_KEYS, spill_notes


def test_spilling_kernels_are_named_with_their_counts():
    res = {("amd_ok", "gfx942"): {"vgpr_spills": 0, "sgpr_spills": 0, "scratch_bytes": 0, "vgprs": 128},
           ("amd_bad", "gfx90a"): {"vgpr_spills": 12, "sgpr_spills": 0, "scratch_bytes": 48},
           ("nv_bad", "sm_90"): {"spill_stores": 16, "spill_loads": 32, "registers": 168},
           ("nv_body", "sm_90"): {"spill_stores": 0, "tma_body": {"entry": "nv_body_tma", "spill_loads": 8}},
           ("nv_ok", "sm_90"): {"spill_stores": 0, "spill_loads": 0, "tma_body": {"spill_stores": 0},
                                "parts": {"nv_ok_combine": {"spill_stores": 0}}},
           ("nv_part", "sm_90"): {"spill_stores": 0, "parts": {"nv_part_combine": {"spill_stores": 4}}},
           ("nv_portable", "sm_90"): {"spill_stores": 140, "tma_body": {"entry": "nv_portable_tma",
                                                                       "spill_stores": 0}}}
    notes = spill_notes(res)
    assert len(notes) == 5
    assert notes[0].startswith("amd_bad on gfx90a spills registers (vgpr_spills 12, scratch_bytes 48)")
    assert notes[1].startswith("nv_bad on sm_90 spills registers (spill_stores 16, spill_loads 32)")
    assert notes[2].startswith("nv_body on sm_90 (entry nv_body_tma) spills registers (spill_loads 8)")
    assert notes[3].startswith("nv_part on sm_90 (entry nv_part_combine) spills registers (spill_stores 4)")
    # only the portable entry spills beside a clean Hopper body: said so, with where that entry runs
    assert notes[4].startswith("nv_portable on sm_90: its portable entry spills registers (spill_stores 140)")
    assert "nv_portable_tma, no spills" in notes[4] and "unaligned" in notes[4]
    assert not any("_ok" in n for n in notes)


def test_the_keys_are_the_reports_own():
    from dataclasses import fields

    from ckgen.backends.amd.report import KernelReport
    from ckgen.backends.nvidia.compiler import NvKernelReport

    nv, amd = {f.name for f in fields(NvKernelReport)}, {f.name for f in fields(KernelReport)}
    assert set(SPILL_KEYS) == {"spill_stores", "spill_loads"} | {"vgpr_spills", "sgpr_spills", "scratch_bytes"}
    assert {"spill_stores", "spill_loads"} <= nv and {"vgpr_spills", "sgpr_spills", "scratch_bytes"} <= amd
