"""The GEMM op: ``C = epilogue(alpha * A.B + beta * C)`` on matrix cores (or the vector ALUs), optionally
strided-batched.

Its parts: ``spec.py`` (DSL keys, params), ``plan.py`` (the pass list; ``vector.py`` the vector body's), ``body.py``
(the plan), ``abi.py`` (the C ABI and launch), ``reference.py`` (float64), ``kernel.hip.j2`` + ``tma_launch.cpp.j2``
(templates), ``device/`` (the bodies: gemm_mfma.h on AMD, gemm_mma_sm90.h + gemm_sm90_tma.h on NVIDIA, gemm_vec.h
on both for ``instr = none``).
"""

from __future__ import annotations

import numpy as np

from ckgen.codegen.escape import bool_literal, f32_literal
from ckgen.ir.op import Op
from ckgen.ir.plan import KernelPlan
from ckgen.ir.rope import rope_table
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import Target
from ckgen.ir.types import Layout
from ckgen.ops.gemm import abi as _abi
from ckgen.ops.gemm import cost_model as _model
from ckgen.ops.gemm import fp4 as _fp4
from ckgen.ops.gemm import plan as _plan
from ckgen.ops.gemm import reference as _ref
from ckgen.ops.gemm import spec as _spec
from ckgen.ops.gemm import vector as _vector
from ckgen.targets.amd import MX_OPERAND_FORMATS

#: the gate activation of each gated epilogue (blocks/epilogue.h ops)
GATE_TYPES = {"swiglu": "ckgen::epi::Silu", "geglu": "ckgen::epi::Gelu"}


def _float(x: float) -> str:
    return f32_literal(x)


def _epilogue_view(plan: KernelPlan) -> tuple[list, list, dict | None]:
    """The Cfg parts every GEMM body shares (docs/design.md): the dtypes, the epilogue operand's type
    (blocks/epilogue.h), the layouts and the epilogue's constants; and the arguments the entry folds into the
    epilogue operand (EpiOperand::make) with those around them (None when it folds none)."""
    g, b = plan.spec.params.gemm, plan.body
    types = [("TA", g.a.dtype.cpp), ("TB", g.b.dtype.cpp), ("TC", g.c.dtype.cpp), ("TAcc", g.acc.cpp),
             ("TBias", b.bias_dtype.cpp)]
    if g.scaled:  # the epilogue operand carries the scale pointers (blocks/epilogue.h)
        kinds = {None: "kScaleNone", "tensor": "kScaleTensor", "row": "kScaleRow", "col": "kScaleCol",
                 "block": "kScaleBlock", "mx": "kScaleMx"}
        types.append(("EpiOperand", f"ckgen::epi::Scaled<{b.bias_dtype.cpp}, ckgen::epi::{kinds[g.scale_a]}, "
                                    f"ckgen::epi::{kinds[g.scale_b]}>"))
    if g.gated:  # swiglu / geglu: the gate activation and B's arrangement (blocks/epilogue.h)
        types.append(("Gate", GATE_TYPES[g.gated]))
    if g.residual:  # the residual R travels with the bias (blocks/epilogue.h); the entry builds the pair
        types.append(("EpiOperand", f"ckgen::epi::Residual<{b.bias_dtype.cpp}, {g.c.dtype.cpp}>"))
    if g.rope is not None:  # the rotary inputs travel with the bias (blocks/epilogue.h)
        types.append(("EpiOperand", f"ckgen::epi::Rotary<{b.bias_dtype.cpp}>"))
    constants = [("bool", "kARowMajor", bool_literal(g.a.layout == Layout.ROW)),
                 ("bool", "kBRowMajor", bool_literal(g.b.layout == Layout.ROW)),
                 ("bool", "kCRowMajor", bool_literal(g.c.layout == Layout.ROW)),
                 ("float", "kAlpha", _float(g.alpha)), ("float", "kBeta", _float(g.beta)),
                 ("bool", "kHasBias", bool_literal(g.has_bias)),
                 ("bool", "kIntegerEpilogue", bool_literal(b.integer_epilogue))]
    if g.gated:
        constants.append(("int", "kGateBlock", str(g.gate_block)))
    if g.rope is not None:
        constants += [("int", "kRopeHead", str(g.rope_head)), ("int", "kRopeDim", str(g.rope.dim))]
    names = [a.name for a in plan.abi.args]
    # (the rotary inputs in abi.rope_args' order, the order epi::Rotary::make takes them after the bias)
    rope = [a.name for part in _abi.rope_args(g) for a in part] if g.rope is not None else []
    folded = (["residual"] if g.residual else []) + rope
    make = ["bias", *folded] + (["C"] if g.residual else [])
    if g.grouped and g.scaled:  # the grouped entries take the operand made (epi::Scaled::make(bias, sa, sb, ld_a, ld_b))
        ld_b = ["ld_scale_b"] if "ld_scale_b" in names else []
        folded, make = ["scale_a", "scale_b", *ld_b], ["bias", "scale_a", "scale_b", "0", *(ld_b or ["0"])]
    operand = None
    if folded:
        operand = {"before": names[:names.index("bias")], "make": make,
                   "after": [n for n in names[names.index("bias") + 1:] if n not in folded]}
    return types, constants, operand


