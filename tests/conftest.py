"""Shared pytest options. ``--update-golden`` rewrites generated/ instead of comparing against it. Every test runs
with ``CKGEN_POISON=1``: outputs the runtime allocates are poisoned on the prepared path too."""

import os

import pytest

os.environ.setdefault("CKGEN_POISON", "1")  # before any test reads ckgen.config.settings()


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite golden files under generated/")


@pytest.fixture
def update_golden(request) -> bool:
    return request.config.getoption("--update-golden")
