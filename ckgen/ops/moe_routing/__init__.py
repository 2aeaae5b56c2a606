"""The mixture-of-experts routing op (``op = moe_routing``): router top-k, the sort of the tokens' choices by
expert (the grouped GEMM's offsets), the permutation of rows into that order and the weighted un-permute.

Its parts: ``spec.py`` (DSL keys and params, per stage), ``plan.py`` (plan, ABI, launch), ``reference.py``
(float64), ``kernel.hip.j2`` (the template), ``device/moe_routing.h`` (the four stages' bodies).
"""

from __future__ import annotations

import numpy as np

from ckgen.codegen.escape import bool_literal
from ckgen.ir.op import Op
from ckgen.ir.plan import KernelPlan
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import Target
from ckgen.ops.moe_routing import plan as _plan
from ckgen.ops.moe_routing import reference as _ref
from ckgen.ops.moe_routing import spec as _spec


class MoeRoutingOp(Op):
    name = "moe_routing"
    doc = "mixture-of-experts routing: top-k of router scores, sort by expert, permute, weighted un-permute"
    keys = _spec.KEYS
    kernel_template = "moe_routing/kernel.hip.j2"

    def build_params(self, values, ctx):
        return _spec.build_params(values, ctx)

    def plan(self, spec: KernelSpec, target: Target) -> KernelPlan:
        return _plan.plan(spec, target)

    def abi(self, spec: KernelSpec):
        return _plan.abi(spec)

    def summary(self, plan: KernelPlan) -> str:
        r = plan.spec.params
        if r.stage == "topk":
            groups = f", grouped {r.top_groups} of {r.expert_groups}" if r.top_groups < r.expert_groups else ""
            return (f"top-{r.top_k} of {r.experts} experts by {r.score} of {r.logits.value} logits"
                    f"{' + correction' if r.correction else ''}{groups}{', renormalized' if r.renormalize else ''}")
        if r.stage == "sort":
            return f"sort tokens x {r.top_k} choices by expert ({r.experts} experts), stable"
        return f"{r.stage} {r.x.value} rows, top-{r.top_k}"

    def kernel_view(self, plan: KernelPlan) -> dict:
        r, b = plan.spec.params, plan.body
        types = [("TLogit", r.logits.cpp), ("TX", r.x.cpp)]
        constants = [("int", "kExperts", str(max(1, r.experts))), ("int", "kTopK", str(r.top_k)),
                     ("int", "kThreads", str(b.threads)), ("bool", "kSigmoid", bool_literal(r.score == "sigmoid")),
                     ("bool", "kRenormalize", bool_literal(r.renormalize)), ("int", "kGroups", str(r.expert_groups)),
                     ("int", "kTopGroups", str(r.top_groups)), ("bool", "kCorrection", bool_literal(r.correction)),
                     ("int", "kLdsBytes", "0")]  # (dynamic shared memory: none; the sort's LDS is static)
        return {"types": types, "constants": constants, "header": b.header, "impl": b.impl,
                "notes": [f"stage {r.stage}; {b.threads} threads."]}

    def reference(self, plan: KernelPlan, arrays: dict[str, np.ndarray], sizes: dict[str, int]):
        return _ref.reference(plan, arrays, sizes)

    def tolerance(self, plan: KernelPlan, output: str) -> float:
        if plan.abi[output].dtype.is_float and plan.spec.params.stage in ("topk",):
            return 1e-5
        return super().tolerance(plan, output) if plan.abi[output].dtype.is_float else 0.0

    def random_inputs(self, plan: KernelPlan, sizes: dict[str, int], rng: np.random.Generator):
        """The base's arrays, with index inputs that make sense: expert ids in 0..experts-1 (a few -1, dropped),
        sorted_token / position a valid sort of random choices."""
        out = super().random_inputs(plan, sizes, rng)
        r = plan.spec.params
        tokens = sizes.get("tokens", 0)
        if r.stage == "topk":
            out["logits"][...] = (rng.standard_normal(out["logits"].shape) * 2).astype(out["logits"].dtype) \
                if r.logits.value != "bf16" else out["logits"]
        elif r.stage == "sort":
            ids = rng.integers(0, r.experts, (tokens, r.top_k))
            ids[rng.random(ids.shape) < 0.05] = -1
            out["ids"][...] = ids
        else:
            ids = rng.integers(0, max(2, r.top_k * 2), (tokens, r.top_k))
            fake = _spec.RoutingParams("sort", r.top_k, experts=max(2, r.top_k * 2))
            _, st, pos = _ref.sort(fake, ids, tokens)
            if r.stage == "permute":
                out["sorted_token"][...] = st
            else:
                out["position"][...] = pos
                out["weights"][...] = rng.uniform(0, 1, (tokens, r.top_k))
        return out


OP = MoeRoutingOp()
