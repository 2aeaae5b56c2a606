"""The attention op's planning passes: (KernelSpec, Target) -> KernelPlan.

``PASSES`` is the whole pipeline, in order. Each pass reads the working :class:`AttentionDraft`, decides or
checks one concern, and refuses with ``d.fail(param, value, legal, reason)``. Parameters the kernel leaves out
come from the known-good table (``configs.py``) and are checked like written ones; a refusal of a planned value
says so. Arch knowledge comes only from the :class:`Target` (platform, instruction table, LDS, registers).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ckgen.backends.amd.occupancy import occupancy_limits
from ckgen.ir.plan import Entry, KernelPlan
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import MatrixInstr, Target
from ckgen.ir.types import DType
from ckgen.lower.draft import Draft, run_passes
from ckgen.lower.lds import MAX_TABLE, LdsOperandLayout
from ckgen.lower.lds_banks import AccessGroup, OperandShape, bank_model, extra_cycles, plan_operand_layout
from ckgen.ops.attention.abi import abi, launch
from ckgen.ops.attention.body import AttentionPlan, Body, RegisterEstimate, WgmmaBodyPlan
from ckgen.ops.attention.configs import WGMMA_TABLE, known_good
from ckgen.ops.attention.spec import AttentionConfig, AttentionParams, AttentionSpec
from ckgen.targets.nvidia import FEATURE_TMA, FEATURE_WGMMA

MAX_THREADS = 1024
TILE_RANGE = (16, 256)        # queries per workgroup and keys per tile
#: warp_split = keys: the 16-row instruction blocks every wave holds (tile M = 16 or 32; O doubles at 32)
KEY_SPLIT_BLOCKS = (1, 2)
VECTOR_BYTES = 16             # AMD: widest global access per lane
#: the device body per target platform
BODIES = {
    "amd": Body("attention_fwd_amd.h", "ckgen::attention_fwd_amd", lds_buffers=(1, 2), q_in_regs=(True,),
                rows_per_wave=(1, 2, 4), waves_per_eu=True, kv_barriers=()),
    "cuda": Body("attention_fwd_nv.h", "ckgen::attention_fwd_nv", lds_buffers=(1, 2, 3, 4), q_in_regs=(True, False),
                 rows_per_wave=(1, 2), waves_per_eu=False, kv_barriers=(2, 1)),
}


@dataclass
class AttentionDraft(Draft):
    """Mutable working state of one attention lowering; :func:`plan` freezes it."""

    planned: list[str] = field(default_factory=list)
    instr: MatrixInstr | None = None
    tile: tuple[int, int] = (0, 0)
    waves: int = 0
    lds_buffers: int = 0
    q_in_regs: bool = True
    waves_per_eu: int = 1
    kv_barriers: int = 0
    vec: int = 1
    lds_k_stride: int = 0
    lds_k: LdsOperandLayout | None = None
    lds_v_stride: int = 0
    lds_bytes: int = 0
    mma_per_tile: int = 0
    registers: RegisterEstimate | None = None
    wgmma: WgmmaBodyPlan | None = None
    #: the decode body's ``warp_split = keys`` (NVIDIA): the waves share the tile's rows, each takes N / waves keys
    split_keys: bool = False

    @property
    def a(self) -> AttentionSpec:
        return self.spec.params.attn

    @property
    def cfg(self) -> AttentionConfig:
        return self.spec.params.config

    @property
    def body(self) -> Body:
        return BODIES[self.target.platform]

    @property
    def amd(self) -> bool:
        return self.target.platform == "amd"

    def show(self, param: str, value: object) -> str:
        """``value`` as a refusal prints it: ``(planned)`` when the table chose it."""
        return f"{value} (planned)" if param in self.planned else str(value)

    def refuse(self, param: str, value: object, legal: str, reason: str):
        return self.fail(param, self.show(param, value), legal, reason)


def _wave_tile(d: AttentionDraft) -> tuple[int, int]:
    """(queries, keys) one wave computes per K/V tile: its rows of the tile against every key, or (split_keys) every
    row against its N / waves keys."""
    (bm, bn), w = d.tile, d.waves
    return (bm, bn // w) if d.split_keys else (bm // w, bn)


def _q_unit(d: AttentionDraft) -> int:
    """Queries one instruction covers: the MFMA's N on AMD (queries are columns of S^T), 16 rows on NVIDIA."""
    return d.instr.n if d.amd else d.instr.m


