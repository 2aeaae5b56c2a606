"""Rung 2 for the attention bodies: every case runs on the CPU emulator against a float64 numpy reference.

AMD cases (cases/*.hip) run as their first arch (wave64, that arch's MFMA layouts); NVIDIA cases
(cases/*.cu) run as warps of 32 with mma.sync / ldmatrix / cp.async emulated (ckgen/emu/nv.h), the
cp.async copies landing only at the cp.async.wait that completes them. Inputs are random; O and LSE are
poisoned (0xFF bytes) before each run and every element outside the rows written must keep the poison.
Each array is registered with the emulator at its exact extent: any access outside Q, K, V, O, LSE or
the cu_seqlens is a fault, and so is an LDS race. Checked: O's relative norm error (per dtype), rows
that see no key (O exactly 0, LSE -inf), LSE's absolute error.
"""

from __future__ import annotations

import ctypes
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.ops.attention.harness import (
    AMD_CASES,
    NV_CASES,
    Case,
    Scenario,
    check,
    emu_build,
    emu_group,
    make_problem,
    run_emu,
)

S = Scenario
# Scenarios per case (the case fixes dtype, head dim, mask, varlen and GQA). Lengths 1, 17, 129 and 1000
# for q and k, q shorter and longer than k, empty sequences, BSHD / BHSD / padded / unaligned strides.
SCENARIOS: dict[str, list[Scenario]] = {
    "amd_f16_d128_none": [
        S((1,), (1,)), S((17,), (129,), heads_q=4, heads_kv=2, layout="bhsd"), S((129,), (17,), layout="bshd_odd"),
        S((1000,), (1000,), heads_q=1, heads_kv=1), S((5,), (0,)), S((33,), (70,), layout="bshd_pad", scale_mul=6.0)],
    "amd_bf16_d64_causal": [
        S((129,), (1000,), heads_q=4, heads_kv=1), S((1000,), (129,), layout="bhsd"), S((17,), (17,)),
        S((1,), (17,)), S((17,), (1,), layout="bshd_odd")],
    "amd_f16_d64_window_16x16": [
        S((129,), (300,), heads_q=4, heads_kv=1, window=(16, 3)), S((300,), (129,), layout="bhsd", window=(-1, 5)),
        S((100,), (100,), window=(0, 0)), S((100,), (70,), window=(3, -1)), S((17,), (1000,), window=(40, 40))],
    "amd_bf16_d128_varlen_causal": [
        S((17, 0, 129, 1), (129, 5, 17, 1), heads_q=4, heads_kv=2), S((300, 64), (64, 300), layout="bshd_pad"),
        S((1000, 1), (1, 1000), heads_q=2, heads_kv=1, layout="bshd_odd")],
    "amd_f16_d256_causal_1buf": [
        S((129,), (200,)), S((70,), (17,), layout="bhsd", heads_q=1, heads_kv=1), S((1,), (1,))],
    "amd_bf16_d128_gfx950": [
        S((17, 0, 129, 1), (129, 5, 17, 1), heads_q=4, heads_kv=2, window=(20, 0)),
        S((300, 64), (64, 300), window=(-1, 7))],
    "amd_f16_d128_gfx950_16x16x32": [
        S((129,), (300,), heads_q=4, heads_kv=1), S((300,), (129,), layout="bhsd", scale_mul=8.0)],
    "nv_bf16_d128_w8": [
        S((1,), (1,)), S((17,), (129,), heads_q=4, heads_kv=2, layout="bhsd"), S((129,), (17,), layout="bshd_odd"),
        S((1000,), (300,), heads_q=1, heads_kv=1), S((5,), (0,)), S((33,), (200,), layout="bshd_pad", scale_mul=8.0)],
    "nv_bf16_d128_w4_causal": [
        S((129,), (300,), heads_q=4, heads_kv=2), S((300,), (129,), layout="bhsd"), S((17,), (17,), layout="bshd_odd"),
        S((1,), (1000,))],
    "nv_f16_d64_window_varlen": [
        S((17, 0, 129, 1), (129, 5, 17, 1), heads_q=4, heads_kv=2, window=(20, 3)),
        S((300, 64), (64, 300), window=(-1, 7), layout="bshd_odd"), S((200,), (200,), window=(0, 0))],
    "nv_bf16_d256_causal_s1": [S((129,), (200,)), S((70,), (17,), layout="bhsd", heads_q=1, heads_kv=1)],
    "nv_f16_d128_s3_varlen_causal": [
        S((17, 0, 129, 1), (129, 5, 17, 1), heads_q=4, heads_kv=2), S((300, 64), (64, 300), layout="bshd_pad")],
}
ALL = AMD_CASES + NV_CASES
PARAMS = [(c, sc) for c in ALL for sc in SCENARIOS.get(c.name, [])]


