"""Producers outrunning a slow disk (R10, R8): a real name server, broker and producers on
real sockets, the broker's store writing through a FaultInjectingFileSystem whose writes
stall. The broker stays up and answers busy, every send it acknowledged is stored where it
said, and once the disk is fast again sends succeed again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from orbitmq.client import MQBrokerError, MQClientError, Producer, QueueReader, SendResult
from orbitmq.client.producer import ProducerConfig
from orbitmq.common import Message, MessageQueue
from orbitmq.common.file_system import OS_FILE_SYSTEM
from orbitmq.protocol import ResponseCode
from orbitmq.testing import FaultInjectingFileSystem, InProcessCluster
from tests.eventually import eventually_async
from tests.support import make_message

pytestmark = pytest.mark.timeout(60)

TOPIC = "SlowDiskTopic"
SLOW_PHASE_S = 4.0
SENDERS = 8


async def _send_until(
    producer: Producer, sender: int, stop: asyncio.Event, acked: dict[bytes, SendResult]
) -> list[BaseException]:
    """Send numbered messages one after another until ``stop``; the acknowledged go into
    ``acked`` by body, the failures are returned."""
    failures: list[BaseException] = []
    i = 0
    while not stop.is_set():
        body = b"%d-%d" % (sender, i)
        i += 1
        try:
            acked[body] = await producer.send(Message(TOPIC, body), timeout_s=3)
        except (MQBrokerError, MQClientError) as exc:
            failures.append(exc)
    return failures


async def _stored(namesrv_addr: str) -> dict[tuple[MessageQueue, int], bytes]:
    """Every message of TOPIC, by (queue, queue offset)."""
    stored: dict[tuple[MessageQueue, int], bytes] = {}
    async with QueueReader(namesrv_addr) as reader:
        for mq, (low, high) in (await reader.queue_offsets(TOPIC)).items():
            async for batch in reader.read(mq, low, high):
                stored.update({(mq, m.queue_offset): m.body for m in batch})
    return stored


async def test_producers_outrunning_a_slow_disk_are_answered_busy_and_lose_nothing_acked(
    tmp_path: Path,
) -> None:
    fs = FaultInjectingFileSystem()
    async with (
        InProcessCluster(
            tmp_path / "cluster", fs=fs, store_settings={"os_page_cache_busy_time_out_mills": 200}
        ) as cluster,
        Producer("SlowDiskGroup", namesrv_addr=cluster.namesrv_addr) as producer,
    ):
        broker = cluster.brokers[0]
        await producer.send(Message(TOPIC, b"warm"))  # the topic exists, the route is known
        fs.write_delay_s = 0.25  # each append now takes 250 ms: about 4 a second
        stop = asyncio.Event()
        acked: dict[bytes, SendResult] = {}
        senders = [
            asyncio.ensure_future(_send_until(producer, n, stop, acked)) for n in range(SENDERS)
        ]
        await asyncio.sleep(SLOW_PHASE_S)
        stop.set()
        failures = [f for failed in await asyncio.gather(*senders) for f in failed]

        # The broker answered busy rather than letting sends pile up: queued sends were
        # cleared, and the producers saw SYSTEM_BUSY (after their retries and backoffs).
        assert broker.send_message_processor.send_queue.cleared > 0
        # A send answered busy backs off (1 s, then 1.6 s, ...) within its 3 s: it ends
        # with SYSTEM_BUSY, or times out during a backoff.
        busy = [
            f
            for f in failures
            if getattr(f, "code", None) == ResponseCode.SYSTEM_BUSY
            or "asked to slow down" in str(f)
        ]
        assert busy, failures[:3]
        slow_acked = len(acked)
        # The disk set the pace: at most one append per 250 ms, while the senders ran and
        # while their last sends drained (3 s at most).
        assert 0 < slow_acked <= (SLOW_PHASE_S + 3.5) / 0.25

        fs.write_delay_s = 0
        recovered = [await producer.send(Message(TOPIC, b"after-%d" % i)) for i in range(20)]
        assert all(r.queue_offset >= 0 for r in recovered)
        assert not broker.send_message_processor.send_queue.off_loop  # appends are inline again

        stored = await _stored(cluster.namesrv_addr)
        for body, result in acked.items():
            assert stored.get((result.message_queue, result.queue_offset)) == body
        stored_bodies = set(stored.values())
        assert {b"after-%d" % i for i in range(20)} <= stored_bodies


async def test_a_busy_broker_is_retried_elsewhere_and_then_avoided(tmp_path: Path) -> None:
    # broker-a's disk stalls under another writer (its put lock held past the busy time);
    # broker-b is healthy. With latency fault tolerance (RocketMQ's sendLatencyFaultEnable)
    # the producer retries a SYSTEM_BUSY on broker-b after one backoff, isolates broker-a,
    # and sends the rest straight to broker-b.
    slow = FaultInjectingFileSystem()
    async with InProcessCluster(
        tmp_path / "cluster", fs=slow, store_settings={"os_page_cache_busy_time_out_mills": 200}
    ) as cluster:
        cluster.fs = OS_FILE_SYSTEM
        await cluster.start_broker("broker-b")
        broker_a = cluster.brokers[0]
        config = ProducerConfig(send_latency_fault_enable=True)
        async with Producer("BusyGroup", namesrv_addr=cluster.namesrv_addr, config=config) as p:
            for broker in cluster.brokers:  # the topic on both brokers
                queue = MessageQueue(TOPIC, broker.broker_config.broker_name, 0)
                await p.send(Message(TOPIC, b"warm"), selector=lambda mqs, m, q: q, arg=queue)
            slow.write_delay_s = 3.0
            store = broker_a.message_store
            holder = asyncio.ensure_future(
                asyncio.to_thread(store.put_message, make_message(TOPIC))
            )
            await eventually_async(store.commit_log.is_os_page_cache_busy)
            loop = asyncio.get_running_loop()
            began = loop.time()
            results = [await p.send(Message(TOPIC, b"m-%d" % i), timeout_s=5) for i in range(8)]
            elapsed = loop.time() - began
            assert {r.message_queue.broker_name for r in results} == {"broker-b"}
            # broker-a was tried, answered busy, and is now isolated.
            assert not p.fault_strategy.latency_fault_tolerance.is_available("broker-a")
            # At most one backoff (about 1 s) in all: after it, broker-a is not tried.
            assert elapsed < 2.5
            slow.write_delay_s = 0
            assert (await holder).is_ok
