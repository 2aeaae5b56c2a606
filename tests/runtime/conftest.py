"""Fixtures shared by the runtime tests."""

import pytest

from ckgen.runtime import api


@pytest.fixture
def binds(monkeypatch):
    """A one-element list counting the full bindings (``api.bind``) made while the test runs: a prepared call
    makes none."""
    count = [0]
    real = api.bind

    def counting(*a, **k):
        count[0] += 1
        return real(*a, **k)
    monkeypatch.setattr(api, "bind", counting)
    return count
