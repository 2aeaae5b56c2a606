"""The C ABI and launch of ``op = attention_decode`` (serving decode: split-KV, GQA-packed rows, a paged cache).

Every decode kernel takes, in order (the device body's ABI, ``device/attention_decode_amd.h``)::

    Q, K, V, O, LSE, seqlens_k, block_table, seqlens_q, workspace, batch, heads, heads_kv, seqlen_q, seqlen_k,
    num_pages, max_pages, num_splits, q_batch_stride, q_seq_stride, q_head_stride, k_page_stride, k_seq_stride,
    k_head_stride, v_..., o_... (3 each), lse_batch_stride, lse_head_stride, bt_batch_stride, scale, stream

Q and O are ``[batch, seqlen_q, heads, d]`` (any strides but a contiguous head dim), LSE ``[batch, heads,
seqlen_q]`` f32. ``seqlens_k`` (int32 ``[batch]``) holds the keys of each sequence. Contiguous kernels read K and
V as ``[batch, seqlen_k, heads_kv, d]`` (``seqlen_k``: the capacity, ``k_page_stride`` the elements between
sequences; ``block_table``, ``num_pages`` and ``max_pages`` unused); paged kernels (``page_size = P``) read them
as ``[num_pages, P, heads_kv, d]`` with ``block_table`` (int32 ``[batch, max_pages]``): key j of sequence b is
row j % P of page ``block_table[b, j / P]`` (``seqlen_k`` unused). The query rows of a sequence are aligned to
the end of its keys (causal: query s sees keys j <= s + len - sq). ``seqlens_q`` (optional, int32 ``[batch]``)
gives each sequence its own sq in 0..seqlen_q (a batch mixing decode steps and prefill chunks); NULL: all
``seqlen_q``.

With ``rope``: the tensor ``cos_sin`` (f32 ``[rope_positions, rot]``) after ``seqlens_q``, the size
``rope_positions`` after ``num_splits`` and the stride ``cs_pos_stride`` after ``bt_batch_stride``; Q's token s of
sequence b is rotated at position ``seqlens_k[b] - sq + s``.

``num_splits`` (0, the default: chosen from the shape) is how many workgroups share one sequence's keys; the
host entry computes ``splits`` (:func:`splits_expr`) and passes it on as ``num_splits``; with more than one, every
split writes its normalized partial output and log-sum-exp to the workspace, and the host entry then launches the
kernel's ``<name>_combine`` (COMBINE_PRELAUNCH), whose workgroups merge one row each in split order
(deterministic) and leave the workspace zero-filled.
"""

from __future__ import annotations

import math

from ckgen.ir import expr as E
from ckgen.ir.abi import Abi, Arg, ArgKind
from ckgen.ir.plan import GridDim, Launch
from ckgen.ir.spec import KernelSpec
from ckgen.ir.types import DType
from ckgen.ops.attention.abi import SCALE_BOUNDS

T, S, ST, SC = ArgKind.TENSOR, ArgKind.SIZE, ArgKind.STRIDE, ArgKind.SCALAR
#: the most workgroups that share one sequence's keys (the override ``num_splits`` included)
MAX_SPLITS = 256
#: an automatic split gives one sequence's KV head (and row tile) at most 1 / SPLIT_SHARE of the workgroup slots,
#: unless its cache gives every split LONG_SPLIT_TILES K/V tiles or more: what a split costs grows with the count (the
#: empty splits' workgroups and the combine's reads: at MQA 32/1 b1 a one-tile step took 8.0 / 9.9 / 17.0 us at 32 /
#: 66 / 128 splits on an H100), past what more parallel streams of the cache repay, except on long caches. Chosen on
#: an H100 (132 SMs x 2 slots: 66 splits, more from 536 tiles, 34241 keys of 64-key tiles) from split sweeps of
#: MQA 32/1, GQA 32/8, 64/1, 12/2, 16/1, 12/1, 24/3, 48/1, 8/1 and 28/4 at batch 1, 4096-100000 keys
#: (bench/runs/2026-12-07_h100_decode_splits_mqa.txt, 2026-12-07b_h100_decode_splits_rule.txt, _splits_share.txt) and
#: MQA 32/1 at 131072 keys (2026-12-07b_h100_decode_mqa_share.txt: the quarter alone, 66 splits, read the cache at
#: 50% of the copy bandwidth against 60% at 132); the former rule (one K/V tile per split, up to every slot) took
#: 128-132 splits at MQA 32/1 8192 keys: 17.9 us against 11.3 at 66. Long caches stop at 1 / LONG_SPLIT_SHARE of
#: the slots: on cases no rule was chosen on (2026-12-07c_h100_decode_splits_final_rule.txt) 256 splits ran slowest of
#: 66-256 in all seven, e.g. 16/1 at 131072 keys 50.5 us against 36.6 at 132, the count it now takes
SPLIT_SHARE = 4
LONG_SPLIT_TILES = 8
LONG_SPLIT_SHARE = 2
#: the most workgroups per CU (SM) the automatic split aims at (fewer when the LDS lets fewer share one). Both
#: chosen on the H200 with the combine kernel (bench/debug/decode_splits.py on GQA 32/8 d128 batch 1-8 with
#: 512-8192 keys and MQA 32/1 b1 x 32768, b8 x 8192: bench/runs/2026-12-04_decode_small_splits.txt and
#: 2026-12-04_decode_splits_combine_kernel.txt); 4 and 4 while the last workgroup merged the splits one by one
MAX_WORKGROUPS_PER_CU = 2
#: threads of the combine kernel per 4 columns of a row, each taking every COMBINE_LANES-th split (Cfg::kCombineLanes)
COMBINE_LANES = 8
#: the host code that launches the split kernel and then its combine kernel (templates of ckgen/ops/); with the
#: Hopper prefill entry the host code that tries it first, then the former
COMBINE_PRELAUNCH = "attention/decode_launch.cpp.j2"
PREFILL_PRELAUNCH = "attention/decode_tma_launch.cpp.j2"


