"""A content-addressed disk cache of build products, safe across threads and processes.

API (all the other backends need):

- ``key(**parts) -> str``: sha256 of the canonical JSON of ``parts`` (sorted keys, no repr; values
  must be JSON types: str, int, float, bool, None, lists/tuples and dicts of them).
- ``Cache(root).get_or_build(key_parts, build_fn) -> Path``: the entry directory for ``key_parts``.
  On a miss ``build_fn(tmp_dir)`` writes the entry's files into an empty temporary directory; the
  cache then records a manifest (sha256 of every file) and publishes the directory with
  ``os.replace``. Exceptions from ``build_fn`` propagate and publish nothing.
- ``get_or_build(key_parts, build_fn)``: the same on the default cache (``settings().cache_dir``).

Guarantees:

- A per-key lock (``fcntl.flock`` on ``<root>/locks/<key>.lock``) makes concurrent builders of one
  key, in threads or processes, build once: the others wait, then read the published entry.
- Every hit re-hashes the entry's files against its manifest; a corrupted or half-deleted entry is
  detected, removed and rebuilt.
- ``settings().no_cache`` (``CKGEN_NO_CACHE=1``) makes the default cache rebuild every entry (and
  still publish it).
- Entries are immutable once published: callers read files from the returned directory, never write.

Layout: ``<root>/v1/<key[:2]>/<key>/{files..., ckgen-manifest.json}``, ``<root>/v1/tmp/``,
``<root>/v1/locks/``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ckgen.config import settings

MANIFEST = "ckgen-manifest.json"
_LAYOUT = "v1"


def canonical_json(parts: object) -> str:
    """The canonical text of ``parts``: sorted keys, no whitespace, only JSON types (TypeError otherwise)."""
    return json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def key(**parts: object) -> str:
    """sha256 hex digest of the canonical JSON of ``parts``."""
    return hashlib.sha256(canonical_json(parts).encode()).hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass
class CacheStats:
    """Counters of one :class:`Cache` object (this process only)."""

    hits: int = 0
    builds: int = 0
    corrupt: int = 0


class Cache:
    """A cache rooted at ``root``. Thread-safe; several processes may share one root."""

    def __init__(self, root: Path, *, rebuild: bool = False):
        self.root = Path(root) / _LAYOUT
        self.rebuild = rebuild
        self.stats = CacheStats()
        self._stats_lock = threading.Lock()

    # ------------------------------------------------------------------ paths
    def entry_dir(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def _count(self, field: str) -> None:
        with self._stats_lock:
            setattr(self.stats, field, getattr(self.stats, field) + 1)

    # ------------------------------------------------------------------ lookup
    def verify(self, entry: Path) -> bool:
        """True when ``entry`` holds exactly the files its manifest lists, with those hashes."""
        try:
            manifest = json.loads((entry / MANIFEST).read_text())
            files = manifest["files"]
            if not isinstance(files, dict):
                return False
            present = {p.relative_to(entry).as_posix() for p in entry.rglob("*") if p.is_file()}
            if present != set(files) | {MANIFEST}:
                return False
            return all(file_sha256(entry / rel) == digest for rel, digest in files.items())
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def lookup(self, key_parts: dict) -> Path | None:
        """The verified entry for ``key_parts``, or None (missing or corrupt)."""
        entry = self.entry_dir(key(**key_parts))
        return entry if entry.is_dir() and self.verify(entry) else None

    # ------------------------------------------------------------------ build
    @contextmanager
    def _locked(self, digest: str):
        locks = self.root / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        with open(locks / f"{digest}.lock", "a+b") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    def _discard(self, entry: Path) -> None:
        """Move a bad entry out of the way (atomically), then delete it."""
        trash = self.root / "tmp"
        trash.mkdir(parents=True, exist_ok=True)
        dead = Path(tempfile.mkdtemp(prefix="dead-", dir=trash))
        try:
            os.replace(entry, dead / "entry")
        except FileNotFoundError:
            pass
        shutil.rmtree(dead, ignore_errors=True)

    def get_or_build(self, key_parts: dict, build_fn: Callable[[Path], None]) -> Path:
        """The entry directory for ``key_parts``, built with ``build_fn(tmp_dir)`` on a miss."""
        digest = key(**key_parts)
        entry = self.entry_dir(digest)
        if not self.rebuild and entry.is_dir() and self.verify(entry):
            self._count("hits")
            return entry
        with self._locked(digest):
            if entry.exists():
                if not self.rebuild and self.verify(entry):
                    self._count("hits")  # another builder published it while we waited
                    return entry
                if not self.rebuild:
                    self._count("corrupt")
                self._discard(entry)
            tmp_root = self.root / "tmp"
            tmp_root.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f"{digest[:12]}-", dir=tmp_root))
            try:
                build_fn(tmp)
                files = {p.relative_to(tmp).as_posix(): file_sha256(p)
                         for p in sorted(tmp.rglob("*")) if p.is_file()}
                if MANIFEST in files:
                    raise ValueError(f"build_fn wrote the reserved file name {MANIFEST}")
                manifest = {"key": digest, "parts": key_parts, "files": files}
                (tmp / MANIFEST).write_text(json.dumps(manifest, sort_keys=True, indent=1))
                entry.parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp, entry)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            self._count("builds")
            return entry


_default: Cache | None = None
_default_lock = threading.Lock()


def default_cache() -> Cache:
    """The process-wide cache at ``settings().cache_dir`` (re-created when the settings change)."""
    global _default
    st = settings()
    with _default_lock:
        if _default is None or _default.root != Path(st.cache_dir) / _LAYOUT or _default.rebuild != st.no_cache:
            _default = Cache(st.cache_dir, rebuild=st.no_cache)
        return _default


def get_or_build(key_parts: dict, build_fn: Callable[[Path], None]) -> Path:
    """:meth:`Cache.get_or_build` on :func:`default_cache`."""
    return default_cache().get_or_build(key_parts, build_fn)
