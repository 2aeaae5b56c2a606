"""The GEMM's cost model for dispatchers (docs/dispatch.md): the time a planned kernel should take at M x N x K.

:func:`traits` reduces a plan to numbers (:data:`TRAITS` names them, in order); :func:`estimate` is the model, in
seconds, and ``model.cpp.j2`` is the same model in C for the generated dispatcher (a test compares the two).
The model is a wave-quantization and roofline estimate, meant to rank kernels and to scale measured times to
nearby shapes, not to predict absolute times:

- work units: C tiles (x splits for split-K; for stream-K the workers, each with its whole tiles and its part of
  one of the last tiles split along K), run in
  waves of ``slots`` concurrent workgroups (the target's CUs x the workgroups one CU holds); a partial wave costs
  a full one;
- compute time: waves x one unit's FLOPs at the body's share of the target's tensor throughput (the throughput of
  the instruction table at the part's clock, times :data:`EFFICIENCY` of the body and the schedule's
  :data:`SCHEDULE_EFFICIENCY`);
- operand-feed time: waves x the time one unit takes to feed its matrix instructions, the slower of two pipes,
  each at the body's share (:data:`EFFICIENCY`) of its peak: the LDS (shared-memory) reads (per K step of the
  tile each wave reads its rows of A and its columns of B: tile K x (waves N x tile M x A bytes + waves M x
  tile N x B bytes; on the Hopper body TMA writes the stage and each consumer warpgroup's wgmma reads its 64 rows
  of A and all of the tile's B: tile K x (2 x tile M x A bytes + (1 + tile M / 64) x tile N x B bytes); leave-one-out
  on the Mistral-7B tuning set, the model alone picks members at 0.866 of the fastest, 0.859 with the Hopper body
  counted per warp), at the target's banks x bank bytes per CU and clock) and the global loads of the tile's
  A and B panels (tile K x (tile M x A bytes + tile N x B bytes) per K step, through the CU's vector L1 at
  :data:`L1_BYTES_PER_CU_CLK`). Small tiles need more of both per FLOP: a 16x64 tile on 1x4 waves reads 4x the
  LDS bytes and loads 5x the global bytes per FLOP of a 128x128 tile on 2x2 waves, so on large shapes it
  loses however well its many small tiles fill the last wave of workgroups;
- the vector body (``instr = none``): compute at :data:`EFFICIENCY` of the vector ALUs' f32 multiply-adds
  (``Target.valu_lanes_per_cu``), one workgroup per CU (its waves reach the CU's ALUs), no LDS, each wave loading
  A's rows beside its rows of B;
- memory time: A, B read (once per M tile, at most :data:`B_READS` times but for the vector body), C written,
  plus the workspace traffic of partial tiles, at 85% of the part's bandwidth;
- the kernel takes the largest of the three, plus a fixed launch cost (and a fix-up cost for split-K; for stream-K,
  where it splits its last tiles, a fixed cost plus one per part: :data:`STREAMK_TAIL_S`).
"""

from __future__ import annotations

from ckgen.ir.plan import KernelPlan
from ckgen.ops.gemm.schedule import CTAS_PER_CU, MIN_KTILES_PER_SPLIT
from ckgen.ops.gemm.spec import MAX_SPLITS

TRAITS = ("tile_m", "tile_n", "tile_k", "kind", "splits", "target_ctas", "workers", "slots", "flops_per_s",
          "bytes_per_s", "a_bytes", "b_bytes", "c_bytes", "overhead_s", "min_ktiles_per_split", "max_splits",
          "lds_bytes_per_kstep", "lds_bytes_per_s", "load_bytes_per_kstep", "load_bytes_per_s", "batched",
          "b_reads", "part_s", "tail_s")
