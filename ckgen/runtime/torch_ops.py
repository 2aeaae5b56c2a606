"""Any ckgen callable as a ``torch.library`` custom op, built from its ABI, so that ``torch.compile`` traces it.

    import ckgen
    from ckgen.runtime.torch_ops import torch_op

    g = torch_op(ckgen.jit("kernels.ck", kernel="lin", target="sm_90"))   # a Kernel or a family dispatcher
    C = g(A, B)                                          # torch.ops.ckgen.<name>_<digest>(A, B)
    C = torch.compile(lambda a, b: g(a, b), fullgraph=True)(A, B)

Contract:

- One op per callable, ``ckgen::<name>_<digest>`` (digest of its plan, or of its members' plans for a family),
  defined once per process from the ABI: the kernel's inputs (role ``in``, not unused) as ``Tensor`` (``Tensor?``
  when optional) in ABI order, then every size as ``int? = None`` and every scalar as ``float?`` / ``int? = None``
  (None: the ABI's default, or what the arrays give); it returns the outputs the Python callable returns (one
  ``Tensor`` or a tuple, ABI order), freshly allocated. Kernels with an ``inout`` tensor or a workspace the caller
  must pass are refused (CkgenError): an op with mutated arguments is not generated.
- The fake (meta) implementation computes the outputs' shapes from the inputs' shapes through the ABI dims (a
  broadcast dim may be left out or be 1; a ``size+k`` dim gives size = extent - k), the sizes passed, or the ABI
  defaults, and lays them out as the real outputs are (the dim with unit stride innermost). A size nothing gives
  (one read from an offsets tensor) must be passed.
- The real implementation calls the callable: CUDA tensors on the cuda target (its prepared call, on the current
  stream), CPU tensors on the emulator (through numpy views; bf16 as uint16 bit patterns). Forward only.
"""

# No ``from __future__ import annotations``: the schema is built as a string, but keep annotations real anyway.
import hashlib
import json
import re
import threading
from typing import Any

import numpy as np

from ckgen.errors import CkgenError
from ckgen.ir.abi import ArgKind, dim_parts, dim_value
from ckgen.ir.arrays import memory_order, torch_dtype_name
from ckgen.ir.types import DType

_LOCK = threading.Lock()
_OPS: dict[str, Any] = {}
_LIBS: list[Any] = []


def op_name(kernel: Any) -> str:
    """``<name>_<digest>``: the op's name in the ``ckgen`` namespace."""
    plans = getattr(getattr(kernel, "table", None), "plans", None) or [kernel.plan]
    text = json.dumps([p.to_json() for p in plans], sort_keys=True) + kernel.backend.name
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return f"{re.sub(r'[^A-Za-z0-9_]', '_', kernel.name)}_{kernel.backend.name}_{digest}"


def _inputs(abi: Any) -> list:
    return [a for a in abi.tensors if a.role == "in" and not a.unused]


def _outputs(abi: Any) -> list:
    return [a for a in abi.tensors if a.writes and not a.unused]


def schema(kernel: Any) -> str:
    """The op's schema (without the name) from the callable's ABI; CkgenError for what no op can express."""
    abi = kernel.abi
    bad = [a.name for a in abi.tensors if a.role == "inout" and not a.unused]
    if bad:
        raise CkgenError(f"kernel '{kernel.name}': {', '.join(bad)} is read and written (inout); a torch op of it "
                         "would mutate its argument, which ckgen does not generate",
                         hint="call the kernel directly (ckgen.jit) for in-place forms")
    args = [f"Tensor{'?' if a.optional else ''} {a.name}" for a in _inputs(abi)]
    args += [f"int? {a.name}=None" for a in abi.sizes]
    args += [f"{'int' if a.is_int_scalar else 'float'}? {a.name}=None" for a in abi.of(ArgKind.SCALAR)]
    outs = _outputs(abi)
    ret = "Tensor" if len(outs) == 1 else "(" + ", ".join("Tensor" for _ in outs) + ")"
    return f"({', '.join(args)}) -> {ret}"


def _torch_dtype(torch: Any, d: DType) -> Any:
    return getattr(torch, torch_dtype_name(d))


