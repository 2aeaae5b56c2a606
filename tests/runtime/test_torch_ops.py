"""ckgen callables as torch.library ops (ckgen.runtime.torch_ops): opcheck and torch.compile(fullgraph=True) of a
small model, on the emulator (CPU tensors) and, marked ``gpu``, on the cuda target. Needs torch."""

from __future__ import annotations

import shutil

import pytest

from ckgen.backends import emu
from ckgen.errors import CkgenError

torch = pytest.importorskip("torch")

SRC = """target gfx942
kernel tg { A = f16 row  B = f16 col  C = f32 row  tile = 64x64x32  waves = 2x2  epilogue = bias(col) }
kernel trms { op = rmsnorm x = f32 max_cols = 256 }
kernel tsm { op = softmax x = f32 scale = 0.5 max_cols = 256 }
kernel tbeta { A = f16 row  B = f16 col  C = f32 row  tile = 64x64x32  waves = 2x2  beta = 1.0 }
family tfam { A = f16 row  B = f16 col  C = f32 row  tile in [32x32x32]  waves = 1x2  schedule in [tile, splitk(2)] }
kernel tew { op = elementwise a = f32 b = f32 expr = silu(a) -> mul(b) }
"""

NV_SRC = SRC.replace("target gfx942", "target sm_90").replace("waves = 1x2", "waves = 2x2").replace(
    "tile in [32x32x32]", "tile in [64x64x32]").replace("tile = 64x64x32", "tile = 64x64x32  lds_buffers = 3")


def _ops(src, target):
    import ckgen
    from ckgen.runtime.torch_ops import torch_op

    return {n: torch_op(ckgen.jit(src, kernel=n, target=target)) for n in ("tg", "trms", "tsm", "tfam", "tew")}


def _model(ops):
    def model(a, b, bias, w):
        h = ops["tg"](a, b, bias)
        return ops["tew"](ops["trms"](ops["tsm"](h), w), ops["tfam"](a, b))
    return model


def _args(device):
    g = torch.Generator(device=device).manual_seed(0)
    a = (torch.rand(40, 48, generator=g, device=device) - 0.5).half()
    b = (torch.rand(24, 48, generator=g, device=device) - 0.5).half().t()
    bias = torch.rand(24, generator=g, device=device)
    w = torch.rand(24, generator=g, device=device) + 0.5
    return a, b, bias, w


def _check(ops, device):
    a, b, bias, w = _args(device)
    for name, args in [("tg", (a, b, bias)), ("trms", (a.float(), w[:1].expand(48).contiguous())),
                       ("tsm", (a.float(),)), ("tfam", (a, b)), ("tew", (a.float(), a.float() * 2))]:
        torch.library.opcheck(ops[name], args)
    ref = _model(ops)(a, b, bias, w)
    c = a.double() @ b.double() + bias.double()
    sm = torch.softmax(0.5 * c, -1)
    r = sm / torch.sqrt((sm ** 2).mean(-1, keepdim=True) + 1e-5) * w.double()
    want = r * torch.sigmoid(r) * (a.double() @ b.double())
    assert float((ref.double() - want).abs().max()) < 1e-3
    compiled = torch.compile(_model(ops), fullgraph=True, backend="aot_eager" if device == "cpu" else "inductor")
    assert float((compiled(a, b, bias, w) - ref).abs().max()) < 1e-5


@pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")
def test_ops_on_the_emulator():
    _check(_ops(SRC, "emu"), "cpu")


@pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")
def test_inout_kernels_are_refused():
    import ckgen
    from ckgen.runtime.torch_ops import torch_op

    with pytest.raises(CkgenError, match="inout"):
        torch_op(ckgen.jit(SRC, kernel="tbeta", target="emu"))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (the lent device)")
def test_ops_on_cuda():
    _check(_ops(NV_SRC, "cuda"), "cuda")
