"""A property-based fuzz of the prepared call (ckgen.runtime.prepared; issue 22: "bad input to a prepared call falls
back to the full checks or raises a CkgenError naming the argument; never a wrong launch").

Per kernel (a GEMM with a bias, a GEMM with a rotary epilogue, RMS norm with a residual, two element-wise ops,
attention; emu target, numpy arrays), hypothesis draws sizes and a sequence of calls to one Kernel object: a good
call first (it prepares the signature), then steps that are a good call again (new values, same signature: the
prepared path) or a perturbed one (another dtype or shape, 0-sized and mismatched dims, non-contiguous and
transposed views, negative strides, a view off by one element, outputs aliasing inputs or each other, read-only or
stride-0 outputs, wrong numbers and kinds of arguments, lists and scalars for arrays, sizes and scalars of the
wrong type or value, out-of-range integer inputs, explicit None), each made twice (a bad signature must not be
remembered), then the first good call's signature again. Every call is checked against:

1. the full path: the same call on a Kernel with an empty prepared cache gives bit for bit the same outputs, or
   the same CkgenError (so the prepared path never accepts what the full checks refuse, nor launches otherwise);
2. the op's float64 reference (``op.reference`` on the arrays the full binding sees) within the op's tolerance,
   for every call that succeeds (a good call after any bad ones included: the cache is not poisoned);
3. a refusal is a CkgenError (any other exception type fails the test) whose message names the argument the step
   perturbed, and it leaves every array of the call as it was (an output pre-filled with 0xFF bytes included).

The plain tests at the end are the regressions of what the fuzz found.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ckgen.backends import emu
from ckgen.errors import CkgenError
from ckgen.ir.abi import ArgKind, dim_parts
from ckgen.ir.arrays import to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.registry import get_op
from ckgen.runtime import api
from ckgen.runtime.binding import positional

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")

SRC = """target gfx942
kernel fz_gemm { A = f16 row B = f16 col C = f32 row tile = 32x32x16 waves = 1x1 instr = 16x16x16
                 epilogue = bias(col) }
