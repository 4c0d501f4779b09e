"""The official RocketMQ 5 Python client (``rocketmq-python-client==5.1.2``), unchanged, in
its own virtualenv, against ``orbitmq start``'s gRPC endpoint (with recallMessageEnable):
FIFO consumption — its Producer sends two message groups to a FIFO topic, and its
PushConsumer (FIFO consumption, one failed delivery retried locally) and SimpleConsumer on
FIFO groups (consumeMessageOrderly=true) get every group's messages in order; and
``Producer.recall_message`` — a recalled delay message is never delivered, one due after it
is, and a bad handle is refused."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from typing import Any

import pytest

from orbitmq.client import AdminClient
from orbitmq.common import MessageExt
from orbitmq.protocol.body.subscription_group import SubscriptionGroupConfig
from orbitmq.remoting import RemotingClient
from tests.compat.conftest import ClientRunner, OrbitMQ
from tests.compat.read_back import pull_queue
from tests.compat.test_python5_client import _serves_telemetry, create_topic
from tests.eventually import eventually

pytestmark = pytest.mark.timeout(600)

COUNT = 6
DELAY_S = 3


@pytest.fixture(scope="module")
def broker_conf() -> str:
    return "recallMessageEnable=true\n"


@pytest.fixture(scope="module")
def endpoint(orbitmq: OrbitMQ) -> str:
    """The gRPC endpoint, once it serves Telemetry (as test_python5_client's)."""
    assert orbitmq.grpc, "orbitmq start printed no gRPC endpoint"
    if not asyncio.run(_serves_telemetry(orbitmq.grpc)):
        pytest.skip("this build's gRPC endpoint does not serve Telemetry")
    return orbitmq.grpc


def create_fifo_group(orbitmq: OrbitMQ, group: str) -> None:
    """A FIFO group as RocketMQ 5 admins make it (updateSubGroup -o true)."""

    async def call() -> None:
        async with AdminClient(namesrv_addr=orbitmq.namesrv) as admin:
            config = SubscriptionGroupConfig(group_name=group, consume_message_orderly=True)
            await admin.update_subscription_group(config)

    asyncio.run(call())


def in_group_order(lines: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Each message group's successful consumptions, as seq numbers in consumed order."""
    by_group: dict[str, list[int]] = defaultdict(list)
    for line in lines:
        if line["result"] == "SUCCESS":
            by_group[line["message_group"]].append(int(line["seq"]))
    return dict(by_group)


@pytest.mark.parametrize("mode", ["push", "simple"])
def test_fifo_consumer_gets_each_message_group_in_order(
    orbitmq: OrbitMQ, endpoint: str, python_5x: ClientRunner, mode: str
) -> None:
    topic, group = f"Py5FifoConsume{mode.title()}", f"py5-fifo-{mode}"
    create_topic(orbitmq, topic, "FIFO")
    create_fifo_group(orbitmq, group)
    sent = python_5x.run("python5_producer.py", endpoint, topic, COUNT, "fifo")
    assert len(sent) == COUNT
    lines = python_5x.run(
        "python5_fifo_consumer.py", endpoint, topic, group, COUNT, 90, mode, timeout_s=120
    )
    # python5_producer.py: message i is in group-{i % 2} with seq i.
    assert in_group_order(lines) == {
        "group-0": [i for i in range(COUNT) if i % 2 == 0],
        "group-1": [i for i in range(COUNT) if i % 2 == 1],
    }
    if mode == "push":
        # The failed one was retried (the client retries a FIFO message locally, counting
        # no new attempt) before anything else of its group was consumed.
        [failed] = [line for line in lines if line["result"] == "FAILURE"]
        same_group = [line for line in lines if line["message_group"] == failed["message_group"]]
        after = same_group[same_group.index(failed) + 1]
        assert (after["message_id"], after["result"]) == (failed["message_id"], "SUCCESS")


def test_recall_message_cancels_a_delay_message(
    orbitmq: OrbitMQ, endpoint: str, python_5x: ClientRunner
) -> None:
    create_topic(orbitmq, "Py5RecallTopic", "DELAY", queues=1)
    lines = python_5x.run("python5_recall.py", endpoint, "Py5RecallTopic", DELAY_S)
    recalled, kept, answer, bad = lines
    assert (recalled["body"], kept["body"]) == ("recalled", "kept")
    assert recalled["recall_handle"] and kept["recall_handle"]
    assert answer == {"recalled": recalled["message_id"]}
    assert "recall handle is invalid" in bad["bad_recall"]

    async def pull() -> list[MessageExt]:
        client = RemotingClient(connect_timeout_s=2.0)
        try:
            return await pull_queue(client, orbitmq.broker, "Py5RecallTopic", 0)
        finally:
            await client.close()

    # The kept one falls due a second after the recalled one: by then that one was due.
    [message] = eventually(lambda: asyncio.run(pull()), 30, 0.2, what="the kept message")
    assert message.body == b"kept"
    assert message.unique_key == kept["message_id"]
    assert time.time() * 1000 >= kept["deliver_ms"] - 500
