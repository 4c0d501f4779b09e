"""The LitePullConsumer and the stateless queue range reader against an in-process name
server and broker: rebalance between pollers of a group, assign and seek, commits, pause,
and range reads (exact bounds, tag filter, retention, from another process)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.client import (
    ClientConfig,
    LitePullConsumer,
    LitePullConsumerConfig,
    OffsetOutOfRangeError,
    Producer,
    QueueReader,
    RemoteBrokerOffsetStore,
    queue_offsets,
    read_queue_range,
)
from orbitmq.common import Message, MessageExt, MessageQueue
from orbitmq.protocol import ConsumeFromWhere
from orbitmq.testing import InProcessCluster, ManualClock

pytestmark = pytest.mark.timeout(90)

WAIT_S = 20.0


async def produce(
    cluster: InProcessCluster,
    topic: str,
    count: int,
    *,
    queue_id: int | None = None,
    prefix: bytes = b"m-",
) -> None:
    """``count`` messages m-0.. with tags TagA, TagB alternating; to one queue if asked."""
    async with Producer("lite-pg", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(count):
            msg = Message(topic, prefix + b"%d" % i)
            msg.tags = "TagA" if i % 2 == 0 else "TagB"
            queue = None if queue_id is None else MessageQueue(topic, "broker-a", queue_id)
            await producer.send(msg, queue=queue)
    await dispatched(cluster)


async def dispatched(cluster: InProcessCluster) -> None:
    """Wait until the consume queues hold every stored message: they are built in the
    background, and offset questions (max offset, pulls) read them."""
    store = cluster.brokers[0].message_store
    wait = store.reput_message_service.wait_for_dispatch
    assert await asyncio.to_thread(wait, store.commit_log.max_offset, WAIT_S)


def lite(cluster: InProcessCluster, group: str, **config: object) -> LitePullConsumer:
    return LitePullConsumer(
        group,
        namesrv_addr=cluster.namesrv_addr,
        config=LitePullConsumerConfig(**config),  # type: ignore[arg-type]
    )


async def poll_until(
    consumer: LitePullConsumer, count: int, timeout_s: float = WAIT_S
) -> list[MessageExt]:
    """Poll until at least ``count`` messages came; fail after ``timeout_s``."""
    got: list[MessageExt] = []
    async with asyncio.timeout(timeout_s):
        while len(got) < count:
            got.extend(await consumer.poll(timeout_s=1.0))
    return got


def offsets(messages: list[MessageExt]) -> list[int]:
    return [m.queue_offset for m in messages]


@pytest.fixture
async def topic_q0(cluster: InProcessCluster) -> AsyncIterator[MessageQueue]:
    """LiteTopic (4 queues) with 10 messages in queue 0."""
    await produce(cluster, "LiteTopic", 10, queue_id=0)
    yield MessageQueue("LiteTopic", "broker-a", 0)


async def test_two_subscribers_of_a_group_get_every_message_once(
    cluster: InProcessCluster,
) -> None:
    # Create the topic (4 queues). The warm-up message may reach both consumers while the
    # queues move: only the messages sent once the split is stable count.
    await produce(cluster, "SubTopic", 1, prefix=b"warm-up-")
    consumers = [lite(cluster, "lite-sub-cg") for _ in range(2)]
    got: list[list[MessageExt]] = [[], []]
    try:
        for c in consumers:
            c.subscribe("SubTopic")
            await c.start()
        async with asyncio.timeout(WAIT_S):  # the broker notifies the first of the second
            while [len(c.assignment()) for c in consumers] != [2, 2]:
                await asyncio.gather(*(c.poll(timeout_s=0.05) for c in consumers))
        assert not consumers[0].assignment() & consumers[1].assignment()
        await produce(cluster, "SubTopic", 40)

        def counted(messages: list[MessageExt]) -> list[MessageExt]:
            return [m for m in messages if not m.body.startswith(b"warm-up-")]

        async def drain(i: int) -> None:
            async with asyncio.timeout(WAIT_S):
                while len(got[0]) + len(got[1]) < 40:
                    got[i].extend(counted(await consumers[i].poll(timeout_s=0.2)))

        await asyncio.gather(drain(0), drain(1))
        for i in range(2):  # nothing more turns up
            got[i].extend(counted(await consumers[i].poll(timeout_s=0.3)))
    finally:
        for c in consumers:
            await c.shutdown()
    bodies = [m.body for part in got for m in part]
    assert sorted(bodies) == sorted(b"m-%d" % i for i in range(40))
    assert got[0] and got[1]
    for i in range(2):
        assert {m.queue_id for m in got[i]} <= {mq.queue_id for mq in consumers[i].assignment()}


async def test_assign_and_seek_give_exactly_the_expected_messages(
    cluster: InProcessCluster, topic_q0: MessageQueue
) -> None:
    c = lite(cluster, "lite-seek-cg", pull_batch_size=4)
    queues = await c.fetch_message_queues("LiteTopic")
    assert queues == [MessageQueue("LiteTopic", "broker-a", i) for i in range(4)]
    c.assign([topic_q0])
    async with c:
        # A new group starts at 0 while the queue still begins there (RocketMQ's broker
        # answers 0 to the offset query), whatever consume_from_where says.
        assert offsets(await poll_until(c, 10)) == list(range(10))
        assert await c.poll(timeout_s=0.2) == []
        await c.seek(topic_q0, 3)
        first = await c.poll(timeout_s=WAIT_S)
        assert 0 < len(first) <= 4  # one poll: at most pull_batch_size messages
        got = first + await poll_until(c, 7 - len(first))
        assert offsets(got) == list(range(3, 10))
        assert [m.body for m in got] == [b"m-%d" % i for i in range(3, 10)]

        await c.seek_to_begin(topic_q0)
        assert offsets(await poll_until(c, 10)) == list(range(10))

        await c.seek_to_end(topic_q0)
        assert await c.poll(timeout_s=0.3) == []
        with pytest.raises(Exception, match=r"seek offset 11 .* illegal"):
            await c.seek(topic_q0, 11)

        # Messages 10..14 stored after a known time: seeking to it gives exactly them.
        stored = await poll_until_after_seek(c, topic_q0, 0, 10)
        boundary_ms = max(m.store_timestamp for m in stored) + 1
        while int(time.time() * 1000) <= boundary_ms:  # the next store time is later
            await asyncio.sleep(0.005)
        await produce(cluster, "LiteTopic", 5, queue_id=0)
        first_new = await c.offset_for_timestamp(topic_q0, boundary_ms)
        assert first_new == 10
        await c.seek(topic_q0, first_new)
        assert offsets(await poll_until(c, 5)) == list(range(10, 15))
        assert await c.poll(timeout_s=0.2) == []


async def poll_until_after_seek(
    c: LitePullConsumer, mq: MessageQueue, offset: int, count: int
) -> list[MessageExt]:
    await c.seek(mq, offset)
    return await poll_until(c, count)


async def test_commit_sync_lets_a_new_consumer_resume_after_the_committed_offsets(
    cluster: InProcessCluster,
) -> None:
    await produce(cluster, "CommitTopic", 40)
    first = lite(
        cluster,
        "lite-commit-cg",
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        auto_commit=False,
        pull_batch_size=3,
    )
    first.subscribe("CommitTopic")
    async with first:
        polled = await poll_until(first, 15)
        await first.commit_sync()
        expected: dict[MessageQueue, int] = {}
        for m in polled:
            mq = MessageQueue(m.topic, "broker-a", m.queue_id)
            expected[mq] = max(expected.get(mq, 0), m.queue_offset + 1)
        for mq, offset in expected.items():
            assert await first.committed(mq) == offset
    broker_offsets = cluster.brokers[0].consumer_offset_manager
    for mq, offset in expected.items():
        assert broker_offsets.query_offset("lite-commit-cg", mq.topic, mq.queue_id) == offset

    second = lite(cluster, "lite-commit-cg", auto_commit=False)
    second.subscribe("CommitTopic")
    async with second:
        rest = await poll_until(second, 40 - len(polled))
        rest.extend(await second.poll(timeout_s=0.3))
    bodies = sorted(m.body for m in polled + rest)
    assert bodies == sorted(b"m-%d" % i for i in range(40))


async def test_commit_sync_survives_a_queue_unassigned_while_it_waits_for_the_broker(
    cluster: InProcessCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The offsets commit_sync sends are those it took at its start: a queue unassigned
    (a rebalance, an assign) while it awaits the broker is still committed, not a KeyError."""
    await produce(cluster, "LiteTopic", 8, queue_id=0)
    await produce(cluster, "LiteTopic", 8, queue_id=1)
    q0, q1 = (MessageQueue("LiteTopic", "broker-a", i) for i in (0, 1))
    c = lite(cluster, "lite-commit-race-cg", auto_commit=False)
    c.assign([q0, q1])
    async with c:
        assert len(await poll_until(c, 16)) == 16
        store = c.offset_store
        assert isinstance(store, RemoteBrokerOffsetStore)
        send = store.update_consume_offset_to_broker

        async def send_then_unassign(mq: MessageQueue, offset: int, is_oneway: bool) -> None:
            c.assign([q0])  # q1's state goes while the commit is on its way
            await send(mq, offset, is_oneway)

        monkeypatch.setattr(store, "update_consume_offset_to_broker", send_then_unassign)
        await c.commit_sync()
        monkeypatch.undo()
    broker = cluster.brokers[0]
    committed = broker.consumer_offset_manager.query_offset
    assert committed("lite-commit-race-cg", "LiteTopic", 0) == 8
    assert committed("lite-commit-race-cg", "LiteTopic", 1) == 8


