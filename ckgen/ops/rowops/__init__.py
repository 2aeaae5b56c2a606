"""The row ops: ``softmax`` (and log-softmax), ``layernorm`` and ``rmsnorm`` over the last dimension of a
``rows x cols`` matrix, each with an optional fused residual add (``s = x + residual``, written beside ``y``) and an
optional int8 or fp8 output with per-row or per-group (128 columns) scales; ``rmsnorm`` also with the per-row
``rstd`` output (``rstd = true``), with or without y (``y = none``: the norm folded into the next GEMM); and
``quantize`` (y = x or x + residual, quantized). One package serves the four registry names: each has a module (``softmax.py``,
``layernorm.py``, ``rmsnorm.py``, ``quantize.py``) whose ``OP`` is a :class:`RowOp` of that name.

Its parts: ``kinds.py`` (the kind table: one row per kind drives the keys, docs, ABI, entries, state size, kOp
and reference; adding a kind is one row plus its math), ``spec.py`` (DSL keys, params), ``plan.py`` (the pass list),
``tiles.py`` (the tile tables per wave size and the choosers reading them), ``registers.py`` (the register model: estimates and budgets), ``split.py`` (split
rows: whether a kernel splits its rows over workgroups, its planning pass, workspace and launch;
``split_launch.cpp.j2``, its host launch), ``body.py`` (the plan), ``abi.py`` (the C ABI and launch),
``reference.py`` (float64), ``kernel.hip.j2`` (the template), ``device/`` (``rowops_entry.h``, one entry per op; ``rowops_forward.h``,
the body for every platform and its contract, which picks a pipeline per configuration; ``rowops_config.h``, its
Cfg, checks and derived sizes; ``rowops_problem.h``, the types and flags derived from the Cfg;
``rowops_default_policy.h``, the reductions and tile counts; ``rowops_row.h``, what the pipelines share;
``rowops_pipeline_one_pass.h``, ``_looped.h``, ``_row_cached.h`` (``row_in = shared``), ``_bounded.h`` (the
register-bounded single pass) and ``_split.h`` (split rows), one per variant; ``rowops_kinds.h``, each kind's math (``RowKind<kOp>``);
``rowops_math.h``, the per-row states and tile statistics; ``rowops_frag.h``, the fragments and accesses;
``rowops_rowcache.h``, the row kept in shared memory; ``rowops_stages.h``, the staged ring).
"""

from __future__ import annotations

import numpy as np

from ckgen.codegen.escape import bool_literal
from ckgen.ir.op import Op
from ckgen.ir.plan import KernelPlan
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import Target
from ckgen.ir.types import DType
from ckgen.ops.rowops import abi as _abi
from ckgen.ops.rowops import kinds as _kinds
from ckgen.ops.rowops import plan as _plan
from ckgen.ops.rowops import reference as _ref
from ckgen.ops.rowops import registers as _registers
from ckgen.ops.rowops import spec as _spec