KINDS = {"tile": 0, "splitk": 1, "streamk": 2}
#: fraction of the tensor peak each body reaches on large shapes (measured on the H200: docs/performance-log.md); for the
#: vector body of instr = none, of the vector ALUs' f32 multiply-add peak (Target.valu_lanes_per_cu), its loads,
#: conversions and sums around each multiply-add: 16.8 and 18.6 TFLOP/s of the H100's 67 at M = 16 for bf16 and e4m3
#: at 16 x 3584 x 18944 (bench/runs/2026-12-07c_h100_skinny_probe.txt, the probe the body came from)
EFFICIENCY = {"tma": 0.72, "mma_sync": 0.60, "mfma": 0.60, "vector": 0.25}
#: the Hopper body's wgmma issues twice the work of mma.sync per SM and clock
WGMMA_SPEEDUP = 2.0
#: a schedule's share of its body's throughput where it is not 1: the median of the tile schedule's time over
#: stream-K's on the Hopper body, over the 16 shapes of two waves of tiles or more of the Mistral-7B tuning set
#: (bench/debug/streamk_efficiency.py on bench/runs/2026-12-05b_tune_mistral7b_h200.jsonl: 0.93, H200), with
#: stream-K taking every full wave of tiles whole and splitting only the last ones along K (gemm_work.h), its whole
#: tiles then stored with the plain epilogue, not the overlapped one. (The earlier partition, even shares at a
#: different K per worker, measured 0.68.) Since then stream-K's whole tiles take the overlapped epilogue; not yet
#: re-measured on the tuning set, so the figure stays (bench/model.py --streamk-ab times the Llama layer with its
#: projections pinned to stream-K).
SCHEDULE_EFFICIENCY = {("tma", "streamk"): 0.93}
#: block(128) scales on the Hopper body, per consumer warpgroups of the tile: each warpgroup waits for a K tile's
#: wgmmas before folding them into its sums, and with one (64-row tiles) nothing feeds the tensor cores meanwhile:
#: 694-703 TFLOP/s against 885-906 for the two-warpgroup 128-row tile at M = 2048 / 8192
#: (bench/runs/2026-12-04_fp8_h_block_prefetch.txt; the shapes bench/fp8.py's dispatcher table reports as tuned)
BLOCK_FOLD_EFFICIENCY = {1: 0.78}
BANDWIDTH_EFFICIENCY = 0.85
LAUNCH_S = 2.5e-6
#: what a split-K / stream-K schedule adds to its kernel's time (the partial tiles' hand-off through the workspace,
#: the ticket, the last piece's reads and the slots zeroed again): 6 us, from every member of the untuned fp8
#: dispatchers timed on the nn.Linear 4096 / 14336 shapes (H100, bench/runs/2026-12-07c_h100_fp8_dispatch_members.json;
#: at 1 us the model took split-K where the same tile without it ran 1.2-2.5x faster, e.g. 32 x 3584 x 3584 fp8:
#: 15.4 against 9.4 us). Checked, not fitted, on the held-out Qwen2-7B shapes of that run (the pick's time over the
#: fastest member's, geomean: 1.210 -> 1.061 tensor-scaled, 1.174 -> 1.059 row-scaled, 1.115 -> 1.005 block-scaled;
#: bench/debug/fp8_model_check.py) and the bf16 Mistral-7B tuning databases' leave-one-out (the model alone 0.858 ->
#: 0.906 of the fastest on the H200's, 0.848 -> 0.918 on the H100's; the dispatcher's nearest rule 0.956 -> 0.964 and
#: 0.968 -> 0.966); the Llama layer's projections keep their picks (bench/debug/model_variants.py)
FIXUP_S = 6.0e-6
#: what stream-K's split tail adds (the last tiles, past its whole waves, each shared by S = workers // rest parts
#: along K; gemm_work.h StreamK): STREAMK_TAIL_S, plus per part the time its finisher takes to read and zero one slot
#: of raw f32 sums (tile M x N x 4 bytes) at FINISH_BYTES_PER_S. Fitted on synthetic shapes (M = 1000, K = 1792 -
#: 14336, N giving the 128x192 tile 1 whole wave and a tail of S = 2 - 11 parts: 14 us + 3.5 us per 96-KiB part,
#: whatever K; bench/runs/2026-12-07f_h100_streamk_parts.txt, H100); the 128x256 and 128x128 tiles of the same run
#: fit it too (4.9 and 1.9 us per part of 128 and 64 KiB). On the Hopper body a tail of one part per tile is whole
#: tiles, stored straight to C: no cost, and no hand-off either; the other bodies pass every stream-K tile, whole or
#: not, through a slot (gemm_schedule.h) and keep FIXUP_S
STREAMK_TAIL_S, FINISH_BYTES_PER_S = 14.0e-6, 28.0e9
#: how many times the memory term reads B: once per M tile, at most B_READS (the matrix-core bodies' tiles of one
#: column run close together and share B through the L2); the vector body streams it past the L1 once per tile of
#: its few rows of A, each a separate pass over B (MAX_B_READS: no cap)
B_READS, MAX_B_READS = 2, 1 << 30
DEFAULT_CLOCK_MHZ, DEFAULT_MEM_GBPS = 1500, 2000
#: bytes of global loads one CU (SM) takes in per clock through its vector L1 (CDNA's 64-byte L1 line per clock;
#: a rank-level figure for the operand-feed term, not a measured peak)
L1_BYTES_PER_CU_CLK = 64


