"""The row ops' planning passes: (KernelSpec, Target) -> KernelPlan.

``PASSES`` is the pipeline, in order; each pass checks one concern or fills one part of the :class:`RowDraft`
and refuses with ``d.fail(param, value, legal, reason)``. What the kernel does not say is planned from tables
per wave size (:data:`SINGLE_PASS`, :data:`LOOPED`) and a register estimate that depends only on the kernel's
dtypes and workgroup, so that every target of one wave size (every AMD arch; every NVIDIA arch) gets the same
rows, workgroup and grid (one host library serves several arches with one launcher). The register model (the
estimates and budgets, :mod:`ckgen.ops.rowops.registers`) and split rows (:mod:`ckgen.ops.rowops.split`) live in
their own modules, and so do the tile tables and the choosers reading them (:mod:`ckgen.ops.rowops.tiles`); this
one holds the draft and the passes.

A row is held by ``threads_per_row`` threads (a power of two: part of a wave, a wave, or several waves that
reduce through LDS), in tiles of ``reg_vecs`` vectors of ``vec`` elements per thread: ``tile = threads_per_row *
reg_vecs * vec`` columns. A single-pass kernel (``looped = false``) holds the whole row in one tile: it is planned
for ``max_cols`` and its host entry refuses longer rows. A looped kernel takes any ``cols``; with ``row_in =
shared`` (the row cache) it keeps its tiles in shared memory, sized for ``max_cols``, so that the row is read once:
planned by default where no register single pass holds ``max_cols`` and the cache fits :data:`PLAN_ROW_LDS`.

Any width: a single-pass tile is fitted to ``max_cols`` (``tiles.fitted_tile``: the fewest idle vector slots, then the
table's vectors per thread) rather than taken whole from the table, and a tile wider than the row it gets takes the
fast path with a predicate per vector (``plan_whole_vectors``). Every choice is said in words in ``RowPlan.why``
(``ckgen explain FILE --kernel K``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ckgen.ir.plan import Entry, KernelPlan
from ckgen.ir.quant import MX_DTYPES
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import Target
from ckgen.ir.types import DType
from ckgen.lower.draft import Draft, run_passes
from ckgen.ops.rowops import split as _split
from ckgen.ops.rowops.abi import abi, launch
from ckgen.ops.rowops.body import RowPlan
from ckgen.ops.rowops.registers import (
    PLAN_REGISTERS,
    SGPR_PLAN_LIMIT,
    SPLIT_SGPR,
    WEIGHT_AHEAD,
    WEIGHTED_SINGLE_PASS_REGISTERS,
    WHOLE_SGPR,
    estimate_registers,
    register_budget,
    sgpr_estimate,
)
from ckgen.ops.rowops.spec import RowConfig, RowOpSpec, RowParams
from ckgen.ops.rowops.tiles import (
    BOUNDED_SINGLE_PASS,
    CACHE_BOUNDED,
    CACHE_GROUPS,
    CACHE_LOOPED_MODEL,
    FIT_GROUPS,
    LOOPED,
    LOOPED_LONG,
    MAX_REG_VECS,
    MAX_THREADS,
    NONE_LOOPED_BOUND,
    PLAN_ROW_LDS,
    SINGLE_PASS,
    WORKGROUP_THREADS,
    bounded_line,
    cache_bytes,
    ceil_div,
    choose_cached,
    fits_budget,
    from_table,
    pow2ceil,
    single_pass,
    slot_bytes,
    split_tile,
)

#: dtypes the body generates: inputs (x, residual, weight, bias) and outputs (y)
INPUT_DTYPES = (DType.F16, DType.BF16, DType.F32)
OUTPUT_DTYPES = (DType.F16, DType.BF16, DType.F32, DType.I8)
#: packed outputs (several values a byte: fp4 pairs, quant = mx(32) only): y addressed in bytes, vec a multiple of
#: the values a byte (a byte never straddles threads)
PACKED_OUTPUT_DTYPES = tuple(d for d in MX_DTYPES if d.pack > 1)
VECTOR_BYTES = 16            # widest vector access of x
#: the reason (RowPlan.why) a plan gives when WEIGHTED_SINGLE_PASS_REGISTERS applied (bench/rowops_shapes.py before())
WEIGHTS_A_VECTOR_AT_A_TIME = "weight and bias read a vector at a time"


@dataclass
class RowDraft(Draft):
    vec: int = 0
    threads_per_row: int = 0
    rows_per_workgroup: int = 0
    reg_vecs: int = 0
    looped: bool = True
    cache_tiles: int = 0     # row_in = shared: tiles of a row in the row cache (0: registers)
    lds_bytes: int = 0
    registers: int = 0
    workgroups_per_cu: int = 0   # > 0: registers bounded for that many workgroups per CU / SM (BOUNDED_SINGLE_PASS)
    weight_vecs: int = 0         # weight and bias vectors loaded at once (0: a whole tile)
    whole_vectors: bool = False  # partial tiles of whole-vector rows take the fast path (plan_whole_vectors)
    bounded: bool = False        # the tile is a BOUNDED_SINGLE_PASS line's (choose_rows)
    split: int = 0               # > 0: split rows, at most this many workgroups per row (_choose_split)
    few_groups: int = 0          # > 0: grids of at most this many workgroups take the few-rows entry (plan_few_rows)
    weight_ahead: bool = False   # the next weight vector asked for before this one's y is stored (plan_weight_ahead)
    why: list[str] = field(default_factory=list)  # the reasons, in words (RowPlan.why, `ckgen explain --kernel`)

    @property
    def row(self) -> RowOpSpec:
        return self.spec.params.row

    @property
    def cfg(self) -> RowConfig:
        return self.spec.params.config

    @property
    def tile_cols(self) -> int:
        return self.threads_per_row * self.reg_vecs * self.vec

    @property
    def threads(self) -> int:
        return self.threads_per_row * self.rows_per_workgroup


def _legal_dtypes(dts) -> str:
    return ", ".join(d.value for d in dts)


def output_dtypes(target: Target) -> tuple[DType, ...]:
    """The y dtypes for ``target``: :data:`OUTPUT_DTYPES`, the fp8 dtypes of the target's own encoding
    (``Target.fp8_encoding``, the targets table: FNUZ on gfx942, OCP on gfx950 and sm_89+; none without fp8) and
    fp4 pairs (:data:`PACKED_OUTPUT_DTYPES`: codes made in software, any target, with quant = mx(32))."""
    return OUTPUT_DTYPES + target.fp8_dtypes + PACKED_OUTPUT_DTYPES


def check_dtypes(d: RowDraft) -> None:
    r, t = d.row, d.target
    if r.x not in INPUT_DTYPES:
        raise d.fail("x", r.x.value, _legal_dtypes(INPUT_DTYPES), "the row ops read f16, bf16 or f32")
    made = output_dtypes(t)
    if r.y not in made:
        raise d.fail("y", r.y.value, _legal_dtypes(made), t.fp8_refusal(r.y) or "not an output dtype of the row ops")
    if r.row_kind.quantizes and not r.quantized:
        quantized = [y for y in made if y == DType.I8 or y.fp8 is not None or y.pack > 1]
        raise d.fail("y", r.y.value, _legal_dtypes(quantized),
                     f"op = {r.op} writes a quantized y (int8, fp8 or fp4 pairs, with scales)")
    for param, dt in (("residual", r.residual), ("weight", r.weight), ("bias", r.bias)):
        if dt is not None and dt not in INPUT_DTYPES:
            raise d.fail(param, dt.value, "none, true, " + _legal_dtypes(INPUT_DTYPES), "not a dtype the row ops read")


def choose_vector(d: RowDraft) -> None:
    """vec: 16 bytes of x unless given (a power of two, at most 16 bytes of x); a multiple of the values a byte
    of a packed y holds (fp4 pairs: even)."""
    widest, pack = VECTOR_BYTES // d.row.x.bytes, d.row.y.pack
    v = d.cfg.vec
    if v is None:
        d.vec = widest
        return
    if v & (v - 1) or v > widest:
        legal = ", ".join(str(1 << i) for i in range(widest.bit_length()))
        raise d.fail("vec", v, f"{legal} (a power of two, at most {VECTOR_BYTES} bytes of {d.row.x.value})",
                     "illegal vector width")
    if v % pack:
        legal = ", ".join(str(1 << i) for i in range(widest.bit_length()) if (1 << i) % pack == 0)
        raise d.fail("vec", v, legal, f"y = {d.row.y.value} packs {pack} values a byte: a thread's vector holds "
                     "whole bytes of y")
    d.vec = v


def choose_rows(d: RowDraft) -> None:
    """threads_per_row, reg_vecs and looped: single pass when max_cols is known and one tile holds it (unless
    looped = true), else looped with tiles from LOOPED / LOOPED_LONG; then rows_per_workgroup."""
    cfg, w = d.cfg, d.target.wave_size
    n = ceil_div(cfg.max_cols, d.vec) if cfg.max_cols is not None else None
    given = [f"{k} = {v}" for k, v in (("threads_per_row", cfg.threads_per_row), ("reg_vecs", cfg.reg_vecs),
                                       ("rows_per_workgroup", cfg.rows_per_workgroup)) if v is not None]
    if given:
        d.why.append(", ".join(given) + " as given")
    if _split.split_of(d.spec):
        _split.choose(d, n, split_tile)
        return
    if cfg.row_in == "shared":
        choose_cached(d, n)
        return
    if cfg.looped is False and n is None:
        raise d.fail("looped", "false", "true, or false with max_cols = <the longest row>",
                     "a single-pass kernel holds one row in one tile: it needs max_cols")
    single = single_pass(d, n) if n is not None and cfg.looped is not True else None
    if single is None and n is not None and cfg.looped is None and cfg.row_in is None and not d.row.write_y:
        d.why.append(f"y = none: no register tile holds {n} vectors; looped from registers (the row is read once "
                     "either way: no row cache, no register-bounded pass)")
    elif single is None and n is not None and cfg.looped is not True and cfg.row_in is None:
        line = bounded_line(d, n) if d.row.row_kind.bounded else None
        single = line[1:3] if line else None
        d.bounded = line is not None
        if line:
            d.why.append(f"no tile of one workgroup's registers holds {n} vectors: the register-bounded single pass "
                         f"({line[1]} threads x {line[2]} vectors, {line[3]} workgroups per CU / SM)")
    if single is None and n is not None and cfg.looped is None and cfg.row_in is None and d.row.write_y:
        choose_cached(d, n)
        if cache_bytes(d) <= PLAN_ROW_LDS[w]:
            d.why.append(f"no register tile holds {n} vectors: the row cache ({d.cache_tiles} tiles in shared memory, "
                         "the row read once)")
            return
        d.cache_tiles = 0
    if single is not None:
        (d.threads_per_row, d.reg_vecs), d.looped = single, False
    elif cfg.looped is False:  # no planned tile holds max_cols: say how far a single pass goes
        if cfg.threads_per_row is None and cfg.reg_vecs is None:
            largest = max([lim * d.vec for lim, _, _ in SINGLE_PASS[w] if from_table(d, lim)]
                          + [line[0] * d.vec for line in BOUNDED_SINGLE_PASS[w] if bounded_line(d, line[0])],
                          default=0)
            raise d.fail("max_cols", cfg.max_cols, f"max_cols <= {largest} for a single pass (or looped = true, or "
                         "give threads_per_row and reg_vecs)", "no planned single-pass tile holds the row within the "
                         "register budget")
        d.threads_per_row = cfg.threads_per_row or min(MAX_THREADS, pow2ceil(ceil_div(n, cfg.reg_vecs or 1)))
        d.reg_vecs = cfg.reg_vecs or ceil_div(n, d.threads_per_row)
        d.looped = False
    else:
        t, r = (LOOPED_LONG if n is not None else LOOPED)[w]
        if n is not None:
            t = min(t, pow2ceil(ceil_div(n, r)))
        t = cfg.threads_per_row or t
        r = cfg.reg_vecs or r
        while cfg.reg_vecs is None and r > 1 and not fits_budget(d, t, r, True):
            r //= 2
        d.threads_per_row, d.reg_vecs, d.looped = t, r, True
        d.why.append("looped: " + ("looped = true" if cfg.looped else "any cols (no max_cols)" if n is None
                                   else "no single-pass tile or row cache holds max_cols")
                     + f"; tiles of {t} threads x {r} vectors, "
                     + ("the row read once (y = none: one pass)" if not d.row.write_y
                        else "a row longer than a tile re-read per pass"))
    t = d.threads_per_row
    d.rows_per_workgroup = cfg.rows_per_workgroup or max(1, WORKGROUP_THREADS // t, ceil_div(w, t))


def _scratch_bytes(d: RowDraft) -> int:
    w = d.target.wave_size
    return 2 * (d.threads // w) * d.row.row_kind.state_floats * 4 if d.threads_per_row > w else 0  # reduce.h MultiWave


def fit_quant_group(d: RowDraft) -> None:
    """Per-group scales (quant = group(G), or mx(32): E8M0 scales per 32 columns): every vector of a thread in one
    group, a group G / vec consecutive threads of one row within a wave, and whole waves per row (the group's
    butterfly runs where the tile's path, which differs between rows, is chosen: a wave must hold one row). A
    planned row of fewer threads than a wave is widened to a wave (reg_vecs shrunk so that the tile still holds
    what it held)."""
    g, cfg, w = d.row.quant_group, d.cfg, d.target.wave_size
    if not g:
        return
    word = f"{'mx' if d.row.quant_mx else 'group'}({g})"
    if g % d.vec or g // d.vec > w:
        raise d.fail("vec", d.vec, f"{max(1, g // w)}..{min(16, g)} (a power of two dividing {g}, at least "
                     f"{g // w} with {w}-lane waves)", f"quant = {word}: a group is {g} / vec threads of one wave")
    if d.threads_per_row < w:
        if cfg.threads_per_row is not None:
            raise d.fail("threads_per_row", cfg.threads_per_row, f"a multiple of the wave size ({w})",
                         f"quant = {word} needs whole waves per row")
        held = d.threads_per_row * d.reg_vecs
        d.threads_per_row, d.reg_vecs = w, cfg.reg_vecs or max(1, ceil_div(held, w))
        d.rows_per_workgroup = cfg.rows_per_workgroup or max(1, WORKGROUP_THREADS // w)
        d.why.append(f"quant = {word}: rows of one wave ({w} threads x {d.reg_vecs} vectors)")
    if (d.threads_per_row * d.vec) % g:
        raise d.fail("threads_per_row", d.threads_per_row, f"threads_per_row x vec a multiple of {g}",
                     f"quant = {word}: every vector of a thread must lie in one group")


def check_workgroup(d: RowDraft) -> None:
    t, rpw, w = d.threads_per_row, d.rows_per_workgroup, d.target.wave_size
    if t & (t - 1) or not 1 <= t <= MAX_THREADS:
        raise d.fail("threads_per_row", t, f"a power of two, 1..{MAX_THREADS}",
                     "rows are reduced by butterflies over a power of two of threads")
    if t * rpw > MAX_THREADS:
        raise d.fail("rows_per_workgroup", rpw, f"1..{MAX_THREADS // t} (threads_per_row = {t})",
                     f"{t * rpw} threads exceed the {MAX_THREADS}-thread workgroup limit")
    if (t * rpw) % w:
        step = w // t
        raise d.fail("rows_per_workgroup", rpw, f"a multiple of {step} (wave size {w} / threads_per_row {t})",
                     f"the workgroup ({t * rpw} threads) must be a whole number of {w}-thread waves")
    if not 1 <= d.reg_vecs <= MAX_REG_VECS:
        raise d.fail("reg_vecs", d.reg_vecs, f"1..{MAX_REG_VECS}", "vectors per thread and tile")


def check_one_tile(d: RowDraft) -> None:
    """A single-pass kernel's tile must hold max_cols (its host entry refuses longer rows; the body traps)."""
    if d.looped or d.split:
        return
    mc = d.cfg.max_cols
    if d.tile_cols < mc:
        how = f"threads_per_row x reg_vecs x vec = {d.threads_per_row} x {d.reg_vecs} x {d.vec} = {d.tile_cols}"
        raise d.fail("max_cols", mc, f"max_cols <= {d.tile_cols}, a larger tile, or looped = true",
                     f"one tile holds {how} columns: a single pass cannot hold the row")


def plan_lds(d: RowDraft) -> None:
    """The cross-wave reduction's scratch, plus the row cache (row_in = shared) within the target's shared
    memory per workgroup (refused with the longest max_cols that fits)."""
    scratch, t = _scratch_bytes(d), d.target
    d.lds_bytes = scratch + cache_bytes(d)
    if d.lds_bytes <= t.lds_bytes:
        return
    per_tile = d.reg_vecs * d.threads * slot_bytes(d)
    longest = (t.lds_bytes - scratch) // per_tile * d.tile_cols
    legal = (f"max_cols <= {longest} with row_in = shared on {t.name} ({d.rows_per_workgroup} row(s) of "
             f"{d.row.res_dtype.value} per workgroup, tiles of {d.tile_cols} columns), or row_in = registers"
             if longest else f"row_in = registers (no tile of {d.tile_cols} columns fits on {t.name})")
    raise d.fail("max_cols", d.cfg.max_cols, legal,
                 f"the row cache needs {d.lds_bytes} bytes of shared memory (LDS), over the {t.lds_bytes} bytes "
                 f"a workgroup has on {t.name}")


def groups_leaving(d: RowDraft, regs: int) -> int:
    """The workgroups per CU / SM that leave each thread ``regs`` registers (at least 1)."""
    return max(1, PLAN_REGISTERS[d.target.wave_size][1] // (regs * d.threads))


def bound_registers(d: RowDraft) -> None:
    """A single pass of a BOUNDED_SINGLE_PASS line's tile (its threads, one row per workgroup) is compiled for the
    line's workgroups per CU / SM, weight and bias read in batches; another single pass with weights as
    WEIGHTED_SINGLE_PASS_REGISTERS says; a row-cache kernel whose estimate fits
    CACHE_GROUPS workgroups, for CACHE_GROUPS where CACHE_BOUNDED says so; split rows as split.SPLIT_BOUNDED says."""
    w = d.target.wave_size
    if d.split:
        d.workgroups_per_cu = _split.bounded_groups(d.row.row_kind.name, w, d.threads_per_row, d.reg_vecs)
        return
    if d.cache_tiles:
        if CACHE_BOUNDED[w] and fits_budget(d, d.threads_per_row, d.reg_vecs, CACHE_LOOPED_MODEL[w], CACHE_GROUPS):
            d.workgroups_per_cu = CACHE_GROUPS
        return
    if d.looped:
        bound = NONE_LOOPED_BOUND[w]
        if not d.row.write_y and bound is not None and d.threads >= bound[0]:
            d.workgroups_per_cu = bound[1]
        return
    line = bounded_line(d, ceil_div(d.cfg.max_cols, d.vec))
    given = d.cfg.threads_per_row is not None and d.cfg.reg_vecs is not None  # a line's tile as the kernel gives it
    if (d.bounded or given) and line is not None and line[1:3] == (d.threads_per_row, d.reg_vecs) \
            and d.threads == line[1]:
        d.workgroups_per_cu, d.weight_vecs = line[3], line[4]
        return
    regs, r = WEIGHTED_SINGLE_PASS_REGISTERS[w], d.row
    if regs is not None and d.reg_vecs >= 2 and (r.weight, r.bias) != (None, None) and r.write_y \
            and (r.quant_group or not r.quantized):  # (per-row scales: the amax pass reads the weights again)
        d.weight_vecs = 1
        file = PLAN_REGISTERS[w][1]
        if estimate_registers(r, d.vec, d.reg_vecs, False, w, d.threads_per_row) * d.threads * FIT_GROUPS > file:
            d.workgroups_per_cu = groups_leaving(d, regs)  # (else left to the compiler: below regs)
        bound = f", compiled for {d.workgroups_per_cu} workgroup(s) per CU / SM" if d.workgroups_per_cu else ""
        d.why.append(f"{WEIGHTS_A_VECTOR_AT_A_TIME} (at most about {regs} registers per thread{bound}): "
                     "more workgroups overlap one another's reductions and stores")


def plan_few_rows(d: RowDraft) -> None:
    """A kernel whose weights are read in batches (weight_vecs < reg_vecs: registers bounded for throughput) gets
    a second entry, <name>_few, that loads a tile's weight and bias at once and is not bounded; the host entry
    launches it for grids of at most one workgroup per CU / SM (the target's count), where nothing else would
    overlap the batches' waits. Measured (H100, bench/runs/2026-12-06e_h100_decode_before.txt): decode rows (1-64
    rows of 896-16384 columns) took 14% less time by geomean (1.16x) with the whole tile's weights, up to 1.53x."""
    if d.weight_vecs and d.weight_vecs < d.reg_vecs and not d.split and not d.looped:
        d.few_groups = d.target.cus
        d.why.append(f"grids of at most {d.few_groups} workgroups (one per CU / SM: a few rows) launch "
                     f"{d.spec.name}_few, the same tile with the whole tile's weight and bias loaded at once, "
                     "registers not bounded")


def plan_weight_ahead(d: RowDraft) -> None:
    """Weights read a vector at a time: where the workgroup holds several rows and the tile's vectors per thread are
    in the rule's range (WEIGHT_AHEAD, an AheadRule), the next vector's weight and bias are asked for before this
    vector's y is stored (nvcc issues them after the store otherwise: y may alias). The few-rows entry loads the
    whole tile's weights and is unchanged. Its registers are bounded as the weighted single pass's
    (WEIGHTED_SINGLE_PASS_REGISTERS): unbounded, ptxas gave sm_90a layer norm at 6912 columns 74 registers with it
    (3 workgroups per SM, 60 without: 4), and the kernel lost 5.5%
    (bench/runs/2026-12-06g_h100_rowops_ahead_intermediate.txt)."""
    w = d.target.wave_size
    rule, regs = WEIGHT_AHEAD[w], WEIGHTED_SINGLE_PASS_REGISTERS[w]
    if rule is None or regs is None or d.weight_vecs != 1 or d.reg_vecs < 2 or d.looped or d.split:
        return
    fewest, most = rule.vecs
    if d.rows_per_workgroup >= rule.rows and fewest <= d.reg_vecs <= most:
        d.weight_ahead = True
        if not d.workgroups_per_cu:  # (the second batch of registers must not cost a workgroup)
            d.workgroups_per_cu = groups_leaving(d, regs)
        d.why.append(f"the next vector's weight and bias asked for before this one's y is stored ({d.rows_per_workgroup}"
                     f" rows per workgroup, {d.reg_vecs} vectors: WEIGHT_AHEAD), compiled for {d.workgroups_per_cu} "
                     "workgroup(s) per CU / SM")


def check_registers(d: RowDraft) -> None:
    w = d.target.wave_size
    t = d.threads_per_row
    est = estimate_registers(d.row, d.vec, d.reg_vecs, d.looped, w, t)
    budget = register_budget(d.target, d.threads)
    if d.workgroups_per_cu:  # the compiler holds the kernel to the bounded budget (bound_registers)
        est = min(est, register_budget(d.target, d.threads * d.workgroups_per_cu))
    if d.weight_vecs == 1 and WEIGHTED_SINGLE_PASS_REGISTERS[w] is not None:  # (measured: bound_registers)
        est = min(est, WEIGHTED_SINGLE_PASS_REGISTERS[w])
    if est > budget:
        fits = [r for r in range(1, MAX_REG_VECS + 1)
                if estimate_registers(d.row, d.vec, r, d.looped, w, t) <= budget]
        legal = (f"reg_vecs <= {fits[-1]} with {d.threads} threads per workgroup on {d.target.name}" if fits
                 else f"fewer threads per workgroup (no reg_vecs fits {d.threads} on {d.target.name})")
        raise d.fail("reg_vecs", d.reg_vecs, legal,
                     f"needs about {est} registers per thread, over the {budget} a thread has in a "
                     f"{d.threads}-thread workgroup on {d.target.name}")
    d.registers = est


def plan_whole_vectors(d: RowDraft) -> None:
    """Whether a partial tile of a row of whole vectors (cols % vec == 0, aligned) takes the fast path with a
    predicate per vector (Cfg::kWholeVectors) rather than the masked one: where a row of max_cols has one (any
    cols, or a tile that does not divide max_cols: the kernels of exact tiles keep their registers and code);
    not with weights batched by more than one
    vector (the register-bounded single pass of BOUNDED_SINGLE_PASS's own reg_vecs: spills at 64 registers); on
    wave64 where the SGPR estimate leaves :data:`WHOLE_SGPR` scalar registers for it."""
    if d.cfg.max_cols is not None and d.cfg.max_cols % d.tile_cols == 0:
        d.why.append("the tile divides max_cols: only rows shorter than max_cols have a partial tile, and those take "
                     "the masked path (the path costs registers: sm_90a RMS norm at 4096, 44 -> 64)")
        return
    if d.weight_vecs > 1:
        d.why.append(f"partial tiles take the masked path (weights batched {d.weight_vecs} vectors at a time: the "
                     "whole-vector path spills there)")
        return
    if d.target.wave_size == 64:
        est = sgpr_estimate(d.row, d.reg_vecs, d.looped, d.threads_per_row > 64) + WHOLE_SGPR + SPLIT_SGPR * bool(
            d.split)
        if est > SGPR_PLAN_LIMIT:
            d.why.append(f"partial tiles take the masked path (the whole-vector path would need about {est} SGPRs, "
                         f"over {SGPR_PLAN_LIMIT})")
            return
    d.whole_vectors = True
    d.why.append("partial tiles of whole-vector rows (cols a multiple of vec, aligned) take the fast path, "
                 "predicated per vector")


def explain_registers(d: RowDraft) -> None:
    """The register estimate and what it leaves per CU / SM, in words."""
    w = d.target.wave_size
    file = PLAN_REGISTERS[w][1]
    groups = max(1, file // max(1, d.registers * ceil_div(d.threads, w) * w)) if d.registers else 0
    d.why.append(f"about {d.registers} registers per thread: {groups} workgroup(s) of {d.threads} threads per CU / SM"
                 + (f" (bounded for {d.workgroups_per_cu})" if d.workgroups_per_cu else ""))


PASSES = (
    check_dtypes,      # x, y, residual, weight, bias: dtypes the body generates
    choose_vector,     # vec: a power of two, at most 16 bytes of x
    choose_rows,       # threads_per_row, reg_vecs, looped, rows_per_workgroup (tables per wave size)
    fit_quant_group,   # quant = group(G): whole waves per row, vectors inside groups
    check_workgroup,   # a power of two of threads per row, whole waves, at most 1024 threads
    check_one_tile,    # a single pass holds max_cols
    plan_lds,          # the cross-wave reduction's LDS and the row cache
    bound_registers,   # registers for two workgroups per SM: BOUNDED_SINGLE_PASS tiles, row caches (CACHE_BOUNDED)
    check_registers,   # the tile in registers against the target's budget
    plan_whole_vectors,  # partial tiles of whole-vector rows: the fast path, predicated (not batched weights)
    plan_few_rows,     # batched weights: a second entry, the whole tile's weights, for grids of one per SM at most
    plan_weight_ahead,  # weights a vector at a time, several rows per workgroup: the next vector's asked for first
    explain_registers,   # the estimate, in words
)


def plan(spec: KernelSpec, target: Target) -> KernelPlan:
    if not isinstance(spec.params, RowParams):  # pragma: no cover - the registry routes by op
        raise TypeError("the row-op planner takes row-op specs")
    d = run_passes(PASSES, RowDraft(spec, target))
    w = target.wave_size
    kind = d.row.row_kind
    impl = kind.rstd_entry if d.row.rstd else kind.entry
    body = RowPlan(header=kind.header, impl=impl, kind=kind.name, vec=d.vec,
                   threads_per_row=d.threads_per_row, waves_per_row=max(1, d.threads_per_row // w),
                   rows_per_workgroup=d.rows_per_workgroup, threads=d.threads, reg_vecs=d.reg_vecs,
                   tile_cols=d.tile_cols, looped=d.looped, max_cols=d.cfg.max_cols, lds_bytes=d.lds_bytes,
                   registers_estimate=d.registers, wave_size=w, cache_tiles=d.cache_tiles,
                   workgroups_per_cu=d.workgroups_per_cu, weight_vecs=d.weight_vecs,
                   whole_vectors=d.whole_vectors, split=d.split, few_groups=d.few_groups,
                   weight_ahead=d.weight_ahead, why=tuple(d.why))
    # LDS is static, except the row cache's on CUDA (the launch passes Cfg::kLdsBytes of dynamic shared memory)
    dynamic = d.lds_bytes if d.cache_tiles else 0
    entries = (Entry(spec.name, d.threads, dynamic),)
    if body.few_groups:
        entries += (Entry(f"{spec.name}_few", d.threads, dynamic, part_of=spec.name),)
    how = (_split.launch(d.threads, d.tile_cols, d.split, kind.state_floats) if d.split
           else launch(d.threads, d.rows_per_workgroup, bool(body.few_groups)))
    return KernelPlan(spec=spec, target=target, body=body, abi=abi(spec), launch=how, entries=entries)
