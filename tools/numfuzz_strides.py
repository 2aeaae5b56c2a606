"""The ``--strides`` mode of ``tools/fuzz_numerics.py``: one checked call whose arrays are padded, offset views.

:func:`check_call_strided` does what :func:`ckgen.runtime.run.check_call` does (the op's random inputs, outputs
poisoned, :func:`ckgen.runtime.run.judge_outputs` on the logical arrays), but
passes every tensor as a view into a larger buffer (:func:`padded_view`), through the binding's normal call path:

- layout: the ABI dim of literal stride 1 stays unit-stride (innermost in the buffer); the other dims lie outside
  it in ABI order; every dim of the buffer is longer than the array's extent by a random pad, so each non-unit
  stride is larger than its minimum (the innermost pad often an odd element count, breaking 16-byte alignment of
  the rows), and the view starts at a random offset in every dim (often a misaligned address);
- poison: the padding of an array the kernel reads (role ``in`` / ``inout``) holds a value a read shows in the
  result (:data:`READ_POISON`: NaN where the dtype has one, else its largest magnitude, or for integers a value
  far out of every range, which also makes an index read fault); the padding of a pure output holds the bytes
  :data:`WRITE_POISON`;
- after the call: every input buffer (pure ``in``) must be unchanged bit for bit, padding included; the padding
  of every written buffer must be unchanged; the written logical views are checked against the reference.

A CkgenError at the call (e.g. an op that takes only contiguous arrays, naming the array) is a refusal, as in
the contiguous mode. Contract: the caller's ``rng`` alone decides the inputs, pads and offsets.
"""

from __future__ import annotations

import numpy as np

from ckgen.ir.registry import get_op
from ckgen.ir.types import DType
from ckgen.runtime import run

#: bit pattern (as an unsigned integer of the element's width) filling the padding of read arrays
READ_POISON = {DType.F16: 0x7E00, DType.BF16: 0x7FC0, DType.F32: 0x7FC00000, DType.F64: 0x7FF8000000000000,
               DType.I8: 0x7F, DType.I32: 0x3FFFFFFF, DType.I64: 0x3FFFFFFFFFFFFFFF, DType.E4M3FN: 0x7F,
               DType.E5M2: 0x7F, DType.E4M3FNUZ: 0x80, DType.E5M2FNUZ: 0x80, DType.E8M0: 0xFF,
               DType.E2M1FN_X2: 0x77, DType.FP8: 0x7F, DType.BF8: 0x7F}
#: the byte filling the padding of pure outputs
WRITE_POISON = 0xA5
#: pads (elements) of the unit-stride dim: odd counts break 16-byte row alignment for every dtype
INNER_PADS = (1, 2, 3, 5, 7, 8, 13, 16, 33)


def _fill_bits(buf: np.ndarray, bits: int) -> None:
    raw = buf.view(np.dtype(f"u{buf.dtype.itemsize}"))
    raw[...] = bits


def padded_view(rng: np.random.Generator, arr: np.ndarray, arg, poison: int | None):
    """(view, buffer, mask): ``view`` has ``arr``'s shape, dtype and values inside ``buffer``, larger in every dim
    and with an offset start; ``mask`` (buffer-shaped, in buffer order) marks the view's elements. The padding
    holds ``poison`` (an element bit pattern) or, when None, the byte :data:`WRITE_POISON`."""
    nd = arr.ndim
    abi_strides = list(arg.strides)[len(arg.strides) - nd:] if nd else []
    unit = [i for i, s in enumerate(abi_strides) if s == 1]
    inner = unit[-1] if unit else nd - 1
    order = [i for i in range(nd) if i != inner] + ([inner] if nd else [])  # buffer dims: outer -> inner
    pads = [int(rng.choice(INNER_PADS)) if i == inner else int(rng.choice((1, 2, 3))) for i in order]
    shape = [arr.shape[i] + p for i, p in zip(order, pads, strict=True)]
    buf = np.empty(shape, arr.dtype)
    if poison is None:
        buf.view(np.uint8)[...] = WRITE_POISON
    else:
        _fill_bits(buf, poison)
    offs = [int(rng.integers(0, p + 1)) for p in pads]
    idx = tuple(slice(o, o + arr.shape[i]) for o, i in zip(offs, order, strict=True))
    mask = np.zeros(shape, bool)
    mask[idx] = True
    inv = np.argsort(order)
    view = buf[idx].transpose(inv) if nd else buf
    view[...] = arr
    return view, buf, mask


def describe(view: np.ndarray, buf: np.ndarray) -> str:
    """``shape strides(elements) +offset`` of a view, for the failure report."""
    off = (view.__array_interface__["data"][0] - buf.__array_interface__["data"][0]) // max(view.itemsize, 1)
    st = tuple(s // view.itemsize for s in view.strides)
    return f"{tuple(view.shape)} strides {st} +{off}"


def check_call_strided(kern, values: dict[str, int], rng: np.random.Generator):
    """Run ``kern`` once at sizes ``values`` on padded, offset views of the op's random inputs. Returns
    ``(results, problems, layout)``: results as :func:`ckgen.runtime.run.check_call` gives them (output, error,
    tolerance), problems a list of texts (a changed input or padding), layout ``name -> describe()``."""
    plan = kern.plan
    op = get_op(plan.op)
    arrays = op.random_inputs(plan, values, rng)
    before = {k: (v.copy() if v is not None else None) for k, v in arrays.items()}
    abi = {a.name: a for a in plan.abi.tensors}
    views, bufs = {}, {}
    for name, arr in arrays.items():
        if arr is None or not isinstance(arr, np.ndarray) or name not in abi:
            views[name] = arr
            continue
        a = abi[name]
        poison = READ_POISON.get(a.dtype, (1 << (8 * arr.itemsize)) - 1) if a.role != "out" else None
        view, buf, mask = padded_view(rng, arr, a, poison)
        views[name] = view
        bufs[name] = (buf, mask, buf.copy())
    layout = {n: describe(views[n], b[0]) for n, b in bufs.items()}
    kern(**views, **run.free_sizes(plan, values))
    problems = []
    for name, (buf, mask, old) in bufs.items():
        a = abi[name]
        if not a.writes:
            if buf.tobytes() != old.tobytes():
                where = "its padding" if buf[~mask].tobytes() == old[~mask].tobytes() else "the input"
                problems.append(f"input {name}: {where} changed")
        else:
            u = f"u{buf.itemsize}"
            bad = np.argwhere((buf.view(u) != old.view(u)) & ~mask)
            if len(bad):
                problems.append(f"output {name}: {len(bad)} padding elements written, first at buffer index "
                                f"{bad[0].tolist()} (buffer {buf.shape})")
    return run.judge_outputs(plan, values, before, views), problems, layout
