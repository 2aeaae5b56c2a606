"""Kernel names become C symbols and file names: every clash is refused at file:line:col with a reason."""

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.frontend.names import KEYWORDS, MAX_NAME, name_problem, reserved_names
from ckgen.resources import INCLUDE_DIR, OPS_DIR, TEMPLATE_DIR

BODY = "A = f16 row B = f16 col C = f16 row tile = 128x128x32 waves = 2x2"


def refusal(name: str, kind: str = "kernel") -> CkgenError:
    text = f"target gfx942\n{kind} {name} {{ {BODY} }}\n"
    with pytest.raises(CkgenError) as ei:
        load_text(text, "n.ck")
    return ei.value


@pytest.mark.parametrize("name,words", [
    ("int", "keyword"), ("class", "keyword"), ("and", "keyword"), ("while", "keyword"), ("main", "reserved"),
    ("std", "global name"), ("memcpy", "global name"), ("malloc", "global name"), ("printf", "global name"),
    ("dim3", "global name"), ("min", "global name"), ("NULL", "global name"), ("INT32_MAX", "global name"),
    ("size_t", "global name"), ("atomicAdd", "global name"),
    ("A", "argument"), ("B", "argument"), ("bias", "argument"), ("M", "argument"), ("lda", "argument"),
    ("ldc", "argument"), ("stream", "argument"),
    ("ckgen_status_string", "'ckgen'"), ("ckgen_x", "'ckgen'"), ("CKGEN_LDS", "'ckgen'"), ("ckgen", "'ckgen'"),
    ("status_string", "host entry point 'ckgen_status_string'"), ("code_objects", "host entry point"),
    ("__k", "'_'"), ("_K", "'_'"), ("_k", "'_'"), ("k_", "ending in '_'"), ("grid_x_", "ending in '_'"),
    ("k_cfg", "'_cfg'"),
    ("k_packed", "'_packed'"), ("hipMalloc", "GPU runtime"), ("cudaFoo", "GPU runtime"), ("cuLaunchX", "GPU runtime"),
    ("k" * (MAX_NAME + 1), "characters long"),
])
def test_reserved_names_are_refused_with_a_caret(name, words):
    e = refusal(name)
    text = e.render()
    assert text.startswith("n.ck:2:8: error: kernel name"), text
    assert words in text, text
    caret = text.splitlines()[2]
    assert caret.index("^") - 4 == 7  # under column 8


def test_a_family_whose_members_take_a_bad_name():
    e = refusal("__f", "family")
    assert "family '__f' names a kernel '__f_1'" in e.render()
    long = "f" * (MAX_NAME - 5)
    text = f"target gfx942\nfamily {long} {{ {BODY.replace('tile = 128x128x32', 'tile in [128x128x32, 64x64x32]')} }}"
    with pytest.raises(CkgenError, match="characters long"):
        load_text(text, "n.ck")


def test_plain_names_pass():
    for name in ("gemm_f16", "k", "K2", "mlp_up", "sgemm_nn", "int8_gemm", "mainloop", "stdx", "maxi", "cfg"):
        assert name_problem(name, ("A", "B")) is None, name


def test_every_ckgen_symbol_of_the_templates_and_headers_is_covered():
    """Every global ckgen_* symbol that generated code or the headers define is in the reserved set, so
    a kernel whose host entry ckgen_<name> would repeat it is refused."""
    symbols = set()
    for path in [*TEMPLATE_DIR.glob("*.j2"), *OPS_DIR.glob("*/*.j2"), *INCLUDE_DIR.rglob("*.h")]:
        symbols |= set(re.findall(r"\b(ckgen_[a-z][a-z0-9_]*)\s*(?:\(|\[|=|;)", path.read_text()))
    symbols -= {"ckgen_gen"}  # a namespace, not a global symbol
    missing = sorted(s for s in symbols if name_problem(s[len("ckgen_"):]) is None and not s.endswith("_"))
    assert not missing, missing


def test_reserved_list_is_present_and_sane():
    names = reserved_names()
    assert len(names) > 1000 and "memcpy" in names and "dlopen" in names
    assert not any(n.startswith("_") for n in names)
    assert not (KEYWORDS - {"main"}) & {"gemm", "kernel"}
    assert Path(__file__).parents[2].joinpath("tools", "gen_reserved_names.py").is_file()


IDENT = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,30}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(IDENT)
def test_any_name_is_accepted_or_refused_with_a_reason(name):
    text = f"target gfx942\nkernel {name} {{ {BODY} }}\n"
    problem = name_problem(name, ("A", "B", "C", "bias", "M", "N", "K", "lda", "ldb", "ldc"))
    try:
        (spec,) = load_text(text, "n.ck")
    except CkgenError as e:
        assert problem is not None and problem in e.render()
    else:
        assert problem is None and spec.name == name
