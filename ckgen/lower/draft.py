"""The working state every op's passes share: the spec, the target and how to refuse.

An op's draft subclasses :class:`Draft` with the fields its passes fill; its ``plan`` freezes it into a
:class:`~ckgen.ir.plan.KernelPlan`. Passes raise ``draft.fail(...)``: a :class:`ValidationError` naming
the parameter, its value, what is legal and why, pointing at where the parameter was written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ckgen.errors import ValidationError
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import Target


@dataclass
class Draft:
    spec: KernelSpec
    target: Target

    def fail(self, param: str, value: object, legal: str, reason: str) -> ValidationError:
        return ValidationError(param, value, legal, reason, span=self.spec.span(param),
                               kernel=self.spec.name, arch=self.target.name)


def run_passes(passes: Sequence[Callable[[Draft], None]], draft: Draft) -> Draft:
    """Run ``passes`` in order on ``draft``; the first illegal decision raises ValidationError."""
    for p in passes:
        p(draft)
    return draft