# Planted faults: a copy of a body with one synchronization removed must be caught (an LDS race), which
# shows that the emulator checks what the pipelines rely on. (case, header, text removed or replaced)
DEVICE = Path(__file__).resolve().parents[3] / "ckgen" / "ops" / "attention" / "device"
PLANTED = {
    "amd_barrier": ("amd_f16_d128_none", "attention_fwd_amd.h",
                    "barrier();  // buffer cur^1 is complete; every wave is done reading buffer cur", ""),
    "nv_barrier": ("nv_bf16_d128_w8", "attention_fwd_nv.h",
                   "barrier();                              // ... for every thread; every warp is done with K[j]", ""),
    "nv_wait": ("nv_bf16_d128_w4_causal", "attention_fwd_nv.h",
                "nv::cp_async_wait<2 * kStages - 2>();  // V[j] landed", "nv::cp_async_wait<2 * kStages - 1>();"),
}


def planted_build(key: str, out: Path) -> Path:
    case_name, header, old, new = PLANTED[key]
    case = next(c for c in ALL if c.name == case_name)
    inc = out / f"planted_{key}"
    inc.mkdir()
    text = (DEVICE / header).read_text()
    assert text.count(old) == 1, f"planted fault {key}: the text to change is not in {header} exactly once"
    (inc / header).write_text(text.replace(old, new))
    return emu_build([case], out, includes=(inc,), tag=f"_{key}")


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> dict[str, object]:
    if not (shutil.which("clang++-19") or shutil.which("clang++")):
        pytest.skip("clang++ missing")
    out = tmp_path_factory.mktemp("attn_emu")
    groups: dict[str, list[Case]] = {}
    for c in ALL:
        groups.setdefault(emu_group(c), []).append(c)
    with ThreadPoolExecutor(max_workers=2) as pool:  # the largest builds first
        futs = {g: pool.submit(emu_build, cs, out) for g, cs in sorted(groups.items(), key=lambda kv: -len(kv[1]))}
        futs.update({f"planted:{k}": pool.submit(planted_build, k, out) for k in PLANTED})
        built: dict[str, object] = {}
        for name, f in futs.items():
            try:
                built[name] = ctypes.CDLL(str(f.result()))
            except (RuntimeError, AssertionError) as e:
                built[name] = e
    res = {c.name: built[emu_group(c)] for c in ALL}
    res.update({k: v for k, v in built.items() if k.startswith("planted:")})
    return res


def test_every_case_has_scenarios() -> None:
    assert sorted(SCENARIOS) == sorted(c.name for c in ALL)


@pytest.mark.parametrize("case,sc", PARAMS, ids=[f"{c.name}-{s.id}" for c, s in PARAMS])
def test_attention_on_emulator(libs, case: Case, sc: Scenario) -> None:
    lib = libs[case.name]
    if isinstance(lib, Exception):
        pytest.fail(f"emulator build of {case.name} failed:\n{lib}")
    pb = make_problem(case, sc)
    rc, fault = run_emu(lib, case, sc, pb)
    assert rc == 0, f"emulator status {rc}: {fault}"
    check(case, sc, pb)


def test_lse_may_be_null(libs) -> None:
    case = next(c for c in AMD_CASES if c.name == "amd_bf16_d64_causal")
    sc = Scenario((40,), (30,), lse=False)
    pb = make_problem(case, sc)
    rc, fault = run_emu(libs[case.name], case, sc, pb)
    assert rc == 0, fault
    check(case, sc, pb)


@pytest.mark.parametrize("key", sorted(PLANTED))
def test_planted_fault_is_caught(libs, key: str) -> None:
    lib = libs[f"planted:{key}"]
    if isinstance(lib, Exception):
        pytest.fail(f"build of planted fault {key} failed:\n{lib}")
    case = next(c for c in ALL if c.name == PLANTED[key][0])
    sc = Scenario((129,), (300,))
    pb = make_problem(case, sc)
    rc, fault = run_emu(lib, case, sc, pb)
    assert rc == 6, f"planted fault {key} not caught (status {rc})"
    assert "LDS race" in fault, fault
