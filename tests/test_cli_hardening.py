"""Every bad input to the ``ckgen`` command is a one-screen error with a documented exit code (2 bad input, 4
environment), never a traceback; and the conveniences: default targets, progress, -v, warnings, examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from ckgen.errors import CkgenError

ROOT = Path(__file__).resolve().parents[1]
F32 = ROOT / "examples" / "gemm_f32.ck"
SMALL = "target gfx942\nkernel small { A = f32 row B = f32 row C = f32 row tile = 32x32x8 waves = 1x1 }\n"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


def ckgen(*args, cache: Path, cwd: Path = ROOT, **env) -> subprocess.CompletedProcess:
    full = dict(os.environ, CKGEN_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), **env)
    r = subprocess.run([sys.executable, "-m", "ckgen", *map(str, args)], cwd=cwd, env=full, capture_output=True,
                       text=True, timeout=600)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def test_output_that_is_a_file_or_below_one(tmp_path, cache):
    f = tmp_path / "file"
    f.write_text("x")
    r = ckgen("compile", F32, "-o", f, cache=cache)
    assert r.returncode == 2 and f"output directory {f} exists and is not a directory" in r.stderr
    r = ckgen("compile", F32, "-o", f / "sub", cache=cache)
    assert r.returncode == 2 and "cannot create the output directory" in r.stderr


def test_cache_dir_that_is_a_file_is_exit_4(tmp_path):
    f = tmp_path / "cachefile"
    f.write_text("x")
    (tmp_path / "small.ck").write_text(SMALL)
    r = ckgen("compile", "small.ck", "-o", tmp_path / "out", cache=f, cwd=tmp_path)
    assert r.returncode == 4 and "is not a directory" in r.stderr and "CKGEN_CACHE_DIR" in r.stderr


def test_missing_toolchain_is_exit_4(tmp_path, cache):
    (tmp_path / "small.ck").write_text(SMALL)
    r = ckgen("compile", "small.ck", "-o", tmp_path / "out", cache=tmp_path / "c", cwd=tmp_path,
              CKGEN_CLANG=str(tmp_path / "no-clang"))
    assert r.returncode == 4 and "no usable clang for gfx942" in r.stderr


@pytest.mark.parametrize("make,words", [
    (lambda d: d, "is a directory, not a .ck file"),
    (lambda d: (d / "x.txt").write_text(SMALL) and d / "x.txt", "is not a .ck file"),
    (lambda d: (d / "b.ck").write_bytes(b"\x7fELF\x02") and d / "b.ck", "it is an ELF object"),
])
def test_inputs_that_are_not_spec_files(tmp_path, cache, make, words):
    r = ckgen("check", make(tmp_path), cache=cache)
    assert r.returncode == 2 and words in r.stderr


@pytest.mark.parametrize("args,words", [
    (["--seed", "-1"], "--seed -1: the seed must be a non-negative integer"),
    (["--size", "m=3000000000,n=1,k=1"], "size m = 3000000000: out of range"),
    (["-m", "-5", "-n", "4", "-k", "4"], "size m = -5: out of range"),
    (["--size", "m=2147483647,n=2147483647,k=1"], "of host memory"),
    (["--size", "m=4,n=4,k=4,q=2"], "has no size q"),
    (["--size", "m=x"], "not an integer"),
    (["--arch", "sm_90"], "arch 'sm_90' is a nvidia target"),
])
def test_run_refuses_bad_sizes_and_seeds(cache, args, words):
    r = ckgen("run", F32, "--kernel", "sgemm_nn", *args, cache=cache)
    assert r.returncode == 2 and words in r.stderr, r.stderr


@pytest.mark.parametrize("size", ["m=0,n=8,k=8", "m=8,n=0,k=8", "m=8,n=8,k=0", "m=0,n=0,k=0"])
def test_run_with_empty_sizes(tmp_path, cache, size):
    """M=0 or N=0: nothing to compute; K=0: C = epilogue(beta * C) (here with beta and a bias)."""
    (tmp_path / "k0.ck").write_text("target gfx942\nkernel k0 { A = f32 row B = f32 row C = f32 row beta = 0.5 "
                                    "tile = 32x32x8 waves = 1x1 epilogue = bias(col) -> relu }\n")
    r = ckgen("run", "k0.ck", "--kernel", "k0", "--size", size, cache=cache, cwd=tmp_path)
    assert r.returncode == 0 and ": ok" in r.stdout, r.stdout + r.stderr


def test_compile_report_and_emit_default_to_the_spec_targets(tmp_path, cache):
    r = ckgen("compile", F32, "-o", tmp_path / "out", cache=cache)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["libraries"][0]["arches"] == ["gfx90a", "gfx942"]
    r = ckgen("report", F32, "--json", cache=cache)
    assert r.returncode == 0 and {k["arch"] for k in json.loads(r.stdout)["kernels"]} == {"gfx90a", "gfx942"}
    r = ckgen("emit", F32, "--stage", "ir", cache=cache)
    assert [p["arch"] for p in json.loads(r.stdout)] == ["gfx942", "gfx90a"]
    (tmp_path / "none.ck").write_text(SMALL.replace("target gfx942\n", ""))
    r = ckgen("compile", "none.ck", "-o", tmp_path / "o2", cache=cache, cwd=tmp_path)
    assert r.returncode == 2 and "has no target" in r.stderr and "--arch" in r.stderr


def test_progress_verbose_and_quiet(tmp_path):
    (tmp_path / "p.ck").write_text(SMALL)
    cache = tmp_path / "cache"
    quiet = ckgen("compile", "p.ck", "-o", "out", cache=cache, cwd=tmp_path)  # not a terminal: no progress
    assert quiet.returncode == 0 and "[1/1]" not in quiet.stderr
    loud = ckgen("compile", "p.ck", "-o", "out", "-v", cache=cache, cwd=tmp_path, CKGEN_NO_CACHE="1")
    assert "[1/1] small gfx942 (built " in loud.stderr and "[1/1] libp.so host (built" in loud.stderr
    assert "$ cd " in loud.stderr and "--offload-arch=gfx942" in loud.stderr  # the compiler commands
    again = ckgen("compile", "p.ck", "-o", "out", "-v", cache=cache, cwd=tmp_path)
    assert "[1/1] small gfx942 (cached)" in again.stderr


def test_compiler_warnings_are_shown(tmp_path, cache):
    """Warnings of a compiler on generated code reach the user (a host compiler that warns, for the emulator)."""
    import shutil

    real = shutil.which("clang++-19") or shutil.which("clang++")
    if real is None:
        pytest.skip("no clang++")
    cxx = tmp_path / "warn-cxx"
    cxx.write_text(f'#!/bin/sh\necho "fake.cpp:1:1: warning: a warning from the compiler" >&2\nexec {real} "$@"\n')
    cxx.chmod(0o755)
    (tmp_path / "w.ck").write_text(SMALL.replace("small", "warned"))
    r = ckgen("run", "w.ck", "--kernel", "warned", "-m", "8", "-n", "8", "-k", "8", cache=tmp_path / "c",
              cwd=tmp_path, CKGEN_HOST_CXX=str(cxx))
    assert r.returncode == 0, r.stderr
    assert "warning: emu build of libwarned.so:" in r.stderr and "a warning from the compiler" in r.stderr


def test_examples_list_and_copy(tmp_path, cache):
    r = ckgen("examples", cache=cache)
    assert r.returncode == 0 and "gemm_f16.ck" in r.stdout and "Half-precision GEMMs" in r.stdout
    r = ckgen("examples", "gemm_f32", "--copy", tmp_path / "ex", cache=cache)
    assert r.returncode == 0 and (tmp_path / "ex" / "gemm_f32.ck").read_text() == F32.read_text()
    again = ckgen("examples", "gemm_f32", "--copy", tmp_path / "ex", cache=cache)
    assert again.returncode == 2 and "exists" in again.stderr and "--force" in again.stderr
    assert ckgen("examples", "gemm_f32", "--copy", tmp_path / "ex", "--force", cache=cache).returncode == 0
    bad = ckgen("examples", "nope", cache=cache)
    assert bad.returncode == 2 and "no example named 'nope'" in bad.stderr
    chk = ckgen("check", tmp_path / "ex" / "gemm_f32.ck", cache=cache)
    assert chk.returncode == 0


def test_cli_messages_use_cli_syntax(cache):
    """A hint that names an option spells it as a flag on the command line (``--target sm_90``) where the
    Python API says ``target='sm_90'``."""
    r = ckgen("run", F32, "--kernel", "sgemm_nn", "--target", "sm_90", "--arch", "gfx942", cache=cache)
    assert r.returncode == 2 and "pass --target sm_90 alone" in r.stderr, r.stderr
    from ckgen.runtime.api import jit

    with pytest.raises(CkgenError) as ei:
        jit(str(F32), kernel="sgemm_nn", target="sm_90", arch="gfx942")
    assert "pass target='sm_90' alone" in ei.value.render()


def test_an_unknown_target_gets_a_did_you_mean_in_the_dsl_and_on_the_command_line(tmp_path, cache):
    (tmp_path / "t.ck").write_text(SMALL.replace("target gfx942", "target gfx9424"))
    dsl = ckgen("check", tmp_path / "t.ck", cache=cache)
    flag = ckgen("check", tmp_path / "t.ck", "--arch", "gfx9422", cache=cache)
    assert dsl.returncode == 2 and f"{tmp_path / 't.ck'}:1:8: error: arch = gfx9424: unknown target" in dsl.stderr
    assert "did you mean 'gfx942'?" in dsl.stderr
    assert flag.returncode == 2 and "--arch gfx9422: unknown target" in flag.stderr
    assert "did you mean 'gfx942'?" in flag.stderr


@pytest.mark.parametrize("args", [["compile", "x.ck", "-o", "o", "-j", "-1"], ["compile", "x.ck", "-o", "o", "-j", "x"],
                                  ["check", "x.ck", "--arch", "gfx943"]])
def test_usage_errors(cache, args):
    r = ckgen(*args, cache=cache)
    assert r.returncode == 2 and "error:" in r.stderr


def test_no_gpu_for_a_gpu_target_is_exit_4(cache):
    pytest.importorskip("hip")
    r = ckgen("run", F32, "--kernel", "sgemm_nn", "--target", "hip", "-m", "8", "-n", "8", "-k", "8", cache=cache)
    if "no AMD GPU" not in r.stderr:
        pytest.skip("this machine has an AMD GPU or no HIP runtime")
    assert r.returncode == 4 and "use --target emu" in r.stderr and "target='emu'" not in r.stderr


def test_report_of_a_spec_that_mixes_vendors_says_which_arch_to_pass(tmp_path, cache):
    (tmp_path / "mix.ck").write_text(SMALL.replace("target gfx942", "target gfx942, sm_90"))
    r = ckgen("report", "mix.ck", cache=cache, cwd=tmp_path)
    assert r.returncode == 2 and "the spec's targets: report AMD and NVIDIA targets in separate runs" in r.stderr
    assert "e.g. --arch gfx942" in r.stderr

# ---------------------------------------------------------------------------------------- hostile DSL text
#: hostile spec texts: each marks with ⟪ ⟫ the text its error must point at (a start only, ⟪⟫, at the end of
#: a file), and names words the error must hold. ``ckgen check`` reports each at that file:line:col, caret
#: under it, exit status 2, no traceback.
HEAD = "target gfx942\nkernel k {\n  A = f16 row B = f16 col C = f16 row\n"
T = "  tile = 128x128x32 waves = 2x2\n"


def k(*lines: str, tile: bool = True) -> str:
    return HEAD + (T if tile else "") + "".join(f"  {x}\n" for x in lines) + "}\n"


def rows(*lines: str) -> str:
    return "target gfx942\nkernel k {\n" + "".join(f"  {x}\n" for x in lines) + "}\n"


HOSTILE = [
    # bad values
    ("glued dims", k("tile = ⟪128x128x⟫", "waves = 2x2", tile=False), "malformed value"),
    ("bare exponent", k("alpha = ⟪1e⟫"), "malformed value"),
    ("two points", k("alpha = ⟪1.0.0⟫"), "malformed value"),
    ("C suffix", k("alpha = ⟪1.0f⟫"), "malformed value"),
    ("hex", k("alpha = ⟪0x10⟫"), "expected a number"),
    ("word for a number", k("alpha = ⟪fast⟫"), "expected a number"),
    ("nan", k("beta = ⟪nan⟫"), "expected a number"),
    ("fraction for a count", k("lds_buffers = ⟪2.5⟫"), "expected an integer"),
    ("layout typo", "target gfx942\nkernel k {\n  A = f16 ⟪rwo⟫ B = f16 col C = f16 row\n" + T + "}\n",
     "did you mean 'row'"),
    ("unknown dtype", "target gfx942\nkernel k {\n  A = ⟪f17 row⟫ B = f16 col C = f16 row\n" + T + "}\n",
     "not a dtype"),
    ("unknown epilogue", k("epilogue = bias(col) -> ⟪gelu2⟫"), "gelu"),
    # negative, zero, huge
    ("negative waves", k("waves = ⟪-2x2⟫", "tile = 128x128x32", tile=False), "every extent must be positive"),
    ("zero extent", k("tile = ⟪0x128x32⟫", "waves = 2x2", tile=False), "every extent must be positive"),
    ("negative inner extent", k("tile = ⟪128x-128x32⟫", "waves = 2x2", tile=False), "every extent must be positive"),
    ("many digits", k("waves = ⟪99999999999x2⟫", "tile = 128x128x32", tile=False), "out of range"),
    ("huge extent", k("tile = ⟪65537x128x32⟫", "waves = 2x2", tile=False), "at most 65536"),
    ("negative count", k("lds_buffers = ⟪-1⟫"), "expected an integer"),
    ("huge float", k("alpha = ⟪1e39⟫"), "out of range"),
    ("denormal", k("alpha = ⟪1e-40⟫"), "too small for f32"),
    ("huge integer", k("vec_a = ⟪99999999999999999999⟫"), "expected an integer"),
    ("1e300 prefetch", k("prefetch = ⟪1e300⟫"), "expected an integer"),
    # truncated blocks
    ("dangling arrow", k("epilogue = bias(col) ⟪->⟫"), "expected a name after '->'"),
    ("open call", k("epilogue = bias(⟪col⟫"), "expected ')', ',' after 'col'"),
    ("open list", k("arch = [gfx942, ⟪gfx90a⟫"), "after 'gfx90a'"),
    ("no value", k("alpha ⟪=⟫"), "expected a value after '='"),
    ("no value before a statement", k("alpha ⟪=⟫", "beta = 0"), "'beta' on line 6 starts the next statement"),
    ("dangling arrow before a statement", k("epilogue = relu ⟪->⟫", "beta = 0"), "expected an operand after '->'"),
    ("no closing brace", HEAD + "  tile = 128x128x32 waves = 2x2⟪⟫", "unexpected end of file"),
    ("no block", "target gfx942\nkernel k⟪⟫", "unexpected end of file"),
    ("no kernel name", "target gfx942\nkernel ⟪{⟫ }\n", "expected a name"),
    # unicode
    ("times sign", k("tile = 128⟪×⟫128×32", tile=False), "letter x"),
    ("minus sign", k("alpha = ⟪−⟫1"), "a minus sign is '-'"),
    ("accented key", k("⟪é⟫ = 1"), "unexpected character"),
    ("fullwidth equals", k("alpha ⟪＝⟫ 1"), "set with '='"),
    ("arrow character", k("epilogue = bias(col) ⟪→⟫ gelu"), "written with '->'"),
    ("accented kernel name", "target gfx942\nkernel k⟪é⟫rn { }\n", "unexpected character"),
    ("zero-width space", k("alpha = 1⟪\u200b⟫"), "unexpected character"),
    # duplicate keys and kernels
    ("duplicate key", k("⟪tile⟫ = 64x64x32"), "set twice"),
    ("duplicate alternative", "target gfx942\nfamily f {\n  A = f16 row B = f16 col C = f16 row waves = 2x2\n"
     "  tile in [64x64x32, ⟪64x64x32⟫]\n}\n", "lists 64x64x32 twice"),
    ("duplicate kernel", k() + "kernel ⟪k⟫ {\n  A = f16 row B = f16 col C = f16 row\n" + T + "}\n", "defined twice"),
    # keys of another op
    ("row keys without op", rows("⟪x⟫ = bf16", "residual = true", "eps = 1e-5"), "did you mean `op = "),
    ("a gemm key in a norm", rows("op = rmsnorm", "x = bf16", "⟪tile⟫ = 128x128x32"), "unknown parameter 'tile'"),
    ("op typo", rows("op = ⟪rmsnrom⟫", "x = bf16"), "did you mean 'rmsnorm'"),
    ("a family of ops", rows("⟪op⟫ in [softmax, rmsnorm]", "x = bf16").replace("kernel", "family"), "one op"),
    # wrong separators
    ("comma between statements", k("alpha = 1⟪,⟫ beta = 0"), "not ','"),
    ("colon", k("alpha⟪:⟫ 1"), "set with '='"),
    ("double equals", k("alpha =⟪=⟫ 1"), "unexpected '='"),
    ("semicolon in a list", k("arch = [gfx942⟪;⟫ gfx90a]"), "unexpected ';'"),
    ("greater-than", k("epilogue = bias(col) ⟪>⟫ gelu"), "unexpected character '>'"),
    ("comment never closed", k("alpha = 1 ⟪/*⟫ beta = 0"), "a comment that is never closed"),
    ("comment closed twice", k("alpha = 1 /* one */ ⟪*/⟫"), "'*/' ends no comment"),
    ("double semicolon", "target gfx942;⟪;⟫\n" + k()[len("target gfx942\n"):], "unexpected ';'"),
    # bad tile forms
    ("two extents", k("tile = ⟪128x128⟫", "waves = 2x2", tile=False), "expected NxNxN"),
    ("one number", k("tile = ⟪128⟫", "waves = 2x2", tile=False), "expected NxNxN"),
    ("a list", k("tile = ⟪[128, 128, 32]⟫", "waves = 2x2", tile=False), "expected NxNxN"),
    ("four extents", k("tile = ⟪128x128x32x8⟫", "waves = 2x2", tile=False), "expected NxNxN"),
    ("spaced dims", k("tile = 128 ⟪x⟫ 128 x 32", "waves = 2x2", tile=False), "after the value of 'tile'"),
    ("double x", k("tile = ⟪128xx128x32⟫", "waves = 2x2", tile=False), "malformed value"),
    ("capital X", k("tile = ⟪128X128X32⟫", "waves = 2x2", tile=False), "malformed value"),
    ("trailing x", k("waves = ⟪2x2x⟫", "tile = 128x128x32", tile=False), "malformed value"),
    ("instr of two", k("instr = ⟪32x32⟫"), "expected NxNxN"),
    ("no instruction fits", k("tile = ⟪128x100x32⟫", "waves = 2x2", tile=False), "nearest legal tile on gfx942: 128x96x32"),
    ("empty alternatives", "target gfx942\nfamily f {\n  A = f16 row B = f16 col C = f16 row waves = 2x2\n"
     "  tile in [⟪]⟫\n}\n", "unexpected ']'"),
    # targets
    ("target typo", "target ⟪gfx9424⟫\n" + k()[len("target gfx942\n"):], "did you mean 'gfx942'"),
    ("arch typo", k("arch = ⟪gfx9o42⟫"), "did you mean 'gfx942'"),
]


def _placed(marked: str) -> tuple[str, int, int, int]:
    """The text without its markers and the marked span: line, column (1-based) and width."""
    start, end = marked.index("⟪"), marked.index("⟫")
    line = marked[:start].count("\n") + 1
    col = start - (marked.rfind("\n", 0, start) + 1) + 1
    return marked.replace("⟪", "").replace("⟫", ""), line, col, end - start - 1


@pytest.mark.parametrize("marked,words", [pytest.param(m, w, id=n) for n, m, w in HOSTILE])
def test_hostile_text_gets_one_located_error(tmp_path, capsys, marked, words):
    from ckgen.cli import main

    text, line, col, width = _placed(marked)
    path = tmp_path / "h.ck"
    path.write_text(text)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    first, *rest = err.splitlines()
    assert first.startswith(f"{path}:{line}:{col}: error: "), err
    assert words in err, err
    caret = rest[1][4:]
    assert len(caret) - len(caret.lstrip(" \t")) == len(text.splitlines()[line - 1][:col - 1]), err
    marked_text = text.splitlines()[line - 1][col - 1:col - 1 + width]
    assert caret.count("^") == max(sum(1 + (unicodedata.east_asian_width(c) in "WF") for c in marked_text), 1), err


def test_hostile_texts_in_one_command_give_no_traceback(tmp_path, cache):
    paths = []
    for i, (_, marked, _) in enumerate(HOSTILE):
        paths.append(tmp_path / f"h{i}.ck")
        paths[-1].write_text(_placed(marked)[0].replace("kernel k ", f"kernel k{i} "))  # names unique over files
    r = ckgen("check", *paths, cache=cache)
    assert r.returncode == 2
    # files that read, parse and lower are planned only once no file has a frontend error: check them again
    later = [p for p in paths if f"{p}:" not in r.stderr]
    again = ckgen("check", *later, cache=cache)
    assert again.returncode == 2 and all(f"{p}:" in again.stderr for p in later)


# Found by tools/fuzz_dsl.py (a token-level fuzz of the DSL and the command), each minimized.
@pytest.mark.parametrize("stage,rc,words", [
    ("spec", 0, "[]"),
    ("host", 2, "has no kernels, so no host entries"),
    ("header", 0, "#endif"),
])
def test_emit_of_a_file_without_kernels(tmp_path, capsys, stage, rc, words):
    from ckgen.cli import main

    path = tmp_path / "empty.ck"
    path.write_text("target gfx942\n")
    assert main(["emit", str(path), "--stage", stage]) == rc
    out = capsys.readouterr()
    assert words in (out.out if rc == 0 else out.err), out
    assert "None" not in out.err and "internal error" not in out.err


def test_check_of_a_file_without_kernels_says_so(tmp_path, capsys):
    from ckgen.cli import main

    path = tmp_path / "empty.ck"
    path.write_text("target gfx942\n")
    assert main(["check", str(path)]) == 0
    assert capsys.readouterr().out == "empty: no kernels: ok\n"


def test_explain_of_a_family_whose_target_is_unknown_points_at_the_target(tmp_path, capsys):
    from ckgen.cli import main

    path = tmp_path / "f.ck"
    path.write_text("target col1\nfamily f {\n  A = f16 row B = f16 col C = f16 row waves = 2x2\n"
                    "  tile in [64x64x32, 128x128x32]\n}\n")
    assert main(["explain", str(path), "--family", "f", "--shape", "16x16x16"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:1:8: error: arch = col1: unknown target"), err


BAD_TILE = "  A = f16 row B = f16 col C = f16 row\n  tile = 128x100x32 waves = 2x2\n"


@pytest.mark.parametrize("text,line", [
    ("target gfx942\rkernel k {\r" + BAD_TILE.replace("\n", "\r") + "}\r", 4),    # lone CR line ends
    ("target gfx942\r\nkernel k {\r\n" + BAD_TILE.replace("\n", "\r\n") + "}\r\n", 4),
    ("target gfx942\x0ckernel k {\n" + BAD_TILE + "}\n", 3),                      # a form feed is no line end
    ("target gfx942\n// a \u2028 b \x1c c\nkernel k {\n" + BAD_TILE + "}\n", 5),  # nor U+2028, nor \x1c
])
def test_line_ends_an_editor_shows_place_the_error(tmp_path, capsys, text, line):
    from ckgen.cli import main

    path = tmp_path / "le.ck"
    path.write_bytes(text.encode())
    assert main(["check", str(path)]) == 2
    head, shown, caret = capsys.readouterr().err.split("\n")[:3]
    assert head.startswith(f"{path}:{line}:10: error: "), head
    assert shown == "      tile = 128x100x32 waves = 2x2" and caret == "             ^^^^^^^^^^"


def test_control_characters_in_the_source_line_are_shown_as_replacement_characters(tmp_path, capsys):
    from ckgen.cli import main

    path = tmp_path / "esc.ck"
    path.write_text("target gfx942 \x1b[31m\n")
    assert main(["check", str(path)]) == 2
    head, shown, caret = capsys.readouterr().err.split("\n")[:3]
    assert head == f"{path}:1:15: error: unexpected character '\\x1b'"
    assert shown == "    target gfx942 \ufffd[31m" and caret == "    " + " " * 14 + "^"