async def test_auto_commit_commits_what_poll_returned(
    cluster: InProcessCluster, topic_q0: MessageQueue
) -> None:
    client_config = ClientConfig(namesrv_addr=cluster.namesrv_addr)
    client_config.persist_consumer_offset_interval_s = 0.1
    clock = ManualClock()
    c = LitePullConsumer(
        "lite-auto-cg",
        client_config=client_config,
        config=LitePullConsumerConfig(auto_commit_interval_s=0.1, pull_batch_size=4),
        clock=clock,
    )
    c.assign([topic_q0])
    broker_offsets = cluster.brokers[0].consumer_offset_manager
    async with c:
        await c.seek_to_begin(topic_q0)
        assert offsets(await poll_until(c, 10)) == list(range(10))
        clock.advance(100)  # the auto commit is due
        async with asyncio.timeout(WAIT_S):  # the next poll commits, the persist loop sends
            while broker_offsets.query_offset("lite-auto-cg", "LiteTopic", 0) != 10:
                assert await c.poll(timeout_s=0.05) == []
        assert c.offset_store.clone_offset_table("LiteTopic") == {topic_q0: 10}


async def test_no_auto_commit_commits_nothing(
    cluster: InProcessCluster, topic_q0: MessageQueue
) -> None:
    c = lite(cluster, "lite-manual-cg", auto_commit=False, auto_commit_interval_s=0.0)
    c.assign([topic_q0])
    async with c:
        await c.seek_to_begin(topic_q0)
        await poll_until(c, 10)
        await c.poll(timeout_s=0.1)
    # Only the start offset read from the broker (0) was written back, as RocketMQ's store
    # does; none of the polled progress was committed.
    offsets_at_broker = cluster.brokers[0].consumer_offset_manager
    assert offsets_at_broker.query_offset("lite-manual-cg", "LiteTopic", 0) in (-1, 0)


