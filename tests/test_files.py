"""ckgen.files: atomic publication and output directory checks."""

from __future__ import annotations

import os

import pytest

from ckgen.errors import OutputError
from ckgen.files import atomic_copy, atomic_output, atomic_write, output_dir


def test_atomic_write_and_copy(tmp_path):
    atomic_write(tmp_path / "a" / "x.txt", "hello")
    assert (tmp_path / "a" / "x.txt").read_text() == "hello"
    assert oct((tmp_path / "a" / "x.txt").stat().st_mode & 0o777) == "0o644"
    atomic_copy(tmp_path / "a" / "x.txt", tmp_path / "b.so")
    assert (tmp_path / "b.so").read_text() == "hello" and os.access(tmp_path / "b.so", os.X_OK)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b.so", "x.txt"]  # no temporary files left


def test_a_failure_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    atomic_write(tmp_path / "x", "old")
    with pytest.raises(RuntimeError), atomic_output(tmp_path / "x") as tmp:
        tmp.write_text("half")
        raise RuntimeError("the compiler crashed")
    assert (tmp_path / "x").read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x"]


def test_output_dir_errors(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(OutputError, match="exists and is not a directory"):
        output_dir(f)
    with pytest.raises(OutputError, match="cannot create"):
        output_dir(f / "sub")
    assert output_dir(tmp_path / "new" / "deep").is_dir()
    with pytest.raises(OutputError, match="cannot write"):
        atomic_write(f / "x", "data")


def test_an_unwritable_output_dir_is_named(tmp_path, monkeypatch):
    d = tmp_path / "ro"
    d.mkdir()
    if os.geteuid() != 0:
        d.chmod(0o555)
    else:  # root ignores permission bits: make the write itself fail as it would on a read-only mount
        import errno
        import tempfile

        real = tempfile.mkstemp
        monkeypatch.setattr(tempfile, "mkstemp", lambda *a, dir=None, **k: (_ for _ in ()).throw(
            OSError(errno.EROFS, "Read-only file system")) if str(dir) == str(d) else real(*a, dir=dir, **k))
    with pytest.raises(OutputError, match=r"the output directory .*ro is not writable: (Read-only|Permission)"):
        output_dir(d)
    d.chmod(0o755)
