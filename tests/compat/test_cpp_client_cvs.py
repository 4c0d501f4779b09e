"""The official C++ client 2.1.0 (``rocketmq-python-cvs==2.1.0.3``), unchanged, against
``orbitmq start``: every way it sends (sync, async, oneway, batch, orderly, with a delay level),
each read back and looked up through OrbitMQ's own protocol; and every way it consumes
(PushConsumer clustering, orderly and broadcasting; PullConsumer)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import pytest

from orbitmq.common import MessageQueue
from orbitmq.protocol import (
    LockBatchRequestBody,
    LockBatchResponseBody,
    RemotingCommand,
    RequestCode,
    ResponseCode,
)
from orbitmq.protocol.header import CreateTopicRequestHeader, SendMessageRequestHeader
from orbitmq.remoting import RemotingClient
from tests.compat.conftest import ClientRunner, OrbitMQ
from tests.compat.read_back import check_read_back, expected, expected_all, received

# The first run makes the client's virtualenv (a pip install) inside the first test's time.
pytestmark = pytest.mark.timeout(600)

COUNT = 10
#: ``clients/cpp_producer.py``'s batch size and number of order keys.
BATCH = 4
ORDER_KEYS = 3
MODES = ["sync", "async", "oneway", "batch", "orderly"]


def topic_of(mode: str) -> str:
    return f"CppCvs{mode.capitalize()}Topic"


@pytest.fixture(scope="module")
def sent(orbitmq: OrbitMQ, cpp_cvs: ClientRunner) -> dict[str, list[dict[str, Any]]]:
    """Each send mode's result lines, its COUNT messages sent to its own topic."""
    return {
        mode: cpp_cvs.run(
            "cpp_producer.py", orbitmq.namesrv, topic_of(mode), f"cpp-{mode}-pg", COUNT, mode
        )
        for mode in MODES
    }


@pytest.mark.parametrize("mode", ["sync", "async", "orderly"])
def test_each_send_is_acknowledged_and_read_back(
    orbitmq: OrbitMQ, sent: dict[str, list[dict[str, Any]]], mode: str
) -> None:
    results = sent[mode]
    if mode == "async":  # callbacks come in any order
        assert sorted(r["i"] for r in results) == list(range(COUNT))
        results = sorted(results, key=lambda r: int(r["i"]))
    assert [r["status"] for r in results] == ["OK"] * COUNT  # SendStatus.OK is SEND_OK
    assert len({r["msg_id"] for r in results}) == COUNT
    check_read_back(orbitmq, topic_of(mode), COUNT, results)


def test_send_oneway_stores_every_message(
    orbitmq: OrbitMQ, sent: dict[str, list[dict[str, Any]]]
) -> None:
    assert sent["oneway"] == [{"sent": COUNT}]
    check_read_back(orbitmq, topic_of("oneway"), COUNT)


def test_send_batch_is_one_request_per_batch(
    orbitmq: OrbitMQ, sent: dict[str, list[dict[str, Any]]]
) -> None:
    results = sent["batch"]
    assert [r["first"] for r in results] == list(range(0, COUNT, BATCH))
    assert [r["status"] for r in results] == ["OK"] * len(results)
    found = check_read_back(orbitmq, topic_of("batch"), COUNT)
    # A batch goes to one queue, its messages at consecutive offsets in their order.
    by_body = {m.body.decode(): m for m in found.pulled}
    for result in results:
        indexes = range(result["first"], min(result["first"] + BATCH, COUNT))
        batch = [by_body[expected(i)[0]] for i in indexes]
        assert len({m.queue_id for m in batch}) == 1
        offsets = [m.queue_offset for m in batch]
        assert offsets == list(range(offsets[0], offsets[0] + len(batch)))
        assert offsets[0] == result["offset"]


def test_send_orderly_keeps_each_order_key_in_one_queue_in_order(
    orbitmq: OrbitMQ, sent: dict[str, list[dict[str, Any]]]
) -> None:
    found = check_read_back(orbitmq, topic_of("orderly"), COUNT, sent["orderly"])
    by_body = {m.body.decode(): m for m in found.pulled}
    for key in range(ORDER_KEYS):
        ordered = [by_body[expected(i)[0]] for i in range(key, COUNT, ORDER_KEYS)]
        assert {m.queue_id for m in ordered} == {key}  # the wrapper's selector: arg % queues
        assert [m.queue_offset for m in ordered] == sorted(m.queue_offset for m in ordered)