def _shapes(instrs) -> str:
    return ", ".join(dict.fromkeys(i.shape_text for i in instrs)) or "none"


def _body_instructions(d: AttentionDraft, dt: DType | None = None) -> list[MatrixInstr]:
    """The target's single-block dtype -> f32 instructions the body can use, best first (``dt``: the kernel's
    dtype unless given)."""
    t, dt = d.target, dt or d.a.dtype
    out = []
    for i in t.instructions_for(dt, dt, DType.F32):
        if d.amd:
            ok = i.kind == "mfma" and i.m == i.n and i.m in (16, 32) and i.a_items(t.wave_size) % 4 == 0 \
                and i.a_items(t.wave_size) == i.b_items(t.wave_size)
        else:
            ok = i.kind == "mma_sync" and i.shape == (16, 8, 16)
        if ok:
            out.append(i)
    return out


def check_dtype(d: AttentionDraft) -> None:
    if not _body_instructions(d):
        usable = [dt.value for dt in (DType.F16, DType.BF16) if _body_instructions(d, dt)]
        raise d.fail("dtype", d.a.dtype.value, ", ".join(usable) or "none (no target of this vendor family)",
                     f"{d.target.name} has no matrix instruction the attention body can use for this dtype")


def _fits(d: AttentionDraft, i: MatrixInstr, tile: tuple[int, int]) -> bool:
    bm, bn = tile
    hd = d.a.head_dim
    return bm % (i.n if d.amd else i.m) == 0 and bn % i.m == 0 and bn % i.k == 0 and hd % i.m == 0 and hd % i.k == 0


def plan_instruction(d: AttentionDraft) -> None:
    """The written instruction, or the best one of the table's query extent that fits the tile."""
    cands, cfg = _body_instructions(d), d.cfg
    kg = known_good(d.target.platform, d.a.head_dim)
    d.tile = cfg.tile if cfg.tile is not None else kg.tile
    if cfg.tile is None:
        d.planned.append("tile")
    if cfg.instr is not None:
        found = [i for i in cands if i.shape == cfg.instr]
        if not found:
            raise d.fail("instr", "x".join(map(str, cfg.instr)), _shapes(cands),
                         f"not a single-block {d.a.dtype.value} -> f32 instruction of the target that the "
                         "attention body takes (AMD: square 16x16 / 32x32 with >= 4 elements per lane)")
        d.instr = found[0]
        return
    d.planned.append("instr")
    order = [i for i in cands if i.m == kg.instr_m] + [i for i in cands if i.m != kg.instr_m]
    d.instr = next((i for i in order if _fits(d, i, d.tile)), order[0])


def plan_waves(d: AttentionDraft) -> None:
    cfg, kg, unit = d.cfg, known_good(d.target.platform, d.a.head_dim), _q_unit(d)
    if cfg.waves is not None:
        d.waves = cfg.waves
        return
    d.planned.append("waves")
    (bm, bn), unit = d.tile, _q_unit(d)
    if d.split_keys:  # the keys of a tile in whole k16 steps per wave
        d.waves = next(w for w in (4, 2, 8, 1) if bn % (w * unit) == 0 or w == 1)
        return
    for w in (kg.waves, 8, 4, 2, 1):
        if bm % (w * unit) == 0 and bm // (w * unit) in d.body.rows_per_wave:
            d.waves = w
            return
    d.waves = kg.waves


def check_workgroup(d: AttentionDraft) -> None:
    lanes = d.target.wave_size
    if d.waves * lanes > MAX_THREADS:
        raise d.refuse("waves", d.waves, f"1..{MAX_THREADS // lanes}",
                       f"{d.waves * lanes} threads exceed the {MAX_THREADS}-thread workgroup limit")


