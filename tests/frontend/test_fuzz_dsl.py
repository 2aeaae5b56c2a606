"""A few seconds of tools/fuzz_dsl.py (the token-level fuzz of the DSL and the ``ckgen`` command) on a fixed seed:
no traceback, no error without its place, no file left by a failed compile."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _fuzz():
    spec = importlib.util.spec_from_file_location("fuzz_dsl", ROOT / "tools" / "fuzz_dsl.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_dsl"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_mutations_are_deterministic_and_all_used():
    fz = _fuzz()
    corpus = fz.Corpus.load()
    one = [fz.mutate(random.Random(7), corpus) for _ in range(3)]
    two = [fz.mutate(random.Random(7), corpus) for _ in range(3)]
    assert one == two
    rng = random.Random(0)
    for name, m in fz.MUTATIONS.items():
        assert any(m(rng, fz.Text.of(s), corpus) != s for _, s in corpus.texts), name


def test_two_hundred_mutated_texts_give_no_failure():
    fz = _fuzz()
    rep = fz.fuzz(seed=1, budget=60, count=200)
    assert rep.texts == 200 and rep.runs >= 800
    assert rep.kinds.get("error", 0) > 100 and rep.kinds.get("ok", 0) > 10
    assert not rep.failures, "\n".join(f"{f.kind}: ckgen {' '.join(f.command)}: {f.signature}\n{f.text[:300]!r}"
                                       for f in rep.failures.values())
