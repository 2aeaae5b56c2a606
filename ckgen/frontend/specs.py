"""Syntax tree -> :class:`KernelSpec` list, for any op.

Reads ``op`` (default :data:`ckgen.ops.DEFAULT_OP`) and ``arch``, checks every other parameter name against
the op's keys, expands ``family`` blocks into the cross product of their alternatives, and hands the values
to the op's ``build_params``. Every ill-formed statement is a :class:`SpecError` pointing at the source.

Kernel names are checked here (:mod:`ckgen.frontend.names`): they become C symbols and file names. A family
is counted before it is expanded (at most :data:`MAX_FAMILY` members), and its members' names encode every
value that varies (``alpha in [1, -1]``: ``f_alpha1``, ``f_alpham1``); two members with one name are refused.

Target legality (does gfx908 have bf16_1k? does the tile fit the LDS?) is not checked here: that is the
op's planning passes' job, once per target.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

from ckgen.errors import CkgenError, ErrorList, SourceSpan, SpecError
from ckgen.frontend.names import name_problem
from ckgen.frontend.parser import Block, Module, Stmt, Value, parse
from ckgen.frontend.source import read_spec
from ckgen.frontend.values import did_you_mean, err
from ckgen.ir.op import COMMON_KEYS, BuildContext
from ckgen.ir.registry import DEFAULT_OP, get_op, op_names
from ckgen.ir.spec import KernelSpec

#: most kernels one family may expand to
MAX_FAMILY = 10_000


def _arches(v: Value) -> dict[str, SourceSpan]:
    """Target name -> where it was written (first occurrence)."""
    items = v.data if v.kind == "list" else (v,)
    out: dict[str, SourceSpan] = {}
    for it in items:
        if it.kind != "call" or it.data[1]:
            raise err(f"arch = {it.text}: expected a target name", it.span, "e.g. arch = [gfx942, gfx90a]")
        out.setdefault(it.data[0], it.span)
    return out


def _op_of(stmts: dict[str, Stmt]):
    st = stmts.get("op")
    if st is None:
        return get_op(DEFAULT_OP)
    if st.is_choice:
        raise err("'op in [...]': a family's kernels all have one op", st.span, "write 'op = <name>'")
    v = st.values[0]
    if v.kind != "call" or v.data[1] or v.data[0] not in op_names():
        raise err(f"op = {v.text}: unknown op", v.span,
                  f"{did_you_mean(v.text, op_names())}legal: {', '.join(op_names())}")
    return get_op(v.data[0])


def _collect(block: Block) -> tuple[dict[str, Stmt], list[CkgenError]]:
    """The block's statements by key (duplicates and kernel-level choices are errors)."""
    seen: dict[str, Stmt] = {}
    errors: list[CkgenError] = []
    for st in block.stmts:
        if st.key in seen:
            errors.append(err(f"parameter '{st.key}' is set twice in '{block.name}'", st.span,
                              f"first set at {seen[st.key].span}"))
        elif st.is_choice and block.kind == "kernel":
            errors.append(err(f"'{st.key} in [...]' lists alternatives, which only a family may do", st.span,
                              f"write 'family {block.name} {{ ... }}' or '{st.key} = <value>'"))
        elif st.is_choice and len(st.values) != len({x.text for x in st.values}):
            texts = [x.text for x in st.values]
            again = next(x for i, x in enumerate(st.values) if x.text in texts[:i])
            errors.append(err(f"'{st.key} in [...]' lists {again.text} twice", again.span,
                              "list each alternative once"))
        else:
            seen[st.key] = st
    return seen, errors


def _check_keys(op, stmts: dict[str, Stmt], block: Block) -> list[CkgenError]:
    """An error per parameter ``op`` does not take. When the block names no op and another op of the registry
    takes more of its parameters than the default op does, one error instead, saying so."""
    legal = (*COMMON_KEYS, *op.key_names())
    unknown = [key for key in stmts if key not in legal]
    if not unknown:
        return []
    if "op" not in stmts:
        hint = _op_hint(tuple(stmts), op)
        if hint:
            keys = ", ".join(f"'{k}'" for k in unknown)
            return [err(f"{block.kind} '{block.name}' has no 'op = ...', so op defaults to {op.name}, which has no "
                        f"parameter {keys}", stmts[unknown[0]].span, hint)]
    return [err(f"unknown parameter '{key}' for op {op.name}", stmts[key].span,
                f"{did_you_mean(key, legal)}parameters: {', '.join(legal)}") for key in unknown]


def _op_hint(keys: tuple[str, ...], default) -> str | None:
    """"did you mean `op = X`?" naming the ops of the registry that take the most of ``keys`` (more than
    ``default`` does), or None."""
    def taken(op) -> list[str]:
        legal = set(op.key_names())
        return [k for k in keys if k in legal]

    scores = {name: taken(get_op(name)) for name in op_names()}
    best = max(len(v) for v in scores.values())
    if best <= len(taken(default)):
        return None
    names = [name for name, v in scores.items() if len(v) == best]
    spelled = " or ".join(filter(None, (", ".join(f"`op = {n}`" for n in names[:-1]), f"`op = {names[-1]}`")))
    return f"did you mean {spelled}? ({'they take' if len(names) > 1 else 'it takes'} {', '.join(scores[names[0]])})"


#: how a family member's name spells characters of a value that are not identifier characters
_SPELL = {"-": "m", "+": "", ".": "p"}


def _suffix(key: str, v: Value) -> str:
    """``key`` and ``v`` as identifier text: ``tile128x128x32``, ``epiloguebias_col_gelu``, ``alpham1p5``
    (a minus sign is spelled ``m``, a decimal point ``p`` and a plus sign left out, so that different numbers
    get different names)."""
    text = "".join(ch if ch.isalnum() else _SPELL.get(ch, "_") for ch in v.text.replace("->", " "))
    return f"{key.lower()}{'_'.join(part for part in text.split('_') if part)}"