kernel fz_rope { A = f16 row B = f16 col C = f32 row tile = 32x32x16 waves = 1x1 instr = 16x16x16 rope = gptj(16) }
kernel fz_rms { op = rmsnorm x = f32 residual = true max_cols = 256 }
kernel fz_add { op = elementwise a = f32 b = f32 expr = add(a, b) }
kernel fz_bias { op = elementwise a = bf16 b = bf16 broadcast = b expr = add(a, b) -> gelu }
kernel fz_attn { op = attention dtype = f16 head_dim = 64 mask = causal }
"""


def _rope_sizes(m: int, heads: int, k: int, rot: int) -> dict:
    return {"M": m, "N": 16 * heads, "K": k, "rope_cols": 16 * min(rot, heads), "rope_positions": 32}


def _attn_sizes(batch: int, kv: int, group: int, sq: int, sk: int) -> dict:
    return {"batch": batch, "heads": kv * group, "heads_kv": kv, "seqlen_q": sq, "seqlen_k": sk}


_i = st.integers
#: kernel -> hypothesis strategy of good sizes (0-sized extents included where the op allows them)
SIZES = {
    "fz_gemm": st.fixed_dictionaries({"M": _i(0, 40), "N": _i(1, 40), "K": _i(0, 24)}),
    "fz_rope": st.builds(_rope_sizes, _i(1, 24), _i(1, 3), _i(1, 20), _i(0, 3)),
    "fz_rms": st.fixed_dictionaries({"rows": _i(0, 6), "cols": _i(1, 256)}),
    "fz_add": st.fixed_dictionaries({"rows": _i(0, 6), "cols": _i(0, 70)}),
    "fz_bias": st.fixed_dictionaries({"rows": _i(1, 6), "cols": _i(1, 70)}),
    "fz_attn": st.builds(_attn_sizes, _i(1, 2), _i(1, 2), _i(1, 2), _i(1, 10), _i(1, 10)),
}
#: kernel -> sizes no array gives: passed by name on every call
FREE = {"fz_rope": ("rope_cols",)}
#: kernel -> [(scalar, another legal value)] (a call with another value is checked against the full path only)
SCALARS = {"fz_rms": [("eps", 0.25)], "fz_attn": [("scale", 0.5), ("window_left", 3), ("window_right", 2)]}


@pytest.fixture(scope="module")
def kernels() -> dict[str, api.Kernel]:
    plans = [api.plan_for(SRC, name, "amd", "gfx942") for name in SIZES]
    return api.emu_kernels(plans, "prepared_fuzz")


@dataclass
class Ctx:
    """One example: its kernel, sizes, whether good calls pass their outputs, and the rng of the values."""

    kern: api.Kernel
    sizes: dict
    outs_given: bool
    rng: np.random.Generator

    @property
    def abi(self):
        return self.kern.abi

    def good(self) -> dict:
        """A fresh good set of arrays by ABI name (new values; outputs 0xFF bytes, or left out)."""
        arrays = get_op(self.kern.plan.op).random_inputs(self.kern.plan, self.sizes, self.rng)
        return {n: v for n, v in arrays.items()
                if v is not None and (self.outs_given or self.abi[n].role == "in")}

    def free(self) -> dict:
        return {n: self.sizes[n] for n in FREE.get(self.kern.name, ())}


@dataclass
class Call:
    """One call: ``pos`` and ``named`` as passed; ``names``: what a refusal must name one of (empty: a good call,
    which must succeed); ``ref``: whether a success is checked against the float64 reference."""

    pos: list
    named: dict
    names: tuple = ()
    ref: bool = True
    label: str = ""


def _form(ctx: Ctx, arrays: dict, names: tuple = (), label: str = "good", ref: bool = True, **extra) -> Call:
    """The call of ``arrays`` by ABI name: inputs positionally in ABI order (up to the first missing one), the rest,
    the free sizes and ``extra`` by name."""
    pos, named = [], {}
    order = positional(ctx.abi)
    for n in order:
        if n not in arrays:
            break
        pos.append(arrays[n])
    named.update({n: v for n, v in arrays.items() if n not in order[:len(pos)]})
    named.update(ctx.free())
    named.update(extra)
    return Call(pos, named, names, ref, label)


def _pick(rng: np.random.Generator, items: list):
    return items[int(rng.integers(len(items)))]


def _arrays(arrays: dict) -> list[str]:
    return [n for n, v in arrays.items() if isinstance(v, np.ndarray)]


def _outputs(ctx: Ctx) -> list[str]:
    return [a.name for a in ctx.abi.tensors if a.writes and not a.unused]


def _with_outputs(ctx: Ctx, arrays: dict) -> dict:
    """``arrays`` with every output given (0xFF bytes), whatever the example's good calls do."""
    full = get_op(ctx.kern.plan.op).random_inputs(ctx.kern.plan, ctx.sizes, ctx.rng)
    return {**{n: full[n] for n in _outputs(ctx)}, **arrays}


def _placed(raw: np.ndarray, start: int, like: np.ndarray) -> np.ndarray:
    """A view of ``raw`` from byte ``start`` with ``like``'s dtype, shape and strides (``like`` dense, in any memory
    order)."""
    flat = raw[start:start + like.nbytes].view(like.dtype)
    return np.lib.stride_tricks.as_strided(flat, like.shape, like.strides, writeable=True)


def _dim_names(ctx: Ctx, n: str) -> list[str]:
    """The sizes tensor ``n``'s dims name (a refusal of its shape may name one of them instead of ``n``)."""
    return [d for d in (dim_parts(d)[0] for d in ctx.abi[n].dims) if d is not None]


def _relocated(x: np.ndarray, byte_offset: int) -> np.ndarray:
    """A copy of dense ``x`` (same strides) at ``byte_offset`` bytes past a 64-byte aligned address."""
    raw = np.empty(x.nbytes + byte_offset + 64, np.uint8)
    out = _placed(raw, -raw.__array_interface__["data"][0] % 64 + byte_offset, x)
    out[...] = x
    return out


def _spread(x: np.ndarray, axis: int, step: int) -> np.ndarray:
    """The values of ``x`` as a view with ``step`` times its stride along ``axis`` (a slice with a step)."""
    shape = list(x.shape)
    shape[axis] *= step
    big = np.zeros(shape, x.dtype)
    view = big[(slice(None),) * axis + (slice(None, None, step),)]
    view[...] = x
    return view


# ---- the steps: each returns the calls it makes (a bad call twice: its signature must not be remembered)


def s_good(ctx: Ctx, rng) -> list[Call]:
    return [_form(ctx, ctx.good())]


