"""Syntax tree -> :class:`KernelSpec` list, for any op.

Reads ``op`` (default :data:`ckgen.ops.DEFAULT_OP`) and ``arch``, checks every other parameter name against
the op's keys, expands ``family`` blocks into the cross product of their alternatives, and hands the values
to the op's ``build_params``. Every ill-formed statement is a :class:`SpecError` pointing at the source.

Target legality (does gfx908 have bf16_1k? does the tile fit the LDS?) is not checked here: that is the
op's planning passes' job, once per target.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

from ckgen.errors import CkgenError, ErrorList, SourceSpan, SpecError
from ckgen.frontend.parser import Block, Module, Stmt, Value, parse
from ckgen.frontend.values import did_you_mean, err
from ckgen.ir.spec import KernelSpec
from ckgen.ops import DEFAULT_OP, get_op, op_names
from ckgen.ops.base import COMMON_KEYS, BuildContext


def _arches(v: Value) -> tuple[str, ...]:
    items = v.data if v.kind == "list" else (v,)
    out = []
    for it in items:
        if it.kind != "call" or it.data[1]:
            raise err(f"arch = {v.text}: expected target names", v.span, "e.g. arch = [gfx942, gfx90a]")
        out.append(it.data[0])
    return tuple(dict.fromkeys(out))


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
            errors.append(err(f"'{st.key} in [...]' lists a value twice", st.span))
        else:
            seen[st.key] = st
    return seen, errors


def _check_keys(op, stmts: dict[str, Stmt]) -> list[CkgenError]:
    legal = (*COMMON_KEYS, *op.key_names())
    errors: list[CkgenError] = []
    for key, st in stmts.items():
        if key not in legal:
            errors.append(err(f"unknown parameter '{key}' for op {op.name}", st.span,
                              f"{did_you_mean(key, legal)}parameters: {', '.join(legal)}"))
    return errors


#: the most kernels one family block may expand to (checked before anything is expanded)
MAX_FAMILY_MEMBERS = 10_000


def check_family_size(block: Block, choices: list[tuple[str, Stmt]]) -> None:
    """Refuse a family whose cross product exceeds :data:`MAX_FAMILY_MEMBERS`, naming the product, before it is
    expanded (a few alternatives per key multiply into millions of kernels)."""
    counts = [len(st.values) for _, st in choices]
    product = math.prod(counts)
    if product > MAX_FAMILY_MEMBERS:
        terms = " x ".join(f"{n} {k}" for n, (k, _) in zip(counts, choices, strict=True))
        raise err(f"family '{block.name}' expands to {product} kernels ({terms}), more than {MAX_FAMILY_MEMBERS}",
                  block.span, "list fewer alternatives, or split the family into several blocks")


def _suffix(key: str, v: Value) -> str:
    text = "".join(ch if ch.isalnum() else "_" for ch in v.text)
    return f"{key.lower()}{'_'.join(part for part in text.split('_') if part)}"


def _build(name: str, op, values: dict[str, Value], spans: dict[str, SourceSpan], block: Block,
           file_targets: tuple[str, ...], path: str, family: str | None) -> KernelSpec:
    missing = [p for p in op.required() if p not in values]
    if missing:
        raise err(f"kernel '{name}' is missing {', '.join(missing)}", block.span,
                  f"op {op.name} needs {', '.join(op.required())}")
    params = op.build_params({k: v for k, v in values.items() if k not in COMMON_KEYS}, BuildContext(name, block.span))
    arches = _arches(values["arch"]) if "arch" in values else file_targets
    if not arches:
        raise err(f"kernel '{name}' has no target", block.span,
                  "add 'target gfx942' at the top of the file, 'arch = gfx942' in the kernel, or pass --arch")
    return KernelSpec(name, arches, op.name, params, source=path, family=family,
                      spans=tuple(sorted({"kernel": block.span, **spans}.items())))


def lower_module(mod: Module, default_arches: tuple[str, ...] = ()) -> list[KernelSpec]:
    """All kernels of a parsed file (families expanded). Raises ErrorList of every problem found."""
    file_targets = tuple(dict.fromkeys(n for d in mod.targets for n, _ in d.names)) or tuple(default_arches)
    specs: list[KernelSpec] = []
    errors: list[CkgenError] = []
    names: dict[str, SourceSpan] = {}
    for block in mod.blocks:
        stmts, errs = _collect(block)
        try:
            op = _op_of(stmts) if not errs else None
        except SpecError as exc:
            errs.append(exc if exc.span else SpecError(exc.message, stmts["op"].values[0].span, exc.hint))
        if not errs:
            errs = _check_keys(op, stmts)
        errors.extend(errs)
        if errs:
            continue
        choices = [(k, st) for k, st in stmts.items() if st.is_choice]
        try:
            check_family_size(block, choices)
        except SpecError as exc:
            errors.append(exc)
            continue
        fixed = {k: st.values[0] for k, st in stmts.items() if not st.is_choice}
        spans = {k: (st.values[0].span if not st.is_choice else st.span) for k, st in stmts.items()}
        combos = itertools.product(*[[(k, val) for val in st.values] for k, st in choices]) if choices else [()]
        for combo in combos:
            values, cspans = dict(fixed), dict(spans)
            for k, val in combo:
                values[k] = val
                cspans[k] = val.span
            name = block.name
            if block.kind == "family":
                name = "_".join([block.name] + [_suffix(k, val) for k, val in combo])
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
    """Read, parse and lower one .ck file. An unreadable file is a CkgenError too."""
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CkgenError(f"cannot read {p}: {exc.strerror if isinstance(exc, OSError) else 'not UTF-8 text'}") from None
    return load_text(text, str(p), default_arches)
