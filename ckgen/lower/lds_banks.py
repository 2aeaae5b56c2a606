"""LDS layouts of the AMD bodies' operand tiles: XOR-swizzled tiles instead of padded rows, and the bank model
that proves them conflict-free (a shared block: the ops whose AMD bodies stage MFMA operands in LDS plan their
tiles, or check their reads, with it).

Contract:

- :class:`BankModel` (from a Target's ``lds_banks`` / ``lds_bank_bytes``): one wave-level LDS
  instruction is served in phases of consecutive lanes, ``lanes_per_phase(bytes)`` =
  banks x bank bytes / max(access bytes, bank bytes); within a phase, every bank serves one dword
  address per cycle (lanes reading the same dword share it). Extra cycles of an instruction = the sum
  over its phases of (largest number of distinct dwords one bank must serve - 1). The emulator counts
  the same quantity (``ckgen/include/ckgen/emu/lds_banks.h``).
- :func:`plan_operand_layout` picks, for one operand tile (:class:`OperandShape`), the granule, the XOR
  table and (MN-contiguous operands) the global load arrangement, so that the fragment reads of every
  matrix instruction (lanes per ``ckgen::MfmaLayout``) and the global->LDS writes are conflict-free
  under the model; the predicted extra cycles go into the returned :class:`LdsOperandLayout`.
- :func:`operand_accesses` / :func:`extra_cycles` expose the access pattern and the model (tests, report).

How the table is found: every phase of every access touches a set of granules; when that set is an
aligned power-of-two block (an affine subspace of granule indices over GF(2)) the phase is
conflict-free iff the swizzle's position map (granule index -> its low ``low_bits`` bits after the XOR,
a linear map) is injective on it. Structured candidates (the classic "XOR the line index into the
column" folds, shifted) are tried first, then seeded random tables over the relevant bits; the winner
is checked by simulating every access of the workgroup. Granule: the bytes one fragment read takes from
a row within one phase, ``max(fragment bytes, line bytes / instruction rows)``, so fragment reads never
share a granule's banks with another row (a fragment read is one run of the lane's fragment: the block-scaled
MFMA's fp8 fragments are two reads of 16 bytes, ``MatrixInstr.frag_runs``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ckgen.lower.lds import FIELD_BITS, MAX_TABLE, LdsOperandLayout


@dataclass(frozen=True)
class BankModel:
    banks: int          # LDS banks (32 on gfx9 CDNA1-3, 64 on gfx950)
    bank_bytes: int     # bytes per bank and cycle (4)
    wave: int = 64

    @property
    def line_bytes(self) -> int:
        return self.banks * self.bank_bytes

    def lanes_per_phase(self, access_bytes: int) -> int:
        return max(1, min(self.wave, self.line_bytes // max(access_bytes, self.bank_bytes)))


@dataclass(frozen=True)
class OperandShape:
    """One operand tile as a matrix-product body moves it (A: rows = tile M; B: rows = tile N)."""

    rows: int
    tile_k: int
    elem_bytes: int
    k_contiguous: bool   # global layout contiguous along K (row-major A, column-major B)
    vec: int             # global vector width, elements along the contiguous dimension
    threads: int
    instr_rows: int      # instruction M (A) or N (B)
    instr_k: int
    frag_items: int      # elements per lane of one instruction (kAItems / kBItems)
    waves_along: int     # waves along M (A) or N (B)
    wave_tile: int       # rows per wave
    frag_runs: int = 1   # the fragment as equal runs along K, instr_k / frag_runs apart (MatrixInstr.frag_runs)

    @property
    def run_items(self) -> int:
        """Elements of one fragment read (one run)."""
        return self.frag_items // self.frag_runs


@dataclass(frozen=True)
class AccessGroup:
    """Wave-level LDS instructions of one size: ``q`` (logical granule index) and ``inner`` (byte offset
    inside the granule) per instruction and lane; ``q < 0`` marks an inactive lane."""

    kind: str            # "read" | "write"
    nbytes: int
    q: np.ndarray        # (instructions, wave)
    inner: np.ndarray
    weight: int = 1      # times the workgroup issues each instruction (reads: waves sharing a row range)


def _log2(x: int) -> int:
    return x.bit_length() - 1


def granule_elements(s: OperandShape, bank: BankModel) -> int:
    frag = s.run_items * s.elem_bytes
    g = max(frag, bank.line_bytes // s.instr_rows)
    return max(1, min(g, s.tile_k * s.elem_bytes) // s.elem_bytes)


def low_bits_for(s: OperandShape, bank: BankModel, granule: int) -> int:
    n = _log2(max(1, bank.line_bytes // (granule * s.elem_bytes)))
    granules = s.rows * s.tile_k // granule
    n = min(n, FIELD_BITS, (granules & -granules).bit_length() - 1)
    return max(n, 0)


def operand_accesses(s: OperandShape, granule: int, mn_lanes: int, wave: int = 64,
                     mn_piece: int = 1) -> list[AccessGroup]:
    """Every wave-level LDS instruction one K tile issues for this operand: the fragment reads of the MFMA
    body (one wave per row range, ``weight`` = the waves that read it) and the global->LDS writes of
    ``ckgen/blocks/tile_loader.h`` (every wave)."""
    lanes = np.arange(wave)
    rg = s.tile_k // granule
    reads_q, reads_inner = [], []
    for wm in range(s.waves_along):
        for i in range(s.wave_tile // s.instr_rows):
            for kk in range(s.tile_k // s.instr_k):
                for run in range(s.frag_runs):  # (one read per run of the lane's fragment)
                    r = wm * s.wave_tile + i * s.instr_rows + lanes % s.instr_rows
                    k = kk * s.instr_k + run * (s.instr_k // s.frag_runs) + (lanes // s.instr_rows) * s.run_items
                    reads_q.append(r * rg + k // granule)
                    reads_inner.append((k % granule) * s.elem_bytes)
    waves = -(-s.threads // wave)
    groups = [AccessGroup("read", s.run_items * s.elem_bytes, np.array(reads_q), np.array(reads_inner),
                          max(1, waves // s.waves_along))]
    wq, wi = [], []
    if s.k_contiguous:
        nvec = s.tile_k // s.vec
        units = s.rows * nvec
        piece = min(s.vec, granule)
        inner_steps = range(max(1, s.vec // granule))
    else:
        ng, chunks = s.tile_k // mn_piece, s.rows // s.vec
        units = chunks * ng
        piece = mn_piece
        inner_steps = range(s.vec)
    for p in range(-(-units // s.threads)):
        for j in inner_steps:
            for w in range(waves):
                t = w * wave + lanes + p * s.threads
                active = (t < units) & (w * wave + lanes < s.threads)
                if s.k_contiguous:
                    r, k = t // nvec, (t % nvec) * s.vec + j * piece
                else:
                    i_lo, ks, i_hi = t % mn_lanes, (t // mn_lanes) % ng, t // (mn_lanes * ng)
                    r, k = (i_hi * mn_lanes + i_lo) * s.vec + j, ks * mn_piece
                wq.append(np.where(active, r * rg + k // granule, -1))
                wi.append((k % granule) * s.elem_bytes)
    groups.append(AccessGroup("write", piece * s.elem_bytes, np.array(wq), np.array(wi)))
    return groups


def _mask_array(hi: np.ndarray, table: tuple[int, ...]) -> np.ndarray:
    m = np.zeros_like(hi)
    for b, c in enumerate(table):
        if c:
            m ^= np.where((hi >> b) & 1 == 1, c, 0)
    return m


def extra_cycles(groups: list[AccessGroup], granule_bytes: int, low_bits: int, table: tuple[int, ...],
                 bank: BankModel) -> dict[str, int]:
    """Extra LDS cycles per kind under the bank model (see the module docstring)."""
    out = {"read": 0, "write": 0}
    for g in groups:
        if g.q.size == 0:
            continue
        active = g.q >= 0
        q = np.where(active, g.q, 0)
        phys = (q ^ _mask_array(q >> low_bits, table)) * granule_bytes + g.inner
        out[g.kind] += g.weight * _conflicts(phys, active, g.nbytes, bank)
    return out


def _conflicts(addr: np.ndarray, active: np.ndarray, nbytes: int, bank: BankModel) -> int:
    n_inst, wave = addr.shape
    per = bank.lanes_per_phase(nbytes)
    dw_per = max(1, nbytes // 4)
    dw = (addr // 4)[:, :, None] + np.arange(dw_per)[None, None, :]
    phase = (np.arange(wave) // per)[None, :, None]
    nph = -(-wave // per)
    inst = np.arange(n_inst)[:, None, None]
    key = ((inst * nph + phase) * bank.banks + dw % bank.banks)
    act = np.broadcast_to(active[:, :, None], dw.shape)
    pairs = np.unique(np.stack([key[act], dw[act]], axis=1), axis=0)
    if pairs.size == 0:
        return 0
    keys, counts = np.unique(pairs[:, 0], return_counts=True)
    ways = np.zeros(n_inst * nph, dtype=np.int64)
    np.maximum.at(ways, keys // bank.banks, counts)
    return int(np.sum(np.maximum(ways - 1, 0)))


# --------------------------------------------------------------------------------------------- solver
def _basis(vectors: list[int]) -> list[int]:
    """A basis over GF(2) of the span of ``vectors`` (bit vectors as ints), reduced in their order."""
    basis: list[int] = []
    for v in vectors:
        for b in basis:
            v = min(v, v ^ b)
        if v:
            basis.append(v)
    return basis


def _rank(vectors: list[int]) -> int:
    return len(_basis(vectors))


def _phase_subspaces(groups: list[AccessGroup], bank: BankModel) -> tuple[set[tuple[int, ...]], bool]:
    """Bases of the granule sets the phases touch (translated to 0), and whether some phase's set is not
    an aligned power-of-two block (then only simulation judges it)."""
    bases: set[tuple[int, ...]] = set()
    nonlinear = False
    for g in groups:
        per = bank.lanes_per_phase(g.nbytes)
        for row in g.q:
            for p0 in range(0, row.size, per):
                qs = sorted({int(x) for x in row[p0:p0 + per] if x >= 0})
                if len(qs) <= 1:
                    continue
                diffs = [x ^ qs[0] for x in qs]
                basis = _basis(diffs)
                if (1 << len(basis)) != len(qs) or any(d ^ qs[0] not in set(qs) for d in diffs):
                    nonlinear = True
                    continue
                span = {0}
                for b in basis:
                    span |= {x ^ b for x in span}
                if span != set(diffs):
                    nonlinear = True
                    continue
                bases.add(tuple(sorted(basis)))
    return bases, nonlinear


def _deficiency(bases, low_bits: int, table: tuple[int, ...]) -> int:
    lowmask = (1 << low_bits) - 1
    total = 0
    for basis in bases:
        imgs = []
        for v in basis:
            hi, m = v >> low_bits, 0
            for b, c in enumerate(table):
                if (hi >> b) & 1:
                    m ^= c
            imgs.append((v & lowmask) ^ m)
        total += min(len(basis), low_bits) - _rank(imgs)
    return total


def _candidates(bases, low_bits: int, seed: int):
    relevant = sorted({b for basis in bases for v in basis for b in range(MAX_TABLE) if (v >> low_bits) >> b & 1})
    yield (0,) * MAX_TABLE
    if low_bits == 0:
        return
    for s in range(MAX_TABLE):            # folds: table[j] = 1 << ((j - s) mod low_bits) on the relevant bits
        yield tuple((1 << ((j - s) % low_bits)) if j in relevant and j >= s else 0 for j in range(MAX_TABLE))
    rng = random.Random(seed)
    for _ in range(4000):
        yield tuple(rng.randrange(1 << low_bits) if j in relevant else 0 for j in range(MAX_TABLE))


def _solve(groups, bank: BankModel, granule_bytes: int, low_bits: int, seed: int):
    bases, nonlinear = _phase_subspaces(groups, bank)
    best = None
    for table in _candidates(bases, low_bits, seed):
        if _deficiency(bases, low_bits, table) == 0:
            best = table
            break
    if best is None:
        best = min(_candidates(bases, low_bits, seed), key=lambda t: _deficiency(bases, low_bits, t))
    cost = extra_cycles(groups, granule_bytes, low_bits, best, bank)
    if (cost["read"] or cost["write"]) and nonlinear:   # irregular phases: let the simulation choose
        for i, table in enumerate(_candidates(bases, low_bits, seed + 1)):
            if i >= 60:
                break
            c = extra_cycles(groups, granule_bytes, low_bits, table, bank)
            if c["read"] + c["write"] < cost["read"] + cost["write"]:
                best, cost = table, c
    return best, cost


def mn_unit_elements(target, elem_bytes: int, k_contiguous: bool) -> int:
    """Elements along K of the smallest MN-contiguous unit the swizzled tiles take (one LDS write of at least
    4 bytes); 1 for K-contiguous operands and targets without swizzled tiles."""
    if k_contiguous or not target.lds_swizzle:
        return 1
    return max(1, 4 // elem_bytes)


def _mn_options(s: OperandShape, bank: BankModel, granule: int) -> list[tuple[int, int]]:
    """(mn_piece, mn_lanes) to try, best first: every thread busy, LDS writes of >= 4 bytes, wide pieces,
    then as many consecutive threads along M/N as fit two LDS lines of vector bytes."""
    chunks = s.rows // s.vec
    pieces = [w for w in (granule >> i for i in range(granule.bit_length())) if w >= 1 and s.tile_k % w == 0]

    def piece_key(w: int) -> tuple:
        units = chunks * (s.tile_k // w)
        return (units < s.threads, w * s.elem_bytes < 4, -w)

    widest = max(1, min(chunks, (2 * bank.line_bytes) // (s.vec * s.elem_bytes)))
    lanes = [a for a in range(widest, 0, -1) if chunks % a == 0 and a & (a - 1) == 0] or [1]
    return [(w, a) for w in sorted(pieces, key=piece_key) for a in lanes]


@lru_cache(maxsize=4096)
def plan_operand_layout(s: OperandShape, bank: BankModel, coalesce_bytes: int = 64) -> LdsOperandLayout:
    """The conflict-free (if the model finds one) swizzled layout of one operand tile; see the module docstring.

    MN-contiguous operands: options in the order of :func:`_mn_options`; the first conflict-free one whose
    threads along M/N read at least ``coalesce_bytes`` contiguous bytes per K row wins (else the one with the
    fewest conflicts)."""
    granule = granule_elements(s, bank)
    n = low_bits_for(s, bank, granule)
    gb = granule * s.elem_bytes
    seed = hash((s.rows, s.tile_k, s.elem_bytes, s.vec, s.instr_rows)) & 0xFFFF
    options = [(1, 1)] if s.k_contiguous else _mn_options(s, bank, granule)
    best = None
    for rank, (mn_piece, mn_lanes) in enumerate(options):
        groups = operand_accesses(s, granule, mn_lanes, bank.wave, mn_piece)
        table, cost = _solve(groups, bank, gb, n, seed)
        total = cost["read"] + cost["write"]
        narrow = mn_lanes * s.vec * s.elem_bytes < coalesce_bytes and mn_lanes < s.rows // s.vec
        key = (total, narrow, rank)
        if best is None or key < best[0]:
            best = (key, mn_piece, mn_lanes, table, cost)
        if total == 0 and not narrow:
            break
    _, mn_piece, mn_lanes, table, cost = best
    return LdsOperandLayout(rows=s.rows, tile_k=s.tile_k, elem_bytes=s.elem_bytes, granule=granule, low_bits=n,
                            table=table, mn_lanes=mn_lanes, mn_piece=mn_piece, read_conflicts=cost["read"],
                            write_conflicts=cost["write"])


def bank_model(target) -> BankModel:
    """The LDS bank model of a Target (``lds_banks`` x ``lds_bank_bytes``, its wave size)."""
    return BankModel(banks=target.lds_banks, bank_bytes=target.lds_bank_bytes, wave=target.wave_size)


def plain_layout(s: OperandShape, mn_piece: int = 1) -> LdsOperandLayout:
    """Unswizzled, unpadded rows (targets whose body lays out shared memory itself, and the deliberately
    conflicting layout of the tests): one granule per row's largest power-of-two part, no XOR."""
    granule = s.tile_k & -s.tile_k
    return LdsOperandLayout(rows=s.rows, tile_k=s.tile_k, elem_bytes=s.elem_bytes, granule=granule, low_bits=0,
                            table=(0,) * MAX_TABLE, mn_piece=mn_piece)