def consume(
    runner: ClientRunner, orbitmq: OrbitMQ, topic: str, group: str, model: str = "clustering"
) -> list[dict[str, Any]]:
    # The consumer ends itself with os._exit once it has COUNT distinct messages (or exits 3
    # after 30 s): PushConsumer.shutdown() segfaults inside the client library.
    return runner.run(
        "cpp_push_consumer.py", orbitmq.namesrv, topic, group, COUNT, 30, model, timeout_s=60
    )


def test_push_consumer_clustering_receives_every_message(
    orbitmq: OrbitMQ, cpp_cvs: ClientRunner, sent: dict[str, list[dict[str, Any]]]
) -> None:
    lines = consume(cpp_cvs, orbitmq, topic_of("sync"), "cpp-cg")

    assert sorted(received(r) for r in lines) == expected_all(COUNT)
    assert {r["msg_id"] for r in lines} == {r["msg_id"] for r in sent["sync"]}
    assert all(r["topic"] == topic_of("sync") and r["reconsume_times"] == 0 for r in lines)


def test_push_consumer_orderly_consumes_each_queue_in_order(
    orbitmq: OrbitMQ, cpp_cvs: ClientRunner, sent: dict[str, list[dict[str, Any]]]
) -> None:
    lines = consume(cpp_cvs, orbitmq, topic_of("orderly"), "cpp-orderly-cg", "orderly")

    assert sorted(received(r) for r in lines) == expected_all(COUNT)
    per_queue: dict[int, list[int]] = defaultdict(list)
    for r in lines:
        per_queue[r["queue_id"]].append(r["queue_offset"])
    assert sorted(per_queue) == list(range(ORDER_KEYS))
    for offsets in per_queue.values():
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    # Per order key, in sending order: seq ascends within each queue.
    for key in range(ORDER_KEYS):
        seqs = [int(r["seq"]) for r in lines if r["queue_id"] == key]
        assert seqs == list(range(key, COUNT, ORDER_KEYS))


def test_push_consumer_orderly_locks_its_queues_at_the_broker(
    orbitmq: OrbitMQ, cpp_cvs: ClientRunner
) -> None:
    # While an orderly consumer holds the queues, another client cannot lock them.
    topic = topic_of("orderly")
    with cpp_cvs.start(
        "cpp_push_consumer.py", orbitmq.namesrv, topic, "cpp-lock-cg", COUNT, 60, "orderly"
    ) as running:
        running.wait_for(lambda lines: len(lines) >= COUNT, 30)
        locked = asyncio.run(lock_batch(orbitmq, topic, "cpp-lock-cg", ORDER_KEYS))
    assert locked == set()


async def lock_batch(orbitmq: OrbitMQ, topic: str, group: str, queues: int) -> set[int]:
    """The queue ids LOCK_BATCH_MQ grants a client id nobody else uses."""
    body = LockBatchRequestBody(
        consumer_group=group,
        client_id="127.0.0.1@intruder",
        mq_set={MessageQueue(topic, "broker-a", q) for q in range(queues)},
    )
    client = RemotingClient(connect_timeout_s=2.0)
    try:
        request = RemotingCommand.create_request(RequestCode.LOCK_BATCH_MQ, body=body.to_json())
        response = await client.invoke(orbitmq.broker, request, 5.0)
        assert response.code == ResponseCode.SUCCESS, response.remark
        return {mq.queue_id for mq in LockBatchResponseBody.from_json(response.body).lock_ok_mq_set}
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("expression", "indexes"), [("*", range(COUNT)), ("tag-0", range(0, COUNT, 2))]
)
def test_pull_consumer_reads_the_topic(
    orbitmq: OrbitMQ,
    cpp_cvs: ClientRunner,
    sent: dict[str, list[dict[str, Any]]],
    expression: str,
    indexes: range,
) -> None:
    lines = cpp_cvs.run(
        "cpp_pull_consumer.py", orbitmq.namesrv, topic_of("sync"), "cpp-pull-cg", expression
    )

    assert sorted(received(r) for r in lines) == sorted(expected(i) for i in indexes)
    ids = {r["msg_id"] for r in sent["sync"]}
    assert {r["msg_id"] for r in lines} <= ids


