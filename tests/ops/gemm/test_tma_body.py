"""plan_tma_body: which kernels get the Hopper body (TMA + wgmma, ckgen/ops/gemm/device/gemm_sm90_tma.h)."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ckgen.codegen import render_kernel
from ckgen.frontend import load_text
from ckgen.lower import plan_kernel
from ckgen.targets import get_target


def plan(body: str, arch: str = "sm_90"):
    (s,) = load_text(f"kernel k {{ {body} }}", "t.ck", (arch,))
    return plan_kernel(s, arch)


BIG = "tile = 128x256x64 waves = 2x4 lds_buffers = 4"


@pytest.mark.parametrize("layouts", ["A = bf16 row B = bf16 row", "A = bf16 col B = bf16 col",
                                     "A = f16 row B = f16 col", "A = f16 col B = f16 row"])
def test_every_16bit_layout_gets_the_body(layouts):
    p = plan(f"{layouts} C = f32 row {BIG}")
    assert p.body.tma is not None
    assert p.body.tma.threads == 384                                  # 2 consumer warpgroups + the producer
    assert p.body.tma.stages == 4                                     # as many 48-KiB stages as fit in 227 KiB
    assert p.body.tma.smem_bytes == 1024 + 4 * ((128 + 256) * 64 * 2 + 16) + 8 * 16 * 144  # + epilogue staging
    assert p.to_json()["body"]["tma"] == {"threads": 384, "stages": 4, "smem_bytes": p.body.tma.smem_bytes}


def test_16bit_row_major_c_stores_by_tma_with_three_stages():
    """16-bit row-major C leaves through TMA stores from 8 KiB of swizzled staging per consumer warp (1024-byte
    aligned after the stages' mbarriers): three 48-KiB stages still fit, four do not."""
    p = plan(f"A = bf16 row B = bf16 col C = bf16 row {BIG}")
    bars_end = 3 * ((128 + 256) * 64 * 2 + 16)
    assert p.body.tma.stages == 3
    assert p.body.tma.smem_bytes == 1024 + -(-bars_end // 1024) * 1024 + 8 * 4 * 2048


@pytest.mark.parametrize("mode", ["grouped", "masked"])
def test_grouped_16bit_row_major_c_stores_by_tma_too(mode):
    """Grouped / masked kernels lay out the same TMA-store staging as dense ones (their whole warps' rows leave by
    TMA stores): three stages of the 128x256 tile."""
    dense = plan(f"A = bf16 row B = bf16 col C = bf16 row {BIG}")
    p = plan(f"A = bf16 row B = bf16 col C = bf16 row {BIG} mode = {mode}")
    assert (p.body.tma.stages, p.body.tma.smem_bytes) == (dense.body.tma.stages, dense.body.tma.smem_bytes) == (
        3, 1024 + -(-3 * ((128 + 256) * 64 * 2 + 16) // 1024) * 1024 + 8 * 4 * 2048)


@pytest.mark.parametrize("arch,body", [
    ("sm_80", "A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 3"),  # no TMA
    ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 1"),
    ("sm_90", "A = f32 row B = f32 col C = f32 row tile = 128x256x32 waves = 2x4 lds_buffers = 2"),  # dtype
    ("sm_90", "A = i8 row B = i8 col C = i32 row acc = i32 tile = 128x256x64 waves = 2x4 lds_buffers = 3"),
    ("sm_90", "A = bf16 row B = bf16 col C = bf16 row tile = 128x128x64 waves = 2x2 lds_buffers = 4"),  # warps
    ("sm_90", "A = bf16 row B = bf16 col C = bf16 row tile = 128x64x64 waves = 2x4 lds_buffers = 4"),  # tile
    ("sm_90", "A = bf16 row B = bf16 col C = bf16 row tile = 128x128x32 waves = 2x4 lds_buffers = 4"),  # tile K
    ("sm_90", "A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 4x4 lds_buffers = 4"),  # warps
    ("sm_90", "A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 1"),  # stages
])
def test_other_kernels_keep_the_portable_body_only(arch, body):
    assert plan(body, arch).body.tma is None


@pytest.mark.parametrize("tile,waves,c", [("128x128x64", "2x4", "bf16"), ("128x128x64", "4x2", "f32"),
                                          ("64x256x64", "1x4", "bf16"), ("64x128x64", "2x2", "bf16"),
                                          ("64x128x64", "1x4", "f16")])
def test_narrower_tiles_get_the_body_with_the_deepest_pipeline_that_fits(tile, waves, c):
    """One consumer warpgroup (4 warps) per 64 rows, wgmma m64n128 or m64n256: the stages are as many as fit
    beside the epilogue staging (N / 64 boxes of 2 KiB per consumer warp for 16-bit row-major C)."""
    m, n, k = map(int, tile.split("x"))
    p = plan(f"A = bf16 row B = bf16 col C = {c} row tile = {tile} waves = {waves} lds_buffers = 4 prefetch = 0")
    warps = 4 * m // 64
    assert p.body.tma is not None and p.body.tma.threads == warps * 32 + 128
    tma_store = c != "f32"

    def smem(stages):
        bars_end = stages * ((m + n) * k * 2 + 16)
        return 1024 + (-(-bars_end // 1024) * 1024 if tma_store else bars_end) + warps * (
            n // 64 * 2048 if tma_store else 16 * 144)

    lds = get_target("sm_90").lds_bytes
    assert p.body.tma.smem_bytes == smem(p.body.tma.stages) <= lds
    assert p.body.tma.stages == 8 or smem(p.body.tma.stages + 1) > lds


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["2x4", "4x2"]), st.integers(2, 4), st.sampled_from(["row", "col"]))
def test_body_fits_the_target(waves, stages, b_layout):
    p = plan(f"A = f16 row B = f16 {b_layout} C = f16 row tile = 128x256x64 waves = {waves} lds_buffers = {stages}")
    assert p.body.tma is not None and p.body.tma.smem_bytes <= get_target("sm_90").lds_bytes


# ---------------------------------------------------------------- fp8 (OCP e4m3 / e5m2: wgmma m64nNk32, K-major)
F8 = "A = e4m3fn row B = e4m3fn col C = bf16 row"


@pytest.mark.parametrize("scales", ["", "scale_a = tensor scale_b = tensor", "scale_a = row scale_b = col",
                                    "scale_a = row", "scale_a = block(128) scale_b = block(128)"])
def test_fp8_k_major_kernels_get_the_body(scales):
    """A row-major x B column-major fp8 (the layout of nn.Linear's weight) on the fp8 tiles (K = 128 fp8
    elements: one 128-byte swizzled row), any scaling; the stage is (M + N) x 128 bytes, as a 16-bit K-64 one."""
    tile = "128x128x128" if "block" in scales else "128x256x128"
    p = plan(f"{F8} tile = {tile} waves = 2x4 lds_buffers = 4 {scales}")
    assert p.body.tma is not None and p.body.tma.threads == 384
    n = int(tile.split("x")[1])
    bars_end = p.body.tma.stages * ((128 + n) * 128 + 16)
    assert p.body.tma.smem_bytes == 1024 + -(-bars_end // 1024) * 1024 + 8 * n // 64 * 2048
    assert p.body.tma.stages == (3 if n == 256 else 6)
    (why,) = p.body.why
    assert why.startswith(f"Hopper body (TMA + wgmma m64n{n}k32.f32.e4m3.e4m3")


@pytest.mark.parametrize("types,tile,scales", [
    (F8, "64x128x128 waves = 1x4", "scale_a = tensor scale_b = tensor"),
    (F8, "128x256x128 waves = 2x4", "scale_a = row scale_b = col epilogue = bias(col)"),
    (F8, "128x128x128 waves = 2x4", ""),
    ("A = bf16 row B = bf16 col C = bf16 row", "128x256x64 waves = 2x4", "scale_a = row scale_b = tensor"),
    ("A = f16 col B = f16 row C = f16 row", "64x128x64 waves = 1x4", "scale_b = col")])
@pytest.mark.parametrize("schedule", ["splitk", "splitk(3)", "splitk(atomic)", "streamk"])
def test_scheduled_scaled_kernels_get_the_body(types, tile, scales, schedule):
    """Split-K and stream-K with tensor / row / col scales (fp8 or 16-bit): the same body and stages as the one
    tile per workgroup kernel (the parts meet unscaled; the last contributor scales their sum), and the generated
    source defines the scaled scheduled entry."""
    body = f"{types} tile = {tile} lds_buffers = 4 {scales}"
    p, whole = plan(f"{body} schedule = {schedule}"), plan(body)
    assert p.body.tma == whole.body.tma and p.body.tma is not None
    assert p.body.schedule is not None and p.body.why == whole.body.why
    src = render_kernel(p)
    macro = "CKGEN_TMA_GEMM_SCALED_SCHED_ENTRY" if scales.startswith("scale") else "CKGEN_TMA_GEMM_SCHED_ENTRY"
    assert f"{macro}(k, " in src


@pytest.mark.parametrize("body", [f"{F8} tile = 64x64x128 scale_a = tensor scale_b = tensor",
                                  f"{F8} tile = 64x64x128 scale_a = block(128) scale_b = block(128)",
                                  "A = bf16 col B = bf16 row C = f32 row tile = 64x64x64"])
def test_the_narrow_tile_gets_the_body(body):
    """64 x 64 (few rows of A: twice the workgroups of 64 x 128 over the same columns), fp8 with any scaling (block
    scales: half of one 128-column block of B's) and 16-bit in any layout: one consumer warpgroup of wgmma m64n64."""
    p = plan(f"{body} waves = 1x4 lds_buffers = 4")
    assert p.body.tma is not None and p.body.tma.threads == 256
    assert all("m64n64k" in w for w in p.body.why)


@pytest.mark.parametrize("body", [f"{F8} tile = 128x192x128 scale_a = row scale_b = col",
                                  f"{F8} tile = 128x192x128",
                                  "A = f16 row B = f16 col C = f32 row tile = 128x192x64 epilogue = bias(col)",
                                  "A = bf16 col B = bf16 col C = bf16 row tile = 128x192x64 schedule = streamk"])
def test_the_192_column_tile_gets_the_body(body):
    """128 x 192 (widths that 192-column tiles fill in whole waves: 4608 = 24 x 192), fp8 with tensor / row / col
    scales and 16-bit: two consumer warpgroups of wgmma m64n192, 40-KiB stages (4608 x 3584: 384 tiles, 2.9 waves
    of 132 SMs, against 288 = 2.2 of 128 x 256)."""
    p = plan(f"{body} waves = 2x4 lds_buffers = 4")
    assert p.body.tma is not None and p.body.tma.threads == 384 and p.body.tma.stages >= 4
    assert all("m64n192k" in w for w in p.body.why)  # (fp8 and scaled kernels say which wgmma; 16-bit ones nothing)
    src = render_kernel(p)
    assert "static constexpr int kTileN = 192;" in src and f"kTmaStages = {p.body.tma.stages};" in src


def test_block_scales_keep_the_192_column_tile_off_the_body():
    """Block(128) scales cross a 128-column block of B's scales on 192 columns (and keep two accumulator sets):
    refused at planning, with the register count that does not fit."""
    from ckgen.errors import CkgenError

    with pytest.raises(CkgenError, match="registers"):
        plan(f"{F8} tile = 128x192x128 waves = 2x4 lds_buffers = 4 scale_a = block(128) scale_b = block(128)")


@pytest.mark.parametrize("epilogue", ["epilogue = swiglu gate = halves", "rope = gptj(128)"])
@pytest.mark.parametrize("tile,waves,wide", [("64x64x64", "1x4", "64x128x64"), ("128x192x64", "2x4", "128x256x64")])
def test_64_and_192_column_tiles_leave_gated_and_rotary_kernels_to_mma_sync(epilogue, tile, waves, wide):
    """A gated tile writes half its columns and a rotary one rotates pairs within the 128 columns of its staging:
    on 64 x 64 and 128 x 192 both keep the mma.sync body (and a tile of 128 or 256 columns the Hopper one)."""
    body = f"A = bf16 row B = bf16 col C = bf16 row waves = {waves} lds_buffers = 4 {epilogue}"
    assert plan(f"{body} tile = {tile}").body.tma is None
    assert plan(f"{body} tile = {wide}").body.tma is not None


@pytest.mark.parametrize("tile,waves", [("64x64x128", "1x4"), ("128x192x128", "2x4")])
def test_64_and_192_column_tiles_leave_rotary_fp8_kernels_to_mma_sync_and_say_why(tile, waves):
    p = plan(f"{F8} tile = {tile} waves = {waves} lds_buffers = 4 rope = gptj(128)")
    assert p.body.tma is None
    (why,) = p.body.why
    n = tile.split("x")[1]
    assert f"{n}-column tile takes no gated or rotary epilogue" in why and why.endswith("mma.sync body runs it")


def test_fp8_e5m2_names_its_wgmma():
    p = plan("A = e5m2 row B = e5m2 col C = f32 row tile = 64x128x128 waves = 1x4 lds_buffers = 2 scale_b = col")
    assert p.body.tma is not None and "m64n128k32.f32.e5m2.e5m2" in p.body.why[0]


@pytest.mark.parametrize("body,reason", [
    ("A = e4m3fn col B = e4m3fn col C = bf16 row tile = 128x256x128 waves = 2x4 lds_buffers = 4", "K-major"),
    ("A = e4m3fn row B = e4m3fn row C = bf16 row tile = 128x256x128 waves = 2x4 lds_buffers = 4", "B row"),
    (f"{F8} tile = 128x256x64 waves = 2x4 lds_buffers = 4", "fp8 tiles are"),
    (f"{F8} tile = 128x128x128 waves = 2x4 lds_buffers = 4 mode = masked", "not masked"),
    (f"{F8} tile = 128x128x128 waves = 4x4 lds_buffers = 4", "4 warps per 64 rows"),
    (f"{F8} tile = 128x256x128 waves = 2x4 lds_buffers = 1", "lds_buffers >= 2"),
    (f"{F8} tile = 128x192x128 waves = 4x4 lds_buffers = 4 scale_a = block(128) scale_b = block(128)",
     "per 128-column block of B"),  # (on 2x4 waves the register check refuses it first)
])
def test_fp8_kernels_the_body_refuses_say_why(body, reason):
    p = plan(body)
    assert p.body.tma is None
    (why,) = p.body.why
    assert why.startswith("no Hopper (TMA + wgmma) body: ") and reason in why and why.endswith("mma.sync body runs it")


def test_16bit_kernels_have_no_why():
    """Nothing changes for 16-bit kernels (their plans, cache keys and sources are what they were)."""
    assert plan(f"A = bf16 row B = bf16 col C = bf16 row {BIG}").body.why == ()
    assert plan("A = bf16 row B = bf16 col C = bf16 row tile = 64x64x64 waves = 2x2").body.why == ()


def test_explain_prints_the_fp8_body_choice(tmp_path, capsys):
    from ckgen.cli import main

    src = tmp_path / "f.ck"
    src.write_text("target sm_90\nkernel f { A = e4m3fn col B = e4m3fn col C = bf16 row tile = 128x256x128 "
                   "waves = 2x4 lds_buffers = 4 scale_a = row }\n")
    assert main(["explain", str(src), "--kernel", "f"]) == 0
    assert "why: no Hopper (TMA + wgmma) body: fp8 wgmma reads both operands K-major" in capsys.readouterr().out



# ---------------------------------------------------------------- scaled 16-bit (scales in the epilogue)
@pytest.mark.parametrize("layouts", ["A = bf16 row B = bf16 col", "A = f16 col B = f16 row"])
@pytest.mark.parametrize("scales,epilogue", [
    ("scale_a = row", ""), ("scale_a = row scale_b = col", "epilogue = bias(col) -> gelu"),
    ("scale_a = tensor scale_b = tensor", ""), ("scale_b = col", "batched = true"),
    ("scale_a = row scale_b = tensor", "epilogue = swiglu"), ("scale_a = tensor", "epilogue = bias(col) -> geglu")])
def test_scaled_16bit_kernels_get_the_body(layouts, scales, epilogue):
    """Tensor / row scales of A and tensor / col scales of B: the same body, stages and staging as the unscaled
    kernel (the TMA-store epilogue of 16-bit row-major C kept), and the plan says so."""
    body = f"{layouts} C = bf16 row {BIG} {epilogue}"
    p, unscaled = plan(f"{body} {scales}"), plan(body)
    assert p.body.tma == unscaled.body.tma and p.body.tma is not None
    (why,) = p.body.why
    a = layouts.split()[2]
    assert why.startswith(f"Hopper body (TMA + wgmma m64n256k16.f32.{a}.{a}, {p.body.tma.stages} stages"), why
    g = p.spec.params.gemm
    assert f"scales A {g.scale_a or 'none'}, B {g.scale_b or 'none'} in its epilogue" in why


@pytest.mark.parametrize("body", [
    "A = bf16 row B = bf16 col C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4 scale_a = row",
    "A = bf16 row B = bf16 col C = f32 row tile = 128x128x64 waves = 2x4 lds_buffers = 4 scale_a = tensor "
    "scale_b = tensor epilogue = bias(row)",
    "A = e4m3fn row B = e4m3fn col C = bf16 row tile = 128x128x128 waves = 2x4 lds_buffers = 4 scale_a = row "
    "scale_b = col epilogue = bias(col)",
])
def test_scaled_grouped_kernels_get_the_body(body):
    """Scaled grouped kernels (16-bit and fp8): the body of the unscaled grouped kernel of the same tile; the walk
    moves the scales to each tile's group (device/gemm_sm90_tma.h)."""
    p, unscaled = plan(f"{body} mode = grouped"), plan(re.sub(r"scale_[ab] = \S+", "", body) + " mode = grouped")
    assert p.body.tma is not None and p.body.tma.stages == unscaled.body.tma.stages
    assert p.body.grouping is not None


@pytest.mark.parametrize("body,reason", [
    ("A = f16 row B = f16 col C = f16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4 "
     "scale_a = block(128) scale_b = block(128)", "block scales for fp8 kernels only"),
])
def test_scaled_16bit_kernels_the_body_refuses_say_why(body, reason):
    p = plan(body)
    assert p.body.tma is None
    (why,) = p.body.why
    assert why.startswith("no Hopper (TMA + wgmma) body: ") and reason in why and why.endswith("mma.sync body runs it")


def test_explain_prints_the_scaled_16bit_body(tmp_path, capsys):
    from ckgen.cli import main

    src = tmp_path / "s.ck"
    src.write_text("target sm_90\nkernel s { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 "
                   "lds_buffers = 4 scale_a = row epilogue = swiglu }\n")
    assert main(["explain", str(src), "--kernel", "s"]) == 0
    out = capsys.readouterr().out
    assert "why: Hopper body (TMA + wgmma m64n256k16.f32.bf16.bf16" in out and "scales A row, B none" in out


# ------------------------------------------------------------------------------ clusters (TMA multicast of B)
@pytest.mark.parametrize("body", [f"A = bf16 row B = bf16 col C = bf16 row {BIG}",
                                  f"A = bf16 row B = bf16 row C = bf16 row {BIG} epilogue = swiglu",
                                  "A = f16 col B = f16 row C = f32 row tile = 64x128x64 waves = 2x2 lds_buffers = 4"])
def test_cluster_2_pairs_tiles_of_the_hopper_body(body):
    p = plan(f"{body} cluster = 2")
    assert p.body.tma.cluster == 2
    assert p.to_json()["body"]["tma"]["cluster"] == 2
    assert p.spec.params.config.to_json()["cluster"] == 2
    assert "kTmaCluster = 2" in render_kernel(p)


def test_cluster_auto_and_1_keep_the_plan_and_its_json():
    auto = plan(f"A = bf16 row B = bf16 col C = bf16 row {BIG}")
    one = plan(f"A = bf16 row B = bf16 col C = bf16 row {BIG} cluster = 1")
    assert auto.body.tma.cluster == one.body.tma.cluster == 1
    assert "cluster" not in auto.to_json()["body"]["tma"] and "cluster" not in auto.spec.params.config.to_json()
    assert "kTmaCluster" not in render_kernel(auto)


@pytest.mark.parametrize("arch,body,why", [
    ("sm_90", f"A = bf16 row B = bf16 col C = bf16 row {BIG} schedule = splitk", "split-K / stream-K"),
    ("sm_90", f"A = bf16 row B = bf16 col C = bf16 row {BIG} schedule = streamk", "split-K / stream-K"),
    ("sm_90", f"A = bf16 row B = bf16 col C = bf16 row {BIG} mode = grouped", "mode = grouped"),
    ("sm_90", "A = e4m3fn row B = e4m3fn col C = bf16 row tile = 128x128x128 waves = 2x4 lds_buffers = 4 "
              "scale_a = block(128) scale_b = block(128)", "block(128) scales"),
    ("sm_90", "A = bf16 row B = bf16 col C = bf16 row tile = 128x128x32 waves = 2x2 lds_buffers = 4",
     "does not get on sm_90"),
    ("gfx942", "A = bf16 row B = bf16 col C = bf16 row tile = 128x128x32 waves = 2x2 lds_buffers = 2",
     "does not get on gfx942"),
])
def test_cluster_2_where_the_hopper_body_has_none_is_refused(arch, body, why):
    from ckgen.errors import CkgenError

    with pytest.raises(CkgenError) as e:
        plan(f"{body} cluster = 2", arch)
    assert "cluster" in str(e.value) and why in str(e.value) and "1 or auto" in str(e.value)


@pytest.mark.parametrize("value", ["3", "0", "two", "1.5"])
def test_cluster_values_are_1_2_or_auto(value):
    from ckgen.errors import CkgenError

    with pytest.raises(CkgenError) as e:
        plan(f"A = bf16 row B = bf16 col C = bf16 row {BIG} cluster = {value}")
    assert "t.ck:1:" in str(e.value) and "1, 2 or auto" in str(e.value)
