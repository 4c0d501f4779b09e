"""Reading from the slave while the master is down, and failing back (issue 16 §4), as
RocketMQ 4.9's clients do: pulls go to the slave the route still lists, offsets are committed
to it (findBrokerAddressInAdmin), the periodic commit takes them to the master once it is
back, and pulls go back to the master. Orderly queues cannot be locked without the master:
their consumer pauses. ``InProcessCluster.messages_pulled`` tells which broker served. A
producer's latency fault strategy keeps its sends off a master it cannot reach."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from orbitmq.broker import BrokerController
from orbitmq.client import (
    AdminClient,
    ClientConfig,
    ConsumeContext,
    LitePullConsumer,
    LitePullConsumerConfig,
    Producer,
    ProducerConfig,
    PushConsumer,
    PushConsumerConfig,
    SendContext,
)
from orbitmq.client.push_consumer import PULL_TIME_DELAY_WHEN_EXCEPTION_S
from orbitmq.common import Message, MessageExt, MessageQueue
from orbitmq.protocol import ConsumeFromWhere
from orbitmq.testing import InProcessCluster
from tests.eventually import eventually_async, stays_async

pytestmark = pytest.mark.timeout(90)

TOPIC = "FailoverTopic"
GROUP = "FailoverGroup"
QUEUES = 2
MASTER = ("broker-a", 0)
SLAVE = ("broker-a", 1)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    """broker-a with a slave; brokers register every 0.3 s, so a slave learns its restarted
    master's new address at once (RocketMQ: every 30 s)."""
    async with InProcessCluster(
        tmp_path / "cluster", slaves=1, broker_settings={"register_name_server_period": 300}
    ) as running:
        async with AdminClient(namesrv_addr=running.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, queue_nums=QUEUES)
        yield running


def fast_client(cluster: InProcessCluster) -> ClientConfig:
    """Routes, heartbeats and offset commits every 0.2 s (RocketMQ: 30 s, 30 s, 5 s)."""
    return ClientConfig(
        namesrv_addr=cluster.namesrv_addr,
        poll_name_server_interval_s=0.2,
        heartbeat_broker_interval_s=0.2,
        persist_consumer_offset_interval_s=0.2,
    )


def master(cluster: InProcessCluster) -> BrokerController:
    """broker-a's master."""
    return next(
        b
        for b in cluster.brokers
        if b.broker_config.broker_name == "broker-a" and b.broker_config.broker_id == 0
    )


def slave(cluster: InProcessCluster) -> BrokerController:
    (only,) = cluster.slaves_of("broker-a")
    return only


def committed(broker: BrokerController) -> int:
    """The group's committed offsets on ``broker``, summed over the topic's queues."""
    offsets = broker.consumer_offset_manager.query_offsets(GROUP, TOPIC) or {}
    return sum(offsets.values())


async def send(
    cluster: InProcessCluster, bodies: Sequence[str], queue_id: int | None = None
) -> None:
    """Send to the master (to ``queue_id``, else round robin), then wait until the slave has
    copied every message, and have it sync its topics and offsets from the master at once
    (RocketMQ's slave does every 10 s)."""
    async with Producer("FailoverProducer", namesrv_addr=cluster.namesrv_addr) as producer:
        for body in bodies:
            queue = None if queue_id is None else MessageQueue(TOPIC, "broker-a", queue_id)
            await producer.send(Message(TOPIC, body.encode()), queue=queue)
    head = master(cluster).message_store
    copy = slave(cluster).message_store

    def copied() -> bool:
        return all(
            copy.get_max_offset_in_queue(TOPIC, q) == head.get_max_offset_in_queue(TOPIC, q)
            for q in range(QUEUES)
        )

    await eventually_async(copied, what="the slave has copied the master's messages")
    sync = slave(cluster).slave_synchronize
    assert sync is not None
    assert await sync.sync_all()


async def stop_master(cluster: InProcessCluster, instance_addrs: dict[str, dict[int, str]]) -> None:
    """Stop broker-a's master; return once the client's route lists its slave alone."""
    await cluster.stop_broker(master(cluster))
    alone = {1: slave(cluster).address}
    await eventually_async(
        lambda: instance_addrs.get("broker-a") == alone, what="the route lists the slave alone"
    )