async def test_pause_holds_a_queue_back_until_resume(
    cluster: InProcessCluster, topic_q0: MessageQueue
) -> None:
    c = lite(cluster, "lite-pause-cg")
    c.assign([topic_q0])
    async with c:
        await c.seek_to_end(topic_q0)
        c.pause([topic_q0])
        await produce(cluster, "LiteTopic", 3, queue_id=0)
        assert await c.poll(timeout_s=0.5) == []
        c.resume([topic_q0])
        assert offsets(await poll_until(c, 3)) == [10, 11, 12]


async def test_read_queue_range_returns_exactly_the_range_in_batches(
    cluster: InProcessCluster,
) -> None:
    await produce(cluster, "RangeTopic", 50, queue_id=1)
    bounds = await queue_offsets(cluster.namesrv_addr, "RangeTopic")
    assert bounds[MessageQueue("RangeTopic", "broker-a", 1)] == (0, 50)
    assert bounds[MessageQueue("RangeTopic", "broker-a", 0)] == (0, 0)

    batches = [
        b
        async for b in read_queue_range(
            cluster.namesrv_addr, "RangeTopic", "broker-a", 1, 5, 37, batch_size=8
        )
    ]
    assert len(batches) == 4 and all(0 < len(b) <= 8 for b in batches)
    got = [m for b in batches for m in b]
    assert offsets(got) == list(range(5, 37))
    assert [m.body for m in got] == [b"m-%d" % i for i in range(5, 37)]

    async with QueueReader(cluster.namesrv_addr) as reader:  # one reader, several calls
        tagged = [
            m
            async for b in read_queue_range(
                "unused",
                "RangeTopic",
                "broker-a",
                1,
                4,
                21,
                subscription="TagB",
                batch_size=5,
                client=reader,
            )
            for m in b
        ]
        assert offsets(tagged) == list(range(5, 21, 2))
        assert {m.tags for m in tagged} == {"TagB"}
        empty = [
            b
            async for b in read_queue_range(
                "unused", "RangeTopic", "broker-a", 1, 7, 7, client=reader
            )
        ]
        assert empty == []


