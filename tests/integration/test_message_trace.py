"""Message trace end to end (R41): producers and consumers with trace on write RocketMQ's
trace records to the trace topic the broker created, and AdminClient.query_msg_trace_by_id
reads back who sent a message, where it was stored, and which groups consumed it, with what
result and after how many retries."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from orbitmq.client import (
    AdminClient,
    ConsumeContext,
    LitePullConsumer,
    LitePullConsumerConfig,
    LocalTransactionState,
    Producer,
    ProducerConfig,
    PushConsumer,
    PushConsumerConfig,
    TransactionProducer,
)
from orbitmq.client.trace import MessageTrace
from orbitmq.common import Message, MessageExt
from orbitmq.protocol import ConsumeFromWhere
from orbitmq.testing import InProcessCluster
from tests.eventually import eventually_async

pytestmark = pytest.mark.timeout(90)

TOPIC = "TraceTopic"
FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


@pytest.fixture
async def trace_cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    """A broker with traceTopicEnable (RMQ_SYS_TRACE_TOPIC created at start) and retries a
    second apart."""
    async with InProcessCluster(
        tmp_path / "cluster",
        broker_settings={"trace_topic_enable": True},
        store_settings={"message_delay_level": " ".join(["1s"] * 18)},
    ) as running:
        yield running


async def trace_of(
    cluster: InProcessCluster, msg_id: str, pubs: int, subs: int, **query: Any
) -> MessageTrace:
    """The trace of ``msg_id`` once it shows ``pubs`` Pub rows and ``subs`` Sub rows (the key
    index follows the commit log in the background)."""
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:

        async def complete() -> MessageTrace | None:
            trace = await admin.query_msg_trace_by_id(msg_id, **query)
            return trace if (len(trace.pub), len(trace.sub)) == (pubs, subs) else None

        return await eventually_async(complete, what=f"{pubs} Pub and {subs} Sub rows")


async def test_push_consumer_trace_shows_send_store_and_each_consume(
    trace_cluster: InProcessCluster,
) -> None:
    cluster = trace_cluster
    tc = cluster.brokers[0].topic_config_manager.select_topic_config("RMQ_SYS_TRACE_TOPIC")
    assert tc is not None and (tc.read_queue_nums, tc.write_queue_nums) == (1, 1)
    async with Producer(
        "trace-pg", namesrv_addr=cluster.namesrv_addr, config=ProducerConfig(enable_trace=True)
    ) as producer:
        msg = Message(TOPIC, b"hello")
        msg.tags = "TagA"
        msg.keys = ["order-1"]
        sent = await producer.send(msg)

    calls: list[int] = []
    done = asyncio.Event()

    async def fails_once(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        calls.append(messages[0].reconsume_times)
        if len(calls) == 1:
            raise RuntimeError("first try fails")
        done.set()

    consumer = PushConsumer(
        "trace-cg",
        namesrv_addr=cluster.namesrv_addr,
        config=PushConsumerConfig(enable_trace=True, consume_from_where=FIRST),
    )
    consumer.subscribe(TOPIC)
    consumer.register_listener(fails_once)
    await consumer.start()
    try:
        async with asyncio.timeout(30):
            await done.wait()
    finally:
        await consumer.shutdown()  # sends the trace records still queued

    trace = await trace_of(cluster, sent.msg_id, pubs=1, subs=2)
    (pub,) = trace.pub
    assert (pub.group, pub.topic, pub.tags, pub.keys) == ("trace-pg", TOPIC, "TagA", "order-1")
    assert pub.store_host == cluster.brokers[0].address
    assert (pub.success, pub.offset_msg_id, pub.msg_type) == (
        True,
        sent.offset_msg_id,
        "NORMAL_MSG",
    )
    assert pub.client_host == "127.0.0.1" and pub.cost_time_ms >= 0
    failed, retried = trace.sub
    assert (failed.group, failed.success, failed.retry_times, failed.context_code) == (
        "trace-cg", False, 0, 2,  # EXCEPTION
    )  # fmt: skip
    assert (retried.group, retried.success, retried.retry_times, retried.context_code) == (
        "trace-cg", True, 1, 0,  # SUCCESS
    )  # fmt: skip
    assert pub.send_time_ms <= failed.consume_time_ms <= retried.consume_time_ms
    # The trace messages are indexed under the message's keys too.
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        by_key = await admin.query_messages_by_key("RMQ_SYS_TRACE_TOPIC", "order-1")
    assert by_key


async def test_lite_pull_consumer_and_a_custom_trace_topic(
    trace_cluster: InProcessCluster,
) -> None:
    cluster = trace_cluster
    config = ProducerConfig(enable_trace=True, trace_topic="MyTraceTopic")
    async with Producer("lite-pg", namesrv_addr=cluster.namesrv_addr, config=config) as producer:
        sent = await producer.send(Message(TOPIC, b"polled"))
    consumer = LitePullConsumer(
        "lite-cg",
        namesrv_addr=cluster.namesrv_addr,
        config=LitePullConsumerConfig(
            enable_trace=True, trace_topic="MyTraceTopic", consume_from_where=FIRST
        ),
    )
    consumer.subscribe(TOPIC)
    async with consumer:
        polled = await eventually_async(consumer.poll, what="the message polled")
        assert [m.unique_key for m in polled] == [sent.msg_id]
    trace = await trace_of(cluster, sent.msg_id, 1, 1, trace_topic="MyTraceTopic")
    assert trace.pub[0].group == "lite-pg"
    assert (trace.sub[0].group, trace.sub[0].success, trace.sub[0].retry_times) == (
        "lite-cg",
        True,
        0,
    )
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        elsewhere = await admin.query_msg_trace_by_id(sent.msg_id)
    assert (elsewhere.pub, elsewhere.sub) == ([], [])


class Commits:
    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


async def test_transaction_trace_has_the_half_and_the_verdict(
    trace_cluster: InProcessCluster,
) -> None:
    cluster = trace_cluster
    async with TransactionProducer(
        "tx-trace-pg",
        transaction_listener=Commits(),
        namesrv_addr=cluster.namesrv_addr,
        config=ProducerConfig(enable_trace=True),
    ) as producer:
        result = await producer.send_message_in_transaction(Message(TOPIC, b"tx"))
    msg_id = result.send_result.msg_id
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:

        async def with_verdict() -> MessageTrace | None:
            trace = await admin.query_msg_trace_by_id(msg_id)
            return trace if trace.pub and trace.end_transaction else None

        trace = await eventually_async(with_verdict, what="Pub and EndTransaction rows")
    assert trace.pub[0].msg_type == "TRANS_MSG_HALF"
    (verdict,) = trace.end_transaction
    assert (verdict.group, verdict.transaction_state, verdict.from_transaction_check) == (
        "tx-trace-pg",
        "COMMIT_MESSAGE",
        False,
    )


async def test_a_trace_topic_that_refuses_sends_fails_no_send(
    trace_cluster: InProcessCluster,
) -> None:
    """Trace records to a topic no client may write are lost; the sends they trace are not."""
    config = ProducerConfig(enable_trace=True, trace_topic="SCHEDULE_TOPIC_XXXX")
    producer = Producer("refused-pg", namesrv_addr=trace_cluster.namesrv_addr, config=config)
    async with producer:
        for i in range(3):
            await producer.send(Message(TOPIC, b"m%d" % i))
        dispatcher = producer.trace_dispatcher
        assert dispatcher is not None
        await dispatcher.flush()
        assert (dispatcher.failed_records, dispatcher.sent_records) == (3, 0)