class GemmOp(Op):
    name = "gemm"
    doc = ("C = epilogue(alpha * A.B + beta * C) on matrix cores (or the vector ALUs: instr = none), "
           "optionally strided-batched")
    keys = _spec.KEYS
    kernel_template = "gemm/kernel.hip.j2"
    model_template = "gemm/cost_model.cpp.j2"

    def build_params(self, values, ctx):
        return _spec.build_params(values, ctx)

    def plan(self, spec: KernelSpec, target: Target) -> KernelPlan:
        return (_vector.plan if spec.params.config.vector else _plan.plan)(spec, target)

    def abi(self, spec: KernelSpec):
        return _abi.abi(spec)

    def summary(self, plan: KernelPlan) -> str:
        g, c = plan.spec.params.gemm, plan.spec.params.config
        ep = " -> ".join(op.text for op in g.epilogue) or "none"
        batch = "batched " if g.batched else (f"{g.mode} ({g.index.value} index) " if g.grouped else "")
        return (f"{batch}{g.a.dtype.value} {g.a.layout.value} x {g.b.dtype.value} {g.b.layout.value} -> "
                f"{g.c.dtype.value} {g.c.layout.value} (acc {g.acc.value}), alpha {g.alpha:g}, beta {g.beta:g}, "
                f"epilogue {ep}; " + (f"gate {g.gate_text}; " if g.gated else "")
                + (f"rope {g.rope_text}; " if g.rope is not None else "") + (f"scales A {g.scale_a or 'none'}, B {g.scale_b or 'none'}; " if g.scaled else "")
                + f"tile {'x'.join(map(str, c.tile))}, waves {c.waves[0]}x{c.waves[1]}, "
                f"instr {plan.body.instr.shape_text if plan.body.instr else 'none'}" + (f", schedule {c.schedule.text}" if c.schedule.kind != "tile" else ""))

    def kernel_view(self, plan: KernelPlan) -> dict:
        """The Cfg struct (docs/design.md) as lists: (alias, C++ type) and (C++ type, member, literal)."""
        g, b = plan.spec.params.gemm, plan.body
        types, constants, operand = _epilogue_view(plan)
        view = {"types": types, "constants": constants, "operand_args": operand, "epilogue": list(b.epilogue_types),
                "header": b.body.header, "impl": b.body.impl, "mma_builtins": [], "mx_builtins": [],
                "tma_entry": False, "workgroups_per_cu": 0}
        if b.vector is not None:  # the vector body (instr = none): its tiling only
            constants += [("int", name, str(v)) for name, v in _vector.kernel_constants(plan)]
            return {**view, "notes": [f"vector body: {b.vector.rows} rows of B per wave, {b.vector.unroll} vectors "
                                      f"of {b.vector.vec} elements of each in flight per lane; no LDS; "
                                      f"{plan.threads} threads."]}
        # (fp4 pairs: the body's K tile and instruction K in bytes, _fp4.storage_view)
        c, i, lds = _fp4.storage_view(plan.spec.params, b.instr)[0].config, b.instr, b.lds
        pk = _fp4.storage_k(g)
        types += [("AOperand", i.a_operand), ("BOperand", i.b_operand), ("COperand", i.c_operand)]
        ints = [("kTileM", c.tile[0]), ("kTileN", c.tile[1]), ("kTileK", c.tile[2]),
                ("kWavesM", c.waves[0]), ("kWavesN", c.waves[1]), ("kWaveSize", plan.target.wave_size),
                ("kThreads", plan.threads), ("kWaveTileM", b.wave_tile[0]), ("kWaveTileN", b.wave_tile[1]),
                ("kInstrM", i.m), ("kInstrN", i.n), ("kInstrK", i.k // pk), ("kRepM", b.repeats[0]),
                ("kRepN", b.repeats[1]), ("kAItems", b.items[0]), ("kBItems", b.items[1]),
                ("kCItems", b.items[2]), ("kLdsBuffers", lds.buffers), ("kPrefetch", b.prefetch),
                ("kVecA", b.vec[0]), ("kVecB", b.vec[1]), ("kVecC", b.vec[2]),
                ("kLdsAGranule", lds.a.granule), ("kLdsASwizzleBits", lds.a.low_bits),
                ("kLdsAMnLanes", lds.a.mn_lanes), ("kLdsAMnPiece", lds.a.mn_piece),
                ("kLdsBGranule", lds.b.granule), ("kLdsBSwizzleBits", lds.b.low_bits),
                ("kLdsBMnLanes", lds.b.mn_lanes), ("kLdsBMnPiece", lds.b.mn_piece),
                ("kLdsABytes", lds.a_bytes), ("kLdsBBytes", lds.b_bytes), ("kLdsBytes", lds.total_bytes)]
        if b.tma is not None:  # the Hopper body's own pipeline (gemm_sm90_tma.h checks the bytes)
            ints += [("kTmaStages", b.tma.stages), ("kTmaSmemBytes", b.tma.smem_bytes)]
            if b.tma.cluster > 1:
                ints.append(("kTmaCluster", b.tma.cluster))
        if b.schedule is not None:  # split-K / stream-K (gemm_work.h)
            ints += [("kSchedule", {"splitk": 1, "streamk": 2}[b.schedule.kind])]
        constants += [("int", name, str(v)) for name, v in ints]
        constants += [("unsigned long long", "kLdsASwizzle", f"{lds.a.packed_table:#x}ull"),
                      ("unsigned long long", "kLdsBSwizzle", f"{lds.b.packed_table:#x}ull")]
        if b.schedule is not None:
            constants.append(("bool", "kAtomicSplitK", bool_literal(b.schedule.atomic)))
        if g.mx_scaled:  # the block-scaled MFMA's operand formats, Cfg::mma_mx (kernel.hip.j2)
            constants += [("int", "kMxFormatA", str(MX_OPERAND_FORMATS[g.a.dtype.matrix_kind])),
                          ("int", "kMxFormatB", str(MX_OPERAND_FORMATS[g.b.dtype.matrix_kind]))]
        runs = _fp4.storage_view(plan.spec.params, i)[1].frag_runs
        if runs > 1:  # a lane's fragment read as runs (gemm_mfma.h: the LDS granule holds one run)
            constants.append(("int", "kFragRuns", str(runs)))
        if pk > 1:  # values per byte along K (gemm_mfma.h: K, the scales' blocks and kb in values)
            constants.append(("int", "kPackK", str(pk)))
        if b.grouping is not None:  # device/gemm_grouped.h, gemm_sm90_tma.h: the index dtype, where a bias starts
            types.append(("TIndex", g.index.cpp))
            constants += [("int", "kGroupMode", "1" if g.mode == "grouped" else "2"),
                          ("bool", "kBiasRow", bool_literal(g.bias_axis == "row"))]
        notes = [f"instruction {i.mnemonic}; LDS {lds.total_bytes} bytes in {lds.buffers} buffer(s); "
                 f"{plan.threads} threads."]
        if b.schedule is not None:
            notes.append(f"schedule {c.schedule.text} ({b.schedule.kind}, workspace per launch.workspace).")
        if b.grouping is not None:
            notes.append(f"mode {b.grouping.mode}: one persistent launch of at most {b.grouping.workers} workgroups "
                         "walks every group's tiles.")
        return {**view, "mma_builtins": [i.builtin] if i.builtin_in_cfg and not g.mx_scaled else [],
                "mx_builtins": [i.builtin] if g.mx_scaled and i.builtin_in_cfg else [],
                "tma_entry": b.tma is not None, "notes": notes,
                "tma_macro": ("CKGEN_TMA_GEMM_GROUPED_ENTRY" if b.grouping is not None else
                              "CKGEN_TMA_GEMM_SCALED_SCHED_ENTRY" if b.schedule is not None and g.scaled else
                              "CKGEN_TMA_GEMM_SCHED_ENTRY" if b.schedule is not None else
                              "CKGEN_TMA_GEMM_SCALED_ENTRY" if g.scaled else "CKGEN_TMA_GEMM_ENTRY"),
                # scheduled kernels: let the compiler use every register one workgroup per CU allows (nvcc's
                # default cap spilled the split-K fix-up's state)
                "workgroups_per_cu": 1 if b.schedule is not None else 0}

    def reference(self, plan: KernelPlan, arrays: dict[str, np.ndarray], sizes: dict[str, int]):
        return _ref.reference(plan, arrays, sizes)

    def random_inputs(self, plan: KernelPlan, sizes: dict[str, int], rng: np.random.Generator):
        """The base's random arrays, with the block scales' counts (kb, nb) derived from K and N when the caller
        leaves them out; a grouped kernel's offsets split the M rows at random cut points (some groups empty), a
        masked kernel's counts are random in 0..M; a rotary kernel's table is ckgen.rope_table's (rope_positions:
        M unless given) with positions drawn from it."""
        g = plan.spec.params.gemm
        if g.block_scaled:
            blk = _spec.SCALE_BLOCK
            sizes = {"kb": -(-sizes["K"] // blk), "nb": -(-sizes["N"] // blk), **sizes}
        if g.mx_scaled:
            sizes = {"kb": -(-sizes["K"] // _spec.MX_BLOCK), **sizes}
        if g.rope is not None:  # a real table, positions anywhere in it
            sizes = {**sizes, "rope_positions": sizes.get("rope_positions") or max(sizes["M"], 1)}
        out = super().random_inputs(plan, sizes, rng)
        if g.rope is not None:
            out["cos_sin"] = rope_table(sizes["rope_positions"], g.rope.dim)
            out["positions"] = rng.integers(0, sizes["rope_positions"], sizes["M"]).astype(np.int32)
        if g.grouped and sizes.get("groups", 0) > 0:
            n, m = sizes["groups"], sizes["M"]
            idx = (np.sort(rng.integers(0, m + 1, n)) if g.mode == "grouped" else rng.integers(0, m + 1, n))
            name = "offsets" if g.mode == "grouped" else "counts"
            if g.mode == "grouped":
                idx[-1] = m
            out[name][...] = idx
        return out

    def tolerance(self, plan: KernelPlan, output: str) -> float:
        return _ref.tolerance(plan, super().tolerance(plan, output))

    def signature(self, spec: KernelSpec) -> dict:
        """The problem: dtypes, layouts, scalars, epilogue, batching (not the tiling or the schedule)."""
        return {"op": self.name, "gemm": spec.params.gemm.to_json()}

    def model_traits(self, plan: KernelPlan) -> tuple[float, ...]:
        return _model.traits(plan)

    def estimate(self, traits: tuple[float, ...], sizes: tuple[int, ...]) -> float:
        return _model.estimate(traits, sizes)

    def flops(self, plan: KernelPlan, sizes: dict[str, int]) -> float:
        g = plan.spec.params.gemm
        rows = sizes["M"] * (sizes.get("groups", 1) if g.mode == "masked" else 1)
        cols = sizes["N"] * (2 if g.gated else 1)  # (gated: B has 2 N columns)
        return 2.0 * rows * cols * sizes["K"] * sizes.get("batch", 1)

    def reference_torch(self, plan: KernelPlan, arrays: dict, sizes: dict[str, int]) -> dict:
        """:meth:`reference` on torch device tensors (float64 on the GPU: large shapes in milliseconds)."""
        return _ref.reference_torch(plan, arrays, sizes)


OP = GemmOp()
