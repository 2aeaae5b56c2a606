"""Syntax tree → :class:`KernelSpec` list. Gives meaning to names and values, fills defaults,
expands ``family`` blocks into the cross product of their alternatives, and reports every
ill-formed statement as a :class:`SpecError` pointing at the source.

Target legality (does gfx908 have bf16_1k? does the tile fit the LDS?) is not checked here:
that is the lowering passes' job, once per target.
"""

from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass
from pathlib import Path

from ckgen.errors import CkgenError, ErrorList, SourceSpan, SpecError
from ckgen.frontend.parser import Block, Module, Stmt, Value, parse
from ckgen.ir.spec import EpilogueOp, GemmSpec, KernelSpec, TensorSpec, TileConfig
from ckgen.ir.types import ALL_DTYPES, DType, Layout

OPS = ("gemm",)
PARAMS = ("op", "arch", "A", "B", "C", "acc", "alpha", "beta", "tile", "waves", "instr",
          "lds_buffers", "prefetch", "vec_a", "vec_b", "vec_c", "epilogue")
REQUIRED = ("A", "B", "C", "tile", "waves")
DEFAULT_ACC = {DType.F16: DType.F32, DType.BF16: DType.F32, DType.F32: DType.F32, DType.I8: DType.I32,
               DType.FP8: DType.F32, DType.BF8: DType.F32, DType.F64: DType.F64}
EPILOGUE_WORDS = ("bias(row)", "bias(col)", "relu", "gelu", "silu", "cast(<C dtype>)", "none")


def _err(msg: str, span: SourceSpan | None, hint: str | None = None) -> SpecError:
    return SpecError(msg, span, hint)


def _did_you_mean(word: str, options) -> str:
    close = difflib.get_close_matches(word, list(options), n=1)
    return f"did you mean '{close[0]}'? " if close else ""


def _dtype(v: Value, param: str) -> DType:
    if v.kind == "call" and not v.data[1]:
        try:
            return DType.parse(v.data[0])
        except ValueError:
            pass
    raise _err(f"{param} = {v.text}: not a dtype", v.span, f"{_did_you_mean(v.text, ALL_DTYPES)}legal: {', '.join(ALL_DTYPES)}")


def _tensor(v: Value, param: str) -> TensorSpec:
    if v.kind == "tensor":
        d = _dtype(Value("call", (v.data[0], ()), v.span, v.data[0]), param)
        return TensorSpec(d, Layout.parse(v.data[1]))
    if v.kind == "call" and not v.data[1]:
        return TensorSpec(_dtype(v, param), Layout.ROW)
    raise _err(f"{param} = {v.text}: expected '<dtype> row|col'", v.span, f"e.g. {param} = f16 row")


def _dims(v: Value, param: str, n: int) -> tuple[int, ...]:
    if v.kind != "dims" or len(v.data) != n:
        shape = "x".join(["N"] * n)
        raise _err(f"{param} = {v.text}: expected {shape}", v.span, f"e.g. {param} = {'x'.join(['32'] * n)}")
    if any(d <= 0 for d in v.data):
        raise _err(f"{param} = {v.text}: every extent must be positive", v.span)
    return v.data


def _int(v: Value, param: str, lo: int, hi: int) -> int:
    if v.kind != "number" or v.data != int(v.data) or not lo <= v.data <= hi:
        raise _err(f"{param} = {v.text}: expected an integer in {lo}..{hi}", v.span)
    return int(v.data)


def _float(v: Value, param: str) -> float:
    if v.kind != "number":
        raise _err(f"{param} = {v.text}: expected a number", v.span, f"e.g. {param} = 1.0")
    return float(v.data)


def _epilogue(v: Value, c_dtype: DType) -> tuple[EpilogueOp, ...]:
    calls = v.data if v.kind == "chain" else (v,)
    if v.kind not in ("chain", "call"):
        raise _err(f"epilogue = {v.text}: expected a chain like bias(col) -> gelu", v.span,
                   f"ops: {', '.join(EPILOGUE_WORDS)}")
    ops: list[EpilogueOp] = []
    for i, call in enumerate(calls):
        name, args = call.data
        if name == "none" and not args and len(calls) == 1:
            return ()
        if name == "bias":
            if len(args) != 1 or args[0] not in ("row", "col"):
                raise _err(f"epilogue op {call.text}: bias takes one axis", call.span,
                           "bias(row): one value per row of C (length M); bias(col): one per column (length N)")
            if any(o.kind == "bias" for o in ops):
                raise _err("epilogue: only one bias is allowed", call.span)
            ops.append(EpilogueOp("bias", args[0]))
        elif name in ("relu", "gelu", "silu"):
            if args:
                raise _err(f"epilogue op {call.text}: {name} takes no arguments", call.span)
            ops.append(EpilogueOp(name))
        elif name == "cast":
            if i != len(calls) - 1 or len(args) != 1:
                raise _err(f"epilogue op {call.text}: cast(<dtype>) may only end the chain", call.span)
            if args[0] != c_dtype.value:
                raise _err(f"epilogue op {call.text}: the output cast must match C's dtype ({c_dtype.value})",
                           call.span, f"write cast({c_dtype.value}) or change C")
        else:
            raise _err(f"epilogue op '{name}' is unknown", call.span,
                       f"{_did_you_mean(name, ('bias', 'relu', 'gelu', 'silu', 'cast'))}ops: {', '.join(EPILOGUE_WORDS)}")
    return tuple(ops)


def _arches(v: Value, file_targets: tuple[str, ...]) -> tuple[str, ...]:
    items = v.data if v.kind == "list" else (v,)
    out = []
    for it in items:
        if it.kind != "call" or it.data[1]:
            raise _err(f"arch = {v.text}: expected target names", v.span, "e.g. arch = [gfx942, gfx90a]")
        out.append(it.data[0])
    return tuple(dict.fromkeys(out))


