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
- A read-only cache still works: hits are read from it, and a miss is built in a private temporary cache
  (removed when the process exits) with a warning. A cache path that is not a directory (``CKGEN_CACHE_DIR``
  naming a file) is a :class:`~ckgen.errors.CacheError` (exit code 4), as is a cache that fails while an entry
  is published (a full disk).

Layout: ``<root>/v1/<key[:2]>/<key>/{files..., ckgen-manifest.json}``, ``<root>/v1/tmp/``,
``<root>/v1/locks/``.
"""

from __future__ import annotations

import atexit
import errno
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
from ckgen.errors import CacheError
from ckgen.files import shown
from ckgen.progress import current

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
        self._fallback: Cache | None = None

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

    def _writable(self) -> Cache:
        """This cache when it can be written, else the fallback for a read-only one (see the module docstring)."""
        if self._fallback is not None:
            return self._fallback
        try:
            for sub in ("locks", "tmp"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=self.root / "tmp", prefix="probe-")
            os.close(fd)
            os.unlink(probe)
            return self
        except OSError as exc:
            if exc.errno in (errno.ENOTDIR, errno.EEXIST) or not _dir_or_missing(self.root):
                raise CacheError(f"the build cache {shown(self.root.parent)} is not a directory",
                                 hint="set CKGEN_CACHE_DIR to a directory, or unset it") from None
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise CacheError(f"cannot use the build cache {shown(self.root.parent)}: {exc.strerror}") from None
            self._fallback = _scratch_cache(self.rebuild)
            current().warning(f"the build cache {shown(self.root.parent)} is read-only ({exc.strerror}): building "
                              f"in {self._fallback.root.parent}, which is removed at exit")
            return self._fallback

    def get_or_build(self, key_parts: dict, build_fn: Callable[[Path], None]) -> Path:
        """The entry directory for ``key_parts``, built with ``build_fn(tmp_dir)`` on a miss."""
        digest = key(**key_parts)
        entry = self.entry_dir(digest)
        if not self.rebuild and entry.is_dir() and self.verify(entry):
            self._count("hits")
            return entry
        target = self._writable()
        if target is not self:
            return target.get_or_build(key_parts, build_fn)
        try:
            return self._build(digest, entry, key_parts, build_fn)
        except OSError as exc:  # the cache's own files (build_fn's errors are CkgenErrors)
            raise CacheError(f"cannot write the build cache {shown(self.root.parent)}: {exc.strerror or exc}") from None

    def _build(self, digest: str, entry: Path, key_parts: dict, build_fn: Callable[[Path], None]) -> Path:
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


def _dir_or_missing(path: Path) -> bool:
    """False when ``path`` or one of its ancestors exists and is not a directory."""
    for p in (path, *path.parents):
        if p.exists():
            return p.is_dir()
    return True


_scratch: dict[bool, Cache] = {}
_scratch_lock = threading.Lock()


def _scratch_cache(rebuild: bool) -> Cache:
    """A private cache in a temporary directory, removed at exit (one per process)."""
    with _scratch_lock:
        if rebuild not in _scratch:
            root = Path(tempfile.mkdtemp(prefix="ckgen-cache-"))
            atexit.register(shutil.rmtree, root, True)
            _scratch[rebuild] = Cache(root, rebuild=rebuild)
        return _scratch[rebuild]


def scratch_dir(name: str) -> Path:
    """A writable directory ``<cache>/<name>`` of the default cache, or of the temporary fallback cache when the
    default one is read-only (for files that are not cache entries, e.g. the hiprtc shim's symlink)."""
    return default_cache()._writable().root.parent / name


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
