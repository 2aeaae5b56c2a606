"""The content-addressed cache: keys, hits and misses, corruption, failed builds, concurrent builders."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from ckgen import config
from ckgen.toolchain import cache as cache_mod
from ckgen.toolchain.cache import MANIFEST, Cache, key


def test_key_is_sha256_of_canonical_json():
    assert key(a=1, b=[1, "x"], c={"z": 1, "y": None}) == key(c={"y": None, "z": 1}, b=[1, "x"], a=1)
    assert key(a=1) != key(a=2) and key(a=1) != key(a="1")
    text = json.dumps({"a": [1, 2], "b": "t"}, sort_keys=True, separators=(",", ":"))
    assert key(b="t", a=[1, 2]) == hashlib.sha256(text.encode()).hexdigest()


def test_key_rejects_non_json_values():
    with pytest.raises(TypeError):
        key(x=object())
    with pytest.raises(ValueError):
        key(x=float("nan"))


def _writer(calls: list, payload: bytes = b"hello"):
    def build(out: Path) -> None:
        calls.append(out)
        (out / "a.bin").write_bytes(payload)
        (out / "sub").mkdir()
        (out / "sub" / "b.txt").write_text("b")
    return build


def test_miss_then_hit(tmp_path):
    c = Cache(tmp_path)
    calls: list = []
    e1 = c.get_or_build({"k": 1}, _writer(calls))
    e2 = c.get_or_build({"k": 1}, _writer(calls))
    assert e1 == e2 and len(calls) == 1
    assert (e1 / "a.bin").read_bytes() == b"hello" and (e1 / "sub" / "b.txt").read_text() == "b"
    assert c.stats.builds == 1 and c.stats.hits == 1
    manifest = json.loads((e1 / MANIFEST).read_text())
    assert manifest["parts"] == {"k": 1} and set(manifest["files"]) == {"a.bin", "sub/b.txt"}
    assert c.lookup({"k": 1}) == e1 and c.lookup({"k": 2}) is None
    c.get_or_build({"k": 2}, _writer(calls))
    assert len(calls) == 2
    # a fresh Cache object on the same root (another process) hits too
    assert Cache(tmp_path).get_or_build({"k": 1}, _writer(calls)) == e1 and len(calls) == 2


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete", "extra", "manifest"])
def test_corrupted_entry_is_detected_and_rebuilt(tmp_path, damage):
    c = Cache(tmp_path)
    calls: list = []
    entry = c.get_or_build({"k": damage}, _writer(calls))
    target = entry / "a.bin"
    if damage == "flip":
        target.write_bytes(b"hellO")
    elif damage == "truncate":
        target.write_bytes(b"")
    elif damage == "delete":
        target.unlink()
    elif damage == "extra":
        (entry / "stray.o").write_bytes(b"x")
    else:
        (entry / MANIFEST).write_text("{not json")
    assert not c.verify(entry) and c.lookup({"k": damage}) is None
    again = c.get_or_build({"k": damage}, _writer(calls))
    assert len(calls) == 2 and c.stats.corrupt == 1
    assert (again / "a.bin").read_bytes() == b"hello" and c.verify(again)
    assert not (again / "stray.o").exists()


def test_failed_build_publishes_nothing(tmp_path):
    c = Cache(tmp_path)

    def bad(out: Path) -> None:
        (out / "half.o").write_bytes(b"partial")
        raise RuntimeError("compiler crashed")

    with pytest.raises(RuntimeError):
        c.get_or_build({"k": "bad"}, bad)
    assert c.lookup({"k": "bad"}) is None
    assert list((c.root / "tmp").iterdir()) == []  # the temp dir is gone
    calls: list = []
    c.get_or_build({"k": "bad"}, _writer(calls))
    assert len(calls) == 1


def test_rebuild_mode_always_builds(tmp_path):
    calls: list = []
    Cache(tmp_path).get_or_build({"k": 1}, _writer(calls))
    c = Cache(tmp_path, rebuild=True)
    e = c.get_or_build({"k": 1}, _writer(calls, b"new"))
    assert len(calls) == 2 and (e / "a.bin").read_bytes() == b"new" and c.verify(e)


def test_default_cache_follows_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("CKGEN_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("CKGEN_NO_CACHE", raising=False)
    config.reload()
    try:
        calls: list = []
        e = cache_mod.get_or_build({"k": "default"}, _writer(calls))
        assert e.is_relative_to(tmp_path / "c") and len(calls) == 1
    finally:
        monkeypatch.undo()
        config.reload()


# ---------------------------------------------------------------- concurrency
def _slow_builder(root: str, log: str, start: float) -> str:
    while time.time() < start:  # all processes ask at the same moment
        time.sleep(0.001)

    def build(out: Path) -> None:
        with open(log, "a") as f:  # O_APPEND: one line per build, whoever builds
            f.write(f"{os.getpid()}\n")
        time.sleep(0.5)
        (out / "a.bin").write_bytes(b"built once")

    entry = Cache(Path(root)).get_or_build({"k": "shared"}, build)
    return (entry / "a.bin").read_text()


def test_two_processes_build_one_key_once(tmp_path):
    log = tmp_path / "builds.log"
    ctx = multiprocessing.get_context("fork")
    start = time.time() + 0.5
    with ctx.Pool(3) as pool:
        results = pool.starmap(_slow_builder, [(str(tmp_path / "c"), str(log), start)] * 3)
    assert results == ["built once"] * 3
    assert len(log.read_text().splitlines()) == 1


def test_threads_build_one_key_once(tmp_path):
    c = Cache(tmp_path)
    calls: list = []
    lock = threading.Lock()

    def build(out: Path) -> None:
        with lock:
            calls.append(1)
        time.sleep(0.2)
        (out / "a.bin").write_bytes(b"x")

    threads = [threading.Thread(target=c.get_or_build, args=({"k": "t"}, build)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and c.stats.builds == 1 and c.stats.hits == 3


def test_a_cache_path_that_is_a_file_is_a_clear_error(tmp_path):
    from ckgen.errors import CacheError

    f = tmp_path / "cache"
    f.write_text("not a directory")
    with pytest.raises(CacheError) as ei:
        Cache(f).get_or_build({"k": 1}, _writer([]))
    assert "is not a directory" in ei.value.render() and ei.value.exit_code == 4
    with pytest.raises(CacheError):  # a file further up the path
        Cache(f / "below").get_or_build({"k": 1}, _writer([]))


def _deny_writes_under(monkeypatch, root: Path) -> None:
    """Make every file or directory creation under ``root`` fail with EACCES (a read-only cache, also as root,
    where permission bits do not stop writes)."""
    import errno
    import tempfile

    real_mkstemp, real_mkdir = tempfile.mkstemp, Path.mkdir

    def mkstemp(*a, dir=None, **kw):
        if dir is not None and Path(dir).is_relative_to(root):
            raise PermissionError(errno.EACCES, "Permission denied", str(dir))
        return real_mkstemp(*a, dir=dir, **kw)

    def mkdir(self, *a, **kw):
        if self.is_relative_to(root) and not self.exists():
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_mkdir(self, *a, **kw)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(Path, "mkdir", mkdir)


def test_a_read_only_cache_serves_hits_and_builds_misses_elsewhere(tmp_path, monkeypatch):
    from ckgen import progress

    c = Cache(tmp_path / "ro")
    calls: list = []
    hit = c.get_or_build({"k": 1}, _writer(calls))
    if os.geteuid() != 0:
        os.chmod(tmp_path / "ro" / "v1", 0o555)
        for d in (tmp_path / "ro" / "v1").iterdir():
            os.chmod(d, 0o555)
    else:
        _deny_writes_under(monkeypatch, tmp_path / "ro")
    ro = Cache(tmp_path / "ro")
    seen: list[str] = []
    with progress.reporting(progress.Reporter(progress=False)) as rep:
        monkeypatch.setattr(rep, "warning", seen.append)
        assert ro.get_or_build({"k": 1}, _writer(calls)) == hit and len(calls) == 1  # a hit needs no write
        miss = ro.get_or_build({"k": 2}, _writer(calls, b"two"))
    assert len(calls) == 2 and (miss / "a.bin").read_bytes() == b"two"
    assert not miss.is_relative_to(tmp_path / "ro") and ro.verify(miss)
    assert len(seen) == 1 and "is read-only" in seen[0] and "removed at exit" in seen[0]
    assert ro.get_or_build({"k": 2}, _writer(calls)) == miss and len(calls) == 2  # the fallback caches too
    if os.geteuid() != 0:
        for d in (tmp_path / "ro" / "v1").iterdir():
            os.chmod(d, 0o755)
        os.chmod(tmp_path / "ro" / "v1", 0o755)