@dataclass
class _Params:
    values: dict[str, Value]
    spans: dict[str, SourceSpan]


def _build(name: str, params: _Params, block: Block, file_targets: tuple[str, ...], path: str,
           family: str | None) -> KernelSpec:
    v, spans = params.values, params.spans
    missing = [p for p in REQUIRED if p not in v]
    if missing:
        raise _err(f"kernel '{name}' is missing {', '.join(missing)}", block.span,
                   "every kernel needs A, B, C, tile and waves")
    if "op" in v and not (v["op"].kind == "call" and v["op"].data == ("gemm", ())):
        raise _err(f"op = {v['op'].text}: unknown op", v["op"].span, f"legal: {', '.join(OPS)}")
    a, b, c = _tensor(v["A"], "A"), _tensor(v["B"], "B"), _tensor(v["C"], "C")
    acc = _dtype(v["acc"], "acc") if "acc" in v else DEFAULT_ACC[a.dtype]
    gemm = GemmSpec(a, b, c, acc,
                    alpha=_float(v["alpha"], "alpha") if "alpha" in v else 1.0,
                    beta=_float(v["beta"], "beta") if "beta" in v else 0.0,
                    epilogue=_epilogue(v["epilogue"], c.dtype) if "epilogue" in v else ())
    instr = None
    if "instr" in v and not (v["instr"].kind == "call" and v["instr"].data == ("auto", ())):
        instr = _dims(v["instr"], "instr", 3)
    cfg = TileConfig(
        tile=_dims(v["tile"], "tile", 3), waves=_dims(v["waves"], "waves", 2), instr=instr,
        lds_buffers=_int(v["lds_buffers"], "lds_buffers", 1, 8) if "lds_buffers" in v else 2,
        prefetch=_int(v["prefetch"], "prefetch", 0, 8) if "prefetch" in v else 1,
        vec_a=_int(v["vec_a"], "vec_a", 1, 64) if "vec_a" in v else None,
        vec_b=_int(v["vec_b"], "vec_b", 1, 64) if "vec_b" in v else None,
        vec_c=_int(v["vec_c"], "vec_c", 1, 64) if "vec_c" in v else None,
    )
    arches = _arches(v["arch"], file_targets) if "arch" in v else file_targets
    if not arches:
        raise _err(f"kernel '{name}' has no target", block.span,
                   "add 'target gfx942' at the top of the file, 'arch = gfx942' in the kernel, or pass --arch")
    all_spans = {"kernel": block.span, **spans}
    return KernelSpec(name, arches, gemm, cfg, source=path, family=family,
                      spans=tuple(sorted(all_spans.items())))


def _collect(block: Block) -> tuple[dict[str, Stmt], list[CkgenError]]:
    seen: dict[str, Stmt] = {}
    errors: list[CkgenError] = []
    for st in block.stmts:
        if st.key not in PARAMS:
            errors.append(_err(f"unknown parameter '{st.key}'", st.span,
                               f"{_did_you_mean(st.key, PARAMS)}parameters: {', '.join(PARAMS)}"))
        elif st.key in seen:
            errors.append(_err(f"parameter '{st.key}' is set twice in '{block.name}'", st.span,
                               f"first set at {seen[st.key].span}"))
        elif st.is_choice and block.kind == "kernel":
            errors.append(_err(f"'{st.key} in [...]' lists alternatives, which only a family may do", st.span,
                               f"write 'family {block.name} {{ ... }}' or '{st.key} = <value>'"))
        elif st.is_choice and len(st.values) != len(set(x.text for x in st.values)):
            errors.append(_err(f"'{st.key} in [...]' lists a value twice", st.span))
        else:
            seen[st.key] = st
    return seen, errors


def _suffix(key: str, v: Value) -> str:
    text = "".join(ch if ch.isalnum() else "_" for ch in v.text)
    return f"{key.lower()}{'_'.join(part for part in text.split('_') if part)}"


def lower_module(mod: Module, default_arches: tuple[str, ...] = ()) -> list[KernelSpec]:
    """All kernels of a parsed file (families expanded). Raises ErrorList of every problem found."""
    file_targets = tuple(dict.fromkeys(n for d in mod.targets for n, _ in d.names)) or tuple(default_arches)
    specs: list[KernelSpec] = []
    errors: list[CkgenError] = []
    names: dict[str, SourceSpan] = {}
    for block in mod.blocks:
        stmts, errs = _collect(block)
        errors.extend(errs)
        if errs:
            continue
        choices = [(k, st) for k, st in stmts.items() if st.is_choice]
        fixed = {k: st.values[0] for k, st in stmts.items() if not st.is_choice}
        spans = {k: (st.values[0].span if not st.is_choice else st.span) for k, st in stmts.items()}
        combos = itertools.product(*[[(k, val) for val in st.values] for k, st in choices]) if choices else [()]
        for combo in combos:
            values = dict(fixed)
            cspans = dict(spans)
            for k, val in combo:
                values[k] = val
                cspans[k] = val.span
            name = block.name
            if block.kind == "family":
                name = "_".join([block.name] + [_suffix(k, val) for k, val in combo])
            try:
                spec = _build(name, _Params(values, cspans), block, file_targets, mod.path,
                              block.name if block.kind == "family" else None)
            except CkgenError as exc:
                errors.append(exc)
                break  # one error per block is enough; the others are usually the same
            if name in names:
                errors.append(_err(f"kernel name '{name}' is defined twice", block.span, f"first defined at {names[name]}"))
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