BROADCAST_TOPIC = "CppCvsBroadcastTopic"


async def create_topic(orbitmq: OrbitMQ, topic: str, queues: int) -> None:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=queues,
        write_queue_nums=queues,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        order=False,
    )
    await admin_call(orbitmq, RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())


async def send_warm_up(orbitmq: OrbitMQ, topic: str) -> None:
    """One message with body ``warm-up`` into queue 0, sent with OrbitMQ's own protocol."""
    header = SendMessageRequestHeader(
        producer_group="warm-up-pg",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=0,
        flag=0,
        properties="",
    )
    await admin_call(orbitmq, RequestCode.SEND_MESSAGE, header.to_ext_fields(), b"warm-up")


async def admin_call(
    orbitmq: OrbitMQ, code: int, ext_fields: dict[str, str], body: bytes | None = None
) -> None:
    client = RemotingClient(connect_timeout_s=2.0)
    try:
        request = RemotingCommand.create_request(code, ext_fields, body or b"")
        response = await client.invoke(orbitmq.broker, request, 5.0)
        assert response.code == ResponseCode.SUCCESS, response.remark
    finally:
        await client.close()


def test_push_consumer_broadcasting_delivers_everything_to_everyone(
    orbitmq: OrbitMQ, cpp_cvs: ClientRunner
) -> None:
    # A new broadcasting consumer starts at the queue's end (RocketMQ's CONSUME_FROM_LAST_OFFSET
    # with a local offset store): both consumers must be running before the real messages go.
    # Warm-up messages into the topic's single queue show when each one is.
    asyncio.run(create_topic(orbitmq, BROADCAST_TOPIC, 1))
    args = (orbitmq.namesrv, BROADCAST_TOPIC, "cpp-broadcast-cg", COUNT, 90, "broadcasting")
    with (
        cpp_cvs.start("cpp_push_consumer.py", *args) as one,
        cpp_cvs.start("cpp_push_consumer.py", *args) as two,
    ):
        for _ in range(60):
            asyncio.run(send_warm_up(orbitmq, BROADCAST_TOPIC))
            if one.lines() and two.lines():
                break
            asyncio.run(asyncio.sleep(0.5))
        cpp_cvs.run("cpp_producer.py", orbitmq.namesrv, BROADCAST_TOPIC, "cpp-bc-pg", COUNT)

        def has_all(lines: list[dict[str, Any]]) -> bool:
            count: int = sum(r["body"].startswith("body-") for r in lines)
            return count >= COUNT

        lines_one = one.wait_for(has_all, 30)
        lines_two = two.wait_for(has_all, 30)
    for lines in (lines_one, lines_two):
        real = [received(r) for r in lines if r["body"].startswith("body-")]
        assert sorted(real) == expected_all(COUNT)


def test_delay_level_delivers_after_the_delay(orbitmq: OrbitMQ, cpp_cvs: ClientRunner) -> None:
    topic = "CppCvsDelayTopic"
    results = cpp_cvs.run("cpp_producer.py", orbitmq.namesrv, topic, "cpp-delay-pg", COUNT, "delay")
    assert [r["status"] for r in results] == ["OK"] * COUNT

    lines = consume(cpp_cvs, orbitmq, topic, "cpp-delay-cg")

    assert sorted(received(r) for r in lines) == expected_all(COUNT)
    assert {r["msg_id"] for r in lines} == {r["msg_id"] for r in results}
    for r in lines:
        # Level 1 is 1 s: stored again under the real topic no sooner than that.
        assert r["store_timestamp"] - r["born_timestamp"] >= 1000
        assert r["delay"] == ""  # cleared on delivery, as RocketMQ's schedule service does
        assert r["topic"] == topic