def _family_size(block: Block, choices: list[tuple[str, Stmt]]) -> None:
    total = math.prod(len(st.values) for _, st in choices)
    if total > MAX_FAMILY:
        counts = ", ".join(f"{k}: {len(st.values)}" for k, st in choices)
        raise err(f"family '{block.name}' expands to {total:,} kernels, over the limit of {MAX_FAMILY:,}",
                  block.span, f"alternatives per parameter: {counts}; split the family or list fewer values")


def _build(name: str, op, values: dict[str, Value], spans: dict[str, SourceSpan], block: Block,
           file_targets: dict[str, SourceSpan], path: str, family: str | None) -> KernelSpec:
    missing = [p for p in op.required() if p not in values]
    if missing:
        raise err(f"kernel '{name}' is missing {', '.join(missing)}", block.span,
                  f"op {op.name} needs {', '.join(op.required())}")
    params = op.build_params({k: v for k, v in values.items() if k not in COMMON_KEYS}, BuildContext(name, block.span))
    arches = _arches(values["arch"]) if "arch" in values else file_targets
    if not arches:
        raise err(f"kernel '{name}' has no target", block.span,
                  "add 'target gfx942' at the top of the file, 'arch = gfx942' in the kernel, or pass --arch")
    arch_spans = {f"arch:{a}": sp for a, sp in arches.items() if sp is not None}
    spec = KernelSpec(name, tuple(arches), op.name, params, source=path, family=family,
                      spans=tuple(sorted({"kernel": block.span, **arch_spans, **spans}.items())),
                      own_arches="arch" in values)
    problem = name_problem(name, tuple(a.name for a in op.abi(spec).args))
    if problem:
        what = f"family '{block.name}' names a kernel '{name}'" if family else f"kernel name '{name}'"
        raise err(f"{what}: {problem}", block.span,
                  "rename the family" if family else "rename the kernel")
    return spec


def lower_module(mod: Module, default_arches: tuple[str, ...] = ()) -> list[KernelSpec]:
    """All kernels of a parsed file (families expanded). Raises ErrorList of every problem found."""
    file_targets: dict[str, SourceSpan | None] = {}
    for decl in mod.targets:
        for n, sp in decl.names:
            file_targets.setdefault(n, sp)
    if not file_targets:
        file_targets = dict.fromkeys(default_arches)
    specs: list[KernelSpec] = []
    errors: list[CkgenError] = []
    names: dict[str, SourceSpan] = {}
    plain: dict[str, int] = {}  # family -> its blocks without alternatives so far
    for block in mod.blocks:
        stmts, errs = _collect(block)
        try:
            op = _op_of(stmts) if not errs else None
        except SpecError as exc:
            errs.append(exc if exc.span else SpecError(exc.message, stmts["op"].values[0].span, exc.hint))
        if not errs:
            errs = _check_keys(op, stmts, block)
        errors.extend(errs)
        if errs:
            continue
        choices = [(k, st) for k, st in stmts.items() if st.is_choice]
        try:
            _family_size(block, choices)
        except SpecError as exc:
            errors.append(exc)
            continue
        fixed = {k: st.values[0] for k, st in stmts.items() if not st.is_choice}
        spans = {k: (st.values[0].span if not st.is_choice else st.span) for k, st in stmts.items()}
        combos = itertools.product(*[[(k, val) for val in st.values] for k, st in choices]) if choices else [()]
        members: dict[str, tuple] = {}
        for combo in combos:
            values, cspans = dict(fixed), dict(spans)
            for k, val in combo:
                values[k] = val
                cspans[k] = val.span
            name = block.name
            if block.kind == "family":
                name = "_".join([block.name] + [_suffix(k, val) for k, val in combo])
                if not combo:  # no alternatives: the block is one member, numbered among its family's such blocks
                    plain[block.name] = plain.get(block.name, 0) + 1
                    name = f"{block.name}_{plain[block.name]}"
                if name in members:
                    first = members[name]
                    differ = [(k, v0, v1) for (k, v0), (_, v1) in zip(first, combo, strict=True) if v0.text != v1.text]
                    a = ", ".join(f"{k} = {v0.text}" for k, v0, _ in differ)
                    b = ", ".join(f"{k} = {v1.text}" for k, _, v1 in differ)
                    errors.append(err(f"family '{block.name}': the members with {a} and with {b} would both be "
                                      f"named '{name}'", differ[0][2].span, "list each value once, in one spelling"))
                    break
                members[name] = combo
            try:
                spec = _build(name, op, values, cspans, block, file_targets, mod.path,
                              block.name if block.kind == "family" else None)
            except CkgenError as exc:
                errors.append(exc)
                break  # one error per block is enough; the others are usually the same
            if name in names:
                errors.append(err(f"kernel name '{name}' is defined twice", block.span, f"first defined at {names[name]}"))
                continue
            names[name] = block.span
            specs.append(spec)
    if errors:
        raise errors[0] if len(errors) == 1 else ErrorList(errors)
    return specs


def load_text(text: str, path: str = "<string>", default_arches: tuple[str, ...] = ()) -> list[KernelSpec]:
    return lower_module(parse(text, path), default_arches)


def load_file(path: str | Path, default_arches: tuple[str, ...] = ()) -> list[KernelSpec]:
    """Read, parse and lower one .ck file. A path that is not a readable .ck text file is a CkgenError too."""
    return load_text(read_spec(path), str(path), default_arches)
