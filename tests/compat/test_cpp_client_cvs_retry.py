"""The official C++ client 2.1.0 (``rocketmq-python-cvs==2.1.0.3``): a PushConsumer whose
listener fails one message gets it again from ``%RETRY%group``; one that fails it every time
sees it maxReconsumeTimes + 1 times, and then it lies in ``%DLQ%group``.

The client offers no way to lower its max reconsume times (16) through the Python API (the C
API has no setter), so this module's broker makes every delay level 1 s (``messageDelayLevel``
in broker.conf), and the 17 deliveries take about 20 s."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orbitmq.common import MessageExt, decode_messages
from orbitmq.common import message_const as mc
from orbitmq.common.topic import dlq_topic, retry_topic
from orbitmq.protocol import ResponseCode
from orbitmq.remoting import RemotingClient
from tests.compat.conftest import ClientRunner, OrbitMQ
from tests.compat.read_back import query
from tests.component.broker.conftest import pull_request

pytestmark = pytest.mark.timeout(600)

MAX_RECONSUME_TIMES = 16  # the C++ client's, sent in CONSUMER_SEND_MSG_BACK
DLQ_TOPIC_GROUP = "cpp-dlq-cg"


@pytest.fixture(scope="module")
def broker_conf() -> str:
    return "messageDelayLevel=" + " ".join(["1s"] * 18) + "\n"


TOPIC = "CppCvsRetryTopic"
GROUP = "cpp-retry-cg"
COUNT = 4
FAILED_BODY = "body-2"


async def pull_all(orbitmq: OrbitMQ, topic: str) -> list[MessageExt]:
    """Every message in queue 0 of ``topic`` (a retry topic has one queue)."""
    client = RemotingClient(connect_timeout_s=2.0)
    try:
        response = await client.invoke(orbitmq.broker, pull_request(topic, 0, group=GROUP), 5.0)
        assert response.code == ResponseCode.SUCCESS, (response.code, response.remark)
        return decode_messages(response.body)
    finally:
        await client.close()


def test_failed_message_is_redelivered_through_the_retry_topic(
    orbitmq: OrbitMQ, cpp_cvs: ClientRunner
) -> None:
    sent = cpp_cvs.run("cpp_producer.py", orbitmq.namesrv, TOPIC, "cpp-retry-pg", COUNT)
    assert [r["status"] for r in sent] == ["OK"] * COUNT
    failed_id = sent[int(FAILED_BODY.removeprefix("body-"))]["msg_id"]

    # Exits once every message was accepted, the refused one included (or 3 after 35 s).
    deliveries: list[dict[str, Any]] = cpp_cvs.run(
        "cpp_failing_consumer.py",
        orbitmq.namesrv,
        TOPIC,
        GROUP,
        COUNT,
        FAILED_BODY,
        35,
        timeout_s=45,
    )

    refused = [d for d in deliveries if d["failed"]]
    again = [d for d in deliveries if d["body"] == FAILED_BODY and not d["failed"]]
    assert [(d["msg_id"], d["reconsume_times"]) for d in refused] == [(failed_id, 0)]
    # Redelivered under the original topic, id, tag and keys, counted as one reconsumption.
    assert [
        (d["topic"], d["msg_id"], d["tags"], d["keys"], d["reconsume_times"]) for d in again
    ] == [(TOPIC, failed_id, "tag-0", "key-2", 1)]
    others = sorted(d["body"] for d in deliveries if d["body"] != FAILED_BODY)
    assert others == [f"body-{i}" for i in range(COUNT) if f"body-{i}" != FAILED_BODY]

    # The broker got it back with CONSUMER_SEND_MSG_BACK: it sits in the group's retry topic.
    [retried] = asyncio.run(pull_all(orbitmq, retry_topic(GROUP)))
    assert retried.body.decode() == FAILED_BODY
    assert retried.unique_key == failed_id
    assert retried.reconsume_times == 1
    assert retried.properties[mc.PROPERTY_RETRY_TOPIC] == TOPIC
    assert mc.PROPERTY_ORIGIN_MESSAGE_ID in retried.properties


def test_message_failed_every_time_goes_to_the_dead_letter_queue(
    orbitmq: OrbitMQ, cpp_cvs: ClientRunner
) -> None:
    topic = "CppCvsDlqTopic"
    sent = cpp_cvs.run("cpp_producer.py", orbitmq.namesrv, topic, "cpp-dlq-pg", 2)
    failed_id = sent[1]["msg_id"]

    args = (orbitmq.namesrv, topic, DLQ_TOPIC_GROUP, 2, "always:body-1", 120)
    with cpp_cvs.start("cpp_failing_consumer.py", *args) as running:
        dead = asyncio.run(wait_for_dead_letter(orbitmq, dlq_topic(DLQ_TOPIC_GROUP), "key-1"))
        deliveries = running.lines()

    refused = [d for d in deliveries if d["failed"]]
    assert [d["reconsume_times"] for d in refused] == list(range(MAX_RECONSUME_TIMES + 1))
    assert {(d["topic"], d["msg_id"], d["tags"], d["keys"]) for d in refused} == {
        (topic, failed_id, "tag-1", "key-1")
    }
    assert [d["body"] for d in deliveries if not d["failed"]] == ["body-0"]
    assert dead.body == b"body-1"
    assert dead.unique_key == failed_id
    assert dead.tags == "tag-1"
    assert dead.reconsume_times == MAX_RECONSUME_TIMES + 1
    assert dead.properties[mc.PROPERTY_RETRY_TOPIC] == topic
    assert mc.PROPERTY_ORIGIN_MESSAGE_ID in dead.properties


async def wait_for_dead_letter(orbitmq: OrbitMQ, topic: str, key: str) -> MessageExt:
    """The one message of ``topic`` indexed under ``key``, once it is there (60 s at most).

    A dead letter queue cannot be pulled (its permission is write only, as in RocketMQ); it is
    found by key, as a user finds it."""
    client = RemotingClient(connect_timeout_s=2.0)
    try:
        async with asyncio.timeout(60):
            while not (found := await query(client, orbitmq.broker, key, topic)):
                await asyncio.sleep(0.2)
        [message] = found
        return message
    finally:
        await client.close()
