"""The row widths bench/rowops.py measures: open models' hidden, intermediate and vocabulary sizes
(bench/shapes/hidden_sizes.txt, each with its source model), the rows each is timed at, and the generated
kernels (bench/rowops_widths_nv.ck: one kernel per op and width, planned by ckgen from max_cols alone, so that
the figure of record is the planner's own choice at that width). No torch: bench/nv_prebuild.py and the tests
import it.

  python bench/rowops_shapes.py --write    # regenerate bench/rowops_widths_nv.ck from the shapes file
  python bench/rowops_shapes.py --check    # exit 1 when the .ck file is out of date
  python bench/rowops_shapes.py --list [--quick]   # the shapes bench/rowops.py times
  python bench/rowops_shapes.py --given 2880,5632   # write bench/_build/rowops_given_nv.ck (bench/rowops.py --widths)

Shapes: a hidden or intermediate width W is timed at the rows that make at least 64 MiB of traffic (bf16 x read
and y written: rows >= 2^24 / W, rounded up to a multiple of 128), with softmax, layer norm, RMS norm and add + RMS
norm; a vocabulary width at 1024 rows with softmax; decode rows (1, 16, 64) at every hidden width with all four.
``--quick``: QUICK's widths only. Widths given on the command line (``bench/rowops.py --widths``: sizes of models not
in the shapes file, to judge a planner rule on widths it was not fitted on) get the same kernels in a file of their
own, GIVEN_FILE (not tracked: bench/_build), timed as the kind ``given`` at the same rows.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHAPES_FILE = HERE / "shapes" / "hidden_sizes.txt"
SPEC_FILE = HERE / "rowops_widths_nv.ck"
GIVEN_FILE = HERE / "_build" / "rowops_given_nv.ck"
KINDS = ("hidden", "intermediate", "vocab")
OPS = ("softmax", "layernorm", "rmsnorm", "addrmsnorm")
#: the DSL body of each op's kernel (bf16, as bench/rowops.py's torch ops)
OP_BODY = {"softmax": "op = softmax x = bf16 scale = 0.7", "layernorm": "op = layernorm x = bf16",
           "rmsnorm": "op = rmsnorm x = bf16", "addrmsnorm": "op = rmsnorm x = bf16 residual = true"}
OPS_OF = {"hidden": OPS, "intermediate": OPS, "vocab": ("softmax",), "decode": OPS}
TRAFFIC_ELEMENTS = 1 << 24   # 64 MiB of bf16 x read + y written
VOCAB_ROWS = 1024
DECODE_ROWS = (1, 16, 64)
#: --quick: widths of each kind (powers of two and not, from several models), and decode rows x widths
QUICK = {"hidden": (2304, 3072, 4096, 5120, 7168), "intermediate": (11008, 14336, 18944),
         "vocab": (32000, 128256), "decode": ((1, 4096), (64, 8192))}


@dataclass(frozen=True)
class Width:
    kind: str    # hidden | intermediate | vocab
    cols: int
    model: str   # the source model (and what the width is, when not the kind's config field)


@dataclass(frozen=True)
class Shape:
    kind: str    # hidden | intermediate | vocab | decode
    rows: int
    cols: int
    ops: tuple[str, ...]
    models: tuple[str, ...]


def read(path: Path = SHAPES_FILE) -> list[Width]:
    """The widths of ``path`` (``kind cols model...`` per line, ``#`` comments)."""
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        parts = text.split(None, 2)
        if len(parts) < 3 or parts[0] not in KINDS or not parts[1].isdigit() or int(parts[1]) < 1:
            raise ValueError(f"{path}:{n}: expected 'kind cols model' with kind one of {', '.join(KINDS)}: {line!r}")
        out.append(Width(parts[0], int(parts[1]), parts[2]))
    return out


def rows_for(cols: int) -> int:
    """Rows of at least 64 MiB of bf16 traffic (x read, y written), a multiple of 128."""
    rows = -(-TRAFFIC_ELEMENTS // cols)
    return -(-rows // 128) * 128


def shapes(widths: list[Width], quick: bool = False, kinds: tuple[str, ...] = (*KINDS, "decode")) -> list[Shape]:
    """What bench/rowops.py times: every distinct (kind, width), its rows and ops, and the models that use it."""
    models: dict[tuple[str, int], list[str]] = {}
    for w in widths:
        models.setdefault((w.kind, w.cols), []).append(w.model)
    out = []
    for (kind, cols), ms in sorted(models.items(), key=lambda kv: (KINDS.index(kv[0][0]), kv[0][1])):
        if kind not in kinds or (quick and cols not in QUICK[kind]):
            continue
        rows = VOCAB_ROWS if kind == "vocab" else rows_for(cols)
        out.append(Shape(kind, rows, cols, OPS_OF[kind], tuple(ms)))
    if "decode" in kinds:
        for (kind, cols), ms in sorted(models.items()):
            if kind != "hidden":
                continue
            for rows in DECODE_ROWS:
                if not quick or (rows, cols) in QUICK["decode"]:
                    out.append(Shape("decode", rows, cols, OPS, tuple(ms)))
    return out


def kernel_name(op: str, cols: int) -> str:
    return f"{op}_w{cols}"


def spec_text(widths: list[Width]) -> str:
    """bench/rowops_widths_nv.ck: one kernel per (op, width) the shapes use, planned by ckgen for sm_90 from
    max_cols alone (nothing else given: threads, vectors, rows per workgroup and the pipeline are the planner's)."""
    need = {(op, s.cols) for s in shapes(widths) for op in s.ops}
    header = ["// Generated by bench/rowops_shapes.py --write from bench/shapes/hidden_sizes.txt: do not edit.",
              "// One kernel per op and row width of the open models listed there, planned by ckgen from max_cols",
              "// alone (bench/rowops.py times them as the planner's choice at each width; bench/nv_prebuild.py",
              "// builds them into one library)."]
    return _kernels_text(need, header)


def given_shapes(cols: list[int]) -> list[Shape]:
    """Widths given on the command line, each at the rows of >= 64 MiB of traffic with every op (kind ``given``)."""
    return [Shape("given", rows_for(c), c, OPS, ()) for c in sorted(set(cols))]


def write_given(cols: list[int]) -> Path:
    """GIVEN_FILE for ``cols`` (the same kernels as spec_text's, planned from max_cols alone), rewritten only when
    its text changes (a build cache keyed on its path and text then stays valid)."""
    text = _kernels_text({(op, s.cols) for s in given_shapes(cols) for op in s.ops},
                         ["// Generated by bench/rowops_shapes.py for the widths given to bench/rowops.py --widths."])
    from ckgen.files import atomic_write

    if not GIVEN_FILE.exists() or GIVEN_FILE.read_text() != text:
        atomic_write(GIVEN_FILE, text)
    return GIVEN_FILE


def parse_widths(text: str) -> list[int]:
    """'2880,5632' -> [2880, 5632]; ValueError naming the bad item."""
    out = []
    for item in (t.strip() for t in text.split(",")):
        if not item.isdigit() or int(item) < 1:
            raise ValueError(f"--widths: {item!r} is not a positive column count (e.g. --widths 2880,5632)")
        out.append(int(item))
    return out


def _kernels_text(need: set[tuple[str, int]], header: list[str]) -> str:
    lines = [*header, "target sm_90", ""]
    lines += [f"kernel {kernel_name(op, cols):20s} {{ {OP_BODY[op]}  max_cols = {cols} }}"
              for op, cols in sorted(need, key=lambda t: (OPS.index(t[0]), t[1]))]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true", help="regenerate bench/rowops_widths_nv.ck")
    g.add_argument("--check", action="store_true", help="exit 1 when bench/rowops_widths_nv.ck is out of date")
    g.add_argument("--list", action="store_true", help="print the shapes bench/rowops.py times")
    g.add_argument("--given", metavar="W,W,...", help="write bench/_build/rowops_given_nv.ck for these widths")
    ap.add_argument("--quick", action="store_true", help="with --list: the --quick subset")
    a = ap.parse_args(argv)
    if a.given:
        try:
            print(f"wrote {write_given(parse_widths(a.given))}")
        except ValueError as exc:
            print(f"rowops_shapes.py: {exc}", file=sys.stderr)
            return 2
        return 0
    widths = read()
    text = spec_text(widths)
    if a.write:
        SPEC_FILE.write_text(text)
        print(f"wrote {SPEC_FILE} ({text.count('kernel ')} kernels)")
        return 0
    if a.check:
        ok = SPEC_FILE.exists() and SPEC_FILE.read_text() == text
        print(f"{SPEC_FILE.name}: {'up to date' if ok else 'out of date: run bench/rowops_shapes.py --write'}")
        return 0 if ok else 1
    for s in shapes(widths, a.quick):
        print(f"{s.kind:12s} {s.rows:6d} x {s.cols:<6d} {','.join(s.ops):40s} {', '.join(s.models)}")
    return 0



def before(plans) -> list:
    """Each plan the newest weight rule changed, as it was before that rule, named ``<kernel>_before``: ``--before``
    times them beside the planned kernel of their width. The weight-ahead rule (WEIGHT_AHEAD,
    ckgen/ops/rowops/registers.py): the planner's plan with that rule off. Else the weighted single-pass rule
    (WEIGHTED_SINGLE_PASS_REGISTERS: weight and bias a vector at a time, registers bounded): the whole tile's weight
    and bias, no bound, no few-rows entry."""
    from ckgen.lower import plan_kernel
    from ckgen.ops.rowops.plan import WEIGHTS_A_VECTOR_AT_A_TIME
    from ckgen.ops.rowops.registers import WEIGHT_AHEAD, estimate_registers

    out = []
    for p in plans:
        b = p.body
        if b.weight_ahead:
            saved = dict(WEIGHT_AHEAD)
            WEIGHT_AHEAD.update(dict.fromkeys(saved))  # (every wave size: no rule)
            try:
                q = plan_kernel(p.spec, p.target)
            finally:
                WEIGHT_AHEAD.update(saved)
        elif any(why.startswith(WEIGHTS_A_VECTOR_AT_A_TIME) for why in b.why):
            est = estimate_registers(p.spec.params.row, b.vec, b.reg_vecs, b.looped, b.wave_size, b.threads_per_row)
            q = dataclasses.replace(p, entries=p.entries[:1], launch=dataclasses.replace(p.launch, prelaunch=None),
                                    body=dataclasses.replace(b, weight_vecs=0, workgroups_per_cu=0, few_groups=0,
                                                             registers_estimate=est))
        else:
            continue
        name = p.name + "_before"
        entries = (dataclasses.replace(q.entries[0], name=name),
                   *(dataclasses.replace(e, name=f"{name}_few", part_of=name) for e in q.entries[1:]))
        out.append(dataclasses.replace(q, spec=dataclasses.replace(q.spec, name=name), entries=entries))
    return out


if __name__ == "__main__":
    sys.exit(main())