def abi(spec: KernelSpec) -> Abi:
    a, page = spec.params.attn, spec.params.page_size
    d, dt, paged = a.head_dim, a.dtype, page > 0
    kv_dims = ("num_pages", page, "heads_kv", d) if paged else ("batch", "seqlen_k", "heads_kv", d)
    kv_doc = f"[num_pages, {page}, heads_kv, d] (pages)" if paged else "[batch, seqlen_k, heads_kv, d]"

    def tensor(name: str, dims, role: str = "in", doc: str = "") -> Arg:
        p = name.lower()
        strides = (f"{p}_page_stride" if name in "KV" else f"{p}_batch_stride", f"{p}_seq_stride", f"{p}_head_stride", 1)
        return Arg(name, T, doc=doc, dtype=dt, role=role, dims=dims, strides=strides)

    q_dims = ("batch", "seqlen_q", "heads", d)
    args = [
        tensor("Q", q_dims, doc="queries [batch, seqlen_q, heads, d]"),
        tensor("K", kv_dims, doc=f"keys {kv_doc}"),
        tensor("V", kv_dims, doc=f"values {kv_doc}"),
        tensor("O", q_dims, role="out", doc="output [batch, seqlen_q, heads, d]"),
        Arg("LSE", T, doc="log-sum-exp per query row, f32 [batch, heads, seqlen_q] (-inf for rows that see no key)",
            dtype=DType.F32, role="out", dims=("batch", "heads", "seqlen_q"),
            strides=("lse_batch_stride", "lse_head_stride", 1)),
        Arg("seqlens_k", T, dtype=DType.I32, dims=("batch",), strides=(1,),
            value_range=(0, E.emin(capacity_expr(page), "rope_positions") if a.rope else capacity_expr(page)),
            doc="int32 [batch]: keys of each sequence, 0.." + ("max_pages * page_size" if paged else "seqlen_k")
            + (" and at most rope_positions (with rope also >= the sequence's query tokens: positions "
               "seqlens_k[b] - sq + token)" if a.rope else "")
            + " (host arrays: checked by the binding; on the device a length past it traps)"),
        Arg("block_table", T, dtype=DType.I32, dims=("batch", "max_pages"), strides=("bt_batch_stride", 1),
            unused=not paged, doc="int32 [batch, max_pages]: the page of each block of page_size keys, any order "
            "(ids checked on the device: one outside 0..num_pages-1 traps)" if paged
            else "unused: pass NULL (contiguous K/V)"),
        Arg("seqlens_q", T, dtype=DType.I32, dims=("batch",), strides=(1,), optional=True,
            value_range=(0, "seqlen_q"),
            doc="int32 [batch], optional: query tokens of each sequence, 0..seqlen_q (NULL: every sequence has "
            "seqlen_q; O and LSE rows past a sequence's are not written; checked on the device)"),
        *([Arg("cos_sin", T, dtype=DType.F32, dims=("rope_positions", a.rope.dim), strides=("cs_pos_stride", 1),
               doc=f"f32 [rope_positions, {a.rope.dim}]: per position the {a.rope.dim // 2} cosines, then the sines "
               "(vLLM's cos_sin_cache; ckgen.rope_table builds it)")] if a.rope else []),
        Arg("workspace", ArgKind.WORKSPACE, doc="split-KV partials (zero-filled; left zero-filled)"),
        Arg("batch", S, doc="sequences"),
        Arg("heads", S, doc="query heads"),
        Arg("heads_kv", S, doc="key/value heads (heads is a multiple)"),
        Arg("seqlen_q", S, doc="query tokens per sequence (decode: 1..16; more run as more row tiles)"),
        Arg("seqlen_k", S, default=0, doc="keys each sequence can hold (contiguous K/V)" if not paged
            else "unused (paged)"),
        Arg("num_pages", S, default=0, doc="pages of the cache" if paged else "unused (contiguous)"),
        Arg("max_pages", S, default=0, doc="pages per sequence in block_table" if paged else "unused (contiguous)"),
        Arg("num_splits", S, default=0, at_most=MAX_SPLITS,
            doc=f"workgroups per sequence's keys (0: chosen from the shape; 1..{MAX_SPLITS})"),
    ]
    if a.rope:
        args.append(Arg("rope_positions", S, default=0, doc="rows of cos_sin (positions past them trap)"))
    for p in ("q", "k", "v", "o"):
        first = "page" if p in "kv" else "batch"
        what = {"page": "pages" if paged else "sequences", "batch": "sequences"}[first]
        for w, doc in ((first, what), ("seq", "tokens"), ("head", "heads")):
            args.append(Arg(f"{p}_{w}_stride", ST, doc=f"elements between {doc} of {p.upper()}"))
    args += [Arg("lse_batch_stride", ST, doc="elements between sequences of LSE"),
             Arg("lse_head_stride", ST, doc="elements between heads of LSE"),
             Arg("bt_batch_stride", ST, doc="elements between sequences of block_table" if paged else "unused"),
             *([Arg("cs_pos_stride", ST, doc="elements between positions of cos_sin")] if a.rope else []),
             Arg("scale", SC, doc=f"softmax scale, finite and > 0 (default 1/sqrt({d}))", default=1.0 / math.sqrt(d),
                 bounds=SCALE_BOUNDS)]
    return Abi(tuple(args), empty_if=("batch", "heads", "seqlen_q"), divides=(("heads_kv", "heads"),),
               doc=f"decode attention ({a.mask} mask): O = softmax(scale * Q.K^T) . V and LSE, split over the keys")


