"""Rung 1 for every dtype and for strided-batched GEMM: generated kernels compile for gfx90a, gfx942 (clang-19)
and gfx950 (clang-22), their disassembly holds the planned v_mfma instruction inside the main loop, as many
per loop iteration as the plan issues per K tile (or a multiple, when the compiler unrolls), and nothing spills."""

import shutil

import pytest

from ckgen import driver

KERNELS = """
kernel t_f16  { A = f16 row  B = f16 col  C = f16 row  tile = 64x64x32  waves = 2x2 epilogue = bias(col) -> gelu }
kernel t_bf16 { A = bf16 col B = bf16 row C = bf16 col tile = 64x64x32  waves = 2x2 beta = 1.0 }
kernel t_f32  { A = f32 row  B = f32 row  C = f32 row  tile = 64x64x16  waves = 2x2 epilogue = silu }
kernel t_i8   { A = i8 row   B = i8 col   C = i32 row  tile = 64x64x64  waves = 2x2 }
kernel t_bmm  { A = bf16 row B = bf16 col C = bf16 row tile = 128x128x32 waves = 2x2 batched = true epilogue = bias(col) }
"""

EXPECTED = {  # (kernel, arch) -> mnemonic; independent of the planner's table lookups
    ("t_f16", "gfx90a"): "v_mfma_f32_32x32x8f16", ("t_f16", "gfx942"): "v_mfma_f32_32x32x8_f16",
    ("t_f16", "gfx950"): "v_mfma_f32_32x32x16_f16",
    ("t_bf16", "gfx90a"): "v_mfma_f32_32x32x8bf16_1k", ("t_bf16", "gfx942"): "v_mfma_f32_32x32x8_bf16",
    ("t_bf16", "gfx950"): "v_mfma_f32_32x32x16_bf16",
    ("t_f32", "gfx90a"): "v_mfma_f32_32x32x2f32", ("t_f32", "gfx942"): "v_mfma_f32_32x32x2_f32",
    ("t_f32", "gfx950"): "v_mfma_f32_32x32x2_f32",
    ("t_i8", "gfx90a"): "v_mfma_i32_32x32x8i8", ("t_i8", "gfx942"): "v_mfma_i32_32x32x16_i8",
    ("t_i8", "gfx950"): "v_mfma_i32_32x32x32_i8",
    ("t_bmm", "gfx90a"): "v_mfma_f32_32x32x8bf16_1k", ("t_bmm", "gfx942"): "v_mfma_f32_32x32x8_bf16",
    ("t_bmm", "gfx950"): "v_mfma_f32_32x32x16_bf16",
}


@pytest.mark.parametrize("arch,clang", [("gfx90a", "clang++-19"), ("gfx942", "clang++-19"), ("gfx950", "clang++-22")])
def test_every_dtype_compiles_with_its_mfma(tmp_path, monkeypatch, arch, clang):
    if shutil.which(clang) is None:
        pytest.skip(f"{clang} is not installed (tools/install.sh installs it)")
    monkeypatch.setenv("CKGEN_CACHE_DIR", str(tmp_path / "cache"))
    from ckgen import config

    config.reload()
    try:
        src = tmp_path / "dtypes.ck"
        src.write_text(KERNELS)
        (lib,) = driver.compile_files([src], (arch,), tmp_path / "out", jobs=2)
    finally:
        monkeypatch.undo()
        config.reload()
    plans = {p.name: p for p in lib.plans}
    for name in ("t_f16", "t_bf16", "t_f32", "t_i8", "t_bmm"):
        res = lib.resources[(name, arch)]
        want = EXPECTED[(name, arch)]
        assert res["mfma"].get(want, 0) > 0, (name, res["mfma"])
        b = plans[name].body
        per_tile = b.repeats[0] * b.repeats[1] * plans[name].spec.params.config.tile[2] // b.instr.k
        assert res["mfma_in_main_loop"] > 0 and res["mfma_in_main_loop"] % per_tile == 0, (name, res, per_tile)
        assert res["vgpr_spills"] == res["sgpr_spills"] == res["scratch_bytes"] == 0
