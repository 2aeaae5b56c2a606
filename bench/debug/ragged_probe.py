"""Which columns past N a Hopper-body GEMM writes when C is a view with a wider leading dimension (N not a
multiple of 8): prints the written positions past N and what was written there, for kernels of the fused GPU test."""
import sys

import torch

sys.path.insert(0, ".")
from ckgen.runtime.api import jit  # noqa: E402
from tests.runtime.test_nvidia_gemm_fused import SPEC, launched  # noqa: E402

SPEC += """
kernel fz_plain { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4 }
"""
for name in sys.argv[1:] or ["fz_plain", "fz_res"]:
    k = jit(SPEC, kernel=name, target="sm_90")
    M, N, K = 130, 203, 136
    ld = 216
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(N, K, device="cuda", generator=g).to(torch.bfloat16).t()
    base = torch.full((M, ld), float("nan"), device="cuda", dtype=torch.bfloat16)
    c = base[:, :N]
    args = dict(A=a, B=b, C=c)
    if "res" in name:
        args["residual"] = torch.zeros(M, ld, device="cuda", dtype=torch.bfloat16)[:, :N]
    ran = launched(lambda k=k, args=args: k(**args))
    past = ~torch.isnan(base[:, N:])
    rows, cols = torch.nonzero(past, as_tuple=True)
    print(name, sorted(ran), "written past N:", int(past.sum()), "rows", rows.unique()[:10].tolist(),
          "cols", (cols + N).unique()[:16].tolist(), "values", base[:, N:][past][:8].float().tolist(), flush=True)
    print("  data_ptr c", hex(c.data_ptr()), "stride", c.stride(), "inside ok:", bool(torch.isfinite(c).all()))

# K not a multiple of 8 inside aligned leading dimensions, NaN in the padding: does the Hopper body's TMA load
# read the padding (a NaN result) or zero-fill past K?
k = jit(SPEC, kernel="fz_plain", target="sm_90")
M, N, K, ldk = 130, 200, 99, 112
g = torch.Generator(device="cuda").manual_seed(1)
abase = torch.full((M, ldk), float("nan"), device="cuda", dtype=torch.bfloat16)
bbase = torch.full((N, ldk), float("nan"), device="cuda", dtype=torch.bfloat16)
abase[:, :K] = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
bbase[:, :K] = torch.randn(N, K, device="cuda", generator=g).to(torch.bfloat16)
a, b = abase[:, :K], bbase[:, :K].t()
c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
ran = launched(lambda: k(A=a, B=b, C=c))
want = a.double() @ b.double()
err = (torch.linalg.norm(c.double() - want) / torch.linalg.norm(want)).item()
print("K tail", sorted(x for x in ran if x.startswith("fz")), "finite:", bool(torch.isfinite(c).all()), "rel err", err)
