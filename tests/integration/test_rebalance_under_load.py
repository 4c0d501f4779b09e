"""Consumers joining, leaving and being killed while 50,000 messages flow: every message is
consumed at least once, duplicates come only from queues that changed hands, per-key order
holds for orderly consumers, and exhausted retries end in the dead letter queue."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from orbitmq.client import (
    ConsumeContext,
    Listener,
    Producer,
    PushConsumer,
    PushConsumerConfig,
    select_by_hash,
)
from orbitmq.common import Message, MessageExt
from orbitmq.common.topic import dlq_topic
from orbitmq.protocol import ConsumeFromWhere
from orbitmq.remoting import RemotingClient
from orbitmq.testing import InProcessCluster
from tests.compat.read_back import query
from tests.eventually import eventually_async

pytestmark = pytest.mark.timeout(180)

TOTAL = 50_000
BATCH = 100
CLIENT = Path(__file__).resolve().parent / "clients" / "push_consumer_process.py"


class Tally:
    """Bodies consumed, by consumer, thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_consumer: dict[str, list[str]] = defaultdict(list)

    def listener(self, name: str) -> Listener:
        async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
            with self.lock:
                self.by_consumer[name].extend(m.body.decode() for m in messages)

        return on_messages

    def all_bodies(self) -> Counter[str]:
        with self.lock:
            return Counter(b for bodies in self.by_consumer.values() for b in bodies)


async def produce(cluster: InProcessCluster, topic: str, start: int, stop: int) -> None:
    async with Producer("load-pg", namesrv_addr=cluster.namesrv_addr) as producer:
        for first in range(start, stop, BATCH):
            batch = [Message(topic, b"%d" % i) for i in range(first, min(first + BATCH, stop))]
            await producer.send(batch)


def new_consumer(cluster: InProcessCluster, group: str, **config: object) -> PushConsumer:
    return PushConsumer(
        group,
        namesrv_addr=cluster.namesrv_addr,
        config=PushConsumerConfig(**config),  # type: ignore[arg-type]
    )


@pytest.mark.slow
async def test_consumers_join_and_leave_during_50k_messages(cluster: InProcessCluster) -> None:
    topic, group = "LoadTopic", "load-cg"
    tally = Tally()
    await produce(cluster, topic, 0, BATCH)  # the topic exists before anyone subscribes
    first = new_consumer(cluster, group)
    first.subscribe(topic)
    first.register_listener(tally.listener("first"))
    await first.start()
    producing = asyncio.create_task(produce(cluster, topic, BATCH, TOTAL))
    joiners: list[PushConsumer] = []
    for name in ("second", "third"):
        await eventually_async(
            lambda: sum(tally.all_bodies().values()) > 5_000 * (len(joiners) + 1), 60, 0.05
        )
        joiner = new_consumer(cluster, group)
        joiner.subscribe(topic)
        joiner.register_listener(tally.listener(name))
        await joiner.start()
        joiners.append(joiner)
    await eventually_async(lambda: len(tally.by_consumer["third"]) > 1_000, 60, 0.05)
    await joiners[0].shutdown()  # "second" leaves mid-run
    await producing
    try:
        await eventually_async(lambda: len(tally.all_bodies()) == TOTAL, 90, 0.05)
    finally:
        for c in (first, joiners[1]):
            await c.shutdown()
    counts = tally.all_bodies()
    duplicates = sum(n - 1 for n in counts.values())
    print(
        f"\n{TOTAL} messages, {duplicates} duplicates; per consumer: "
        + ", ".join(f"{k} {len(v)}" for k, v in tally.by_consumer.items())
    )
    assert set(counts) == {str(i) for i in range(TOTAL)}
    assert all(len(tally.by_consumer[name]) > 0 for name in ("first", "second", "third"))
    # Duplicates come from queues that changed hands with offsets not yet committed: a few
    # batches per handover at most, never a whole replay.
    assert duplicates < TOTAL // 10


