"""Every validation error of the lowering passes names the parameter, its value and what is legal."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ckgen.errors import ValidationError
from ckgen.frontend import load_text
from ckgen.lower import plan_kernel
from ckgen.ops.gemm.plan import PASSES


def spec(body: str):
    (s,) = load_text(f"kernel k {{ {body} }}", "v.ck", ("gfx942",))
    return s


F16 = "A = f16 row B = f16 col C = f16 row"


@pytest.mark.parametrize("arch,body,param,value,legal", [
    # tiles not divisible by waves x instruction
    ("gfx942", F16 + " tile = 96x128x32 waves = 2x2 instr = 32x32x8", "tile", "96x128x32", "waves_m*instr_m = 2*32 = 64"),
    ("gfx942", F16 + " tile = 128x96x32 waves = 2x2 instr = 32x32x8", "tile", "128x96x32", "waves_n*instr_n = 2*32 = 64"),
    ("gfx942", F16 + " tile = 128x128x36 waves = 2x2 instr = 32x32x8", "tile", "128x128x36", "instr_k = 8"),
    ("gfx942", F16 + " tile = 24x24x24 waves = 1x1", "tile", "24x24x24", "multiples of an instruction shape"),
    # LDS over capacity
    ("gfx942", F16 + " tile = 256x256x64 waves = 2x2", "tile", "256x256x64", "<= 65536 bytes"),
    # registers over budget
    ("gfx942", "A = f32 row B = f32 row C = f32 row tile = 256x256x4 waves = 1x1 lds_buffers = 1", "tile",
     "256x256x4", "at most 256 accumulator"),
    # a dtype or instruction the arch lacks
    ("gfx908", "A = bf16 row B = bf16 col C = f32 row tile = 64x64x32 waves = 1x1 instr = 32x32x8", "instr",
     "32x32x8", "32x32x4, 16x16x8"),
    # fp8: the target's own encoding only, B of A's encoding, a target without fp8
    ("gfx90a", "A = e4m3fnuz row B = e4m3fnuz col C = f32 row tile = 64x64x64 waves = 1x1", "A", "e4m3fnuz",
     "f16, bf16, f32, i8"),
    ("gfx950", "A = e4m3fnuz row B = e4m3fnuz col C = f32 row tile = 64x64x64 waves = 1x1", "A", "e4m3fnuz",
     "f16, bf16, f32, i8, e4m3fn, e5m2"),
    ("sm_90", "A = e5m2fnuz row B = e5m2fnuz col C = f32 row tile = 64x64x64 waves = 1x1", "A", "e5m2fnuz",
     "f16, bf16, f32, i8, e4m3fn, e5m2"),
    ("gfx942", "A = e4m3fn row B = e4m3fn col C = f32 row tile = 64x64x64 waves = 1x1", "A", "e4m3fn",
     "f16, bf16, f32, i8, e4m3fnuz, e5m2fnuz"),
    # a dtype no instruction takes, with no acc given (it has no default accumulator: refused here, not a KeyError)
    ("gfx942", "A = i32 row B = i32 col C = i32 row tile = 64x64x64 waves = 1x1", "A", "i32",
     "f16, bf16, f32, i8, e4m3fnuz, e5m2fnuz"),
    ("gfx942", "A = e4m3fnuz row B = e5m2 col C = f32 row tile = 64x64x64 waves = 1x1", "B", "e5m2",
     "e4m3fnuz, e5m2fnuz"),
    ("gfx942", "A = e4m3fnuz row B = f16 col C = f32 row tile = 64x64x64 waves = 1x1", "B", "f16",
     "e4m3fnuz, e5m2fnuz"),
    ("sm_90", "A = e4m3fn row B = e5m2 col C = f32 row tile = 64x64x64 waves = 2x2", "B", "e5m2", "e4m3fn"),
    ("gfx942", "A = e4m3fnuz row B = e4m3fnuz col C = i8 row tile = 64x64x64 waves = 1x1", "C", "i8",
     "f16, bf16, f32"),
    ("gfx90a", "A = i8 row B = i8 col C = i32 row tile = 64x64x64 waves = 1x1 instr = 32x32x16", "instr",
     "32x32x16", "32x32x8, 16x16x16"),
    ("gfx942", "A = f16 row B = bf16 col C = f32 row tile = 64x64x32 waves = 1x1", "B", "bf16", "f16"),
    ("gfx942", F16 + " acc = f16 tile = 64x64x32 waves = 1x1", "acc", "f16", "f32"),
    ("gfx942", "A = i8 row B = i8 col C = f16 row tile = 64x64x64 waves = 1x1", "C", "f16", "i32, i8, f32"),
    # pipeline and vector widths
    ("gfx942", F16 + " tile = 64x64x32 waves = 1x1 lds_buffers = 3", "lds_buffers", "3", "1..2"),
    ("gfx942", F16 + " tile = 64x64x32 waves = 1x1 prefetch = 2", "prefetch", "2", "0..1"),
    ("gfx942", F16 + " tile = 64x64x32 waves = 1x1 vec_a = 16", "vec_a", "16", "a power of two <= 8"),
    ("gfx942", F16 + " tile = 64x64x32 waves = 1x1 vec_b = 3", "vec_b", "3", "power of two"),
    ("gfx942", F16 + " tile = 64x64x32 waves = 4x8", "waves", "4x8", "waves_m*waves_n <= 16"),
    ("sm_99", F16 + " tile = 64x64x32 waves = 1x1", "arch", "sm_99", "gfx942"),
])
def test_validation_errors(arch, body, param, value, legal):
    with pytest.raises(ValidationError) as ei:
        plan_kernel(spec(body), arch)
    e = ei.value
    assert e.param == param and str(e.value) == value
    assert legal in e.legal, e.legal
    text = e.render()
    assert f"{param} = {value}" in text and "legal:" in text
    if param != "arch":
        assert text.startswith("v.ck:1:") and f"on {arch}" in text


@pytest.mark.parametrize("word,legal", [("fp8", "e4m3fn"), ("bf8", "e5m2fnuz")])
def test_fp8_without_an_encoding_is_refused(word, legal):
    from ckgen.errors import SpecError

    with pytest.raises(SpecError) as ei:
        spec(f"A = {word} row B = {word} col C = f32 row tile = 64x64x64 waves = 1x1")
    text = ei.value.render()
    assert text.startswith("v.ck:1:") and "does not say its encoding" in text and legal in text


def test_lds_hint_suggests_a_single_buffer():
    with pytest.raises(ValidationError) as ei:
        plan_kernel(spec(F16 + " tile = 256x128x64 waves = 2x2"), "gfx942")
    assert "lds_buffers = 1 would fit" in ei.value.legal


def test_auto_instruction_is_best_legal():
    assert plan_kernel(spec(F16 + " tile = 128x128x32 waves = 2x2"), "gfx942").body.instr.mnemonic == "v_mfma_f32_32x32x8_f16"
    assert plan_kernel(spec(F16 + " tile = 32x32x32 waves = 2x2"), "gfx942").body.instr.shape == (16, 16, 16)
    assert plan_kernel(spec(F16 + " tile = 128x128x32 waves = 2x2"), "gfx950").body.instr.shape == (32, 32, 16)
    bf = "A = bf16 row B = bf16 col C = f32 row tile = 64x64x32 waves = 1x1"
    assert plan_kernel(spec(bf), "gfx908").body.instr.mnemonic == "v_mfma_f32_32x32x4bf16"
    assert plan_kernel(spec(bf), "gfx90a").body.instr.mnemonic == "v_mfma_f32_32x32x8bf16_1k"
    f8 = "C = f32 row tile = 64x64x64 waves = 2x2"
    assert plan_kernel(spec("A = e4m3fnuz row B = e5m2fnuz col " + f8), "gfx942").body.instr.mnemonic == \
        "v_mfma_f32_32x32x16_fp8_bf8"
    assert plan_kernel(spec("A = e5m2 row B = e4m3fn col " + f8), "gfx950").body.instr.mnemonic == \
        "v_mfma_f32_32x32x16_bf8_fp8"
    assert plan_kernel(spec("A = e4m3fn row B = e4m3fn col " + f8), "sm_90").body.instr.builtin == \
        "ckgen::nv::mma_m16n8k32_f32_e4m3"


def test_pipeline_is_an_explicit_list():
    assert [p.__name__ for p in PASSES][:3] == ["check_workgroup", "check_dtypes", "select_instruction"]


_TILES = st.sampled_from([16, 32, 48, 64, 96, 128, 192, 256])


@settings(max_examples=200, deadline=None)
@given(_TILES, _TILES, st.sampled_from([8, 16, 32, 64]), st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4]),
       st.sampled_from(["f16", "bf16", "f32", "i8"]), st.sampled_from(["gfx908", "gfx90a", "gfx942", "gfx950"]),
       st.sampled_from([1, 2]))
def test_planner_accepts_only_consistent_plans(tm, tn, tk, wm, wn, dt, arch, bufs):
    c = "i32" if dt == "i8" else "f32"
    s = spec(f"A = {dt} row B = {dt} col C = {c} row tile = {tm}x{tn}x{tk} waves = {wm}x{wn} lds_buffers = {bufs}")
    try:
        p = plan_kernel(s, arch)
    except ValidationError as e:
        assert e.param in ("tile", "waves", "lds_buffers") and e.legal
        return
    assert tm % (wm * p.body.instr.m) == 0 and tn % (wn * p.body.instr.n) == 0 and tk % p.body.instr.k == 0
    assert p.body.lds.total_bytes <= p.target.lds_bytes
    assert p.threads <= 1024
    for v, extent in ((p.body.vec[0], tk), (p.body.vec[1], tk)):
        assert extent % v == 0


@pytest.mark.parametrize("body,legal", [
    (F16 + " tile = 64x40x32 waves = 1x1", "tile N / waves_n a multiple of 16"),
    ("A = f16 col B = f16 col C = f16 row tile = 48x64x32 waves = 1x1", "tile M * 2 bytes a power-of-two"),
])
def test_nvidia_kernel_body_rules(body, legal):
    with pytest.raises(ValidationError) as ei:
        plan_kernel(spec(body), "sm_90")
    assert ei.value.param == "tile" and legal in ei.value.legal
