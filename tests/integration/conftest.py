"""Integration: a name server, brokers and OrbitMQ's own clients in one process, on real
sockets and real files (``orbitmq.testing.InProcessCluster``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.testing import InProcessCluster


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with InProcessCluster(tmp_path / "cluster") as running:
        yield running


@pytest.fixture
async def two_brokers(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with InProcessCluster(tmp_path / "cluster", brokers=2) as running:
        yield running
