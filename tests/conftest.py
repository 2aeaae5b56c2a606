"""Shared pytest options. ``--update-golden`` rewrites generated/ instead of comparing against it."""

import pytest


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite golden files under generated/")


@pytest.fixture
def update_golden(request) -> bool:
    return request.config.getoption("--update-golden")
