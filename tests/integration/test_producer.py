"""The Producer against an in-process name server and brokers."""

from __future__ import annotations

import asyncio
import zlib
from typing import Any

import pytest

from orbitmq.broker.send_message_processor import SendMessageProcessor
from orbitmq.client import MQClientError, Producer, SendContext, SendStatus
from orbitmq.client.producer import ProducerConfig, select_by_hash
from orbitmq.common import Message, MessageQueue
from orbitmq.protocol import RemotingCommand, ResponseCode
from orbitmq.remoting import ChannelContext, RemotingClient
from orbitmq.testing import InProcessCluster
from tests.compat.read_back import pull_queue, query
from tests.eventually import eventually_async


async def stored(cluster: InProcessCluster, topic: str, queues: int = 4) -> list[Any]:
    client = RemotingClient()
    try:
        found = []
        for broker in cluster.brokers:
            # A send is acknowledged before its consume queue entry is written.
            assert await asyncio.to_thread(broker.message_store.wait_for_dispatch, 5)
            for q in range(queues):
                found.extend(await pull_queue(client, broker.address, topic, q))
        return found
    finally:
        await client.close()


async def test_send_creates_the_topic_and_stores_body_tags_keys_and_properties(
    cluster: InProcessCluster,
) -> None:
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as producer:
        msg = Message("NewTopic", b"hello", properties={"color": "red"})
        msg.tags = "TagA"
        msg.keys = ["k1", "k2"]
        result = await producer.send(msg)

    assert result.send_status is SendStatus.SEND_OK
    assert result.message_queue.topic == "NewTopic"
    assert result.message_queue.broker_name == "broker-a"
    [m] = await stored(cluster, "NewTopic")
    assert (m.body, m.tags, m.keys, m.properties["color"]) == (
        b"hello",
        "TagA",
        ["k1", "k2"],
        "red",
    )
    assert m.unique_key == result.msg_id
    assert m.msg_id == result.offset_msg_id
    assert (m.queue_id, m.queue_offset) == (result.message_queue.queue_id, result.queue_offset)


async def test_sends_spread_over_the_queues_of_both_brokers(two_brokers: InProcessCluster) -> None:
    async with Producer("pg", namesrv_addr=two_brokers.namesrv_addr) as producer:
        results = [await producer.send(Message("Spread", b"x%d" % i)) for i in range(16)]
    queues = {r.message_queue for r in results}
    assert {q.broker_name for q in queues} == {"broker-a", "broker-b"}
    assert len(queues) == 8


async def test_batch_is_one_request_with_consecutive_offsets(cluster: InProcessCluster) -> None:
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as producer:
        batch = [Message("BatchTopic", b"b%d" % i) for i in range(5)]
        result = await producer.send(batch)
    ids = result.msg_id.split(",")
    assert len(ids) == 5
    messages = await stored(cluster, "BatchTopic")
    assert [m.body for m in messages] == [b"b%d" % i for i in range(5)]
    assert [m.unique_key for m in messages] == ids
    assert [m.queue_offset for m in messages] == list(range(5))


async def test_large_bodies_are_compressed_on_the_wire_and_inflated_on_read(
    cluster: InProcessCluster,
) -> None:
    body = b"0123456789abcdef" * 1024  # 16 KiB, compressible
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as producer:
        result = await producer.send(Message("BigTopic", body))
    client = RemotingClient()
    try:
        raw = await pull_queue(
            client, cluster.brokers[0].address, "BigTopic", result.message_queue.queue_id
        )
        [stored_raw] = raw
        assert stored_raw.sys_flag & 0x1  # COMPRESSED_FLAG
        assert zlib.decompress(stored_raw.body) == body
        [by_key] = await query(client, cluster.brokers[0].address, result.msg_id, "BigTopic")
        assert by_key.unique_key == result.msg_id
    finally:
        await client.close()


async def test_selector_keeps_one_order_key_on_one_queue(cluster: InProcessCluster) -> None:
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as producer:
        results = [
            await producer.send(
                Message("Ordered", b"%d" % i), selector=select_by_hash, arg=f"order-{i % 3}"
            )
            for i in range(12)
        ]
    by_key: dict[int, set[MessageQueue]] = {}
    for i, r in enumerate(results):
        by_key.setdefault(i % 3, set()).add(r.message_queue)
    assert all(len(queues) == 1 for queues in by_key.values())
    for key in range(3):
        offsets = [r.queue_offset for i, r in enumerate(results) if i % 3 == key]
        assert offsets == sorted(offsets)


