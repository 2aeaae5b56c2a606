"""Print the attention cases' resources: ``python3 -m tests.ops.attention.report`` (from the repository root).

AMD (rung 1): MFMA per K/V tile and inside the loop, VGPR / AGPR / SGPR, LDS, scratch, spills per arch.
NVIDIA (nvcc, ptxas -v): registers, spills, dynamic shared memory, mma.sync per tile and inside the loop.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.ops.attention import test_attention_amd_compile as amd
from tests.ops.attention import test_attention_nvcc as nvt
from tests.ops.attention.harness import AMD_CASES, NV_CASES


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        built = amd.build_all(Path(tmp))
        print(f"{'AMD case':32} {'arch':7} {'instruction':26} {'/tile':>5} {'loop':>5} {'VGPR':>5} {'AGPR':>5} "
              f"{'SGPR':>5} {'LDS':>7} {'scratch':>7} {'spills':>6}")
        for c in AMD_CASES:
            for a in c.arches:
                b = built[(c.name, a)]
                if not b.ok:
                    print(f"{c.name:32} {a:7} {b.log.splitlines()[0][:80]}")
                    continue
                f = amd.figures(b, c, a)
                print(f"{c.name:32} {a:7} {f['mfma']:26} {f['per_tile']:5} {f['mfma_in_loop']:5} {f['vgpr']:5} "
                      f"{f['agpr']:5} {f['sgpr']:5} {f['lds']:7} {f['scratch']:7} {f['spills']:6}")
    with tempfile.TemporaryDirectory() as tmp:
        built = nvt.build_all(Path(tmp))
        print(f"\n{'NVIDIA case':32} {'arch':6} {'regs':>5} {'spill st/ld':>11} {'stack':>5} {'smem (dyn)':>10} "
              f"{'mma/tile':>8} {'in loop':>7}")
        for c in NV_CASES:
            for a in c.arches:
                b = built[(c.name, a)]
                if not b.ok:
                    print(f"{c.name:32} {a:6} {b.log.splitlines()[0][:80]}")
                    continue
                f = nvt.figures(b, c, a)
                print(f"{c.name:32} {a:6} {f['registers']:5} {f['spill_stores']:5}/{f['spill_loads']:<5} "
                      f"{f['stack_bytes']:5} {f['smem']:10} {f['per_tile']:8} {f['mma_in_loop']:7}")


if __name__ == "__main__":
    main()
