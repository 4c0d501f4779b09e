"""A group's dead letters through the AdminClient: real ones (a consumer that always fails),
listed with their origin, resent to their original topic once each, however often asked."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from orbitmq.client import (
    AdminClient,
    ConsumeContext,
    DeadLetter,
    Producer,
    PushConsumer,
    PushConsumerConfig,
    ResendStatus,
    SendResult,
)
from orbitmq.common import Message, MessageExt, MessageQueue
from orbitmq.common import message_const as mc
from orbitmq.common.topic import dlq_topic
from orbitmq.protocol import ConsumeFromWhere
from orbitmq.testing import InProcessCluster
from tests.eventually import eventually_async

pytestmark = pytest.mark.timeout(90)

FAST_RETRIES = {"message_delay_level": " ".join(["1s"] * 18)}
TOPIC, GROUP = "OrderTopic", "billing-cg"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with InProcessCluster(tmp_path / "cluster", store_settings=FAST_RETRIES) as running:
        yield running


@pytest.fixture
async def admin(cluster: InProcessCluster) -> AsyncIterator[AdminClient]:
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as client:
        yield client


def poison(i: int) -> Message:
    msg = Message(TOPIC, b"order-%d" % i, flag=7)
    msg.keys = [f"order-{i}", "batch-1"]
    msg.tags = "Paid"
    msg.properties["tenant"] = f"t{i}"
    return msg


async def make_dead_letters(
    cluster: InProcessCluster, admin: AdminClient, count: int
) -> tuple[list[SendResult], list[DeadLetter]]:
    """``count`` messages that GROUP fails on every attempt, until all are dead letters."""
    async with Producer("orders-pg", namesrv_addr=cluster.namesrv_addr) as producer:
        sent = [await producer.send(poison(i)) for i in range(count)]

    async def always_fail(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        raise RuntimeError("payment service down")

    consumer = PushConsumer(
        GROUP,
        namesrv_addr=cluster.namesrv_addr,
        config=PushConsumerConfig(max_reconsume_times=1),
    )
    consumer.subscribe(TOPIC)
    consumer.register_listener(always_fail)
    await consumer.start()
    try:

        async def all_dead() -> list[DeadLetter] | None:
            letters = await admin.dead_letters(GROUP)
            return letters if len(letters) == count else None

        letters = await eventually_async(all_dead, 60, 0.2, what=f"{count} dead letters")
    finally:
        # Gone before anything is resent, so the resends are not failed again.
        await consumer.shutdown()
    return sent, letters


async def consume_resent(cluster: InProcessCluster, count: int) -> list[MessageExt]:
    """The resent messages of TOPIC (those naming a dead letter), read by a fresh group."""
    resent: list[MessageExt] = []
    done = asyncio.Event()

    async def collect(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        resent.extend(m for m in messages if mc.PROPERTY_DLQ_ORIGIN_MESSAGE_ID in m.properties)
        if len(resent) >= count:
            done.set()

    reader = PushConsumer(
        "audit-cg",
        namesrv_addr=cluster.namesrv_addr,
        config=PushConsumerConfig(consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET),
    )
    reader.subscribe(TOPIC)
    reader.register_listener(collect)
    await reader.start()
    try:
        async with asyncio.timeout(30):
            await done.wait()
    finally:
        await reader.shutdown()
    return resent


async def stored_in_topic(admin: AdminClient) -> int:
    return sum(s.max_offset - s.min_offset for s in await admin.topic_status(TOPIC))


async def test_dead_letters_are_listed_with_their_origin(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    before_ms = int(time.time() * 1000)
    sent, letters = await make_dead_letters(cluster, admin, 2)
    by_unique = {d.unique_key: d for d in letters}
    assert set(by_unique) == {s.msg_id for s in sent}
    for i, s in enumerate(sent):
        letter = by_unique[s.msg_id]
        assert letter.queue == MessageQueue(dlq_topic(GROUP), "broker-a", 0)
        assert letter.original_topic == TOPIC
        assert letter.original_msg_id == s.offset_msg_id
        assert letter.keys == (f"order-{i}", "batch-1")
        assert letter.tags == "Paid"
        assert letter.reconsume_times == 2  # two failed attempts: the first and one retry
        assert letter.store_timestamp_ms >= before_ms
        assert letter.body_size == len(b"order-%d" % i)
        assert (await admin.view_message(letter.msg_id)).body == b"order-%d" % i
    assert sorted(d.queue_offset for d in letters) == [0, 1]
    assert await admin.dead_letters(GROUP, limit=1) == letters[:1]


async def test_resend_one_a_set_and_all_sends_each_once(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    sent, letters = await make_dead_letters(cluster, admin, 3)
    first, second, third = (d.msg_id for d in letters)

    [one] = await admin.resend_dead_letters(GROUP, first)
    assert one.status is ResendStatus.SENT and one.send_result is not None
    again = await admin.resend_dead_letters(GROUP, [first])
    assert [r.status for r in again] == [ResendStatus.ALREADY_RESENT]
    assert again[0].resent_unique_key == one.resent_unique_key == one.send_result.msg_id

    some = await admin.resend_dead_letters(GROUP, [second, "0A0000010000000000000000DEADBEEF"])
    assert [r.status for r in some] == [ResendStatus.SENT, ResendStatus.NOT_FOUND]
    every = await admin.resend_dead_letters(GROUP)
    assert [(r.msg_id, r.status) for r in every] == [
        (first, ResendStatus.ALREADY_RESENT),
        (second, ResendStatus.ALREADY_RESENT),
        (third, ResendStatus.SENT),
    ]
    # Three originals and three resends; the dead letters stay where they were.
    assert await stored_in_topic(admin) == 6
    assert len(await admin.dead_letters(GROUP)) == 3

    resent = await consume_resent(cluster, 3)
    origin_of = {d.msg_id: d for d in letters}
    assert len(resent) == 3
    for m in resent:
        letter = origin_of[m.properties[mc.PROPERTY_DLQ_ORIGIN_MESSAGE_ID]]
        i = int(letter.keys[0].removeprefix("order-"))
        assert m.topic == TOPIC
        assert m.body == b"order-%d" % i
        assert m.flag == 7
        assert m.keys == [f"order-{i}", "batch-1"]
        assert m.tags == "Paid"
        assert m.properties["tenant"] == f"t{i}"
        assert m.unique_key not in {s.msg_id for s in sent}
        for system in (mc.PROPERTY_RETRY_TOPIC, mc.PROPERTY_ORIGIN_MESSAGE_ID):
            assert system not in m.properties


async def test_an_unknown_group_has_no_dead_letters(admin: AdminClient) -> None:
    assert await admin.dead_letters("nobody-cg") == []
    assert await admin.resend_dead_letters("nobody-cg") == []
    [missing] = await admin.resend_dead_letters("nobody-cg", ["0A0000010000000000000000DEADBEEF"])
    assert missing.status is ResendStatus.NOT_FOUND
