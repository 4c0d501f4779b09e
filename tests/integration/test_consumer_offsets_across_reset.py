"""Committed offsets across a consumer's shutdown and an admin's reset, on a real name server
and broker. A shutdown commits only the queues the consumer holds, at the offsets it has for
them, so it never moves the group back; a committed 0 is a real offset, so a group reset to 0
while no consumer is online is read again from the start (CONSUME_FROM_LAST_OFFSET goes to
the end only for a queue the group has no offset on). The only "consumer offset moved back"
warnings the broker logs are those of the reset's own commits (offset=0 stored=5). A reset
while a lite pull consumer is online moves nothing, as with RocketMQ: the client says so."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import pytest

from orbitmq.client import AdminClient, ConsumeContext, LitePullConsumer
from orbitmq.common import MessageExt, MessageQueue
from orbitmq.protocol import ConsumeFromWhere
from orbitmq.testing import InProcessCluster
from tests.eventually import eventually_async
from tests.integration.test_lite_pull_consumer import WAIT_S, lite, poll_until, produce
from tests.integration.test_push_consumer import consumer as push_consumer

pytestmark = pytest.mark.timeout(90)

TOPIC = "ResetAgainTopic"
#: ``produce`` spreads 20 messages over the topic's 4 queues: 5 in each.
SENT = 20
MOVED_BACK = "consumer offset moved back"


def queue(queue_id: int) -> MessageQueue:
    return MessageQueue(TOPIC, "broker-a", queue_id)


def broker_offsets(cluster: InProcessCluster, group: str) -> dict[int, int] | None:
    return cluster.brokers[0].consumer_offset_manager.query_offsets(group, TOPIC)


def moved_back(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(MOVED_BACK)]


async def consume_all_and_commit(cluster: InProcessCluster, group: str) -> None:
    """A first member reads every message from the first, commits, and shuts down: the
    group is at the end of each queue (5)."""
    first = lite(
        cluster,
        group,
        auto_commit=False,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    first.subscribe(TOPIC)
    async with first:
        await poll_until(first, SENT)
        await first.commit_sync()
    assert broker_offsets(cluster, group) == {q: 5 for q in range(4)}


async def reset_to_zero(cluster: InProcessCluster, group: str) -> None:
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        moved = await admin.reset_offset_by_timestamp(group, TOPIC, 0)
    assert moved == {queue(q): 0 for q in range(4)}
    assert broker_offsets(cluster, group) == {q: 0 for q in range(4)}


def all_start_offsets_read(consumer: LitePullConsumer) -> bool:
    """Every held queue's pull loop has read where it starts (the offset store has it)."""
    held = consumer.assignment()
    return bool(held) and held <= set(consumer.offset_store.clone_offset_table(TOPIC))


async def test_a_shutdown_commits_only_held_queues_and_never_moves_the_group_back(
    cluster: InProcessCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="orbitmq.broker.consumer_offset_manager")
    await produce(cluster, TOPIC, SENT)
    await consume_all_and_commit(cluster, "held-cg")

    # A member that finds the group at the end polls nothing (each poll is an auto commit
    # here, of nothing) and stops: it commits what it read at its start for each queue, the
    # group's own offsets.
    idle = lite(cluster, "held-cg", auto_commit_interval_s=0.0)
    idle.subscribe(TOPIC)
    async with idle:
        await eventually_async(lambda: all_start_offsets_read(idle), WAIT_S)
        assert await idle.poll(timeout_s=0.2) == []
    assert broker_offsets(cluster, "held-cg") == {q: 5 for q in range(4)}

    # An assigned member holds queues 0 and 1 only. It reads queue 2's offset (so its store
    # has one) while another client moves queue 2 on: its shutdown must not commit the
    # stale 5 there, nor 0 anywhere.
    partial = lite(cluster, "held-cg", auto_commit=False)
    partial.assign([queue(0), queue(1)])
    async with partial:
        assert await partial.committed(queue(2)) == 5
        await produce(cluster, TOPIC, 8, prefix=b"more-")  # 2 more in each queue
        async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
            addr = cluster.brokers[0].address
            await admin.api.update_consumer_offset(addr, "held-cg", queue(2), 7, WAIT_S)
        got = await poll_until(partial, 4)
        assert sorted((m.queue_id, m.queue_offset) for m in got) == [(0, 5), (0, 6), (1, 5), (1, 6)]
        await partial.commit_sync()
    assert broker_offsets(cluster, "held-cg") == {0: 7, 1: 7, 2: 7, 3: 5}
    assert moved_back(caplog) == []