async def test_oneway_and_concurrent_sends(cluster: InProcessCluster) -> None:
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as producer:
        await producer.send_oneway(Message("Oneway", b"one"))
        results = await asyncio.gather(
            *(producer.send(Message("Oneway", b"c%d" % i)) for i in range(50))
        )
    assert len({r.msg_id for r in results}) == 50

    async def all_stored() -> bool:
        return len(await stored(cluster, "Oneway")) == 51

    await eventually_async(all_stored, 5, 0.05)
    assert sorted(m.body for m in await stored(cluster, "Oneway")) == sorted(
        [b"one", *(b"c%d" % i for i in range(50))]
    )


async def test_bad_messages_are_refused_before_sending(cluster: InProcessCluster) -> None:
    config = ProducerConfig(max_message_size=1024)
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr, config=config) as producer:
        with pytest.raises(MQClientError, match="max_message_size=1024"):
            await producer.send(Message("T", b"x" * 1025))
        with pytest.raises(MQClientError, match="empty"):
            await producer.send(Message("T", b""))
        with pytest.raises(MQClientError, match="topic"):
            await producer.send(Message("bad topic!", b"x"))
        with pytest.raises(MQClientError, match="same"):
            await producer.send([Message("A", b"1"), Message("B", b"2")])
    with pytest.raises(MQClientError, match="start"):
        await Producer("pg").send(Message("T", b"x"))


async def test_hooks_see_each_attempt(cluster: InProcessCluster) -> None:
    seen: list[tuple[str, Any]] = []

    class Hook:
        def send_message_before(self, context: SendContext) -> None:
            seen.append(("before", context.mq.topic))

        def send_message_after(self, context: SendContext) -> None:
            seen.append(
                ("after", context.result.send_status if context.result else context.exception)
            )

    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as producer:
        producer.register_send_hook(Hook())
        await producer.send(Message("Hooked", b"x"))
    assert seen == [("before", "Hooked"), ("after", SendStatus.SEND_OK)]


async def test_a_dead_broker_is_avoided_by_retrying_on_the_other(
    two_brokers: InProcessCluster,
) -> None:
    async with Producer("pg", namesrv_addr=two_brokers.namesrv_addr) as producer:
        for i in range(8):  # both brokers now have the topic
            await producer.send(Message("Failover", b"%d" % i))
        await two_brokers.stop_broker(two_brokers.brokers[1])
        # The route still lists broker-b: sends that pick it fail over to broker-a.
        results = [await producer.send(Message("Failover", b"after-%d" % i)) for i in range(8)]
    assert {r.message_queue.broker_name for r in results} == {"broker-a"}
    assert all(r.send_status is SendStatus.SEND_OK for r in results)


async def test_flow_control_answers_are_retried_after_a_backoff(
    cluster: InProcessCluster,
) -> None:
    # The broker answers SYSTEM_BUSY once (its page cache "busy"): the producer waits about
    # the first backoff step (1 s, jitter 20 %) and sends again.
    broker = cluster.brokers[0]
    processor = broker.send_message_processor
    answers: list[float] = []

    class BusyOnce:
        """The send processor, behind one SYSTEM_BUSY answer."""

        async def process_request(
            self, ctx: ChannelContext, request: RemotingCommand
        ) -> RemotingCommand | None:
            answers.append(asyncio.get_running_loop().time())
            if len(answers) == 1:
                return RemotingCommand.create_response(request, ResponseCode.SYSTEM_BUSY, "busy")
            return await processor.process_request(ctx, request)

        def reject_request(self) -> bool:
            return processor.reject_request()

    for table in (broker.remoting_server.table, broker.fast_remoting_server.table):
        for code in SendMessageProcessor.REQUEST_CODES:
            registration = table.lookup(code)
            assert registration is not None
            table.register_processor(code, BusyOnce(), registration.executor)
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as producer:
        result = await producer.send(Message("BusyTopic", b"x"), timeout_s=5)
    assert result.send_status is SendStatus.SEND_OK
    assert len(answers) == 2
    assert 0.75 <= answers[1] - answers[0] <= 2.0
