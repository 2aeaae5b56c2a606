"""The tuning database: one JSON object per line, one line per (device, kernel, shape) measurement.

A record (every key is written; a person can read the file)::

    {"ckgen": "0.1.0", "date": "2026-12-03 10:00:00", "device": "NVIDIA H200", "arch": "sm_90", "target": "cuda",
     "op": "<op>", "family": "lin", "kernel": "lin_schedulesplitk", "summary": "bf16 row x bf16 col -> bf16 row ...",
     "signature": {...}, "signature_key": "<sha256>", "kernel_key": "<sha256>",
     "shape": {"M": 16, "N": 4096, "K": 4096}, "status": "ok", "time_us": 11.8, "tflops": 45.5,
     "rel_err": 0.0016, "tolerance": 0.03, "reps": 20, "inner": 10, "error": null}

``status`` is ``ok`` (numerics within tolerance, then timed), ``numerics`` (over the tolerance: never chosen) or
``failed`` (did not build or run: ``error`` says why). ``signature_key`` is sha256 of the canonical JSON of the op's
signature (the problem: dtypes, layouts, epilogue ...), ``kernel_key`` of the kernel's parameters: a record of a
kernel whose parameters changed since is ignored. Writes go through a temporary file and ``os.replace``, so the
file is always whole; ``ckgen tune`` resumes from it (:func:`done_keys`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ckgen.errors import CkgenError
from ckgen.files import atomic_write
from ckgen.toolchain.cache import canonical_json, key

STATUSES = ("ok", "numerics", "failed")
REQUIRED = ("arch", "device", "op", "kernel", "kernel_key", "signature_key", "shape", "status", "time_us")


def shape_key(shape: dict) -> tuple[tuple[str, int], ...]:
    """A shape (size name -> value) as sorted (name, value) pairs."""
    return tuple(sorted((k, int(v)) for k, v in shape.items()))


def signature_key(signature: dict) -> str:
    return key(signature=signature)


def kernel_key(spec) -> str:
    """sha256 of a kernel's op and parameters (not its name or file)."""
    return key(op=spec.op, params=spec.params.to_json())


@dataclass(frozen=True)
class Record:
    """One measurement; ``data`` is the whole JSON object."""

    data: dict

    @property
    def shape(self) -> tuple[tuple[str, int], ...]:
        """(size name, value) pairs, sorted by name."""
        return shape_key(self.data["shape"])

    @property
    def ok(self) -> bool:
        return self.data["status"] == "ok" and self.data["time_us"] is not None

    @property
    def seconds(self) -> float:
        return float(self.data["time_us"]) * 1e-6

    def done_key(self) -> tuple:
        d = self.data
        return (d["device"], d["arch"], d["kernel_key"], d["signature_key"], self.shape)


def read(path: str | Path) -> list[Record]:
    """Every record of the database (none when the file does not exist); CkgenError on a malformed line."""
    p = Path(path)
    if not p.exists():
        return []
    out = []
    try:
        lines = p.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CkgenError(f"cannot read the tuning database {p}: {exc}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CkgenError(f"{p}:{n}: not a JSON object ({exc.msg})", hint="a tuning database holds one JSON object per line") from None
        missing = [k for k in REQUIRED if not isinstance(d, dict) or k not in d]
        if missing:
            raise CkgenError(f"{p}:{n}: a tuning record lacks {', '.join(missing)}")
        if d["status"] not in STATUSES:
            raise CkgenError(f"{p}:{n}: status {d['status']!r}", hint=f"legal: {', '.join(STATUSES)}")
        out.append(Record(d))
    return out


def write(path: str | Path, records: Iterable[Record]) -> None:
    """Write every record, one canonical JSON line each, atomically."""

    text = "".join(canonical_json(r.data) + "\n" for r in records)
    atomic_write(Path(path), text)


def done_keys(records: Iterable[Record]) -> set[tuple]:
    return {r.done_key() for r in records}
