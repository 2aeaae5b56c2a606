"""The ``ckgen::attention`` torch.library custom op on the CPU (emulated kernels; skipped without torch): results
against torch's own attention, torch.compile tracing through it (fullgraph, the fake implementation giving the
shapes), torch.library.opcheck, packed varlen batches, and clear errors. The same op on CUDA tensors runs in
tests/runtime/test_nvidia_attention.py (GPU)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import ckgen  # noqa: E402
from ckgen.errors import CkgenError  # noqa: E402
from ckgen.ops.attention.torch_op import torch_attention  # noqa: E402

SPEC = """
kernel tq_bf16_d64_causal { op = attention  dtype = bf16  head_dim = 64  mask = causal  arch = gfx942 }
kernel tq_f16_d64_varlen_window { op = attention  dtype = f16  head_dim = 64  mask = window  window = [4, 0]
  varlen = true  arch = gfx942 }
"""


@pytest.fixture(scope="module")
def ops():
    return {n: torch_attention(ckgen.jit(SPEC, kernel=n, target="emu"))
            for n in ("tq_bf16_d64_causal", "tq_f16_d64_varlen_window")}


def sdpa(q, k, v, mask):
    """torch's attention in f32 on [B, S, H, D] tensors (GQA by repetition)."""
    g = q.shape[2] // k.shape[2]
    qt, kt, vt = q.transpose(1, 2).float(), k.transpose(1, 2).repeat_interleave(g, 1).float(), \
        v.transpose(1, 2).repeat_interleave(g, 1).float()
    return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask).transpose(1, 2)


def test_op_matches_torch_and_compiles(ops):
    attn = ops["tq_bf16_d64_causal"]
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 17, 4, 64, generator=gen).to(torch.bfloat16)
    k = torch.randn(2, 4, 29, 64, generator=gen).to(torch.bfloat16).transpose(1, 2)  # BHSD memory
    v = torch.randn(2, 29, 2, 64, generator=gen).to(torch.bfloat16)[:, :, :, :]
    k = k[:, :, :2]
    o, lse = attn(q, k, v)
    assert o.shape == q.shape and o.dtype == torch.bfloat16 and lse.shape == (2, 4, 17) and lse.dtype == torch.float32
    mask = torch.ones(17, 29, dtype=torch.bool).tril(29 - 17)  # causal, bottom-right aligned
    ref = sdpa(q, k, v, mask)
    assert float((o.float() - ref).norm() / ref.norm()) < 2.5e-2
    compiled = torch.compile(lambda q, k, v: attn(q, k, v)[0] * 2, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(q, k, v), o * 2)
    torch.library.opcheck(torch.ops.ckgen.attention.default, (attn.key, q, k, v, None, None, None, None, 0.1, None, None))


def test_varlen_op(ops):
    attn = ops["tq_f16_d64_varlen_window"]
    cq, ck = torch.tensor([0, 5, 17], dtype=torch.int32), torch.tensor([0, 9, 9], dtype=torch.int32)
    q, k, v = torch.randn(17, 4, 64).half(), torch.randn(9, 2, 64).half(), torch.randn(9, 2, 64).half()
    o, lse = attn(q, k, v, cu_seqlens_q=cq, cu_seqlens_k=ck, max_seqlen_q=12, max_seqlen_k=9, window=(2, 0))
    assert o.shape == (17, 4, 64) and lse.shape == (4, 17)
    assert torch.isneginf(lse[:, 5:]).all() and (o[5:] == 0).all()  # the second sequence has no keys
    i, j = torch.arange(5)[:, None], torch.arange(9)[None, :]
    mask = (j <= i + 4) & (j >= i + 4 - 2)
    ref = sdpa(q[None, :5], k[None], v[None], mask)[0]
    assert float((o[:5].float() - ref).norm() / ref.norm()) < 5e-3
    traced = torch.compile(lambda *a: attn(*a, cu_seqlens_q=cq, cu_seqlens_k=ck, max_seqlen_q=12, max_seqlen_k=9)[1],
                           fullgraph=True, backend="aot_eager")
    assert traced(q, k, v).shape == (4, 17)


def test_op_errors(ops):
    attn = ops["tq_bf16_d64_causal"]
    q = torch.randn(1, 8, 4, 64).to(torch.bfloat16)
    with pytest.raises(CkgenError, match="heads = 4 must be a multiple of heads_kv = 3"):
        attn(q, torch.randn(1, 8, 3, 64).to(torch.bfloat16), torch.randn(1, 8, 3, 64).to(torch.bfloat16))
    with pytest.raises(CkgenError, match="dtype"):
        attn(q.half(), q.half(), q.half())
    with pytest.raises(CkgenError, match="no kernel registered"):
        torch.ops.ckgen.attention("nope", q, q, q, None, None, None, None, None, None, None)
    with pytest.raises(CkgenError, match="takes an attention kernel"):
        torch_attention(object())
