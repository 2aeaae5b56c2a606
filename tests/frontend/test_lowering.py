"""Frontend lowering: defaults, family expansion, and every spec-level error."""

import pytest

from ckgen.errors import CkgenError, ErrorList, SpecError
from ckgen.frontend import load_file, load_text
from ckgen.ir.types import DType, Layout

BASE = "A = f16 row B = f16 col C = f16 row tile = 128x128x32 waves = 2x2"


def one(body: str, arches=("gfx942",)):
    (spec,) = load_text(f"kernel k {{ {body} }}", "t.ck", arches)
    return spec


def test_defaults():
    s = one(BASE)
    g, c = s.params.gemm, s.params.config
    assert (g.a.dtype, g.a.layout, g.b.layout) == (DType.F16, Layout.ROW, Layout.COL)
    assert g.acc == DType.F32 and g.alpha == 1.0 and g.beta == 0.0 and g.epilogue == ()
    assert c.instr is None and c.lds_buffers == 2 and c.prefetch == 1 and c.vec_a is None
    assert s.arches == ("gfx942",)
    assert one("A = i8 row B = i8 col C = i32 row tile = 64x64x64 waves = 1x1").params.gemm.acc == DType.I32


def test_file_targets_and_per_kernel_arch():
    specs = load_text(f"target gfx90a, gfx942\nkernel a {{ {BASE} }}\nkernel b {{ {BASE} arch = gfx908 }}", "t.ck")
    assert [s.arches for s in specs] == [("gfx90a", "gfx942"), ("gfx908",)]


def test_epilogue_chain():
    s = one(BASE + " epilogue = bias(row) -> relu -> silu -> cast(f16)")
    assert [op.text for op in s.params.gemm.epilogue] == ["bias(row)", "relu", "silu"]
    assert one(BASE + " epilogue = none").params.gemm.epilogue == ()


def test_family_cross_product_and_names():
    specs = load_text("family f { A = f16 row B = f16 col C = f16 row tile in [128x128x32, 64x64x32] "
                      "waves in [2x2, 1x4] epilogue in [relu, bias(col) -> gelu] }", "t.ck", ("gfx942",))
    assert len(specs) == 8
    names = [s.name for s in specs]
    assert len(set(names)) == 8
    assert "f_tile128x128x32_waves2x2_epiloguerelu" in names
    assert "f_tile64x64x32_waves1x4_epiloguebias_col_gelu" in names
    assert all(s.family == "f" for s in specs)


@pytest.mark.parametrize("body,words,col", [
    (BASE + " tlie = 3", "unknown parameter 'tlie'", None),
    (BASE + " tile = 64x64x32", "set twice", None),
    ("A = f16 row B = f16 col C = f16 row waves = 2x2", "missing tile", None),
    (BASE.replace("f16 row", "f17 row", 1), "not a dtype", None),
    (BASE.replace("128x128x32", "128x128"), "expected NxNxN", None),
    (BASE.replace("128x128x32", "128x0x32"), "must be positive", None),
    (BASE + " op = conv", "unknown op", None),
    (BASE + " epilogue = bias -> gelu", "bias takes one axis", None),
    (BASE + " epilogue = gelu -> cast(f32)", "must match C's dtype", None),
    (BASE + " epilogue = cast(f16) -> gelu", "may only end the chain", None),
    (BASE + " epilogue = geluu", "did you mean 'gelu'", None),
    (BASE + " epilogue = bias(row) -> bias(col)", "only one bias", None),
    (BASE + " lds_buffers = 0", "integer in 1..8", None),
    (BASE + " vec_a = 2.5", "integer in 1..64", None),
    (BASE + " alpha = fast", "expected a number", None),
    (BASE.replace("tile = 128x128x32", "tile in [128x128x32]"), "only a family may do", None),
])
def test_spec_errors(body, words, col):
    with pytest.raises(CkgenError) as ei:
        one(body)
    text = ei.value.render()
    assert words in text, text
    assert text.startswith("t.ck:1:")


def test_no_target_is_an_error():
    with pytest.raises(SpecError, match="has no target"):
        load_text(f"kernel k {{ {BASE} }}", "t.ck")


def test_duplicate_kernel_names_and_all_errors_reported():
    with pytest.raises(ErrorList) as ei:
        load_text(f"kernel k {{ {BASE} }} kernel k {{ {BASE} }} kernel z {{ bogus = 1 }}", "t.ck", ("gfx942",))
    text = ei.value.render()
    assert "defined twice" in text and "unknown parameter 'bogus'" in text


def test_unreadable_file(tmp_path):
    with pytest.raises(CkgenError, match="cannot read"):
        load_file(tmp_path / "missing.ck")
    bad = tmp_path / "bin.ck"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(CkgenError, match="not UTF-8"):
        load_file(bad)
