"""hip-python against the HIP runtime: releases made for one ROCm must match the runtime's major.minor; the
version-independent line (10+) loads any. No GPU needed."""

from __future__ import annotations

import pytest

from ckgen.backends.amd.hip_bindings import VERSION_INDEPENDENT_MAJOR, version_problem

ROCM_52 = 50221153   # HIP_VERSION of ROCm 5.2 (Debian's libamdhip64-5)
ROCM_64 = 60443483   # 6.4
ROCM_71 = 70151830   # 7.1


@pytest.mark.parametrize("package,runtime", [("6.4.1.552.39", ROCM_64), ("7.1.0.555.40", ROCM_71),
                                             ("10.0.0.0.1.2", ROCM_52), ("10.0.0.0.1.2", ROCM_71),
                                             (None, ROCM_64), ("6.4.1.552.39", None)])
def test_matching_or_unknown_versions_pass(package, runtime):
    assert version_problem(package, runtime) is None


@pytest.mark.parametrize("package,runtime,made_for,here", [("6.4.1.552.39", ROCM_71, "6.4", "7.1"),
                                                           ("7.2.2.562.43", ROCM_64, "7.2", "6.4"),
                                                           ("6.2.0.499.16", ROCM_52, "6.2", "5.2")])
def test_a_mismatch_says_what_to_install(package, runtime, made_for, here):
    message, hint = version_problem(package, runtime)
    assert f"hip-python {package} is made for ROCm {made_for}, but the HIP runtime here is {here}" in message
    major, minor = here.split(".")
    assert f"hip-python>={here},<{major}.{int(minor) + 1}" in hint
    assert f"hip-python>={VERSION_INDEPENDENT_MAJOR}" in hint


def test_the_installed_pair_is_accepted():
    hip = pytest.importorskip("hip")  # noqa: F841
    from ckgen.backends.amd.hip_bindings import _bindings

    _bindings()  # raises HipRuntimeUnavailable on a mismatch
