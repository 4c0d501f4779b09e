"""The PushConsumer against an in-process name server and broker: clustering, rebalance
between consumers of one group, tag filtering, retries, broadcasting, orderly consumption,
and committed offsets."""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from orbitmq.client import (
    ConsumeContext,
    ConsumeMessageContext,
    Listener,
    Producer,
    PushConsumer,
    PushConsumerConfig,
    select_by_hash,
)
from orbitmq.common import Message, MessageExt, MessageQueue
from orbitmq.protocol import ConsumeFromWhere, MessageModel
from orbitmq.testing import InProcessCluster, ManualClock
from tests.eventually import eventually_async, stays_async

pytestmark = pytest.mark.timeout(90)

FAST_RETRIES = {"message_delay_level": " ".join(["1s"] * 18)}


@pytest.fixture
async def fast_retry_cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with InProcessCluster(tmp_path / "cluster", store_settings=FAST_RETRIES) as running:
        yield running


class Received:
    """What listeners got, and a way to wait for it."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, MessageExt]] = []
        self.changed = asyncio.Event()
        self.lock = threading.Lock()

    def add(self, who: str, messages: Sequence[MessageExt]) -> None:
        with self.lock:
            self.messages.extend((who, m) for m in messages)
        self.changed.set()

    def bodies(self, who: str | None = None) -> list[bytes]:
        with self.lock:
            return [m.body for w, m in self.messages if who is None or w == who]

    async def wait_for(self, count: int, who: str | None = None, timeout_s: float = 20) -> None:
        async with asyncio.timeout(timeout_s):
            while len(set(self.bodies(who))) < count:
                self.changed.clear()
                await self.changed.wait()


def listener_for(received: Received, who: str) -> Listener:
    async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        received.add(who, messages)

    return on_messages


async def produce(cluster: InProcessCluster, topic: str, count: int, **extra: object) -> None:
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(count):
            msg = Message(topic, b"m-%d" % i)
            msg.tags = f"Tag{i % 2}"
            await producer.send(msg, **extra)  # type: ignore[arg-type]


def consumer(cluster: InProcessCluster, group: str, **config: object) -> PushConsumer:
    return PushConsumer(
        group,
        namesrv_addr=cluster.namesrv_addr,
        config=PushConsumerConfig(**config),  # type: ignore[arg-type]
    )


async def test_clustering_consumer_gets_every_message_and_commits_its_offsets(
    cluster: InProcessCluster,
) -> None:
    await produce(cluster, "PushTopic", 100)
    received = Received()
    c = consumer(cluster, "push-cg")
    c.subscribe("PushTopic")
    c.register_listener(listener_for(received, "c"))
    await c.start()
    try:
        await received.wait_for(100)
    finally:
        await c.shutdown()
    assert sorted(set(received.bodies())) == sorted(b"m-%d" % i for i in range(100))
    # Shutdown persisted the offsets: everything consumed is committed at the broker.
    offsets = cluster.brokers[0].consumer_offset_manager
    committed = sum(offsets.query_offset("push-cg", "PushTopic", q) for q in range(4))
    assert committed == 100


async def test_two_consumers_of_a_group_share_the_queues(cluster: InProcessCluster) -> None:
    await produce(cluster, "SharedTopic", 1)  # create the topic (4 queues)
    received = Received()
    consumers = [consumer(cluster, "shared-cg") for _ in range(2)]
    for i, c in enumerate(consumers):
        c.subscribe("SharedTopic")
        c.register_listener(listener_for(received, f"c{i}"))
        await c.start()

    def owned_queues() -> list[set[MessageQueue]]:
        return [{q for q in c.process_queues if q.topic == "SharedTopic"} for c in consumers]

    try:
        # The broker notifies the first of the second: both rebalance.
        await eventually_async(lambda: all(len(o) == 2 for o in owned_queues()), 10, 0.1)
        owned = owned_queues()
        assert [len(o) for o in owned] == [2, 2] and not owned[0] & owned[1]
        await produce(cluster, "SharedTopic", 80)  # m-0 again, and 79 new ones
        await received.wait_for(80)
    finally:
        for c in consumers:
            await c.shutdown()
    assert received.bodies("c0") and received.bodies("c1")
    # Each queue has one owner: no body but m-0 (sent twice) reached both consumers.
    assert set(received.bodies("c0")) & set(received.bodies("c1")) <= {b"m-0"}


async def test_tag_filter_delivers_only_the_subscribed_tags(cluster: InProcessCluster) -> None:
    await produce(cluster, "TagTopic", 40)
    received = Received()
    c = consumer(cluster, "tag-cg")
    c.subscribe("TagTopic", "Tag1")
    c.register_listener(listener_for(received, "c"))
    await c.start()
    try:
        await received.wait_for(20)
        tag1 = {b"m-%d" % i for i in range(1, 40, 2)}
        await stays_async(lambda: set(received.bodies()) <= tag1, 0.3, what="only Tag1 delivered")
    finally:
        await c.shutdown()
    assert sorted(set(received.bodies())) == sorted(b"m-%d" % i for i in range(1, 40, 2))


async def test_failed_message_comes_back_from_the_retry_topic(
    fast_retry_cluster: InProcessCluster,
) -> None:
    cluster = fast_retry_cluster
    await produce(cluster, "RetryTopic", 3)
    seen: list[tuple[bytes, str, int]] = []
    done = asyncio.Event()

    def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        # A plain function: runs on the consumer's thread pool.
        for m in messages:
            seen.append((m.body, m.topic, m.reconsume_times))
            if m.body == b"m-1" and m.reconsume_times == 0:
                raise RuntimeError("not yet")
            if m.body == b"m-1":
                loop.call_soon_threadsafe(done.set)

    loop = asyncio.get_running_loop()
    c = consumer(cluster, "retry-cg")
    c.subscribe("RetryTopic")
    c.register_listener(on_messages)
    await c.start()
    try:
        async with asyncio.timeout(20):
            await done.wait()
    finally:
        await c.shutdown()
    again = [s for s in seen if s[0] == b"m-1"]
    # Redelivered under its original topic, counted once.
    assert again == [(b"m-1", "RetryTopic", 0), (b"m-1", "RetryTopic", 1)]


async def test_broadcasting_delivers_everything_to_every_consumer(
    cluster: InProcessCluster, tmp_path: Path
) -> None:
    await produce(cluster, "BroadcastTopic", 1)
    received = Received()
    consumers = [
        consumer(
            cluster,
            "bc-cg",
            message_model=MessageModel.BROADCASTING,
            local_offset_store_dir=str(tmp_path / "offsets"),
        )
        for _ in range(2)
    ]
    for i, c in enumerate(consumers):
        c.subscribe("BroadcastTopic")
        c.register_listener(listener_for(received, f"c{i}"))
        await c.start()
    try:
        await produce(cluster, "BroadcastTopic", 30)
        await received.wait_for(30, "c0")
        await received.wait_for(30, "c1")
    finally:
        for c in consumers:
            await c.shutdown()
    expected = {b"m-%d" % i for i in range(30)}
    # Each started at the queues' end (CONSUME_FROM_LAST_OFFSET): the first message is not theirs.
    assert set(received.bodies("c0")) == set(received.bodies("c1")) == expected
    assert list((tmp_path / "offsets").rglob("offsets.json"))


async def test_orderly_consumer_keeps_each_queue_in_order(cluster: InProcessCluster) -> None:
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(60):
            await producer.send(
                Message("OrderTopic", b"%d" % i), selector=select_by_hash, arg=f"key-{i % 4}"
            )
    per_queue: dict[int, list[int]] = defaultdict(list)
    count = 0
    done = asyncio.Event()

    async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        nonlocal count
        for m in messages:
            per_queue[m.queue_id].append(int(m.body))
            count += 1
        if count >= 60:
            done.set()

    c = consumer(cluster, "order-cg", consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    c.subscribe("OrderTopic")
    c.register_listener(on_messages, orderly=True)
    await c.start()
    try:
        async with asyncio.timeout(20):
            await done.wait()
        assert all(pq.locked for pq in c.process_queues.values())
    finally:
        await c.shutdown()
    for values in per_queue.values():
        assert values == sorted(values)
    assert sorted(v for values in per_queue.values() for v in values) == list(range(60))


@pytest.mark.slow
async def test_a_message_stuck_past_consume_timeout_is_sent_back_and_redelivered(
    fast_retry_cluster: InProcessCluster,
) -> None:
    cluster = fast_retry_cluster
    await produce(cluster, "StuckTopic", 1)
    deliveries: list[int] = []
    redelivered = asyncio.Event()
    release = asyncio.Event()

    async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        for m in messages:
            deliveries.append(m.reconsume_times)
        if messages[0].reconsume_times == 0:
            await release.wait()  # stuck far past the consume timeout
        else:
            redelivered.set()

    c = consumer(cluster, "stuck-cg", consume_timeout_s=1.0)
    c.subscribe("StuckTopic")
    c.register_listener(on_messages)
    await c.start()
    try:
        async with asyncio.timeout(20):
            await redelivered.wait()
    finally:
        release.set()
        await c.shutdown()
    assert deliveries == [0, 1]


async def test_the_consume_timeout_is_measured_on_the_consumers_clock(
    fast_retry_cluster: InProcessCluster,
) -> None:
    """A message held past consume_timeout by the consumer's own clock is sent back and
    redelivered, with no real wait for the timeout (the clock seam of the push consumer)."""
    cluster = fast_retry_cluster
    await produce(cluster, "ClockedStuckTopic", 1)
    clock = ManualClock()
    deliveries: list[int] = []
    started = asyncio.Event()
    redelivered = asyncio.Event()
    release = asyncio.Event()

    async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        deliveries.extend(m.reconsume_times for m in messages)
        if messages[0].reconsume_times == 0:
            started.set()
            await release.wait()
        else:
            redelivered.set()

    c = PushConsumer(
        "clocked-stuck-cg",
        namesrv_addr=cluster.namesrv_addr,
        config=PushConsumerConfig(consume_timeout_s=60.0),
        clock=clock,
    )
    c.subscribe("ClockedStuckTopic")
    c.register_listener(on_messages)
    await c.start()
    try:
        async with asyncio.timeout(20):
            await started.wait()
            await c.clean_expired_messages()
            assert deliveries == [0]  # not expired yet on the consumer's clock
            clock.advance(61_000)
            await c.clean_expired_messages()
            await redelivered.wait()
    finally:
        release.set()
        await c.shutdown()
    assert deliveries == [0, 1]


async def test_consume_hooks_see_each_listener_call(cluster: InProcessCluster) -> None:
    await produce(cluster, "HookTopic", 2)
    calls: list[tuple[str, int, bool]] = []
    received = Received()

    class Hook:
        def consume_message_before(self, context: ConsumeMessageContext) -> None:
            calls.append(("before", len(context.messages), context.success))

        def consume_message_after(self, context: ConsumeMessageContext) -> None:
            calls.append(("after", len(context.messages), context.success))

    c = consumer(cluster, "hook-cg")
    c.subscribe("HookTopic")
    c.register_listener(listener_for(received, "c"))
    c.register_consume_hook(Hook())
    await c.start()
    try:
        await received.wait_for(2)
    finally:
        await c.shutdown()
    assert calls.count(("before", 1, False)) == 2
    assert calls.count(("after", 1, True)) == 2
