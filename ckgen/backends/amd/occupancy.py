"""Occupancy (waves per SIMD) of an AMD kernel from its resources, by the hardware's allocation rules.

Every number comes from the :class:`~ckgen.ir.target.Target` (sources in ckgen/targets/amd.py,
[occ] and [llvm]); nothing here tests an arch name. :func:`occupancy_limits` returns each limit:

- ``max_waves``: ``max_waves_per_simd`` (10 on gfx908, 8 with gfx90a's instructions).
- ``vgpr``: a unified file (gfx90a+) holds arch VGPRs rounded up to 4, then AGPRs; the wave's
  allocation is that sum (or the metadata's ``.vgpr_count`` when larger) rounded up to ``vgpr_granule``,
  and ``vgprs_per_simd_lane // allocation`` waves fit. Fewer registers than one granule never limit.
  Separate files (gfx908): arch VGPRs limit as above, and ``agpr`` limits the AGPR file the same way.
- ``sgpr``: ``sgprs`` is the metadata's ``.sgpr_count``, which includes VCC, FLAT_SCRATCH and XNACK_MASK
  (up to ``sgpr_extra_max`` on top of the ``sgprs`` a wave addresses). More than
  ``target.sgprs + sgpr_extra_max`` cannot run (0); otherwise ``sgprs_per_simd // roundup(sgprs, sgpr_granule)``.
- ``lds``: a workgroup's LDS rounded up to ``lds_granule_bytes``; ``lds_bytes_per_cu //`` that many
  workgroups per CU, at most ``max_workgroups_per_cu`` (barrier resources; single-wave workgroups take
  none: then at most ``max_waves_per_simd * simds_per_cu``), each of ``ceil(workgroup / wave_size)`` waves
  spread over ``simds_per_cu`` SIMDs (rounded up). More LDS than a workgroup may allocate: 0.

The occupancy is the smallest limit; ties name the hardware cap first (max_waves, vgpr, agpr, sgpr, lds).
This is what LLVM's ``computeOccupancy`` does (the ``Occupancy [waves/SIMD]`` of
``-Rpass-analysis=kernel-resource-usage``) except two hardware details LLVM leaves out: the SGPR
granule (LLVM steps at 80/88/100 SGPRs: 9 waves at 81-88 where the 16-SGPR blocks give 8; only gfx908
can run more than 8) and the LDS granule (equal for the LDS sizes of multiples of 512 bytes).
Not modelled: scratch, the workgroup granularity of wave slots (a workgroup of N waves needs its waves
on all SIMDs at once), and other kernels sharing the CU.
"""

from __future__ import annotations

from ckgen.ir.target import Target

LIMIT_ORDER = ("max_waves", "vgpr", "agpr", "sgpr", "lds")


def _roundup(x: int, g: int) -> int:
    return -(-x // g) * g


def _vgpr_waves(regs: int, granule: int, total: int, cap: int) -> int:
    if regs < granule:
        return cap
    return min(max(total // _roundup(regs, granule), 1), cap)


def occupancy_limits(target: Target, vgprs: int, agprs: int, vgpr_file: int, sgprs: int, lds_bytes: int,
                     workgroup_size: int, model: str = "hardware") -> dict[str, int]:
    """Waves per SIMD each resource allows (see the module docstring). ``model="llvm"`` drops the two hardware
    details LLVM leaves out (SGPR blocks: LLVM's step table instead; the LDS granule), which reproduces clang's
    ``Occupancy [waves/SIMD]`` remark; ``"hardware"`` (the default) is what ``ckgen report`` shows."""
    if model not in ("hardware", "llvm"):
        raise ValueError(f"occupancy model {model!r}: hardware or llvm")
    cap = target.max_waves_per_simd
    g = max(1, target.vgpr_granule)
    limits: dict[str, int] = {"max_waves": cap}
    if target.unified_vgpr_file:
        used = max(_roundup(vgprs, 4) + agprs if agprs else vgprs, vgpr_file)
        limits["vgpr"] = _vgpr_waves(used, g, target.vgprs_per_simd_lane, cap)
    else:
        limits["vgpr"] = _vgpr_waves(max(vgprs, 0 if agprs else vgpr_file), g, target.vgprs_per_simd_lane, cap)
        if agprs:
            limits["agpr"] = _vgpr_waves(agprs, g, target.agprs, cap)
    if target.sgprs_per_simd:
        if sgprs > target.sgprs + target.sgpr_extra_max:
            limits["sgpr"] = 0
        elif sgprs and model == "llvm" and target.llvm_sgpr_steps:
            steps = [w for most, w in target.llvm_sgpr_steps if sgprs <= most]   # LLVM's step table
            limits["sgpr"] = min(steps[0] if steps else target.llvm_sgpr_floor, cap)
        elif sgprs:
            limits["sgpr"] = min(target.sgprs_per_simd // _roundup(sgprs, max(1, target.sgpr_granule)), cap)
    waves_per_group = -(-max(1, workgroup_size) // target.wave_size)
    if lds_bytes > target.lds_bytes:
        limits["lds"] = 0
    elif lds_bytes > 0:
        granule = 1 if model == "llvm" else max(1, target.lds_granule_bytes)
        groups = target.lds_bytes_per_cu // _roundup(lds_bytes, granule)
        most = target.max_workgroups_per_cu if waves_per_group > 1 else cap * target.simds_per_cu
        groups = min(groups, most)
        limits["lds"] = min(-(-(groups * waves_per_group) // target.simds_per_cu), cap)
    return limits


def occupancy(target: Target, vgprs: int, agprs: int, vgpr_file: int, sgprs: int, lds_bytes: int,
              workgroup_size: int, model: str = "hardware") -> tuple[int, str]:
    """Waves per SIMD and the binding limit (see the module docstring and :func:`occupancy_limits`)."""
    limits = occupancy_limits(target, vgprs, agprs, vgpr_file, sgprs, lds_bytes, workgroup_size, model)
    limiter = min(limits, key=lambda k: (limits[k], LIMIT_ORDER.index(k)))
    return limits[limiter], limiter


_REMARK_KEYS = {"Occupancy [waves/SIMD]": "occupancy", "TotalSGPRs": "sgprs", "SGPRs": "sgprs",
                "VGPRs": "vgprs", "AGPRs": "agprs", "LDS Size [bytes/block]": "lds_bytes",
                "SGPRs Spill": "sgpr_spills", "VGPRs Spill": "vgpr_spills", "ScratchSize [bytes/lane]": "scratch"}


def parse_resource_remarks(log: str) -> dict[str, dict[str, int]]:
    """clang's ``-Rpass-analysis=kernel-resource-usage`` remarks in a compile log: kernel name -> figures
    (``occupancy``, ``sgprs`` (clang-19 "SGPRs", clang-22 "TotalSGPRs"), ``vgprs``, ``agprs``, ``lds_bytes``,
    spills, ``scratch``)."""
    out: dict[str, dict[str, int]] = {}
    cur: dict[str, int] | None = None
    for line in log.splitlines():
        if "remark:" not in line:
            continue
        body = line.split("remark:", 1)[1].split("[-Rpass-analysis", 1)[0].strip()
        key, _, value = body.partition(":")
        key, value = key.strip(), value.strip()
        if key == "Function Name":
            cur = out.setdefault(value, {})
        elif cur is not None and key in _REMARK_KEYS and value.lstrip("-").isdigit():
            cur[_REMARK_KEYS[key]] = int(value)
    return out
