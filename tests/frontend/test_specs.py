"""Frontend lowering: defaults, family expansion, and every spec-level error."""

from pathlib import Path

import pytest

from ckgen.errors import CkgenError, ErrorList, SpecError
from ckgen.frontend import load_file, load_text
from ckgen.ir.registry import DEFAULT_OP, get_op, op_names
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
    with pytest.raises(CkgenError, match="no such file"):
        load_file(tmp_path / "missing.ck")
    bad = tmp_path / "bin.ck"
    bad.write_bytes(b"kernel \xff\xfe")
    with pytest.raises(CkgenError, match="not UTF-8 text"):
        load_file(bad)


def test_family_names_encode_signs_and_points():
    specs = load_text(f"family f {{ {BASE} alpha in [1, -1, 1.5, -1.5e-3, 15] }}", "t.ck", ("gfx942",))
    assert [s.name for s in specs] == ["f_alpha1", "f_alpham1", "f_alpha1p5", "f_alpham1p5em3", "f_alpha15"]
    assert [s.params.gemm.alpha for s in specs][:2] == [1.0, -1.0]


def test_a_family_block_without_alternatives_is_one_numbered_member():
    text = f"family f {{ {BASE} }}\nfamily f {{ {BASE} alpha = 2 }}\nfamily f {{ {BASE} alpha in [3, 4] }}"
    specs = load_text(text, "t.ck", ("gfx942",))
    assert [s.name for s in specs] == ["f_1", "f_2", "f_alpha3", "f_alpha4"]
    assert {s.family for s in specs} == {"f"}


def test_family_members_with_one_name_are_refused():
    with pytest.raises(SpecError) as ei:
        load_text(f"family f {{ {BASE} alpha in [1, +1] }}", "t.ck", ("gfx942",))
    text = ei.value.render()
    assert "the members with alpha = 1 and with alpha = +1 would both be named 'f_alpha1'" in text
    assert text.startswith("t.ck:1:") and text.splitlines()[2].strip() == "^^"


def test_a_family_is_counted_before_it_is_expanded():
    values = lambda n: ", ".join(str(1 + i) for i in range(n))  # noqa: E731
    text = (f"family huge {{ {BASE} alpha in [{values(256)}] beta in [{values(256)}] "
            f"vec_a in [{values(256)}] }}")
    with pytest.raises(SpecError) as ei:
        load_text(text, "t.ck", ("gfx942",))
    msg = ei.value.render()
    assert "family 'huge' expands to 16,777,216 kernels, over the limit of 10,000" in msg
    assert "alpha: 256, beta: 256, vec_a: 256" in msg and msg.startswith("t.ck:1:8:")


@pytest.mark.parametrize("make,words", [
    (lambda d: d, "is a directory, not a .ck file"),
    (lambda d: d / "missing.ck", "no such file"),
    (lambda d: (d / "k.txt").write_text(f"kernel k {{ {BASE} }}") and d / "k.txt", "is not a .ck file"),
    (lambda d: (d / "lib.ck").write_bytes(b"\x7fELF\x02\x01") and d / "lib.ck", "it is an ELF object"),
    (lambda d: (d / "z.ck").write_bytes(b"PK\x03\x04") and d / "z.ck", "zip archive"),
    (lambda d: (d / "n.ck").write_bytes(b"kernel\x00k") and d / "n.ck", "binary file (it has NUL bytes)"),
    (lambda d: (d / "u.ck").write_bytes("kernel k {}".encode("utf-16")) and d / "u.ck", "UTF-16"),
    (lambda d: Path("/dev/null"), "not a regular file"),
])
def test_paths_that_are_not_spec_files(tmp_path, make, words):
    with pytest.raises(CkgenError) as ei:
        load_file(make(tmp_path))
    assert words in ei.value.render()


def test_a_utf8_bom_is_skipped_and_columns_stay_right(tmp_path):
    p = tmp_path / "b.ck"
    p.write_bytes(b"\xef\xbb\xbfkernel k { tlie = 1 }")
    with pytest.raises(CkgenError) as ei:
        load_file(p, ("gfx942",))
    assert ei.value.render().startswith(f"{p}:1:12: error: unknown parameter 'tlie'")


def _foreign_keys(name: str) -> list[str]:
    """Keys op ``name`` takes that the default op does not (its own vocabulary)."""
    default = set(get_op(DEFAULT_OP).key_names())
    return [k for k in get_op(name).key_names() if k not in default]


@pytest.mark.parametrize("name", [n for n in op_names() if n != DEFAULT_OP])
def test_a_kernel_without_op_whose_keys_another_op_takes_gets_one_error_naming_it(name):
    """Generic over the registry: a block with only op ``name``'s own keys and no ``op =`` is one error, at its
    first key, saying op defaults to the default op and naming ``op = name`` among the best matches."""
    keys = _foreign_keys(name)
    body = "\n".join(f"  {k} = 1" for k in keys)
    with pytest.raises(SpecError) as ei:
        load_text(f"kernel k {{\n{body}\n}}", "t.ck", ("gfx942",))
    e = ei.value
    assert not isinstance(e, ErrorList)
    assert (e.span.line, e.span.col) == (2, 3)
    assert f"has no 'op = ...', so op defaults to {DEFAULT_OP}" in e.message
    assert f"`op = {name}`" in e.hint and e.hint.startswith("did you mean ")


def test_row_keys_without_op_name_the_norms():
    """The issue's case: x, residual, eps with no ``op``: one error, the norms suggested, nothing else."""
    with pytest.raises(SpecError) as ei:
        load_text("kernel k {\n  x = bf16\n  residual = true\n  eps = 1e-5\n}", "t.ck", ("gfx942",))
    text = ei.value.render()
    assert text.count("error:") == 1 and "t.ck:2:3: error:" in text
    assert "`op = rmsnorm`" in text and "`op = layernorm`" in text and "`op = softmax`" not in text


def test_unknown_keys_of_the_default_op_keep_their_own_errors():
    """A typo among default-op keys is not an op question: the usual per-key error with its did-you-mean."""
    with pytest.raises(SpecError) as ei:
        one(BASE + " tlie = 3")
    assert "unknown parameter 'tlie'" in ei.value.message and "did you mean 'tile'" in ei.value.hint
    with pytest.raises(ErrorList) as el:  # op given explicitly: every unknown key is reported
        load_text("kernel k { op = rmsnorm x = bf16 bogus = 1 other = 2 }", "t.ck", ("gfx942",))
    assert len(el.value.errors) == 2