def traits(plan: KernelPlan) -> tuple[float, ...]:
    """The numbers :func:`estimate` reads, in :data:`TRAITS` order."""

    t, b, g = plan.target, plan.body, plan.spec.params.gemm
    cfg = plan.spec.params.config
    i = b.instr
    clock = (t.clock_mhz or DEFAULT_CLOCK_MHZ) * 1e6
    if b.vector is not None:  # the vector body: f32 multiply-adds, no LDS, every wave reads A's rows
        per_cu_clk = 2.0 * t.valu_lanes_per_cu
        body = "vector"
    else:
        per_cu_clk = t.simds_per_cu * 2.0 * i.m * i.n * i.k * i.blocks / i.cycles
        body = "tma" if b.tma is not None else ("mma_sync" if t.platform == "cuda" else "mfma")
    sp = b.schedule
    # the body's share of its peaks (block scales on the Hopper body: less with one consumer warpgroup)
    eff = EFFICIENCY[body] * (BLOCK_FOLD_EFFICIENCY.get(cfg.tile[0] // 64, 1.0) if body == "tma" and g.block_scaled
                              else 1.0)
    flops = (per_cu_clk * t.cus * clock * eff * (WGMMA_SPEEDUP if body == "tma" else 1.0)
             * SCHEDULE_EFFICIENCY.get((body, sp.kind if sp is not None else "tile"), 1.0))
    wm, wn = cfg.waves
    kind = KINDS[sp.kind] if sp is not None else 0
    if body == "vector":  # (one workgroup's waves already reach the CU's vector ALUs: the unit rate is the CU's)
        per_cu, lds_kstep = 1, 0
    elif body == "tma":  # TMA's writes of the stage, then each consumer warpgroup's wgmma reads (its A rows, all of B)
        per_cu = 1
        lds_kstep = cfg.tile[2] * (2 * cfg.tile[0] * g.a.dtype.value_bytes + (1 + cfg.tile[0] // 64) * cfg.tile[1]
                                   * g.b.dtype.value_bytes)
    else:
        per_cu = max(1, min(CTAS_PER_CU, t.lds_bytes_per_cu // max(1, b.lds.total_bytes)))
        lds_kstep = cfg.tile[2] * (wn * cfg.tile[0] * g.a.dtype.value_bytes + wm * cfg.tile[1] * g.b.dtype.value_bytes)
    lds_rate = t.cus * t.lds_banks * t.lds_bank_bytes * clock * eff
    load_kstep = cfg.tile[2] * ((wn if body == "vector" else 1) * cfg.tile[0] * g.a.dtype.value_bytes
                                + cfg.tile[1] * g.b.dtype.value_bytes)
    # (the vector body's loads go straight to registers: its efficiency is its ALU work's, not the loads')
    load_rate = t.cus * L1_BYTES_PER_CU_CLK * clock * (1.0 if body == "vector" else eff)
    # A gated epilogue's tile writes half its N columns of C from twice as many of B: the model's tile N is C's
    # (tile counts), its B bytes per column of C double, and its rate halves (a unit's flops are those of the
    # whole tile, 2 x tile M x tile N x tile K, which estimate() counts from C's tile N)
    half = 2 if g.gated else 1
    flops /= half
    return (float(cfg.tile[0]), float(cfg.tile[1] // half), float(cfg.tile[2]), float(kind),
            float(sp.splits if sp else 0), float(sp.target_ctas if sp else 0), float(sp.workers if sp else 0),
            float(t.cus * per_cu), flops, (t.mem_gbps or DEFAULT_MEM_GBPS) * 1e9 * BANDWIDTH_EFFICIENCY,
            float(g.a.dtype.value_bytes), float(g.b.dtype.value_bytes * half), float(g.c.dtype.bytes),
            LAUNCH_S + (FIXUP_S if kind == KINDS["splitk"] or (kind and body != "tma") else 0.0),
            float(MIN_KTILES_PER_SPLIT),
            float(MAX_SPLITS), float(lds_kstep), lds_rate, float(load_kstep), load_rate, float(g.batched),
            float(MAX_B_READS if body == "vector" else B_READS),
            sp.slot_bytes / FINISH_BYTES_PER_S if sp else 0.0, STREAMK_TAIL_S if kind == KINDS["streamk"] else 0.0)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def estimate(t: tuple[float, ...], s: tuple[int, ...]) -> float:
    """Seconds one call at sizes ``s`` (the ABI's sizes in order: M, N, K, then the batch of a batched kernel, or
    other sizes the model does not read: block scales' kb, nb, a grouped kernel's groups) should take (the model of
    the module docstring). Keep in step with ``model.cpp.j2``: the same operations in the same order."""
    tm, tn, tk, kind = int(t[0]), int(t[1]), int(t[2]), int(t[3])
    tail = 0.0
    m, n, k = s[0], s[1], s[2]
    batch = s[3] if t[20] and len(s) > 3 else 1
    if m == 0 or n == 0 or batch == 0:
        return t[13]
    tiles = _cdiv(m, tm) * _cdiv(n, tn) * batch
    kt = max(1, _cdiv(k, tk))
    if kind == 1:
        if int(t[4]) > 0:
            splits = min(int(t[4]), kt)
        else:
            splits = max(1, min(int(t[5]) // max(1, tiles), kt // int(t[14]), int(t[15])))
        units, per_unit = tiles * splits, _cdiv(kt, splits)
    elif kind == 2:  # each worker's whole tiles, then its part of one of the last tiles (gemm_work.h StreamK)
        units = min(int(t[6]), tiles * kt)
        whole, rest = divmod(tiles, units)
        parts = min(kt, units // rest) if rest else 1
        per_unit = whole * kt + (_cdiv(kt, parts) if rest else 0)
        if parts > 1:  # the split tail's hand-off: a fixed cost and each part's slot read by the finisher
            tail = t[23] + parts * t[22]
    else:
        units, per_unit = tiles, kt
    slots = int(t[7])
    waves = _cdiv(units, slots)
    unit_flops = 2.0 * tm * tn * tk * per_unit
    compute = waves * unit_flops / (t[8] / slots)
    feed = waves * per_unit * max(t[16] / (t[17] / slots), t[18] / (t[19] / slots))
    traffic = (float(m) * k * t[10] + float(n) * k * t[11] * min(_cdiv(m, tm), int(t[21])) + float(m) * n * t[12]) * batch
    if units > tiles:
        traffic += 8.0 * tm * tn * (units - tiles)
    memory = traffic / t[9]
    return max(compute, feed, memory) + t[13] + tail
