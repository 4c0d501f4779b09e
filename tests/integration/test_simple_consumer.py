"""The SimpleConsumer against a real in-process name server and broker serving POP: receive
and ack, long polling woken by a send, tag and SQL92 subscriptions, change_invisible_duration
handing a message out again with its attempt counted, two brokers, FIFO groups, and the
blocking facade from a plain thread."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq import sync
from orbitmq.client import (
    AdminClient,
    MessageView,
    MQBrokerError,
    Producer,
    SimpleConsumer,
    SimpleConsumerConfig,
    sql,
)
from orbitmq.common import Message
from orbitmq.common import message_const as mc
from orbitmq.protocol import ConsumeType, RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import SubscriptionGroupConfig
from orbitmq.protocol.header import PollingInfoRequestHeader, PollingInfoResponseHeader
from orbitmq.protocol.pop_extra_info import ExtraInfo
from orbitmq.remoting import RemotingClient
from orbitmq.testing import InProcessCluster, ThreadedCluster
from tests.eventually import eventually, eventually_async

pytestmark = pytest.mark.timeout(120)

INVISIBLE_S = 30.0


async def create_topic(cluster: InProcessCluster, topic: str, queue_nums: int = 4) -> None:
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, queue_nums=queue_nums)


async def produce(
    namesrv_addr: str, topic: str, count: int, *, tags: tuple[str, ...] = ("TagA",)
) -> list[str]:
    """``count`` messages m0.. with the tags in turn (and an ``n`` property: i); their ids."""
    ids = []
    async with Producer("simple-pg", namesrv_addr=namesrv_addr) as producer:
        for i in range(count):
            msg = Message(topic, b"m%d" % i)
            msg.tags = tags[i % len(tags)]
            msg.properties["n"] = str(i)
            ids.append((await producer.send(msg)).msg_id)
    return ids


async def receive_all(
    consumer: SimpleConsumer, count: int, *, ack: bool = True, deadline_s: float = 20.0
) -> list[MessageView]:
    """Receive until ``count`` messages came (acking them when asked), at most until the
    deadline; each receive is one long poll."""
    got: list[MessageView] = []
    end = time.monotonic() + deadline_s
    while len(got) < count and time.monotonic() < end:
        views = await consumer.receive(32, INVISIBLE_S)
        for view in views:
            if ack:
                await consumer.ack(view)
        got.extend(views)
    return got


def config(await_s: float = 2.0, fifo: bool | None = None) -> SimpleConsumerConfig:
    return SimpleConsumerConfig(await_duration_s=await_s, fifo=fifo)


@pytest.fixture
async def consumer(cluster: InProcessCluster) -> AsyncIterator[SimpleConsumer]:
    await create_topic(cluster, "SimpleT")
    simple = SimpleConsumer(
        "simple-cg",
        namesrv_addr=cluster.namesrv_addr,
        config=config(),
        subscription_expressions={"SimpleT": "*"},
    )
    async with simple:
        yield simple


async def test_receive_and_ack_every_message_once(
    cluster: InProcessCluster, consumer: SimpleConsumer
) -> None:
    ids = await produce(cluster.namesrv_addr, "SimpleT", 20)
    got = await receive_all(consumer, 20)
    assert sorted(v.message_id for v in got) == sorted(ids)
    assert {v.topic for v in got} == {"SimpleT"}
    assert {v.delivery_attempt for v in got} == {1}
    assert {v.broker_name for v in got} == {"broker-a"}
    assert all(v.body == b"m%s" % v.properties["n"].encode() for v in got)
    # Acked: nothing comes back, not even after a long poll.
    assert await consumer.receive(32, INVISIBLE_S) == []


async def test_admin_tools_see_the_consumer_as_a_pop_consumer(
    cluster: InProcessCluster, consumer: SimpleConsumer
) -> None:
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        connection = await admin.consumer_connection("simple-cg")
    assert connection.consume_type is ConsumeType.CONSUME_POP
    assert set(connection.subscription_table) == {"SimpleT"}
    assert [c.client_id for c in connection.connection_set] == [consumer.instance.client_id]


async def test_a_receive_waits_for_a_send(
    cluster: InProcessCluster, consumer: SimpleConsumer
) -> None:
    consumer.config.await_duration_s = 15.0
    waiting = asyncio.create_task(consumer.receive(4, INVISIBLE_S))
    # Send only once the broker holds the POP (POLLING_INFO counts it).
    header = PollingInfoRequestHeader(consumer_group="simple-cg", topic="SimpleT", queue_id=-1)
    broker_addr = cluster.brokers[0].address
    remoting = RemotingClient()

    async def held() -> int:
        request = RemotingCommand.create_request(RequestCode.POLLING_INFO, header.to_ext_fields())
        response = await remoting.invoke(broker_addr, request, 3.0)
        return PollingInfoResponseHeader.from_ext_fields(response.ext_fields).polling_num

    try:
        await eventually_async(held, what="the POP held by the broker")
    finally:
        await remoting.close()
    sent_at = time.monotonic()
    [sent] = await produce(cluster.namesrv_addr, "SimpleT", 1)
    views = await asyncio.wait_for(waiting, 20)
    assert [v.message_id for v in views] == [sent]
    assert time.monotonic() - sent_at < 5, "woken by the send, not at the end of the poll"
    await consumer.ack(views[0])


async def test_tag_and_sql_subscriptions(tmp_path: Path) -> None:
    settings = {"enable_property_filter": True}
    async with InProcessCluster(tmp_path / "c", broker_settings=settings) as cluster:
        await create_topic(cluster, "Filtered")
        await produce(cluster.namesrv_addr, "Filtered", 12, tags=("TagA", "TagB", "TagC"))
        async with (
            SimpleConsumer("by-tag", namesrv_addr=cluster.namesrv_addr, config=config()) as tag_c,
            SimpleConsumer("by-sql", namesrv_addr=cluster.namesrv_addr, config=config()) as sql_c,
        ):
            # A group new to a queue whose messages are all in memory reads it from its start.
            await tag_c.subscribe("Filtered", "TagA || TagC")
            await sql_c.subscribe("Filtered", sql("n >= 9"))
            by_tag = await receive_all(tag_c, 8)
            by_sql = await receive_all(sql_c, 3)
        assert sorted(int(v.properties["n"]) for v in by_tag) == [0, 2, 3, 5, 6, 8, 9, 11]
        assert sorted(int(v.properties["n"]) for v in by_sql) == [9, 10, 11]


async def test_change_invisible_duration_hands_the_message_out_again(
    cluster: InProcessCluster, consumer: SimpleConsumer
) -> None:
    [sent] = await produce(cluster.namesrv_addr, "SimpleT", 1)
    [view] = await receive_all(consumer, 1, ack=False)
    first_handle = view.receipt_handle
    new_handle = await consumer.change_invisible_duration(view, 0)
    assert new_handle == view.receipt_handle != first_handle
    assert view.properties[mc.PROPERTY_POP_CK] == new_handle
    again = await receive_all(consumer, 1, ack=False, deadline_s=40)
    assert [v.message_id for v in again] == [sent]
    assert again[0].delivery_attempt == 2
    await consumer.ack(again[0])
    assert await consumer.receive(32, INVISIBLE_S) == []


async def test_a_kept_message_stays_invisible_until_acked(
    cluster: InProcessCluster, consumer: SimpleConsumer
) -> None:
    await produce(cluster.namesrv_addr, "SimpleT", 1)
    [view] = await receive_all(consumer, 1, ack=False)
    await consumer.change_invisible_duration(view, 60)
    assert await consumer.receive(32, INVISIBLE_S) == []
    await consumer.ack(view)  # the handle the change returned


async def test_a_forged_handle_is_refused_and_the_message_stays_unacked(
    cluster: InProcessCluster, consumer: SimpleConsumer
) -> None:
    [sent] = await produce(cluster.namesrv_addr, "SimpleT", 1)
    [view] = await receive_all(consumer, 1, ack=False)
    real = ExtraInfo.parse(view.receipt_handle)
    forged = MessageView(
        view.message, view.broker_name, str(dataclasses.replace(real, revive_qid=77))
    )
    with pytest.raises(MQBrokerError) as refused:
        await consumer.ack(forged)
    assert refused.value.code == ResponseCode.INVALID_PARAMETER
    assert "names revive queue 77" in refused.value.remark
    # The real handle still acks it; given back at once first, it comes again.
    await consumer.change_invisible_duration(view, 0)
    again = await receive_all(consumer, 1, deadline_s=40)
    assert [v.message_id for v in again] == [sent]


async def test_past_the_groups_retry_max_a_message_goes_to_the_dead_letters(
    cluster: InProcessCluster,
) -> None:
    await create_topic(cluster, "SimpleDlq")
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        await admin.update_subscription_group(
            SubscriptionGroupConfig(group_name="simple-dlq", retry_max_times=1)
        )
        [sent] = await produce(cluster.namesrv_addr, "SimpleDlq", 1)
        async with SimpleConsumer(
            "simple-dlq",
            namesrv_addr=cluster.namesrv_addr,
            config=config(await_s=0.5),
            subscription_expressions={"SimpleDlq": "*"},
        ) as simple:
            attempts = []
            for _ in range(2):  # handed out, given back; again; given back: the max is 1
                [view] = await receive_all(simple, 1, ack=False, deadline_s=40)
                attempts.append(view.delivery_attempt)
                await simple.change_invisible_duration(view, 0)
            assert attempts == [1, 2]

            async def dead() -> list[str]:
                return [d.unique_key or "" for d in await admin.dead_letters("simple-dlq")]

            assert await eventually_async(dead, timeout_s=30) == [sent]
            assert await simple.receive(32, INVISIBLE_S) == []


async def test_messages_of_two_brokers_are_all_received(two_brokers: InProcessCluster) -> None:
    await create_topic(two_brokers, "SimpleTwo", queue_nums=2)
    ids = await produce(two_brokers.namesrv_addr, "SimpleTwo", 16)
    async with SimpleConsumer(
        "simple-two", namesrv_addr=two_brokers.namesrv_addr, config=config(await_s=0.5)
    ) as simple:
        await simple.subscribe("SimpleTwo")
        got = await receive_all(simple, 16)
    assert sorted(v.message_id for v in got) == sorted(ids)
    assert {v.broker_name for v in got} == {"broker-a", "broker-b"}


async def test_a_fifo_group_gets_a_message_group_one_batch_at_a_time(
    cluster: InProcessCluster,
) -> None:
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        await admin.create_topic("SimpleFifo", queue_nums=1, attributes="+message.type=FIFO")
        await admin.update_subscription_group(
            SubscriptionGroupConfig(group_name="simple-fifo", consume_message_orderly=True)
        )
    async with Producer("simple-pg", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(4):
            msg = Message("SimpleFifo", b"f%d" % i)
            msg.properties[mc.PROPERTY_SHARDING_KEY] = "order-1"
            await producer.send(msg)
    async with SimpleConsumer(
        "simple-fifo", namesrv_addr=cluster.namesrv_addr, config=config(await_s=0.5)
    ) as simple:
        await simple.subscribe("SimpleFifo")
        first = await receive_all(simple, 1, ack=False)
        assert simple.fifo  # from the group's consumeMessageOrderly
        assert [v.body for v in first][:1] == [b"f0"]
        assert first[0].message_group == "order-1"
        # Not acked yet: the queue's next messages wait.
        assert await simple.receive(32, INVISIBLE_S) == []
        for view in first:
            await simple.ack(view)
        rest = await receive_all(simple, 4 - len(first))
    assert [v.body for v in first + rest] == [b"f0", b"f1", b"f2", b"f3"]


def test_the_blocking_facade_receives_and_acks(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path / "cluster") as cluster:
        with sync.AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
            admin.create_topic("SimpleSync", queue_nums=2)
        with sync.Producer("simple-pg", namesrv_addr=cluster.namesrv_addr) as producer:
            sent = {producer.send(Message("SimpleSync", b"s%d" % i)).msg_id for i in range(5)}
        with sync.SimpleConsumer(
            "simple-sync",
            namesrv_addr=cluster.namesrv_addr,
            config=config(),
            subscription_expressions={"SimpleSync": "*"},
        ) as simple:
            got: set[str] = set()

            def received_all() -> bool:
                for view in simple.receive(32, INVISIBLE_S):
                    simple.ack(view)
                    got.add(view.message_id)
                return got == sent

            eventually(received_all, timeout_s=20)
            assert simple.receive(32, INVISIBLE_S) == []
