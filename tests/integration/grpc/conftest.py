"""gRPC integration fixtures: an in-process cluster whose broker serves MessagingService
(``GrpcEndpoint`` on a free port) and a typed client over a real grpc.aio channel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc.aio
import pytest

from orbitmq.broker import BrokerController
from orbitmq.protocol.body.topic import TopicConfig
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


#: The metadata every request of the official 5.x clients carries (x-mq-client-id...).
CLIENT_METADATA = (
    ("x-mq-client-id", "grpc-test-client@1"),
    ("x-mq-language", "PYTHON"),
    ("x-mq-client-version", "5.1.2"),
)


async def create_topic(
    broker: BrokerController,
    name: str,
    message_type: str = "NORMAL",
    *,
    queues: int = 4,
    perm: int = 6,
    read_queues: int | None = None,
) -> TopicConfig:
    """A topic as RocketMQ 5 admins create it (``+message.type=...``), registered with the
    name server."""
    config = TopicConfig(
        topic_name=name,
        read_queue_nums=queues if read_queues is None else read_queues,
        write_queue_nums=queues,
        perm=perm,
    )
    config.attributes = {"message.type": message_type}
    broker.topic_config_manager.update_topic_config(config)
    # Registered with the name server at once, so that remoting clients find its route.
    await broker.registration_service.register_now()
    return config
