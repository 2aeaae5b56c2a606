"""The attention op: ``O = softmax(scale * Q.K^T + mask) . V`` with the per-row log-sum-exp (forward).

Its parts: ``spec.py`` (DSL keys, params), ``configs.py`` (known-good configurations per target), ``plan.py``
(the pass list), ``body.py`` (the plan), ``abi.py`` (the C ABI and launch), ``reference.py`` (float64, random
problems), ``kernel.hip.j2`` + ``tma_launch.cpp.j2`` (templates), ``torch_op.py`` (the ``torch.library`` custom op),
``device/`` (the bodies: attention_fwd_amd.h on AMD and the emulator, attention_fwd_nv.h on NVIDIA, and on sm_90
attention_fwd_sm90.h, the Hopper body the host entry tries first).
"""

from __future__ import annotations

import numpy as np

from ckgen.codegen.escape import bool_literal
from ckgen.ir.op import Op
from ckgen.ir.plan import KernelPlan
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import Target
from ckgen.ops.attention import abi as _abi
from ckgen.ops.attention import plan as _plan
from ckgen.ops.attention import reference as _ref
from ckgen.ops.attention import spec as _spec
from ckgen.ops.attention.body import cfg_members, k_swizzle_member, wgmma_members

#: the Hopper body's header (device/), which also brings the portable NVIDIA body
WGMMA_HEADER = "attention_fwd_sm90.h"
MASK_CONSTANTS = {"none": "ckgen::attn::kMaskNone", "causal": "ckgen::attn::kMaskCausal",
                  "window": "ckgen::attn::kMaskWindow"}


class AttentionOp(Op):
    name = "attention"
    doc = "fused attention forward: O = softmax(scale * Q.K^T + mask) . V and the row log-sum-exp"
    keys = _spec.KEYS
    kernel_template = "attention/kernel.hip.j2"

    def build_params(self, values, ctx):
        return _spec.build_params(values, ctx)

    def plan(self, spec: KernelSpec, target: Target) -> KernelPlan:
        return _plan.plan(spec, target)

    def abi(self, spec: KernelSpec):
        return _abi.abi(spec)

    def summary(self, plan: KernelPlan) -> str:
        a, b = plan.spec.params.attn, plan.body
        mask = a.mask + (f" [{a.window[0]}, {a.window[1]}]" if a.mask == "window" else "")
        q = ", Q in registers" if b.q_in_regs else ", Q in shared memory"
        q += ", one barrier per K/V tile" if b.kv_barriers == 1 else ""
        w = b.wgmma
        hopper = (f"; Hopper body {w.block_m}x{w.block_n}, {w.stages} stages{', persistent' if w.persistent else ''} "
                  "(fallback: "
                  if w is not None else "; ")
        rope = f", RoPE {a.rope.text} on Q" if a.rope else ""
        return (f"{a.dtype.value} d{a.head_dim}, mask {mask}{', varlen' if a.varlen else ''}{rope}{hopper}tile "
                f"{b.block_m}x{b.block_n}, waves {b.waves}, lds_buffers {b.lds_buffers}{q}, instr {b.instr.shape_text}"
                + (")" if w is not None else ""))

    def kernel_view(self, plan: KernelPlan) -> dict:
        """The Cfg of the platform's body (the member lists in device/attention_fwd_amd.h and _nv.h)."""
        a, b, t = plan.spec.params.attn, plan.body, plan.target
        i, amd = b.instr, t.platform == "amd"
        extra, ints = cfg_members(b, a.head_dim, t.wave_size, plan.threads, amd)
        types = [("T", a.dtype.cpp), *extra]
        w_ints, w_bools, w_notes = wgmma_members(b.wgmma)
        constants = [("int", n, str(v)) for n, v in ints + w_ints]
        constants += [("bool", n, bool_literal(v)) for n, v in w_bools]
        constants += k_swizzle_member(b) if amd else []
        if not amd:
            constants.append(("bool", "kQInRegs", bool_literal(b.q_in_regs)))
        constants += [("int", "kMask", MASK_CONSTANTS[a.mask]), ("bool", "kVarlen", bool_literal(a.varlen)),
                      ("bool", "kGqa", "true")]
        constants += a.rope.constants() if a.rope else []
        notes = [f"instruction {i.mnemonic}, {b.mma_per_tile} per wave and K/V tile; LDS {b.lds_bytes} bytes "
                 f"({b.lds_buffers} K/V buffer(s)); {plan.threads} threads; planned: {', '.join(b.planned) or 'none'}.",
                 *w_notes]
        # the Hopper body's header includes the portable one (attention_fwd_nv.h)
        header = WGMMA_HEADER if b.wgmma is not None else b.body.header
        return {"types": types, "constants": constants, "header": header, "impl": b.body.impl,
                "mma_builtins": [i.builtin] if i.builtin_in_cfg else [], "notes": notes,
                "tma_entry": b.wgmma is not None}

    def reference(self, plan: KernelPlan, arrays: dict[str, np.ndarray], sizes: dict[str, int]):
        return _ref.reference(plan, arrays, sizes)

    def tolerance(self, plan: KernelPlan, output: str) -> float:
        return _ref.tolerance(plan, output)

    def error(self, plan: KernelPlan, output: str, got: np.ndarray, ref: np.ndarray) -> float:
        return _ref.error(output, got, ref)

    def extent_bounds(self, plan: KernelPlan, sizes: dict[str, int]) -> dict[str, int]:
        """A varlen batch has at most batch x seqlen tokens on each side."""
        if not plan.spec.params.attn.varlen:
            return {}
        return {"total_q": sizes["batch"] * sizes["seqlen_q"], "total_k": sizes["batch"] * sizes["seqlen_k"]}

    def random_inputs(self, plan: KernelPlan, sizes: dict[str, int], rng: np.random.Generator):
        return _ref.random_inputs(plan, sizes, rng)


OP = AttentionOp()