async def test_read_queue_range_names_the_bounds_when_the_range_is_out_of_them(
    cluster: InProcessCluster,
) -> None:
    await produce(cluster, "EdgeTopic", 10, queue_id=2)
    got: list[int] = []
    with pytest.raises(OffsetOutOfRangeError) as past_end:
        async for batch in read_queue_range(
            cluster.namesrv_addr, "EdgeTopic", "broker-a", 2, 8, 20
        ):
            got.extend(offsets(batch))
    assert got == [8, 9]  # what exists is delivered before the error
    assert (past_end.value.requested_offset, past_end.value.min_offset) == (10, 0)
    assert past_end.value.max_offset == 10

    with pytest.raises(OffsetOutOfRangeError) as beyond:
        async for _ in read_queue_range(cluster.namesrv_addr, "EdgeTopic", "broker-a", 2, 25, 30):
            pass
    message = str(beyond.value)
    for part in ("EdgeTopic", "broker-a:2", "offset 25", "[0, 10)"):
        assert part in message


async def test_read_queue_range_below_the_min_offset_after_retention(tmp_path: Path) -> None:
    store_settings = {
        "mapped_file_size_commit_log": 64 * 1024,
        "file_reserved_time": 0,
        "delete_commit_log_files_interval": 0,
    }
    async with InProcessCluster(tmp_path / "c", store_settings=store_settings) as cluster:
        async with Producer("lite-pg", namesrv_addr=cluster.namesrv_addr) as producer:
            mq = MessageQueue("RetainedTopic", "broker-a", 0)
            for i in range(200):
                await producer.send(Message("RetainedTopic", b"%04d" % i * 256), queue=mq)
        await dispatched(cluster)
        store = cluster.brokers[0].message_store
        store.clean_commit_log_service.execute_delete_files_manually()
        assert await asyncio.to_thread(store.clean_resource_service.run_once) > 0
        low, high = (await queue_offsets(cluster.namesrv_addr, "RetainedTopic"))[mq]
        assert 0 < low < high == 200
        with pytest.raises(OffsetOutOfRangeError) as lost:
            async for _ in read_queue_range(
                cluster.namesrv_addr, "RetainedTopic", "broker-a", 0, 0, 200
            ):
                pass
        assert (lost.value.requested_offset, lost.value.min_offset) == (0, low)
        assert "below the min offset" in str(lost.value)
        kept = [
            m
            async for b in read_queue_range(
                cluster.namesrv_addr, "RetainedTopic", "broker-a", 0, low, 200
            )
            for m in b
        ]
        assert offsets(kept) == list(range(low, 200))


READER_SCRIPT = """
import asyncio, json, sys
from orbitmq.client import read_queue_range

async def main():
    out = []
    batches = read_queue_range(sys.argv[1], "ProcTopic", "broker-a", 3, 2, 9, batch_size=3)
    async for batch in batches:
        out.append([[m.queue_offset, m.body.decode()] for m in batch])
    print(json.dumps(out))

asyncio.run(main())
"""


async def test_read_queue_range_runs_in_another_process(cluster: InProcessCluster) -> None:
    await produce(cluster, "ProcTopic", 12, queue_id=3)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        READER_SCRIPT,
        cluster.namesrv_addr,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(60):
            stdout, stderr = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
    assert process.returncode == 0, stderr.decode()
    batches = json.loads(stdout)
    assert [len(b) for b in batches] == [3, 3, 1]
    assert [tuple(x) for b in batches for x in b] == [(i, f"m-{i}") for i in range(2, 9)]
