"""The official RocketMQ 5 Python client (``rocketmq-python-client==5.1.2``, gRPC), unchanged,
in its own virtualenv, against ``orbitmq start``'s gRPC endpoint: its Producer sends normal,
FIFO (message group) and delay (delivery timestamp) messages; each is read back through
OrbitMQ's remoting protocol with body, tag, keys, message id and user properties intact (the
messages cross protocols), FIFO groups in order on one queue each, delayed ones not before
their time."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio
import pytest

from orbitmq.common import MessageExt
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import CreateTopicRequestHeader
from orbitmq.proxy import MessagingServiceStub
from orbitmq.proxy.v2 import service_pb2 as pb
from orbitmq.remoting import RemotingClient
from tests.compat.conftest import ClientRunner, OrbitMQ
from tests.compat.read_back import check_read_back, pull_queue
from tests.eventually import eventually, stays

# The first run makes the client's virtualenv (a pip install) inside the first test's time.
pytestmark = pytest.mark.timeout(600)

COUNT = 6
DELAY_S = 3


async def _no_commands() -> AsyncIterator[pb.TelemetryCommand]:
    return
    yield  # an async generator that sends nothing


async def _serves_telemetry(endpoint: str) -> bool:
    async with grpc.aio.insecure_channel(endpoint) as channel:
        try:
            async for _ in MessagingServiceStub(channel).Telemetry(_no_commands(), timeout=5):
                pass
        except grpc.aio.AioRpcError as exc:
            return exc.code() != grpc.StatusCode.UNIMPLEMENTED
    return True


@pytest.fixture(scope="module")
def endpoint(orbitmq: OrbitMQ) -> str:
    """The gRPC endpoint, once it serves Telemetry: the 5.x clients wait for their settings
    there before anything else (the endpoint without it cannot serve them at all)."""
    assert orbitmq.grpc, "orbitmq start printed no gRPC endpoint"
    if not asyncio.run(_serves_telemetry(orbitmq.grpc)):
        pytest.skip("this build's gRPC endpoint does not serve Telemetry")
    return orbitmq.grpc


def create_topic(orbitmq: OrbitMQ, topic: str, message_type: str, queues: int = 4) -> None:
    """UPDATE_AND_CREATE_TOPIC as RocketMQ 5's admin sends it, with the topic's type."""
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=queues,
        write_queue_nums=queues,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        order=False,
    )
    fields = {**header.to_ext_fields(), "attributes": f"+message.type={message_type}"}

    async def call() -> None:
        client = RemotingClient(connect_timeout_s=2.0)
        try:
            request = RemotingCommand.create_request(RequestCode.UPDATE_AND_CREATE_TOPIC, fields)
            response = await client.invoke(orbitmq.broker, request, 5.0)
            assert response.code == ResponseCode.SUCCESS, response.remark
        finally:
            await client.close()

    asyncio.run(call())


def as_read_back(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The client's receipts in ``check_read_back``'s terms (its message id is UNIQ_KEY)."""
    return [{"msg_id": line["message_id"], "offset": line["offset"]} for line in lines]


def test_producer_normal_messages_cross_to_remoting(
    orbitmq: OrbitMQ, endpoint: str, python_5x: ClientRunner
) -> None:
    create_topic(orbitmq, "Py5NormalTopic", "NORMAL")
    lines = python_5x.run("python5_producer.py", endpoint, "Py5NormalTopic", COUNT, "normal")
    assert [line["i"] for line in lines] == list(range(COUNT))
    check_read_back(orbitmq, "Py5NormalTopic", COUNT, as_read_back(lines))


def test_producer_fifo_groups_keep_one_queue_in_order(
    orbitmq: OrbitMQ, endpoint: str, python_5x: ClientRunner
) -> None:
    create_topic(orbitmq, "Py5FifoTopic", "FIFO")
    lines = python_5x.run("python5_producer.py", endpoint, "Py5FifoTopic", COUNT, "fifo")
    found = check_read_back(orbitmq, "Py5FifoTopic", COUNT, as_read_back(lines))
    by_group: dict[str, list[MessageExt]] = defaultdict(list)
    for message in sorted(found.pulled, key=lambda m: m.queue_offset):
        by_group[message.properties["__SHARDINGKEY"]].append(message)
    assert sorted(by_group) == ["group-0", "group-1"]
    for group, messages in by_group.items():
        assert len({m.queue_id for m in messages}) == 1, group
        seqs = [int(m.properties["seq"]) for m in messages]
        assert seqs == sorted(seqs), group


def test_producer_delay_message_arrives_after_its_time(
    orbitmq: OrbitMQ, endpoint: str, python_5x: ClientRunner
) -> None:
    create_topic(orbitmq, "Py5DelayTopic", "DELAY", queues=1)
    [line] = python_5x.run("python5_producer.py", endpoint, "Py5DelayTopic", 1, "delay", DELAY_S)

    async def pull() -> list[MessageExt]:
        client = RemotingClient(connect_timeout_s=2.0)
        try:
            return await pull_queue(client, orbitmq.broker, "Py5DelayTopic", 0)
        finally:
            await client.close()

    # Not there before its delivery time (half a second of slack for clocks); there after.
    before_s = (line["deliver_ms"] - 500) / 1000 - time.time()
    if before_s > 0:
        stays(lambda: asyncio.run(pull()) == [], before_s, 0.2, what="nothing before the time")
    [message] = eventually(lambda: asyncio.run(pull()), 30, 0.2, what="the delayed message")
    assert message.body == b"body-0"
    assert message.unique_key == line["message_id"]
    assert int(message.properties["TIMER_DELIVER_MS"]) == line["deliver_ms"]