def row_tiles_expr(block_m: int) -> E.Expr:
    """Row tiles per (sequence, KV head): the group's query heads x seqlen_q rows, block_m per workgroup."""
    return E.cdiv(E.mul(E.div("heads", E.emax(1, "heads_kv")), "seqlen_q"), block_m)


def capacity_expr(page_size: int) -> E.Expr:
    return E.mul("max_pages", page_size) if page_size else "seqlen_k"


def workers(cus: int, lds_bytes_per_cu: int, lds_bytes: int) -> int:
    """Workgroups the target runs at once: CUs x as many as share one CU by LDS (1..MAX_WORKGROUPS_PER_CU)."""
    return cus * max(1, min(MAX_WORKGROUPS_PER_CU, lds_bytes_per_cu // max(1, lds_bytes)))


def splits_expr(block_m: int, block_n: int, page_size: int, workers: int) -> E.Expr:
    """``num_splits`` when given, else enough workgroups to fill ``workers`` slots over batch x heads_kv x row
    tiles, at most one per K/V tile of the capacity and at most ``workers / SPLIT_SHARE`` or one per LONG_SPLIT_TILES
    tiles up to ``workers / LONG_SPLIT_SHARE``, whichever is more; in 1..MAX_SPLITS."""
    items = E.emax(1, E.mul("batch", "heads_kv", row_tiles_expr(block_m)))
    ktiles = E.cdiv(capacity_expr(page_size), block_n)
    long_cache = E.emin(workers // LONG_SPLIT_SHARE, E.div(ktiles, LONG_SPLIT_TILES))
    share = E.emax(max(1, workers // SPLIT_SHARE), long_cache)
    auto = E.emin(E.div(workers, items), ktiles, share)
    chosen = E.add("num_splits", E.mul(E.add(1, E.mul(-1, E.emin("num_splits", 1))), auto))  # given, else auto
    return E.emax(1, E.emin(MAX_SPLITS, chosen))


def combine_threads(head_dim: int) -> int:
    """The combine kernel's workgroup: COMBINE_LANES threads per 4 columns of one row."""
    return head_dim // 4 * COMBINE_LANES


def launch(spec: KernelSpec, threads: int, block_m: int, block_n: int, workers: int, tma: bool = False) -> Launch:
    """Grid x = row tiles x splits (x = tile * splits + split), y = heads_kv, z = batch; the workspace holds, when
    splits > 1, per row tile and split block_m rows of head_dim normalized f32 outputs, then per row tile and split
    block_m f32 LSEs. ``combine_blocks`` and ``combine_threads``: the combine kernel's grid x (a workgroup per row)
    and workgroup (:func:`combine_threads`). With the Hopper prefill entry (``tma``) the host entry tries it first,
    once the split is chosen (its own grid: ``device/attention_decode_sm90.h``)."""
    d, page = spec.params.attn.head_dim, spec.params.page_size
    tiles = E.mul("batch", "heads_kv", row_tiles_expr(block_m))
    multi = E.emin(1, E.add("splits", -1))  # 0 when one workgroup takes all the keys: no workspace
    ws = E.mul(multi, E.mul(tiles, "splits", block_m * (d + 1) * 4))
    values = (("splits", splits_expr(block_m, block_n, page, workers)),
              ("combine_blocks", E.mul(row_tiles_expr(block_m), block_m)),
              ("combine_threads", combine_threads(d)))
    return Launch(threads=threads, values=values, prelaunch=PREFILL_PRELAUNCH if tma else COMBINE_PRELAUNCH,
                  grid=(GridDim(expr=E.mul(row_tiles_expr(block_m), "splits")), GridDim("heads_kv", split=False),
                        GridDim("batch", split=False)), workspace=ws)