async def test_a_consumer_killed_with_sigkill_loses_nothing(cluster: InProcessCluster) -> None:
    topic, group, total = "KillTopic", "kill-cg", 20_000
    tally = Tally()
    await produce(cluster, topic, 0, BATCH)
    survivor = new_consumer(cluster, group)
    survivor.subscribe(topic)
    survivor.register_listener(tally.listener("survivor"))
    await survivor.start()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    victim = subprocess.Popen(
        [sys.executable, str(CLIENT), cluster.namesrv_addr, topic, group],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    victim_bodies: list[str] = []
    try:
        assert victim.stdout is not None
        ready = await asyncio.wait_for(asyncio.to_thread(victim.stdout.readline), 20)
        assert ready.strip() == "READY"
        reader = asyncio.create_task(asyncio.to_thread(_read_all, victim.stdout, victim_bodies))
        producing = asyncio.create_task(produce(cluster, topic, BATCH, total))
        await eventually_async(lambda: len(victim_bodies) > 2_000, 60, 0.05)
        victim.kill()  # SIGKILL: no unregister, no offset commit
        victim.wait()
        await producing
        await reader
        # The broker sees the connection close, drops the client and tells the survivor,
        # which takes every queue and starts from the last committed offsets.
        await eventually_async(
            lambda: len(set(tally.all_bodies()) | set(victim_bodies)) == total, 90, 0.05
        )
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
        await survivor.shutdown()
    assert set(tally.all_bodies()) | set(victim_bodies) == {str(i) for i in range(total)}
    assert len(survivor.process_queues) >= 4  # it owns every queue of the topic now


def _read_all(stream: Iterable[str], into: list[str]) -> None:
    for line in stream:
        into.append(line.strip())


@pytest.mark.slow
async def test_orderly_consumers_keep_per_key_order_through_a_rebalance(
    cluster: InProcessCluster,
) -> None:
    topic, group, total, keys = "OrderLoad", "order-load-cg", 6_000, 8
    per_key: dict[str, list[int]] = defaultdict(list)
    lock = threading.Lock()

    async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        with lock:
            for m in messages:
                key, _, seq = m.body.decode().partition(":")
                per_key[key].append(int(seq))

    async with Producer("order-pg", namesrv_addr=cluster.namesrv_addr) as producer:
        await producer.send(Message(topic, b"k0:-1"), selector=select_by_hash, arg="k0")
        consumers = [
            new_consumer(
                cluster, group, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
            )
        ]
        consumers[0].subscribe(topic)
        consumers[0].register_listener(on_messages, orderly=True)
        await consumers[0].start()
        for i in range(total):
            key = f"k{i % keys}"
            await producer.send(
                Message(topic, f"{key}:{i}".encode()), selector=select_by_hash, arg=key
            )
            if i == total // 3:
                joiner = new_consumer(cluster, group)
                joiner.subscribe(topic)
                joiner.register_listener(on_messages, orderly=True)
                await joiner.start()
                consumers.append(joiner)
    try:
        await eventually_async(lambda: sum(len(v) for v in per_key.values()) >= total + 1, 60, 0.05)
    finally:
        for c in consumers:
            await c.shutdown()
    for key, seqs in per_key.items():
        # A queue that changed hands may replay its uncommitted tail: the order of first
        # deliveries is the sending order, and a replay never goes back past a commit.
        firsts = list(dict.fromkeys(seqs))
        assert firsts == sorted(firsts), key
    received = {s for seqs in per_key.values() for s in seqs}
    assert received >= set(range(total))


async def test_exhausted_retries_end_in_the_dead_letter_queue(tmp_path: Path) -> None:
    settings = {"message_delay_level": " ".join(["1s"] * 18)}
    async with InProcessCluster(tmp_path / "dlq", store_settings=settings) as cluster:
        async with Producer("dlq-pg", namesrv_addr=cluster.namesrv_addr) as producer:
            sent = await producer.send(Message("DlqTopic", b"poison"))
        attempts: list[int] = []

        async def always_fail(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
            attempts.extend(m.reconsume_times for m in messages)
            raise RuntimeError("poison")

        consumer = new_consumer(cluster, "dlq-cg", max_reconsume_times=2)
        consumer.subscribe("DlqTopic")
        consumer.register_listener(always_fail)
        await consumer.start()
        client = RemotingClient()
        try:
            broker = cluster.brokers[0].address
            dead = await eventually_async(
                lambda: query(client, broker, sent.msg_id, dlq_topic("dlq-cg")), 30, 0.2
            )
        finally:
            await client.close()
            await consumer.shutdown()
    assert attempts == [0, 1, 2]
    [letter] = dead
    assert letter.body == b"poison"
    assert letter.unique_key == sent.msg_id