@pytest.mark.parametrize("made", ["before the reset", "after the reset"])
async def test_a_group_reset_to_zero_with_no_consumer_online_is_read_again_from_zero(
    cluster: InProcessCluster, caplog: pytest.LogCaptureFixture, made: str
) -> None:
    caplog.set_level(logging.WARNING, logger="orbitmq.broker.consumer_offset_manager")
    await produce(cluster, TOPIC, SENT)
    await consume_all_and_commit(cluster, "again-cg")
    assert moved_back(caplog) == []

    early = lite(cluster, "again-cg") if made == "before the reset" else None
    await reset_to_zero(cluster, "again-cg")
    # The broker warns of the reset's own commits (one per queue), made by the admin.
    assert len(moved_back(caplog)) == 4
    assert all("offset=0 stored=5" in line for line in moved_back(caplog))

    # The default CONSUME_FROM_LAST_OFFSET applies to queues without an offset: these have
    # a committed 0, so every message comes again.
    again = early or lite(cluster, "again-cg")
    again.subscribe(TOPIC)
    async with again:
        got = await poll_until(again, SENT)
        got.extend(await again.poll(timeout_s=0.3))
    assert sorted(m.body for m in got) == sorted(b"m-%d" % i for i in range(SENT))
    assert len(moved_back(caplog)) == 4  # the second member moved nothing back


async def test_a_push_consumer_reads_a_group_reset_to_zero_again_and_never_moves_it_back(
    cluster: InProcessCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="orbitmq.broker.consumer_offset_manager")
    await produce(cluster, TOPIC, SENT)
    await consume_all_and_commit(cluster, "push-again-cg")
    await reset_to_zero(cluster, "push-again-cg")

    seen: list[bytes] = []
    all_seen = asyncio.Event()

    async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        seen.extend(m.body for m in messages)
        if len(seen) >= SENT:
            all_seen.set()

    push = push_consumer(cluster, "push-again-cg")
    push.subscribe(TOPIC)
    push.register_listener(on_messages)
    async with push:
        async with asyncio.timeout(WAIT_S):
            await all_seen.wait()
    assert sorted(seen) == sorted(b"m-%d" % i for i in range(SENT))
    # Its shutdown commits where it got to: the end of every queue, never below.
    assert broker_offsets(cluster, "push-again-cg") == {q: 5 for q in range(4)}
    assert len(moved_back(caplog)) == 4  # the reset's alone


async def test_a_lite_pull_consumer_online_during_a_reset_keeps_its_offsets_and_says_so(
    cluster: InProcessCluster, caplog: pytest.LogCaptureFixture
) -> None:
    # The other order: a reset while a subscribed lite pull consumer is online. As with
    # RocketMQ, the broker leaves an online group's offsets to its consumers and only a push
    # consumer follows the reset: nothing moves, and the client now says why.
    caplog.set_level(logging.WARNING, logger="orbitmq")
    await produce(cluster, TOPIC, SENT)
    await consume_all_and_commit(cluster, "online-cg")

    def ignored() -> list[str]:
        return [r.getMessage() for r in caplog.records if "[reset-offset]" in r.getMessage()]

    online = lite(cluster, "online-cg")
    online.subscribe(TOPIC)
    async with online:
        await eventually_async(lambda: all_start_offsets_read(online), WAIT_S)
        async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
            moved = await admin.reset_offset_by_timestamp("online-cg", TOPIC, 0)
        assert moved == {queue(q): 0 for q in range(4)}  # what the reset asked for
        [warning] = await eventually_async(ignored, WAIT_S)
        assert "online-cg" in warning and "stop the group's lite pull consumers" in warning
        assert await online.poll(timeout_s=0.2) == []
    assert broker_offsets(cluster, "online-cg") == {q: 5 for q in range(4)}
    assert moved_back(caplog) == []
