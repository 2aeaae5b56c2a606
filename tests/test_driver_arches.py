"""``--arch`` (ckgen.driver.plan, ``targets``): it replaces the file's ``target`` line, but a kernel that names its
own arches (``arch = [...]``) is built only for those of them it names; kernels left out that way get one note per
file, and a file with none left is an error that names the arches its kernels take."""

import pytest

from ckgen import driver
from ckgen.errors import CkgenError

TEXT = """target gfx942
kernel plain { A = f16 row  B = f16 col  C = f16 row  tile = 64x64x32  waves = 2x2 }
kernel fnuz { arch = [gfx942]  A = e4m3fnuz row  B = e4m3fnuz col  C = bf16 row  tile = 64x64x64  waves = 2x2 }
kernel ocp { arch = [gfx950, sm_90]  A = e4m3fn row  B = e4m3fn col  C = bf16 row  tile = 64x64x64  waves = 2x2 }
"""


def _plan(path, arches):
    notes: list[str] = []
    plans = driver.plan(driver.load([path], arches), arches, notes)[path.stem]
    return sorted((p.name, p.arch) for p in plans), notes


def test_own_arch_lists_are_kept_and_the_rest_follow_the_option(tmp_path):
    f = tmp_path / "mix.ck"
    f.write_text(TEXT)
    plans, notes = _plan(f, ("gfx942", "gfx90a"))
    assert plans == [("fnuz", "gfx942"), ("plain", "gfx90a"), ("plain", "gfx942")]
    assert len(notes) == 1 and "1 kernel(s) left out" in notes[0] and notes[0].endswith(": ocp")
    plans, notes = _plan(f, ("gfx950",))  # the file's own target replaced: plain on gfx950 too
    assert plans == [("ocp", "gfx950"), ("plain", "gfx950")] and "fnuz" in notes[0]
    plans, notes = _plan(f, ())  # without --arch: every kernel on the targets it names
    assert plans == [("fnuz", "gfx942"), ("ocp", "gfx950"), ("ocp", "sm_90"), ("plain", "gfx942")] and not notes


def test_a_file_with_no_kernel_left_is_a_located_error(tmp_path):
    f = tmp_path / "own.ck"
    f.write_text("\n".join(TEXT.splitlines()[2:]) + "\n")  # the two kernels with their own arch lists
    with pytest.raises(CkgenError, match=r"no kernel of .*own.ck is for --arch gfx90a") as info:
        _plan(f, ("gfx90a",))
    assert info.value.span is not None and info.value.span.line == 1
    assert "gfx942, gfx950, sm_90" in info.value.hint
