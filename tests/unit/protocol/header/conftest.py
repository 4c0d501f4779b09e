"""Fixtures of the header tests."""

from __future__ import annotations

import pytest

from tests.unit.protocol.header.recordings import Exchange, load_exchanges


@pytest.fixture(scope="session")
def exchanges() -> list[Exchange]:
    """Every recorded request with its response, read once per test session."""
    return load_exchanges()
