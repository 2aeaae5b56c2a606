"""Attention kernels as a ``torch.library`` custom op, so that ``torch.compile`` traces through them.

    import ckgen
    from ckgen.ops.attention.torch_op import torch_attention

    kern = ckgen.jit("examples/attention.ck", kernel="attn_d128_causal", target="sm_90")
    attn = torch_attention(kern)                  # registers kern under a key, returns a callable
    o, lse = attn(q, k, v)                        # q [B, Sq, H, D], k and v [B, Sk, Hkv, D] (any strides)
    o, lse = torch.compile(lambda q, k, v: attn(q, k, v))(q, k, v)

One op serves every kernel: ``torch.ops.ckgen.attention(kernel_key, q, k, v, cu_seqlens_q, cu_seqlens_k,
max_seqlen_q, max_seqlen_k, scale, window_left, window_right) -> (O, LSE)``; ``kernel_key`` (a string the graph
carries as a constant) names a kernel registered with :func:`torch_attention` in this process. Its fake (meta)
implementation gives the shapes without running anything: O like q (``[B, Sq, H, D]``, or packed ``[total_q,
H, D]`` for varlen kernels), LSE ``[B, H, Sq]`` (``[H, total_q]``) f32, both contiguous as the real outputs
are. The real implementation calls the kernel through its binding (every check of
:mod:`ckgen.runtime.binding`): CUDA tensors on the cuda target (the current stream), CPU tensors on the
emulator (``target="emu"``). Forward only: the op has no autograd formula (backward raises).

Varlen kernels take ``cu_seqlens_q`` / ``cu_seqlens_k`` (int32) and ``max_seqlen_q`` / ``max_seqlen_k``; pass
the maxima to avoid reading the offsets back (a synchronization), as FlashAttention's varlen API does.
``scale`` defaults to 1/sqrt(head_dim), the window to the kernel's DSL ``window``.
"""

# No ``from __future__ import annotations``: torch.library reads the op's schema from real annotations.
import hashlib
import json
import threading
from typing import Any, Optional

import numpy as np

from ckgen.errors import CkgenError

_KERNELS: dict[str, Any] = {}
_LOCK = threading.Lock()
_OP: Any = None


def kernel_key(kernel: Any) -> str:
    """The key a kernel is registered under: name, arch, target and a digest of its plan."""
    digest = hashlib.sha256(json.dumps(kernel.plan.to_json(), sort_keys=True).encode()).hexdigest()[:12]
    return f"{kernel.name}@{kernel.arch}@{kernel.backend.name}@{digest}"


def _np_view(t: Any) -> np.ndarray:
    """A CPU tensor as numpy without a copy (bf16 as uint16 bit patterns, the emulator's bf16)."""
    import torch

    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def _from_np(a: np.ndarray, like_bf16: bool) -> Any:
    import torch

    t = torch.from_numpy(np.ascontiguousarray(a))
    return t.view(torch.bfloat16) if like_bf16 and a.dtype == np.uint16 else t


def _run(key: str, q, k, v, cu_q, cu_k, max_q, max_k, scale, wl, wr):
    import torch

    kern = _KERNELS.get(key)
    if kern is None:
        raise CkgenError(f"ckgen::attention: no kernel registered as {key!r} in this process",
                         hint="call ckgen.ops.attention.torch_op.torch_attention(kernel) first")
    named: dict[str, Any] = {}
    if scale is not None:
        named["scale"] = scale
    if wl is not None:
        named["window_left"] = wl
    if wr is not None:
        named["window_right"] = wr
    if max_q is not None:
        named["seqlen_q"] = max_q
    if max_k is not None:
        named["seqlen_k"] = max_k
    if q.is_cuda:
        if kern.backend.name != "cuda":
            raise CkgenError(f"ckgen::attention: kernel {kern.name} runs on {kern.backend.name}, got CUDA tensors")
        return kern(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, **named)
    if kern.backend.name != "emu":
        raise CkgenError(f"ckgen::attention: kernel {kern.name} runs on {kern.backend.name}, got {q.device} tensors",
                         hint="CPU tensors run on the emulator: ckgen.jit(..., target='emu')")
    conv = [None if t is None else _np_view(t.detach()) for t in (q, k, v, cu_q, cu_k)]
    o, lse = kern(conv[0], conv[1], conv[2], cu_seqlens_q=conv[3], cu_seqlens_k=conv[4], **named)
    return _from_np(o, q.dtype == torch.bfloat16), torch.from_numpy(np.ascontiguousarray(lse))


def _define() -> Any:
    """Define ``ckgen::attention`` once per process (torch imported here, not at module import)."""
    global _OP
    with _LOCK:
        if _OP is not None:
            return _OP
        import torch
        from torch import Tensor

        @torch.library.custom_op("ckgen::attention", mutates_args=())
        def attention(kernel: str, q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Optional[Tensor],  # noqa: UP045
                      cu_seqlens_k: Optional[Tensor], max_seqlen_q: Optional[int],  # noqa: UP045
                      max_seqlen_k: Optional[int], scale: Optional[float], window_left: Optional[int],  # noqa: UP045
                      window_right: Optional[int]) -> tuple[Tensor, Tensor]:  # noqa: UP045
            return _run(kernel, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, window_left,
                        window_right)

        @attention.register_fake
        def _(kernel, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, window_left,
              window_right):
            o = q.new_empty(q.shape)
            if q.dim() == 3:  # packed varlen [total_q, H, D]
                lse = q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)
            else:
                lse = q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)
            return o, lse

        _OP = attention
        return _OP


def torch_attention(kernel: Any):
    """Register ``kernel`` (an attention :class:`ckgen.runtime.api.Kernel`) with ``ckgen::attention`` and return
    ``f(q, k, v, *, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None, scale=None,
    window=None) -> (O, LSE)`` calling the op (see the module docstring)."""
    if getattr(kernel, "op", None) != "attention":
        raise CkgenError(f"torch_attention takes an attention kernel, got {kernel!r}")
    if kernel.plan.spec.params.attn.rope is not None:
        raise CkgenError(f"torch_attention: kernel '{kernel.name}' has rope (positions and cos_sin are not in the "
                         "op's schema); call the kernel itself: kern(q, k, v, positions=..., cos_sin=...)")
    key = kernel_key(kernel)
    with _LOCK:
        _KERNELS[key] = kernel
    op = _define()

    def call(q, k, v, *, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None, scale=None,
             window=None):
        wl, wr = (None, None) if window is None else (int(window[0]), int(window[1]))
        return op(key, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, wl, wr)

    call.key = key  # type: ignore[attr-defined]
    call.kernel = kernel  # type: ignore[attr-defined]
    return call
