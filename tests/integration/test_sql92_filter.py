"""SQL92 subscriptions through OrbitMQ's own clients against an in-process broker with
``enablePropertyFilter=true``: push and lite pull consumers and range reads get exactly the
messages whose properties match; a bad expression fails at ``sql()`` with its position; a
broker without property filtering refuses the consumer's start with RocketMQ's remark; and
the consumer's own message filter (R38) drops what it answers False for."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from orbitmq.client import (
    ConsumeContext,
    LitePullConsumer,
    LitePullConsumerConfig,
    MQBrokerError,
    Producer,
    PushConsumer,
    PushConsumerConfig,
    QueueReader,
    ReadOffsetType,
    sql,
)
from orbitmq.common import Message, MessageExt, MessageQueue
from orbitmq.filter import Sql92ParseError
from orbitmq.protocol import ConsumeFromWhere, ResponseCode
from orbitmq.sync import LitePullConsumer as SyncLitePullConsumer
from orbitmq.sync import Producer as SyncProducer
from orbitmq.testing import InProcessCluster, ThreadedCluster
from tests.eventually import eventually_async

pytestmark = pytest.mark.timeout(90)

TOTAL = 60
REGIONS = ("eu", "us", "ap")


@pytest.fixture
async def sql_cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    settings = {"enable_property_filter": True}
    async with InProcessCluster(tmp_path / "cluster", broker_settings=settings) as running:
        yield running


async def produce(cluster: InProcessCluster, topic: str) -> None:
    """m-0..m-59 with properties a=<i> and region eu / us / ap in turn."""
    async with Producer("sql-pg", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(TOTAL):
            message = Message(topic, b"m-%d" % i)
            message.properties["a"] = str(i)
            message.properties["region"] = REGIONS[i % 3]
            await producer.send(message)


def expected(predicate: object) -> set[bytes]:
    assert callable(predicate)
    return {b"m-%d" % i for i in range(TOTAL) if predicate(i, REGIONS[i % 3])}


class Collected:
    """Bodies a listener got; thread-safe (plain listeners run on a pool)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()

    def __call__(self, messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        with self._lock:
            self.bodies.extend(m.body for m in messages)


async def consumed_everything(consumer: PushConsumer, topic: str) -> bool:
    """Whether the consumer's offsets have passed every message of ``topic`` (filtered
    ones included): then nothing more will be delivered."""
    total = 0
    for mq in [mq for mq in consumer.process_queues if mq.topic == topic]:
        total += max(
            0, await consumer.offset_store.read_offset(mq, ReadOffsetType.MEMORY_FIRST_THEN_STORE)
        )
    return total == TOTAL


async def run_push(cluster: InProcessCluster, topic: str, group: str, setup: object) -> list[bytes]:
    collected = Collected()
    consumer = PushConsumer(
        group,
        namesrv_addr=cluster.namesrv_addr,
        # Held pulls come back within 1 s, so that the offsets pass the last filtered
        # messages quickly (the client moves them on an empty answer).
        config=PushConsumerConfig(
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            broker_suspend_max_time_s=1.0,
        ),
    )
    assert callable(setup)
    setup(consumer)
    consumer.register_listener(collected)
    async with consumer:
        await eventually_async(lambda: consumed_everything(consumer, topic), 30, 0.1)
    return collected.bodies


async def test_push_consumer_gets_only_matching_messages(sql_cluster: InProcessCluster) -> None:
    await produce(sql_cluster, "SqlPush")
    bodies = await run_push(
        sql_cluster,
        "SqlPush",
        "sql-push-cg",
        lambda c: c.subscribe("SqlPush", sql("a >= 30 AND region = 'eu'")),
    )
    assert sorted(bodies) == sorted(expected(lambda i, r: i >= 30 and r == "eu"))
    assert len(bodies) == len(set(bodies))
    # The consumer's heartbeat carried the subscription as SQL92: the broker compiled it.
    registered = sql_cluster.brokers[0].consumer_filter_manager.get("SqlPush", "sql-push-cg")
    assert registered is not None
    assert registered.expression == "a >= 30 AND region = 'eu'"


async def test_message_filter_hook_drops_what_it_refuses(sql_cluster: InProcessCluster) -> None:
    await produce(sql_cluster, "SqlHook")

    def setup(consumer: PushConsumer) -> None:
        consumer.subscribe("SqlHook", sql("region IN ('eu', 'us')"))
        # What SQL92 cannot say: a check on the body.
        consumer.register_message_filter(lambda m: m.body.endswith(b"0"))

    bodies = await run_push(sql_cluster, "SqlHook", "sql-hook-cg", setup)
    wanted = expected(lambda i, r: r in ("eu", "us") and i % 10 == 0)
    assert sorted(bodies) == sorted(wanted)


async def test_lite_pull_consumer_and_range_reads_get_only_matching_messages(
    sql_cluster: InProcessCluster,
) -> None:
    await produce(sql_cluster, "SqlLite")
    wanted = expected(lambda i, r: 10 <= i <= 20 or (r == "ap" and i > 50))
    selector = sql("a BETWEEN 10 AND 20 OR (region = 'ap' AND a > 50)")
    consumer = LitePullConsumer(
        "sql-lite-cg",
        namesrv_addr=sql_cluster.namesrv_addr,
        config=LitePullConsumerConfig(
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        ),
    )
    consumer.subscribe("SqlLite", selector)
    got: list[bytes] = []
    async with consumer, asyncio.timeout(30):
        while len(got) < len(wanted):
            got.extend(m.body for m in await consumer.poll(timeout_s=1.0))
    assert sorted(got) == sorted(wanted)

    read: list[bytes] = []
    async with QueueReader(sql_cluster.namesrv_addr) as reader:
        for queue_id in range(4):
            mq = MessageQueue("SqlLite", "broker-a", queue_id)
            end = await reader.instance.max_offset(mq)
            async for batch in reader.read(mq, 0, end, subscription=selector):
                read.extend(m.body for m in batch)
    assert sorted(read) == sorted(wanted)


def test_a_bad_expression_fails_at_sql_with_its_position() -> None:
    with pytest.raises(Sql92ParseError) as caught:
        sql("a > 5 AND\n  b = = 'x'")
    assert (caught.value.line, caught.value.column) == (2, 7)


async def test_start_is_refused_by_a_broker_without_property_filtering(
    cluster: InProcessCluster,
) -> None:
    async with Producer("sql-pg", namesrv_addr=cluster.namesrv_addr) as producer:
        await producer.send(Message("SqlOff", b"x"))
    consumer = PushConsumer("sql-off-cg", namesrv_addr=cluster.namesrv_addr)
    consumer.subscribe("SqlOff", sql("a > 1"))
    consumer.register_listener(Collected())
    with pytest.raises(MQBrokerError) as caught:
        await consumer.start()
    assert caught.value.code == ResponseCode.SYSTEM_ERROR
    assert caught.value.remark == "The broker does not support consumer to filter message by SQL92"


def test_the_blocking_lite_pull_consumer_takes_a_selector_and_a_message_filter(
    tmp_path: Path,
) -> None:
    settings = {"enable_property_filter": True}
    with ThreadedCluster(tmp_path / "cluster", broker_settings=settings) as cluster:
        with SyncProducer("sql-sync-pg", namesrv_addr=cluster.namesrv_addr) as producer:
            for i in range(TOTAL):
                message = Message("SqlSync", b"m-%d" % i)
                message.properties["a"] = str(i)
                producer.send(message)
        config = LitePullConsumerConfig(
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        )
        consumer = SyncLitePullConsumer(
            "sql-sync-cg", namesrv_addr=cluster.namesrv_addr, config=config
        )
        consumer.subscribe("SqlSync", sql("a < 20"))
        consumer.register_message_filter(lambda m: int(m.properties["a"]) % 2 == 0)
        got: list[bytes] = []
        with consumer:
            deadline = time.monotonic() + 30
            while len(got) < 10 and time.monotonic() < deadline:
                got.extend(m.body for m in consumer.poll(timeout_s=1.0))
    assert sorted(got) == sorted(b"m-%d" % i for i in range(0, 20, 2))