def s_dtype(ctx: Ctx, rng) -> list[Call]:
    arrays = ctx.good()
    n = _pick(rng, _arrays(arrays))
    want = arrays[n].dtype
    dt = _pick(rng, [d for d in (np.float16, np.float32, np.float64, np.int32, np.uint16, np.int8, np.bool_, ">f4")
                     if np.dtype(d) != want])
    with np.errstate(invalid="ignore"):  # (a poisoned output's NaNs cast to integers)
        arrays[n] = arrays[n].astype(dt)
    c = _form(ctx, arrays, (n,), f"dtype {n} {np.dtype(dt).str}")
    return [c, c]


def s_shape(ctx: Ctx, rng) -> list[Call]:
    arrays = ctx.good()
    n = _pick(rng, _arrays(arrays))
    x = arrays[n]
    how = _pick(rng, ["drop", "zero", "grow", "newaxis", "flat"])
    ax = int(rng.integers(max(x.ndim, 1)))
    if how == "drop" and x.ndim and x.shape[ax]:
        x = x[(slice(None),) * ax + (slice(1, None),)]
    elif how == "zero" and x.ndim:
        x = x[(slice(None),) * ax + (slice(0, 0),)]
    elif how == "grow" and x.ndim:
        x = np.concatenate([x, x[(slice(None),) * ax + (slice(0, 1),)]] if x.shape[ax] else [x], axis=ax)
    elif how == "newaxis":
        x = x[None]
    else:
        x = x.reshape(-1)
    arrays[n] = x
    c = _form(ctx, arrays, (n, *_dim_names(ctx, n)), f"shape {n} {how} {x.shape}")
    return [c, c]


def s_view(ctx: Ctx, rng) -> list[Call]:
    """The same values through another view: a step along an axis, the other memory order, an element's offset
    (another 16-byte alignment class), a negative stride, a transpose."""
    arrays = ctx.good()
    n = _pick(rng, _arrays(arrays))
    x = arrays[n]
    how = _pick(rng, ["step", "fortran", "offset", "reverse", "transpose"])
    if how == "step" and x.ndim:
        x = _spread(x, int(rng.integers(x.ndim)), int(rng.integers(2, 4)))
    elif how == "fortran":
        x = np.asfortranarray(x)
    elif how == "offset":
        x = _relocated(x, x.itemsize * int(rng.integers(1, 4)))
    elif how == "reverse" and x.ndim:
        x = np.flip(_spread(np.flip(x, 0), 0, 1), 0)
    elif x.ndim >= 2:
        x = np.swapaxes(x, -1, -2)
    arrays[n] = x
    c = _form(ctx, arrays, (n,), f"view {n} {how} {x.strides}")
    return [c, c]


