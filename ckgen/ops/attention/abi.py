"""The attention op's C ABI and launch, as data (see :mod:`ckgen.ir.abi`).

Every attention kernel takes, in order (the device bodies' ABI, ``device/attention_common.h``)::

    Q, K, V, O, LSE, cu_seqlens_q, cu_seqlens_k, batch, heads, heads_kv, seqlen_q, seqlen_k,
    q_batch_stride, q_seq_stride, q_head_stride, k_..., v_..., o_... (3 each), lse_batch_stride, lse_head_stride,
    scale, window_left, window_right, stream

Tensors are logically ``[batch, seq, heads, head_dim]`` (FlashAttention's order); the head dim is contiguous
and every other dim has its own stride, so BSHD memory (``[B, S, H, D]``) and BHSD memory (``[B, H, S, D]``,
passed as its ``transpose(1, 2)`` view) both bind. K and V have ``heads_kv`` heads (GQA / MQA: ``heads`` a
multiple of ``heads_kv``). LSE is ``[batch, heads, seqlen_q]`` f32.

Variable-length kernels (``varlen = true``) take packed ``[total, heads, head_dim]`` tensors and the int32
offsets ``cu_seqlens_q`` / ``cu_seqlens_k`` (``batch + 1`` entries from 0); LSE is ``[heads, total_q]``;
``seqlen_q`` / ``seqlen_k`` are the longest sequences (they size the grid), derived from the offsets when not
given; the batch strides are unused. Otherwise the offsets are unused (NULL).

With ``rope``, the query rotation's inputs follow: the tensors ``positions`` (int32 ``[batch, seqlen_q]``, or
``[total_q]`` with varlen) and ``cos_sin`` (f32 ``[rope_positions, rot]``) after the offsets, the size
``rope_positions`` after ``seqlen_k``, the strides ``pos_batch_stride`` (not with varlen) and ``cs_pos_stride``
after ``lse_head_stride``. Kernels without ``rope`` have none of them.

``scale`` defaults to ``1 / sqrt(head_dim)``; ``window_left`` / ``window_right`` (i32; -1 unlimited) are read
only with ``mask = window`` and default to the DSL's ``window``.
"""

from __future__ import annotations

import math

from ckgen.ir import expr as E
from ckgen.ir.abi import Abi, Arg, ArgKind
from ckgen.ir.plan import GridDim, Launch
from ckgen.ir.spec import KernelSpec
from ckgen.ir.types import DType
from ckgen.ops.attention.rope import Rope

T, S, ST, SC = ArgKind.TENSOR, ArgKind.SIZE, ArgKind.STRIDE, ArgKind.SCALAR
#: the legal softmax scales: finite, positive, normal f32 (the bodies keep the running maximum unscaled)
SCALE_BOUNDS = (1.1754943508222875e-38, 3.4028234663852886e38)


