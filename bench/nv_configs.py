"""The hand-written harness configs of bench/nv_kernels.cu, as data for the Python drivers.

Each entry: launcher name -> (A/B dtype, C dtype, A row-major, B row-major, C row-major, epilogue, beta,
tile M, tile N). ``epilogue`` is a tuple of op names (bias_col, bias_row, gelu, relu, silu).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HCfg:
    name: str
    dtype: str
    out: str
    a_row: bool
    b_row: bool
    c_row: bool
    epi: tuple[str, ...] = ()
    beta: float = 0.0
    perf: bool = False


def _c(name, dtype, out, a, b, c, epi=(), beta=0.0, perf=False):
    return HCfg(name, dtype, out, a, b, c, tuple(epi), beta, perf)


CONFIGS = [
    _c("bf16_rr_128x256x32_s3", "bf16", "bf16", True, True, True, perf=True),
    _c("bf16_rr_128x256x32_s4", "bf16", "bf16", True, True, True, perf=True),
    _c("bf16_rr_256x128x32_s3", "bf16", "bf16", True, True, True, perf=True),
    _c("bf16_rr_256x128x32_s4", "bf16", "bf16", True, True, True, perf=True),
    _c("bf16_rr_128x128x32_s4", "bf16", "bf16", True, True, True, perf=True),
    _c("bf16_rr_128x128x64_s3", "bf16", "bf16", True, True, True, perf=True),
    _c("bf16_rr_128x256x64_s3", "bf16", "bf16", True, True, True, perf=True),
    _c("bf16_rc_128x256x32_s4", "bf16", "bf16", True, False, True),
    _c("f16_rr_128x256x32_s3", "f16", "f16", True, True, True, perf=True),
    _c("f16_rr_128x256x32_s4", "f16", "f16", True, True, True, perf=True),
    _c("f16_rr_256x128x32_s3", "f16", "f16", True, True, True, perf=True),
    _c("f16_rr_256x128x32_s4", "f16", "f16", True, True, True, perf=True),
    _c("f16_rr_128x128x32_s4", "f16", "f16", True, True, True, perf=True),
    _c("f16_rr_128x256x64_s3", "f16", "f16", True, True, True, perf=True),
    _c("bf16_rr_128x256x32_s4_biasgelu", "bf16", "bf16", True, True, True, ("bias_col", "gelu")),
    _c("f16_rr_128x256x32_s4_biasgelu", "f16", "f16", True, True, True, ("bias_col", "gelu")),
    _c("bf16_rc_128x128x32_s3", "bf16", "bf16", True, False, True),
    _c("bf16_cr_128x128x32_s3", "bf16", "bf16", False, True, True),
    _c("bf16_cc_128x128x32_s3", "bf16", "bf16", False, False, True),
    _c("bf16_rr_128x128x32_s3_ccol", "bf16", "bf16", True, True, False),
    _c("f16_rr_64x64x16_s4", "f16", "f16", True, True, True),
    _c("f16_cc_64x64x32_s2_beta1", "f16", "f16", False, False, True, (), 1.0),
    _c("f16_rr_64x128x32_s3_biasrow_relu", "f16", "f16", True, True, True, ("bias_row", "relu")),
    _c("bf16_rc_64x64x64_s3_silu_f32out", "bf16", "f32", True, False, True, ("silu",)),
    _c("i8_rc_128x128x64_s3", "i8", "i32", True, False, True),
    _c("i8_rr_128x128x64_s3", "i8", "i32", True, True, True),
    _c("i8_cc_64x64x64_s3_i8out", "i8", "i8", False, False, True),
    _c("f32_rc_128x128x32_s3", "f32", "f32", True, False, True),
    _c("f32_rr_128x128x32_s3", "f32", "f32", True, True, True),
    _c("f32_cr_64x64x16_s3", "f32", "f32", False, True, False),
]

BY_NAME = {c.name: c for c in CONFIGS}