def s_alias(ctx: Ctx, rng) -> list[Call]:
    """An output sharing memory with another operand: first two disjoint views of one buffer (legal: prepares the
    signature), then the same views overlapping by a multiple of 16 bytes (the same signature: the prepared path
    must see it), or the very same array (legal only where the ABI lets the output alias it)."""
    arrays = _with_outputs(ctx, ctx.good())
    o = _pick(rng, [n for n in _outputs(ctx) if n in arrays])
    t = _pick(rng, [n for n in _arrays(arrays) if n != o])
    xo, xt = arrays[o], arrays[t]
    if rng.integers(3) == 0 and xo.shape == xt.shape and xo.dtype == xt.dtype:
        c = _form(ctx, {**arrays, o: xt}, (o, t), f"alias {o} is {t}")
        return [c, c]
    span = -(-max(xo.nbytes, xt.nbytes) // 16) * 16
    raw = np.zeros(2 * span + 128, np.uint8)
    base = -raw.__array_interface__["data"][0] % 64

    calls = []
    for off, names in ((span, ()), (16 * int(rng.integers(0, max(span // 16, 1))), (o, t))):
        vt, vo = _placed(raw, base, xt), _placed(raw, base + off, xo)
        vo[...] = xo
        vt[...] = xt
        calls.append(_form(ctx, {**arrays, o: vo, t: vt}, names, f"alias {o} at {off} bytes past {t}"))
    return calls + calls[1:]


def s_output(ctx: Ctx, rng) -> list[Call]:
    """An output that is read-only, a stride-0 (broadcast) view, or an explicit None (legal: allocated)."""
    arrays = _with_outputs(ctx, ctx.good())
    o = _pick(rng, _outputs(ctx))
    how = _pick(rng, ["readonly", "broadcast", "none", "readonly input"])
    if how == "readonly":
        arrays[o].setflags(write=False)
    elif how == "broadcast" and arrays[o].size > 1:
        arrays[o] = np.lib.stride_tricks.as_strided(arrays[o], strides=(0,) * arrays[o].ndim)
    elif how == "none":
        arrays[o] = None
        c = _form(ctx, arrays, (), f"{o}=None")
        return [c, c]
    else:
        inputs = [n for n in _arrays(arrays) if ctx.abi[n].role == "in"]
        arrays[_pick(rng, inputs)].setflags(write=False)
        return [_form(ctx, arrays, (), how)]
    c = _form(ctx, arrays, (o,), f"output {o} {how}")
    return [c, c]


def s_form(ctx: Ctx, rng) -> list[Call]:
    """Wrong numbers and kinds of arguments."""
    good = _form(ctx, ctx.good())
    pos, named = list(good.pos), dict(good.named)
    names = positional(ctx.abi)
    how = _pick(rng, ["extra", "missing", "unknown", "twice", "kind", "by name"])
    if how == "extra":
        c = Call(pos + [pos[0]], named, ("positional",), label=how)
    elif how == "missing":
        c = Call(pos[:-1], named, (names[len(pos) - 1],), label=how)
    elif how == "unknown":
        c = Call(pos, {**named, "bogus": pos[0]}, ("bogus",), label=how)
    elif how == "twice":
        c = Call(pos, {**named, names[0]: pos[0]}, (names[0],), label=how)
    elif how == "by name":
        return [Call([], {**dict(zip(names, pos, strict=False)), **named}, (), label=how)]
    else:
        i = int(rng.integers(len(pos)))
        x = pos[i]
        pos[i] = _pick(rng, [x.tolist(), tuple(x.reshape(-1).tolist()), 1.0, 3, "x", None, b"\0" * x.nbytes,
                             memoryview(np.ascontiguousarray(x)), np.float32(1), np.zeros((), x.dtype)])
        c = Call(pos, named, (names[i],), label=f"kind {names[i]} {type(pos[i]).__name__}")
    return [c, c]


def _two(rng: np.random.Generator, items: list) -> list:
    """Two different entries of ``items`` (by position)."""
    return [items[i] for i in rng.choice(len(items), 2, replace=False)]


def s_size(ctx: Ctx, rng) -> list[Call]:
    """A size by name (a free one as often as the others together): its value as an int (legal; prepares the
    signature), then two of another type or value."""
    free = list(FREE.get(ctx.kern.name, ()))
    sized = [a.name for a in ctx.abi.sizes if a.name in ctx.sizes and a.name not in free]
    s = _pick(rng, free) if free and rng.integers(2) else _pick(rng, sized)
    v = ctx.sizes[s]
    arrays = ctx.good()
    first = _form(ctx, arrays, (), f"size {s}={v}", **{s: v})
    calls = [first, first]
    for bad in _two(rng, [float(v), float(v), v + 1, -1, float("nan"), True, np.int64(v), np.array(v), 2 ** 40,
                          str(v), None, [v]]):
        calls += [_form(ctx, arrays, (s,), f"size {s}={bad!r}", **{s: bad})] * 2
    return calls


def s_scalar(ctx: Ctx, rng) -> list[Call]:
    """A runtime scalar by name: its default (legal; an int as such, a float as a float, a numpy scalar or a 0-d
    array), then two of another type or value (a 0-d array of another value included: the full path reads it, so
    the result must change; a float for an int scalar: the full path refuses it)."""
    if ctx.kern.name not in SCALARS:
        return s_size(ctx, rng)
    s, other = _pick(rng, SCALARS[ctx.kern.name])
    v = ctx.abi[s].default
    arrays = ctx.good()
    if isinstance(v, int):
        legal, bads = v, [float(v), float(v), np.array(other), other + 0.5, True, 2 ** 40]
    else:
        legal = _pick(rng, [v, np.float32(v), *[np.array(v)] * 3])
        bads = [np.array(other), np.array(other), np.array([other]), int(v), other, float("inf")]
    first = _form(ctx, arrays, (), f"{s}={legal!r}", **{s: legal})
    calls = [first, first]
    for bad in _two(rng, [*bads, float("nan"), "x", None, [v]]):
        calls += [_form(ctx, arrays, (s,), f"{s}={bad!r}", ref=False, **{s: bad})] * 2
    return calls


def s_values(ctx: Ctx, rng) -> list[Call]:
    """An integer input with a value range (the rotary positions) given an entry outside it: same signature."""
    ranged = [a.name for a in ctx.abi.tensors if a.value_range is not None and not a.unused]
    arrays = ctx.good()
    ranged = [n for n in ranged if n in arrays and arrays[n].size]
    if not ranged:
        return s_output(ctx, rng)
    n = _pick(rng, ranged)
    x = arrays[n]
    x.reshape(-1)[int(rng.integers(x.size))] = _pick(rng, [-1, -7, ctx.sizes.get("rope_positions", 1) + 3, 2 ** 30])
    c = _form(ctx, arrays, (n,), f"values {n}")
    return [c, c]


STEPS: dict[str, Callable] = {f.__name__[2:]: f for f in (s_good, s_dtype, s_shape, s_view, s_alias, s_output,
                                                           s_form, s_size, s_scalar, s_values)}


# ---- the oracle


def _objects(call: Call) -> list[np.ndarray]:
    seen, out = set(), []
    for v in [*call.pos, *call.named.values()]:
        if isinstance(v, np.ndarray) and id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def _invoke(kern: api.Kernel, call: Call):
    """("ok", outputs as a list) or ("error", the CkgenError); any other exception propagates (a bug)."""
    try:
        out = kern(*call.pos, **call.named)
    except CkgenError as e:
        return "error", e
    return "ok", list(out) if isinstance(out, tuple) else [out]


def _bits(x) -> tuple:
    return (x.shape, x.dtype.str, x.tobytes()) if isinstance(x, np.ndarray) else (type(x).__name__, repr(x))


def check_call(ctx: Ctx, full: api.Kernel, call: Call) -> None:
    """Properties 1-3 of the module docstring for one call to ``ctx.kern``."""
    kern = ctx.kern
    objs = _objects(call)
    saved = [x.copy() for x in objs]
    try:
        bound = full.bind(*call.pos, **call.named)  # what the full binding sees (for the reference)
        before = {a.name: (None if v is None else np.array(v, copy=True))
                  for a, v in zip(kern.abi.args, bound.values, strict=True) if a.kind == ArgKind.TENSOR}
    except CkgenError:
        bound = None
    what, got = _invoke(kern, call)
    after = [x.copy() for x in objs]
    for x, s in zip(objs, saved, strict=True):  # the same arrays, as they were, for the full path
        if x.flags.writeable:
            x[...] = s
    full._prepared.clear()
    want_what, want = _invoke(full, call)
    where = f"{kern.name} {call.label}"
    if what == "error":
        text = got.message + " " + (got.hint or "")
        assert call.names, f"{where}: a good call was refused: {got}"
        assert any(n in text for n in call.names), f"{where}: the refusal names none of {call.names}: {got}"
        assert all(_bits(a) == _bits(s) for a, s in zip(after, saved, strict=True)), f"{where}: refused, but wrote"
        assert want_what == "error" and want.message == got.message, f"{where}: the full path gave {want}"
        return
    assert want_what == "ok", f"{where}: the prepared path launched what the full path refuses: {want}"
    assert [_bits(x) for x in got] == [_bits(x) for x in want], f"{where}: not the full path's outputs"
    assert bound is not None
    if call.ref and not any(bound.sizes.get(n, 1) == 0 for n in kern.abi.empty_if):
        op = get_op(kern.plan.op)
        refs = op.reference(kern.plan, before, bound.sizes)
        for a, x in zip([t for t in kern.abi.tensors if t.writes and not t.unused], got, strict=True):
            err = relative_error(to_float64(x, a.dtype), refs[a.name])
            assert err <= op.tolerance(kern.plan, a.name), f"{where}: {a.name} off the float64 reference by {err}"


FUZZ = settings(max_examples=6, derandomize=True, deadline=None, database=None, print_blob=False,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])


@pytest.mark.parametrize("focus", [s for s in STEPS if s != "good"])
@pytest.mark.parametrize("name", list(SIZES))
@FUZZ
@given(data=st.data())
def test_prepared_calls_match_the_full_path(kernels, name, focus, data):
    """A good call, then up to four steps (``focus`` among them, so that every kind of step meets every kernel),
    then the first good call's signature again; every call checked by :func:`check_call`."""
    built = kernels[name]
    ctx = Ctx(api.Kernel(built.plan, built.backend), data.draw(SIZES[name], "sizes"), data.draw(st.booleans(), "outs"),
              np.random.default_rng(data.draw(_i(0, 2 ** 32 - 1), "seed")))
    full = api.Kernel(built.plan, built.backend)
    check_call(ctx, full, s_good(ctx, None)[0])
    seeds = _i(0, 2 ** 32 - 1)
    steps = data.draw(st.lists(st.tuples(st.sampled_from(list(STEPS)), seeds), max_size=3), "steps")
    steps.insert(data.draw(_i(0, len(steps)), "where"), (focus, data.draw(seeds, "focus seed")))
    for step, seed in steps:
        for call in STEPS[step](ctx, np.random.default_rng(seed)):
            check_call(ctx, full, call)
    check_call(ctx, full, s_good(ctx, None)[0])  # the first signature again, after every bad call


# ---- regressions of what the fuzz found (each failed before its fix in ckgen/runtime/prepared.py)


def _gemm_inputs(k: api.Kernel, seed: int) -> dict:
    return get_op("gemm").random_inputs(k.plan, {"M": 9, "N": 32, "K": 12, "rope_cols": 16, "rope_positions": 32},
                                        np.random.default_rng(seed))


def _close(k: api.Kernel, out: np.ndarray, arrays: dict, sizes: dict, name: str = "C") -> bool:
    op = get_op(k.plan.op)
    ref = op.reference(k.plan, arrays, sizes)[name]
    return relative_error(to_float64(out, k.abi[name].dtype), ref) <= op.tolerance(k.plan, name)


def test_an_output_passed_as_none_is_allocated_on_the_prepared_path(kernels):
    """``C=None`` (the signature's default, spelled out) on a repeated call: prepared with C allocated, as when it is
    left out (it was launched with a NULL C: a fault on the emulator, a wild write on a GPU)."""
    built = kernels["fz_gemm"]
    k = api.Kernel(built.plan, built.backend)
    outs = []
    for seed in range(3):
        arrays = {n: v for n, v in _gemm_inputs(k, seed).items() if n in ("A", "B", "bias")}
        outs.append(k(arrays["A"], arrays["B"], arrays["bias"], C=None))
        assert _close(k, outs[-1], arrays, {"M": 9, "N": 32, "K": 12}), seed
    assert len(k._prepared) == 1 and len({id(o) for o in outs}) == 3


def test_a_scalar_given_as_an_array_is_read_every_call(kernels):
    """A 0-d array for a scalar (the full path reads its value) is not prepared: each call uses its own value (the
    first call's eps was reused)."""
    from ckgen.ops.rowops.reference import reference

    built = kernels["fz_rms"]
    k = api.Kernel(built.plan, built.backend)
    arrays = get_op("rmsnorm").random_inputs(k.plan, {"rows": 3, "cols": 40}, np.random.default_rng(1))
    x, res, w = arrays["x"], arrays["residual"], arrays["weight"]
    for eps in (0.5, 3.0, 0.5):
        y, _ = k(x, res, w, eps=np.array(eps))
        want = reference(k.plan, {"x": x, "residual": res, "weight": w}, {"eps": eps})["y"]
        assert relative_error(y, want) <= get_op("rmsnorm").tolerance(k.plan, "y"), eps


def test_out_of_range_positions_are_refused_on_every_call(kernels):
    """A host integer input with a value range (the rotary positions) is checked on every call, not only on the
    first of its signature (a repeat launched with a position past the table: NaN rows)."""
    built = kernels["fz_rope"]
    k = api.Kernel(built.plan, built.backend)
    arrays = _gemm_inputs(k, 2)
    del arrays["bias"]
    for _ in range(2):
        assert _close(k, k(**arrays, rope_cols=16), arrays, {"M": 9, "N": 32, "K": 12, "rope_cols": 16,
                                                            "rope_positions": 32})
    arrays["positions"][4] = 32
    arrays["C"][...] = 7.0
    with pytest.raises(CkgenError, match="positions: every entry must lie in 0..31"):
        k(**arrays, rope_cols=16)
    assert (arrays["C"] == 7.0).all()


def test_a_float_for_an_int_scalar_is_refused_after_an_int(kernels):
    """``window_left=-1.0`` after ``window_left=-1``: 1.0 == 1 in the signature no more; refused as on a first call
    (the prepared path took it)."""
    built = kernels["fz_attn"]
    k = api.Kernel(built.plan, built.backend)
    sizes = _attn_sizes(1, 1, 2, 5, 7)
    arrays = get_op("attention").random_inputs(k.plan, sizes, np.random.default_rng(3))
    q, kk, v = arrays["Q"], arrays["K"], arrays["V"]
    for _ in range(2):
        o, _lse = k(q, kk, v, window_left=-1)
        assert _close(k, o, {"Q": q, "K": kk, "V": v}, sizes, "O")
    with pytest.raises(CkgenError, match="scalar window_left = -1.0: expected an integer"):
        k(q, kk, v, window_left=-1.0)