def fake_outputs(kernel: Any, tensors: dict, sizes: dict) -> list:
    """Empty outputs (on the inputs' device, meta or fake) shaped and laid out as the kernel's real outputs."""
    import torch

    abi = kernel.abi
    found: dict[str, Any] = {}
    for a in _inputs(abi):
        t = tensors.get(a.name)
        if t is None:
            continue
        missing = len(a.dims) - t.dim()
        for d, i in zip(a.dims, range(len(a.dims)), strict=True):
            if i < missing:
                continue
            ext = t.shape[i - missing]
            name, mult, k = dim_parts(d)
            if name is None or (d in a.broadcast and ext == 1):
                continue
            found.setdefault(name, (ext - k) // mult)
    vals: dict[str, Any] = {}
    for e in abi.extents:
        vals[e] = found.get(e, 0)
    derived = {count: (size, block) for count, size, block in abi.blocks}  # block counts: from their size
    for s in abi.sizes:
        v = found.get(s.name, sizes.get(s.name))
        v = s.default if v is None else v
        if v is None and s.name in derived and derived[s.name][0] in vals:
            v = -(-vals[derived[s.name][0]] // derived[s.name][1])
        if v is None:
            raise CkgenError(f"kernel '{kernel.name}': no input gives size {s.name}; pass {s.name}=<value>")
        vals[s.name] = v
    like = next(t for t in tensors.values() if t is not None)
    outs = []
    for a in _outputs(abi):
        shape = [dim_value(d, vals) for d in a.dims]
        order = memory_order(a)
        base = like.new_empty([shape[i] for i in order], dtype=_torch_dtype(torch, a.dtype))
        outs.append(base.permute([order.index(i) for i in range(len(order))]))
    return outs


def _np_view(t: Any) -> np.ndarray:
    import torch

    t = t.detach()
    return t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()


def _run(kernel: Any, tensors: dict, named: dict) -> Any:
    import torch

    like = next(t for t in tensors.values() if t is not None)
    if like.is_cuda:
        outs = kernel(**{k: t for k, t in tensors.items() if t is not None}, **named)
    else:
        if kernel.backend.name != "emu":
            raise CkgenError(f"kernel '{kernel.name}' runs on {kernel.backend.name}; got {like.device} tensors",
                             hint="CPU tensors run on the emulator: ckgen.jit(..., target='emu')")
        outs = kernel(**{k: _np_view(t) for k, t in tensors.items() if t is not None}, **named)
        outs = outs if isinstance(outs, tuple) else (outs,)
        conv = []
        for a, o in zip(_outputs(kernel.abi), outs, strict=True):
            t = torch.from_numpy(o)
            conv.append(t.view(torch.bfloat16) if a.dtype == DType.BF16 else t)
        outs = conv[0] if len(conv) == 1 else tuple(conv)
    return outs


def torch_op(kernel: Any) -> Any:
    """Define (once) the torch op of ``kernel`` (a :class:`~ckgen.runtime.api.Kernel` or a family's
    :class:`~ckgen.runtime.family.DispatchKernel`) and return it: ``torch.ops.ckgen.<op_name(kernel)>``."""
    import torch

    name = op_name(kernel)
    with _LOCK:
        if name in _OPS:
            return _OPS[name]
        sch = schema(kernel)
        abi = kernel.abi
        ins = [a.name for a in _inputs(abi)]
        nonten = [a.name for a in abi.sizes] + [a.name for a in abi.of(ArgKind.SCALAR)]
        sizes = {a.name for a in abi.sizes}

        def split(args: tuple, kwargs: dict) -> tuple[dict, dict]:
            given = dict(zip(ins + nonten, args, strict=False))
            given.update(kwargs)
            tensors = {k: given.get(k) for k in ins}
            named = {k: given[k] for k in nonten if given.get(k) is not None}
            return tensors, named

        def real(*args, **kwargs):
            tensors, named = split(args, kwargs)
            return _run(kernel, tensors, named)

        def fake(*args, **kwargs):
            tensors, named = split(args, kwargs)
            outs = fake_outputs(kernel, tensors, {k: v for k, v in named.items() if k in sizes})
            return outs[0] if len(outs) == 1 else tuple(outs)

        lib = torch.library.Library("ckgen", "FRAGMENT")
        lib.define(name + sch)
        lib.impl(name, real, "CPU")
        lib.impl(name, real, "CUDA")
        torch.library.register_fake(f"ckgen::{name}", fake, lib=lib)
        _LIBS.append(lib)
        op = getattr(torch.ops.ckgen, name)
        _OPS[name] = op
        return op
