"""Where a residual / gated GEMM call dies on the device (steps printed, unbuffered)."""
import faulthandler
import sys

faulthandler.enable()
import torch  # noqa: E402

sys.path.insert(0, ".")
from tests.runtime.test_nvidia_gemm_fused import SPEC  # noqa: E402

name = sys.argv[1]
print("jit", name, flush=True)
from ckgen.runtime.api import jit  # noqa: E402

k = jit(SPEC, kernel=name, target="sm_90")
print("built", k.plan.name, flush=True)
g = torch.Generator(device="cuda").manual_seed(0)
M, N, K = 64, 64, 64
a = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
gated = "glu" in name
w = torch.randn((2 if gated else 1) * N, K, device="cuda", generator=g).to(torch.bfloat16)
args = [a, w.T]
if "res" in name:
    args.append(torch.randn(M, N, device="cuda", generator=g).to(torch.bfloat16))
print("call", k.signature(), flush=True)
out = k(*args)
print("called", flush=True)
torch.cuda.synchronize()
print("synced", out.shape, out.float().abs().mean().item(), flush=True)