def check_tile(d: AttentionDraft) -> None:
    (bm, bn), i, w, hd = d.tile, d.instr, d.waves, d.a.head_dim
    tile, unit = f"{bm}x{bn}", _q_unit(d)
    lo, hi = TILE_RANGE
    if not (lo <= bm <= hi and lo <= bn <= hi):
        raise d.refuse("tile", tile, f"M and N in {lo}..{hi}", "tile out of range")
    blocks = tuple(b * unit for b in d.body.rows_per_wave)
    if d.split_keys:
        _check_split_keys(d)
    elif bm % (w * unit) or bm // (w * unit) not in d.body.rows_per_wave:
        raise d.refuse("tile", tile, f"tile M = waves x ({' or '.join(map(str, blocks))}) queries per wave "
                                     f"(waves = {d.show('waves', w)}, instruction {i.shape_text})",
                       f"{bm} queries do not split into {w} waves of whole {unit}-query instruction blocks")
    elif bn % i.m or bn % i.k or (not d.amd and bn % 16):
        step = max(i.m, i.k, 16 if not d.amd else 1)
        raise d.refuse("tile", tile, f"tile N a multiple of {step} (instruction {i.shape_text})",
                       "the keys of a tile do not split into whole instructions")
    if hd % i.m or hd % i.k:
        raise d.refuse("instr", i.shape_text, "an instruction whose M and K divide the head dim",
                       f"head_dim {hd} does not split into whole instructions")


def _check_split_keys(d: AttentionDraft) -> None:
    """warp_split = keys: one or two 16-row instruction blocks (tile M = 16 or 32: KEY_SPLIT_BLOCKS) shared by the
    waves, the keys of a tile in whole k16 steps of O += P.V per wave."""
    (bm, bn), w, i = d.tile, d.waves, d.instr
    rows = tuple(b * i.m for b in KEY_SPLIT_BLOCKS)
    if bm not in rows or bn % (w * 16):
        ns = list(range(16 * w, TILE_RANGE[1] + 1, 16 * w))
        n_text = ", ".join(map(str, ns[:4])) + (", ..." if len(ns) > 4 else "")
        legal = " or ".join(f"{m}xN" for m in rows) + f", N = {n_text}" if ns else "none (fewer waves)"
        raise d.refuse("tile", f"{bm}x{bn}", f"with warp_split = keys and waves = {d.show('waves', w)}: {legal} "
                       f"(M = {' or '.join(map(str, rows))}, N a multiple of 16 x waves)",
                       "the waves share one or two 16-row blocks and each takes a whole number of 16-key steps")


def plan_pipeline(d: AttentionDraft) -> None:
    cfg, kg, body = d.cfg, known_good(d.target.platform, d.a.head_dim), d.body
    if cfg.q_in_regs is None:
        d.planned.append("q_in_regs")
        d.q_in_regs = kg.q_in_regs if kg.q_in_regs in body.q_in_regs else body.q_in_regs[0]
    elif cfg.q_in_regs not in body.q_in_regs:
        raise d.fail("q_in_regs", str(cfg.q_in_regs).lower(), " or ".join(str(x).lower() for x in body.q_in_regs),
                     "this target's body keeps Q where it says")
    else:
        d.q_in_regs = cfg.q_in_regs
    if cfg.waves_per_eu is None:
        if body.waves_per_eu:
            d.planned.append("waves_per_eu")
        d.waves_per_eu = kg.waves_per_eu if body.waves_per_eu else 1
    elif cfg.waves_per_eu != 1 and not body.waves_per_eu:
        raise d.fail("waves_per_eu", cfg.waves_per_eu, "1 (or leave it out)",
                     "only the AMD body takes an occupancy hint")
    elif cfg.waves_per_eu > d.target.max_waves_per_simd:
        raise d.fail("waves_per_eu", cfg.waves_per_eu, f"1..{d.target.max_waves_per_simd}",
                     "more waves per SIMD than the target runs")
    else:
        d.waves_per_eu = cfg.waves_per_eu
    if cfg.lds_buffers is None:
        d.planned.append("lds_buffers")
        d.lds_buffers = kg.lds_buffers if kg.lds_buffers in body.lds_buffers else body.lds_buffers[-1]
    elif cfg.lds_buffers not in body.lds_buffers:
        raise d.fail("lds_buffers", cfg.lds_buffers, ", ".join(map(str, body.lds_buffers)),
                     "unsupported K/V pipeline depth for this target's body")
    else:
        d.lds_buffers = cfg.lds_buffers
    if cfg.kv_barriers is None:
        if body.kv_barriers:
            d.planned.append("kv_barriers")
        d.kv_barriers = kg.kv_barriers if body.kv_barriers else 0
    elif cfg.kv_barriers not in body.kv_barriers:
        raise d.fail("kv_barriers", cfg.kv_barriers, " or ".join(map(str, body.kv_barriers)) or "(leave it out)",
                     "this target's body has its own K/V synchronization" if not body.kv_barriers else
                     "unsupported barriers per K/V tile")
    else:
        d.kv_barriers = cfg.kv_barriers
    if d.kv_barriers == 1 and d.lds_buffers < 2:
        raise d.refuse("lds_buffers", d.lds_buffers, ">= 2 with kv_barriers = 1",
                       "one barrier per K/V tile needs a second stage to copy into")