def abi(spec: KernelSpec) -> Abi:
    a = spec.params.attn
    d, dt, varlen = a.head_dim, a.dtype, a.varlen

    def qkvo(name: str, seq: str, heads: str, role: str = "in", doc: str = "") -> Arg:
        p = name.lower()
        if varlen:
            dims, strides = (f"total_{seq[-1]}", heads, d), (f"{p}_seq_stride", f"{p}_head_stride", 1)
        else:
            dims, strides = ("batch", seq, heads, d), (f"{p}_batch_stride", f"{p}_seq_stride", f"{p}_head_stride", 1)
        return Arg(name, T, doc=doc, dtype=dt, role=role, dims=dims, strides=strides)

    shape = "[total, heads, d] (packed)" if varlen else "[batch, seq, heads, d]"
    args = [
        qkvo("Q", "seqlen_q", "heads", doc=f"queries {shape}"),
        qkvo("K", "seqlen_k", "heads_kv", doc=f"keys {shape.replace('heads', 'heads_kv')}"),
        qkvo("V", "seqlen_k", "heads_kv", doc=f"values {shape.replace('heads', 'heads_kv')}"),
        qkvo("O", "seqlen_q", "heads", role="out", doc=f"output {shape}"),
        Arg("LSE", T, doc="log-sum-exp per query row, f32 " + ("[heads, total_q]" if varlen else "[batch, heads, seqlen_q]")
            + " (-inf for rows that see no key)", dtype=DType.F32, role="out",
            dims=("heads", "total_q") if varlen else ("batch", "heads", "seqlen_q"),
            strides=("lse_head_stride", 1) if varlen else ("lse_batch_stride", "lse_head_stride", 1)),
    ]
    for side in ("q", "k"):
        args.append(Arg(f"cu_seqlens_{side}", T, dtype=DType.I32, dims=("batch+1",), strides=(1,), unused=not varlen,
                        offsets_of=f"total_{side}" if varlen else None,
                        doc="int32 [batch + 1]: sequence b has tokens cu[b]..cu[b+1]-1" if varlen
                        else "unused: pass NULL (varlen = false)"))
    args += rope_tensors(a.rope, varlen)
    longest = " (varlen: the longest sequence; derived from cu_seqlens_{} when not given)"
    args += [
        Arg("batch", S, doc="sequences"),
        Arg("heads", S, doc="query heads"),
        Arg("heads_kv", S, doc="key/value heads (heads is a multiple)"),
        Arg("seqlen_q", S, doc="queries per sequence" + (longest.format("q") if varlen else ""),
            from_offsets="cu_seqlens_q" if varlen else None),
        Arg("seqlen_k", S, doc="keys per sequence" + (longest.format("k") if varlen else ""),
            from_offsets="cu_seqlens_k" if varlen else None),
    ]
    if a.rope:
        args.append(Arg("rope_positions", S, default=0, doc="rows of cos_sin (the positions lie in 0..rope_positions-1)"))
    for p in ("q", "k", "v", "o"):
        for what in ("batch", "seq", "head"):
            unused = " (unused: varlen)" if varlen and what == "batch" else ""
            args.append(Arg(f"{p}_{what}_stride", ST, doc=f"elements between {what}s of {p.upper()}{unused}"))
    args += [Arg("lse_batch_stride", ST, doc="elements between sequences of LSE" + (" (unused: varlen)" if varlen else "")),
             Arg("lse_head_stride", ST, doc="elements between heads of LSE"),
             *([Arg("pos_batch_stride", ST, doc="elements between sequences of positions")]
               if a.rope and not varlen else []),
             *([Arg("cs_pos_stride", ST, doc="elements between positions of cos_sin")] if a.rope else []),
             Arg("scale", SC, doc=f"softmax scale, finite and > 0 (default 1/sqrt({d}))", default=1.0 / math.sqrt(d),
                 bounds=SCALE_BOUNDS),
             Arg("window_left", SC, dtype=DType.I32, default=a.window[0],
                 doc="keys before the diagonal each query sees (-1: unlimited; mask = window only)"),
             Arg("window_right", SC, dtype=DType.I32, default=a.window[1],
                 doc="keys after the diagonal each query sees (-1: unlimited; mask = window only)")]
    return Abi(tuple(args), empty_if=("batch", "heads", "seqlen_q"), extents=("total_q", "total_k") if varlen else (),
               divides=(("heads_kv", "heads"),),
               doc=f"O = softmax(scale * Q.K^T + {a.mask} mask) . V and LSE, per (batch, head)")


def rope_tensors(rope: Rope | None, varlen: bool) -> list[Arg]:
    """With rotary embedding: ``positions`` (int32, the position of every query row: ``[batch, seqlen_q]``, or
    ``[total_q]`` packed like Q with varlen) and the table ``cos_sin`` (f32 ``[rope_positions, rot]``)."""
    if rope is None:
        return []
    last = E.add("rope_positions", -1)
    pos = (Arg("positions", T, dtype=DType.I32, dims=("total_q",), strides=(1,), value_range=(0, last),
               doc="int32 [total_q]: the position of each packed query row (row i of sequence b at "
               "cu_seqlens_q[b] + i), 0..rope_positions-1") if varlen else
           Arg("positions", T, dtype=DType.I32, dims=("batch", "seqlen_q"), strides=("pos_batch_stride", 1),
               value_range=(0, last), doc="int32 [batch, seqlen_q]: the position of each query row, "
               "0..rope_positions-1 (a prefill from offset n: n + i; a decode step: its lengths - seqlen_q + i)"))
    return [pos, Arg("cos_sin", T, dtype=DType.F32, dims=("rope_positions", rope.dim), strides=("cs_pos_stride", 1),
                     doc=f"f32 [rope_positions, {rope.dim}]: per position the {rope.dim // 2} cosines, then the "
                     "sines (vLLM's cos_sin_cache; ckgen.rope_table builds it)")]


def launch(spec: KernelSpec, threads: int, block_m: int, lds_bytes: int, tma: bool = False) -> Launch:
    """One workgroup per (query tile, head, batch): x walks ceil(seqlen_q / block_m) query tiles (the bodies
    start with the last, longest one), y the heads, z the batch. ``lds_bytes``: dynamic shared memory (NVIDIA
    bodies; 0 where the body declares its LDS statically). Over the launch limit (65535 along y or z), the batch
    runs as sub-problems when every tensor is indexed by it (dense); heads never do (K and V are indexed by
    heads_kv, which a slice of the heads does not move) and neither does a varlen batch (its offsets arrays are
    batch + 1 long): such calls are refused by name. With the Hopper body (``tma``) the host entry first tries
    it (ops/attention/tma_launch.cpp.j2), which launches its own grid by the same rule."""
    varlen = bool(spec.params.attn.varlen)
    return Launch(threads=threads, grid=(GridDim("seqlen_q", block_m), GridDim("heads", split=False),
                                         GridDim("batch", split=not varlen)), lds_bytes=lds_bytes,
                  prelaunch="attention/tma_launch.cpp.j2" if tma else None)
