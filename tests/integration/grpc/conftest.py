"""gRPC integration fixtures: an in-process cluster whose broker serves MessagingService
(``GrpcEndpoint`` on a free port) and a typed client over a real grpc.aio channel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc.aio
import pytest

from orbitmq.broker import BrokerController
from orbitmq.proxy import GrpcEndpoint, MessagingServiceStub
from orbitmq.testing import InProcessCluster


@dataclass
class GrpcCluster:
    """A running cluster, its first broker's gRPC endpoint and a stub connected to it."""

    cluster: InProcessCluster
    broker: BrokerController
    endpoint: GrpcEndpoint
    stub: MessagingServiceStub
    channel: grpc.aio.Channel


@pytest.fixture
async def grpc_cluster(tmp_path: Path) -> AsyncIterator[GrpcCluster]:
    async with InProcessCluster(tmp_path / "cluster") as cluster:
        broker = cluster.brokers[0]
        async with (
            GrpcEndpoint(broker, port=0) as endpoint,
            grpc.aio.insecure_channel(f"127.0.0.1:{endpoint.port}") as channel,
        ):
            yield GrpcCluster(cluster, broker, endpoint, MessagingServiceStub(channel), channel)