class RowOp(Op):
    """One of the row ops (``name``: an op of the kind table, kinds.py: softmax, layernorm, rmsnorm or a
    registered one); see the package docstring. Its doc and keys are read from the table when asked for."""

    kernel_template = "rowops/kernel.hip.j2"

    def __init__(self, name: str):
        _kinds.default(name)  # KeyError for an op the table lacks
        self.name = name

    @property
    def doc(self) -> str:
        return _kinds.default(self.name).doc

    @property
    def keys(self):
        return _spec.keys(self.name)

    def build_params(self, values, ctx):
        return _spec.build_params(self.name, values, ctx)

    def plan(self, spec: KernelSpec, target: Target) -> KernelPlan:
        return _plan.plan(spec, target)

    def abi(self, spec: KernelSpec):
        return _abi.abi(spec)

    def summary(self, plan: KernelPlan) -> str:
        r, b = plan.spec.params.row, plan.body
        parts = [f"{r.kind.replace('_', '-')} {r.x.value} -> {r.y.value if r.write_y else 'no y'}"]
        if r.residual:
            parts.append(f"residual {r.residual.value} (s_out)")
        if r.weight or r.bias:
            parts.append("weight" * bool(r.weight) + " + " * bool(r.weight and r.bias) + "bias" * bool(r.bias)
                         + f" {r.w_dtype.value}")
        if r.quantized:
            parts.append(f"E8M0 scale per {r.quant_group} columns (mx)" if r.quant_mx else
                         f"scale per {r.quant_group} columns" if r.quant_group else "per-row scale")
        if r.rstd:
            parts.append("rstd per row")
        cols = f"cols <= {b.max_cols}" if b.max_cols is not None else "any cols"
        passes = "looped" if b.looped else "single pass"
        if b.cache_tiles:
            passes += f", row in shared memory ({b.cache_tiles} tiles, {b.lds_bytes} bytes of LDS)"
        if b.workgroups_per_cu:
            passes += f", registers for {b.workgroups_per_cu} workgroups per CU / SM"
        if b.split:
            passes = f"split rows (a slice of one tile per workgroup, at most {b.split} per row)"
        return (", ".join(parts) + f"; {b.threads_per_row} threads x {b.reg_vecs} vectors of {b.vec} per row "
                f"(tile {b.tile_cols}), {b.rows_per_workgroup} row(s) per workgroup, {passes}, {cols}")

    def kernel_view(self, plan: KernelPlan) -> dict:
        """The body's Cfg (device/rowops_forward.h) as (alias, C++ type) and (C++ type, member, literal) lists."""
        r, b = plan.spec.params.row, plan.body
        types = [("TIn", r.x.cpp), ("TRes", r.res_dtype.cpp), ("TW", r.w_dtype.cpp), ("TOut", r.y.cpp)]
        constants = [("int", "kOp", r.row_kind.kop), ("bool", "kHasWeight", bool_literal(r.weight is not None)),
                     ("bool", "kHasBias", bool_literal(r.bias is not None)),
                     ("bool", "kResidual", bool_literal(r.residual is not None)), ("bool", "kQuantI8", bool_literal(r.y == DType.I8))]
        ints = [("kVec", b.vec), ("kWaveSize", b.wave_size), ("kRowThreads", b.threads_per_row),
                ("kWavesPerRow", b.waves_per_row), ("kRowsPerBlock", b.rows_per_workgroup), ("kThreads", b.threads),
                ("kRegVecs", b.reg_vecs), ("kTileCols", b.tile_cols)]
        constants += [("int", name, str(v)) for name, v in ints]
        constants += [("bool", "kLooped", bool_literal(b.looped)), ("int", "kLdsBytes", str(b.lds_bytes))]
        if r.quant_group:
            constants.append(("int", "kQuantGroup", str(r.quant_group)))
        if r.quant_mx:  # (absent otherwise: other kernels' sources as they were)
            constants.append(("bool", "kQuantMx", "true"))
        if b.cache_tiles:
            constants.append(("int", "kCacheTiles", str(b.cache_tiles)))
        if b.weight_vecs and b.weight_vecs != b.reg_vecs:
            constants.append(("int", "kWeightBatch", str(b.weight_vecs)))
        if b.whole_vectors:
            constants.append(("bool", "kWholeVectors", "true"))
        if b.split:
            constants.append(("int", "kSplit", str(b.split)))
        if b.few_groups:
            constants.append(("int", "kFewGroups", str(b.few_groups)))
        if b.weight_ahead:
            constants.append(("bool", "kWeightAhead", "true"))
        if r.rstd:  # (absent otherwise: other kernels' sources as they were)
            constants.append(("bool", "kRstd", "true"))
        if not r.write_y:
            constants.append(("bool", "kWriteY", "false"))
        notes = [f"{b.threads} threads; tile {b.tile_cols} columns; LDS {b.lds_bytes} bytes; about "
                 f"{b.registers_estimate} registers per thread (estimate)."]
        note = _kinds.header_note(r.row_kind)
        if note:
            notes.append(note)
        # ptxas aims at two workgroups per SM unless told otherwise (a 512-thread looped softmax: 64 registers
        # and spills); ask for one where the estimate needs more than half the register file, unless the plan
        # bounds the registers for more (a register-bounded single pass)
        one = b.registers_estimate * b.threads * 2 > _registers.PLAN_REGISTERS[b.wave_size][1]
        return {"types": types, "constants": constants, "header": b.header, "impl": b.impl, "notes": notes,
                "workgroups_per_cu": b.workgroups_per_cu or int(one), "few_entry": bool(b.few_groups)}

    def reference(self, plan: KernelPlan, arrays: dict[str, np.ndarray], sizes: dict[str, int]):
        return _ref.reference(plan, arrays)

    def tolerance(self, plan: KernelPlan, output: str) -> float:
        return _ref.tolerance(plan, output)