async def restart_master(
    cluster: InProcessCluster, instance_addrs: dict[str, dict[int, str]]
) -> BrokerController:
    """Start broker-a's master again on its store; return once the client routes to it."""
    again = await cluster.start_broker("broker-a")
    await eventually_async(
        lambda: instance_addrs.get("broker-a", {}).get(0) == again.address,
        what="the route lists the master again",
    )
    return again


class Gate:
    """Received bodies, and a gate the listener waits at while it is closed."""

    def __init__(self) -> None:
        self.bodies: list[str] = []
        self.open = asyncio.Event()
        self.open.set()
        self._lock = threading.Lock()

    async def listener(self, messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        await self.open.wait()
        with self._lock:
            self.bodies.extend(m.body.decode() for m in messages)

    def count(self) -> int:
        with self._lock:
            return len(self.bodies)


@pytest.mark.slow
async def test_a_push_consumer_reads_from_the_slave_and_fails_back(
    cluster: InProcessCluster,
) -> None:
    gate = Gate()
    consumer = PushConsumer(
        GROUP,
        client_config=fast_client(cluster),
        config=PushConsumerConfig(
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            rebalance_interval_s=0.5,
            broker_suspend_max_time_s=0.5,
            # One message a pull, and a queue pauses with 2 held: while the listener is held
            # at the gate most of the second batch stays on the brokers.
            pull_batch_size=1,
            pull_threshold_for_queue=1,
        ),
    )
    consumer.subscribe(TOPIC)
    consumer.register_listener(gate.listener)
    addrs = consumer.instance.broker_addrs
    async with consumer:
        await send(cluster, [f"a{i}" for i in range(10)])
        await eventually_async(lambda: gate.count() == 10, what="the first 10 consumed")
        await eventually_async(lambda: committed(master(cluster)) == 10, what="committed")
        sync = slave(cluster).slave_synchronize
        assert sync is not None
        assert await sync.sync_all()
        assert committed(slave(cluster)) == 10

        gate.open.clear()
        await send(cluster, [f"b{i}" for i in range(10)])
        await stop_master(cluster, addrs)
        gate.open.set()
        await eventually_async(lambda: gate.count() == 20, what="the second 10 consumed")
        # Read from the slave, and committed to it: the master is gone.
        assert cluster.messages_pulled(GROUP, TOPIC).get(SLAVE, 0) > 0
        await eventually_async(lambda: committed(slave(cluster)) == 20, what="slave commits")

        again = await restart_master(cluster, addrs)
        # The periodic commit takes the consumer's offsets to the master, not its stale 10.
        await eventually_async(lambda: committed(again) == 20, what="the master's offsets")
        await send(cluster, [f"c{i}" for i in range(10)])
        await eventually_async(lambda: gate.count() == 30, what="the third 10 consumed")
        assert cluster.messages_pulled(GROUP, TOPIC).get(MASTER) == 10
        await eventually_async(lambda: committed(again) == 30, what="the master's offsets")
    # Each message once: nothing was consumed again across the failover and back.
    assert sorted(gate.bodies) == sorted(f"{p}{i}" for p in "abc" for i in range(10))
    # The slave's next sync follows the master's table again.
    sync = slave(cluster).slave_synchronize
    assert sync is not None
    assert await sync.sync_all()
    assert committed(slave(cluster)) == 30


@pytest.mark.slow
async def test_a_lite_pull_consumer_reads_from_the_slave_and_commits_to_it(
    cluster: InProcessCluster,
) -> None:
    config = LitePullConsumerConfig(consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)

    async def poll_all(consumer: LitePullConsumer, count: int) -> list[str]:
        bodies: list[str] = []
        async with asyncio.timeout(20):
            while len(bodies) < count:
                bodies.extend(m.body.decode() for m in await consumer.poll(0.5))
        return bodies

    await send(cluster, [f"a{i}" for i in range(10)])
    first = LitePullConsumer(GROUP, client_config=fast_client(cluster), config=config)
    first.subscribe(TOPIC)
    async with first:
        assert sorted(await poll_all(first, 10)) == sorted(f"a{i}" for i in range(10))
        await first.commit_sync()
    sync = slave(cluster).slave_synchronize
    assert sync is not None
    assert await sync.sync_all()
    await send(cluster, [f"b{i}" for i in range(10)])
    await cluster.stop_broker(master(cluster))

    second = LitePullConsumer(GROUP, client_config=fast_client(cluster), config=config)
    second.subscribe(TOPIC)
    addrs = second.instance.broker_addrs
    async with second:
        # Started with the master down: the slave's copy of the offsets says where to begin.
        assert sorted(await poll_all(second, 10)) == sorted(f"b{i}" for i in range(10))
        await second.commit_sync()
        assert committed(slave(cluster)) == 20
        assert cluster.messages_pulled(GROUP, TOPIC) == {SLAVE: 10}
        slave(cluster).broker_stats_manager.sampling_in_seconds()  # as every 10 s
        async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
            # Asked of every broker in the route (the slave alone): GROUP_GET_NUMS.
            served = await admin.group_get_nums(GROUP, TOPIC)
            assert list(served) == [SLAVE]
            assert served[SLAVE].stats_minute.sum == 10
            again = await restart_master(cluster, addrs)
            await eventually_async(lambda: committed(again) == 20, what="the master's offsets")
            # Both listed again; the master served none of it.
            assert list(await admin.group_get_nums(GROUP, TOPIC)) == [SLAVE]


@pytest.mark.slow
async def test_an_orderly_consumer_pauses_while_the_master_is_down(
    cluster: InProcessCluster,
) -> None:
    gate = Gate()
    gate.open.clear()
    consumer = PushConsumer(
        GROUP,
        client_config=fast_client(cluster),
        config=PushConsumerConfig(
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            rebalance_interval_s=0.3,
            lock_renew_interval_s=0.3,
            broker_suspend_max_time_s=0.5,
            pull_batch_size=1,
            pull_threshold_for_queue=1,
        ),
    )
    consumer.subscribe(TOPIC)
    consumer.register_listener(gate.listener, orderly=True)
    addrs = consumer.instance.broker_addrs
    bodies = [f"o{i}" for i in range(6)]
    async with consumer:
        await send(cluster, bodies, queue_id=0)
        mq = MessageQueue(TOPIC, "broker-a", 0)
        await eventually_async(lambda: mq in consumer.process_queues, what="queue 0 owned")
        await stop_master(cluster, addrs)
        # No master, no lock: the queue's lock lapses at the next renewal.
        await eventually_async(lambda: not consumer.process_queues[mq].locked, what="unlocked")
        gate.open.set()
        await eventually_async(lambda: gate.count() >= 1, what="the batch in hand consumed")
        held = gate.count()
        # Paused: nothing more consumed, and nothing pulled from the slave, for longer than
        # a failed pull waits before the next (which would otherwise go to the slave).
        await stays_async(
            lambda: gate.count() == held and SLAVE not in cluster.messages_pulled(GROUP, TOPIC),
            PULL_TIME_DELAY_WHEN_EXCEPTION_S + 1.0,
            what="paused",
        )

        await restart_master(cluster, addrs)
        await eventually_async(lambda: gate.count() == 6, what="resumed after the master is back")
    assert gate.bodies == bodies  # in order, each once


class SendAttempts:
    """A send hook that records the broker of each send attempt."""

    def __init__(self) -> None:
        self.brokers: list[str] = []

    def send_message_before(self, context: SendContext) -> None:
        self.brokers.append(context.mq.broker_name)

    def send_message_after(self, context: SendContext) -> None:
        pass


@pytest.mark.slow
async def test_the_producer_steers_off_an_unreachable_master(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path / "two", brokers=2, slaves=1) as two:
        async with AdminClient(namesrv_addr=two.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, queue_nums=QUEUES)
        attempts = SendAttempts()
        producer = Producer(
            "FaultProducer",
            namesrv_addr=two.namesrv_addr,
            config=ProducerConfig(send_latency_fault_enable=True),
        )
        producer.register_send_hook(attempts)
        async with producer:
            for i in range(4):
                await producer.send(Message(TOPIC, f"before{i}".encode()))
            assert set(attempts.brokers) == {"broker-a", "broker-b"}
            attempts.brokers.clear()
            # broker-a's master is cut off from its clients; the name server, and so the
            # producer's route, still lists it.
            await two.stop_serving(master(two))
            results = [await producer.send(Message(TOPIC, f"after{i}".encode())) for i in range(20)]
            route = await producer.instance.update_topic_route(TOPIC)
        assert all(r.message_queue.broker_name == "broker-b" for r in results)
        # One failed attempt isolates broker-a: the sends after it do not pick its queues
        # (round robin would, every other send, and fail each time before its retry).
        assert attempts.brokers.count("broker-a") <= 1
        assert attempts.brokers.count("broker-b") == 20
        assert any(0 in b.broker_addrs for b in route.broker_datas if b.broker_name == "broker-a")