def _lds_layout(d: AttentionDraft, buffers: int) -> int:
    """LDS bytes at ``buffers`` K/V buffers (sets the AMD strides and vector width)."""
    (bm, bn), hd, eb = d.tile, d.a.head_dim, d.a.dtype.bytes
    if not d.amd:  # swizzled tiles: Q, then stages of K and V (split_keys: or the waves' states, if larger)
        merge = key_merge_bytes(hd, d.waves, bm) if d.split_keys else 0
        return eb * bm * hd + max(eb * buffers * 2 * bn * hd, merge)
    d.vec = VECTOR_BYTES // eb
    d.lds_k = k_tile_layout(bn, hd, eb, d.vec, d.waves * d.target.wave_size, d.instr, d.target)
    d.lds_k_stride = 0 if d.lds_k is not None else hd + max(d.target.lds_pad_bytes // eb, d.vec)
    d.lds_v_stride = v_tile_stride(bn, hd, eb, d.instr, d.target, d.vec, d.waves * d.target.wave_size)
    k_elems = d.lds_k.elements if d.lds_k is not None else bn * d.lds_k_stride
    return buffers * (k_elems + hd * d.lds_v_stride) * eb


def k_tile_shape(block_n: int, head_dim: int, elem_bytes: int, vec: int, threads: int, instr: MatrixInstr,
                 wave: int = 64):
    """The AMD body's LDS K tile as the bank model's operand (ckgen/lower/lds_banks.py OperandShape): rows
    = the block_n keys, K = head_dim (contiguous in memory and in LDS), written by blk::TileLoader (vectors of
    ``vec``, ``threads`` threads: attention_fwd_amd.h KvTiles) and read as the A operand of S^T = K . Q^T
    (attention_fwd_amd.h load_k: lane l reads kAItems elements at key row kb * M + l % M, d = dc * K + (l / M) *
    kAItems). Every wave reads every key row: one wave tile of block_n rows, shared by all waves."""
    return OperandShape(rows=block_n, tile_k=head_dim, elem_bytes=elem_bytes, k_contiguous=True, vec=vec,
                        threads=threads, instr_rows=instr.m, instr_k=instr.k, frag_items=instr.a_items(wave),
                        waves_along=1, wave_tile=block_n)


def k_tile_layout(block_n: int, head_dim: int, elem_bytes: int, vec: int, threads: int, instr: MatrixInstr,
                  target: Target) -> LdsOperandLayout | None:
    """The K tile's XOR-swizzled, unpadded layout (:func:`k_tile_shape` planned by the shared bank model,
    ckgen/lower/lds_banks.py), or None for padded rows on targets without swizzled tiles (the body reads a fragment
    at the lane's offset XOR a constant where blk::SwizzledTile::xor_steps allows, else at its own offset). Padding
    cannot free both sides: on 32 banks the 8-byte fragment reads of 16 rows want a row stride of 2 mod 4 dwords,
    the loader's 16-byte writes 0 mod 4."""
    if not target.lds_swizzle:
        return None
    shape = k_tile_shape(block_n, head_dim, elem_bytes, vec, threads, instr, target.wave_size)
    return plan_operand_layout(shape, bank_model(target))


#: elements of one V^T read (attention_fwd_amd.h load_v: a run of 4 keys of one d row per lane)
V_RUN = 4


def v_read_groups(block_n: int, head_dim: int, stride: int, elem_bytes: int, instr_m: int, instr_k: int,
                  wave: int = 64) -> list:
    """The LDS V^T reads of one tile by one wave (attention_fwd_amd.h load_v) as the bank model's access groups
    (ckgen/lower/lds_banks.py): per operand (k step pc, d block db) and run u, lane l reads V_RUN elements at
    d row db * instr_m + l % instr_m, key (R / kCI) * instr_m + c_row(R % kCI, l), R = pc * kAI + V_RUN * u
    (ckgen::MfmaLayout with 32-bit accumulators: c_row(r, l) = (r / 4) * 4 * (64 / n) + 4 * (l / n) + r % 4)."""
    lanes = np.arange(wave)
    ai, ci = instr_m * instr_k // wave, instr_m * instr_m // wave
    addrs = []
    for pc in range(block_n // instr_k):
        for db in range(head_dim // instr_m):
            for u in range(ai // V_RUN):
                r = pc * ai + V_RUN * u
                rc = r % ci
                key = (r // ci) * instr_m + (rc // 4) * 4 * (wave // instr_m) + 4 * (lanes // instr_m) + rc % 4
                addrs.append(((db * instr_m + lanes % instr_m) * stride + key) * elem_bytes)
    return [AccessGroup("read", V_RUN * elem_bytes, np.array(addrs), np.zeros((len(addrs), wave), dtype=np.int64))]


def v_write_groups(block_n: int, head_dim: int, stride: int, elem_bytes: int, vec: int, threads: int,
                   wave: int = 64) -> list:
    """The loader's LDS V^T writes of one tile (attention_fwd_amd.h LoadV: blk::TileLoader MN-contiguous, kMnLanes =
    kMnPiece = 1, blk::PaddedTile<stride, 1>) as the bank model's access groups, one instruction per wave, unit pass
    p and element v: unit t = tid + p * threads (t < head_dim / vec * block_n) writes one element at d row
    (t / block_n) * vec + v, key t % block_n."""
    units = head_dim // vec * block_n
    addrs = []
    for w in range(threads // wave):
        for p in range(-(-units // threads)):
            t = w * wave + np.arange(wave) + p * threads
            for v in range(vec):
                addr = (((t // block_n) * vec + v) * stride + t % block_n) * elem_bytes
                addrs.append(np.where(t < units, addr, -1))
    return [AccessGroup("write", elem_bytes, np.array(addrs), np.zeros((len(addrs), wave), dtype=np.int64))]


def v_tile_stride(block_n: int, head_dim: int, elem_bytes: int, instr: MatrixInstr, target: Target,
                  vec: int = 0, threads: int = 0) -> int:
    """Elements between d rows of the AMD body's LDS V^T tile: among the 16 strides above ``block_n`` that are
    multiples of V_RUN (aligned runs), the first whose V^T reads (:func:`v_read_groups`) the bank model finds
    conflict-free and, of those, with the fewest extra cycles on the loader's writes (:func:`v_write_groups`, when
    ``vec`` and ``threads`` are given); with no conflict-free read stride, the fewest extra cycles of both. Which
    read strides are free depends on the instruction and the banks: on 64 banks a phase of 16x16 reads holds 16 rows
    x 2 runs (needs rows 2 mod 4 runs apart modulo 16 bytes), one of 32x32 reads 32 rows x 1 run (needs an odd
    number of runs); the fixed block_n + max(4, kAItems) this replaces left 2-way conflicts on every gfx950 V^T read
    of 16x16x16 and 32x32x16. The writes matter at small block_n: on 64 banks a wave's element writes span 64 /
    block_n d rows vec apart (block_n 16, bf16: 4 rows of 8 dwords), 2-way at stride 24 (1 extra cycle per write),
    free at 28."""
    bank, table = bank_model(target), (0,) * MAX_TABLE
    best = None
    for i in range(16):
        stride = -(-block_n // V_RUN) * V_RUN + V_RUN * (i + 1)
        groups = v_read_groups(block_n, head_dim, stride, elem_bytes, instr.m, instr.k, target.wave_size)
        if vec and threads:  # every wave reads the whole tile; the workgroup writes it once
            groups = [replace(g, weight=threads // target.wave_size) for g in groups]
            groups += v_write_groups(block_n, head_dim, stride, elem_bytes, vec, threads, target.wave_size)
        cost = extra_cycles(groups, 1, 0, table, bank)
        key = (cost["read"] > 0, cost["read"] + cost["write"])
        if key == (False, 0):
            return stride
        if best is None or key < best[0]:
            best = (key, stride)
    return best[1]


def key_merge_bytes(head_dim: int, waves: int, rows: int = 16) -> int:
    """split_keys: the waves' softmax states merged after the walk (device/attention_decode_nv_keys.h, KeyMerge):
    per wave ``rows`` (tile M: 16 or 32) rows of head_dim + 8 floats of O, then ``rows`` maxima and sums."""
    return waves * (rows * (head_dim + 8) + 2 * rows) * 4


def plan_lds(d: AttentionDraft) -> None:
    t = d.target
    need = _lds_layout(d, d.lds_buffers)
    while need > t.lds_bytes and "lds_buffers" in d.planned and d.lds_buffers > d.body.lds_buffers[0]:
        d.lds_buffers -= 1
        need = _lds_layout(d, d.lds_buffers)
    if need > t.lds_bytes:
        one = _lds_layout(d, d.body.lds_buffers[0])
        hint = f"<= {t.lds_bytes} bytes" + (f"; lds_buffers = {d.body.lds_buffers[0]} needs {one}"
                                             if d.lds_buffers != d.body.lds_buffers[0] else "")
        raise d.refuse("tile", f"{d.tile[0]}x{d.tile[1]}", hint,
                       f"needs {need} bytes of LDS (lds_buffers = {d.show('lds_buffers', d.lds_buffers)}, "
                       f"head_dim {d.a.head_dim}), over the {t.lds_bytes}-byte limit")
    d.lds_bytes = need
    if d.amd and d.waves_per_eu > 1:  # the hint cannot ask for more waves than the LDS lets run
        fit = occupancy_limits(t, 0, 0, 0, 0, need, d.waves * t.wave_size)["lds"]
        if d.waves_per_eu > fit and "waves_per_eu" in d.planned:
            d.waves_per_eu = max(fit, 1)
        elif d.waves_per_eu > fit:
            raise d.fail("waves_per_eu", d.waves_per_eu, f"1..{max(fit, 1)}",
                         f"{need} bytes of LDS per workgroup leave room for {fit} wave(s) per SIMD")


def estimate_registers(d: AttentionDraft) -> None:
    """Long-lived 32-bit registers per lane. AMD: O^T and S^T accumulators, P^T, Q^T and read-ahead operands, the
    next tile's global loads, 32 of state, against 512 / waves_per_eu. NVIDIA: O, S, half of P (packed from S as S
    dies), Q (when in registers) and the three ldmatrix lane offsets against 255, calibrated with ptxas -v (sm_90):
    every configuration estimated at most 227 compiles without spills (d64 128x128 with Q in shared memory: 227,
    255 registers), those estimated 259 and more spill (the same with Q in registers: 259). Not counted: the paged
    decode copy's page ids; the decode key split at 32 rows, d128, paged with Q in registers (estimated 215) spills,
    so the decode planner places Q in shared memory there (decode.py, _key_split_q_place)."""
    hd, i, t = d.a.head_dim, d.instr, d.target
    rows, bn = _wave_tile(d)
    if d.amd:
        lanes = t.wave_size
        qb, ci, ai = rows // i.n, i.c_items(lanes), i.a_items(lanes)
        acc = (hd // i.m) * qb * ci
        scores = (bn // i.m) * qb * ci + qb * (bn // i.k) * ai // 2
        frags = qb * (hd // i.k) * ai // 2 + 2 * (bn // i.m) * ai // 2 + ai + 2 * bn * hd // (d.waves * lanes) // 2
        budget = min(t.vgprs + t.agprs, t.vgprs_per_simd_lane // d.waves_per_eu)
        est = RegisterEstimate(acc, scores, frags, 32, budget)
        d.mma_per_tile = (bn // i.m) * qb * (hd // i.k) + (hd // i.m) * qb * (bn // i.k)
    else:
        mb = rows // 16
        acc = mb * (hd // 8) * 4
        scores = mb * (bn // 8) * 4 + mb * (bn // 16) * 2  # S, and P where it outlives S (half: packed from it)
        frags = (mb * (hd // 16) * 4 if d.q_in_regs else 0) + 3
        est = RegisterEstimate(acc, scores, frags, 0, t.vgprs)
        d.mma_per_tile = 2 * mb * (bn // 8) * (hd // 16)
    if est.total > est.budget:
        param = "q_in_regs" if not d.amd and d.q_in_regs and est.total - mb * (hd // 16) * 4 <= est.budget else "tile"
        value = str(d.q_in_regs).lower() if param == "q_in_regs" else f"{d.tile[0]}x{d.tile[1]}"
        legal = ("false (Q re-read from shared memory)" if param == "q_in_regs" else
                 f"a tile with fewer queries per wave or keys per tile: at most {est.budget} registers per lane")
        raise d.refuse(param, value, legal,
                       f"needs about {est.total} registers per lane ({est.accumulators} for O, {est.scores} for the "
                       f"scores, {est.fragments} for operands) with {d.show('waves', d.waves)} waves")
    d.registers = est


#: the Hopper body (device/attention_fwd_sm90.h): its head dims, its tiles (64 queries per consumer warpgroup, 2 or
#: 3 of them; keys per tile = the N of the S wgmma, the K of the O wgmma), its K/V stages
WGMMA_HEAD_DIMS = tuple(WGMMA_TABLE)
WGMMA_QUERIES = (128, 192)
WGMMA_KEYS = (64, 128)
WGMMA_STAGES = (2, 3, 4)


def _wgmma_smem(hd: int, bm: int, bn: int, stages: int, o_buffer: bool = False) -> int:
    """Q tile + stages x (K + V tiles) (16-bit) (+ an O tile) + 2 + 4 x stages mbarriers + 1024 bytes of alignment
    slack (attention_fwd_sm90.h lays them out so)."""
    return 1024 + 2 * hd * (bm * (2 if o_buffer else 1) + 2 * stages * bn) + 8 * (2 + 4 * stages)


def plan_wgmma_body(d: AttentionDraft, without: tuple[str, str] | None = None) -> None:
    """On targets with wgmma and TMA, dense f16/bf16 kernels of head dim 64, 128 or 256 also get the Hopper body
    (``body = auto``, the default; ``body = wgmma`` refuses a kernel it cannot take; ``body = mma_sync`` never),
    with ``wgmma_tile``, ``wgmma_stages`` and ``wgmma_grid`` written or from the table (``configs.WGMMA_TABLE``; a
    planned stage count shrinks to fit the shared memory; a persistent grid stages O in a tile of its own where that
    fits too). The portable body stays the run-time fallback (with ``rope`` both rotate Q in shared memory once it
    landed). ``without``: (a DSL key, what of it) the calling op's Hopper entry does not take, beside the target's
    and the kernel's reasons (the decode op: ``rope``): skipped under ``auto``, refused under ``wgmma``."""
    cfg, a, t = d.cfg, d.a, d.target
    written = [(n, v) for n, v in (("wgmma_tile", cfg.wgmma_tile), ("wgmma_stages", cfg.wgmma_stages),
                                   ("wgmma_grid", cfg.wgmma_grid)) if v is not None]
    if cfg.body == "mma_sync":
        if written:
            raise d.fail(written[0][0], _text(written[0][1]), "(leave it out with body = mma_sync)",
                         "the Hopper body's parameters need body = auto or wgmma")
        return
    why = ("the target has no wgmma / TMA (sm_90)" if not {FEATURE_WGMMA, FEATURE_TMA} <= t.features else
           f"head_dim {a.head_dim} (the Hopper body takes {' or '.join(map(str, WGMMA_HEAD_DIMS))})"
           if a.head_dim not in WGMMA_HEAD_DIMS else
           "varlen kernels (the C ABI has no total token count to bound the tensor maps with)" if a.varlen else None)
    legal = "body = auto or mma_sync (and no wgmma_* parameters)"
    if why is None and without is not None:
        why, legal = without[1], f"{legal} with {without[0]}"
    if why is not None:
        if cfg.body == "wgmma" or written:
            param, value = ("body", "wgmma") if cfg.body == "wgmma" else (written[0][0], _text(written[0][1]))
            raise d.fail(param, value, legal, f"the Hopper body does not take {why}")
        return
    kg = WGMMA_TABLE[a.head_dim]
    tile = cfg.wgmma_tile if cfg.wgmma_tile is not None else kg.tile
    queries = [q for q in WGMMA_QUERIES if q <= kg.max_queries]
    if tile[0] not in queries or tile[1] not in WGMMA_KEYS:
        raise d.fail("wgmma_tile", _text(tile),
                     f"M in {', '.join(map(str, queries))} (64 queries per consumer warpgroup) x N in "
                     f"{', '.join(map(str, WGMMA_KEYS))}", f"not a tile of the Hopper body at head_dim {a.head_dim}")
    if cfg.wgmma_stages is not None and cfg.wgmma_stages not in WGMMA_STAGES:
        raise d.fail("wgmma_stages", cfg.wgmma_stages, ", ".join(map(str, WGMMA_STAGES)),
                     "unsupported K/V pipeline depth of the Hopper body")
    stages = cfg.wgmma_stages if cfg.wgmma_stages is not None else kg.stages
    if cfg.wgmma_stages is None:
        while stages > WGMMA_STAGES[0] and _wgmma_smem(a.head_dim, *tile, stages) > t.lds_bytes:
            stages -= 1
    need = _wgmma_smem(a.head_dim, *tile, stages)
    if need > t.lds_bytes:
        raise d.fail("wgmma_tile" if cfg.wgmma_stages is None else "wgmma_stages",
                     _text(tile) if cfg.wgmma_stages is None else stages, f"<= {t.lds_bytes} bytes of shared memory",
                     f"the Hopper body needs {need} bytes (tile {_text(tile)}, {stages} stages, head_dim {a.head_dim})")
    persistent = (cfg.wgmma_grid or kg.grid) == "persistent"
    o_buffer = persistent and _wgmma_smem(a.head_dim, *tile, stages, True) <= t.lds_bytes  # else O goes through Q's
    d.wgmma = WgmmaBodyPlan(block_m=tile[0], block_n=tile[1], stages=stages, threads=128 * (tile[0] // 64 + 1),
                            smem_bytes=_wgmma_smem(a.head_dim, *tile, stages, o_buffer), persistent=persistent,
                            o_buffer=o_buffer)


def _text(v) -> str:
    return "x".join(map(str, v)) if isinstance(v, tuple) else str(v)


PASSES = (
    check_dtype,          # the target has matrix instructions the body takes for the dtype
    plan_instruction,     # tile and instruction: written, or from the table (the best of its shape that fits)
    plan_waves,           # waves: written, or the table's (or the first that splits the tile)
    check_workgroup,      # waves x wave size within the workgroup limit
    check_tile,           # queries per wave, keys per tile and head dim in whole instructions
    plan_pipeline,        # Q placement, occupancy hint, K/V pipeline depth and barriers
    plan_lds,             # LDS layout and bytes against the target (a planned depth shrinks to fit), and the
                          # occupancy hint within what that LDS lets run
    estimate_registers,   # register budget
    plan_wgmma_body,      # sm_90: does the Hopper TMA + wgmma body take this kernel too (tile, stages, shared memory)
)


def plan(spec: KernelSpec, target: Target) -> KernelPlan:
    """Run :data:`PASSES` for ``target`` and freeze the result."""
    if not isinstance(spec.params, AttentionParams):  # pragma: no cover - the registry routes by op
        raise TypeError("the attention planner takes attention specs")
    d = run_passes(PASSES, AttentionDraft(spec, target))
    body = AttentionPlan(body=d.body, instr=d.instr, block_m=d.tile[0], block_n=d.tile[1], waves=d.waves,
                         lds_buffers=d.lds_buffers, q_in_regs=d.q_in_regs, waves_per_eu=d.waves_per_eu,
                         kv_barriers=d.kv_barriers, vec=d.vec,
                         lds_k_stride=d.lds_k_stride, lds_k=d.lds_k, lds_v_stride=d.lds_v_stride,
                         lds_bytes=d.lds_bytes, mma_per_tile=d.mma_per_tile, registers=d.registers, planned=tuple(d.planned),
                         wgmma=d.wgmma)
    threads = d.waves * target.wave_size
    entries = [Entry(spec.name, threads, d.lds_bytes)]
    if d.wgmma is not None:
        entries.append(Entry(f"{spec.name}_tma", d.wgmma.threads, d.wgmma.smem_bytes, variant_of=spec.name))
    return KernelPlan(spec=spec, target=target, body=body, abi=abi(spec),
                      launch=launch(spec, threads, d.tile[0], 0, tma=d.wgmma is not None),
                      entries=tuple(entries))
