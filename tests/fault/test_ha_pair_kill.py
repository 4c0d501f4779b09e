"""A SYNC_MASTER + SYNC_FLUSH pair loses nothing it acknowledged when its master is killed
(issue 16 §5).

Name server, master and slave run as their own processes (``orbitmq namesrv``, ``orbitmq
broker -c master.conf``, ``orbitmq broker -c slave.conf``; ``tests/fault/ha_pair.py``).
The slave copies through a relay in this process that delays every byte by 20 ms each way
(its haMasterAddress is the relay's). Each cycle, producers in this process send keyed
messages; a random 0.1-1.0 s after the cycle's first SEND_OK the master's machine "dies":
the relay severs the link (what was in flight to the slave is lost) and the master gets
SIGKILL. A SIGKILL alone loses nothing in flight (the kernel still sends what the process
wrote) and on loopback a slave trails its master by well under a millisecond, so without
the severed, slow link an ASYNC_MASTER would pass this test too; with it, a master that
answers SEND_OK before its slave holds the message loses its last acknowledged sends, and
the test sees them missing. Then, with the master down:

- every message ever answered SEND_OK is on the slave, pulled straight from the slave's
  address: at its acknowledged queue id and queue offset, with its unique id, key and body;
- the consumer group, running throughout, has received every one of them (it reads the
  slave once the name server lists the slave alone);
- a consumer group started only now, from the first offset, receives every one of them
  too: what it reads can only come from the slave.

The master starts again on its store; the slave reconnects (the master logs its request)
and catches up (every queue's max offset on the slave equals the master's). The short run
(in ``make test``) does one cycle, the fault run three. ``ORBITMQ_HA_KILL_SEED=<seed>``
replays a run's kill delays.
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from orbitmq.client import (
    AdminClient,
    ClientConfig,
    ConsumeContext,
    MQClientAPI,
    Producer,
    PushConsumer,
    PushConsumerConfig,
)
from orbitmq.common import MessageExt, MessageQueue
from orbitmq.protocol import ConsumeFromWhere
from orbitmq.remoting import RemotingClient
from tests.eventually import eventually_async
from tests.fault.ha_ledger import (
    Ledger,
    missing_on,
    queue_max_offsets,
    send_until,
    wait_for_topic,
)
from tests.fault.ha_pair import BROKER_NAME, HaPair, free_port
from tests.tcp_relay import TcpRelay

TOPIC = "HaKillTopic"
GROUP = "ha-kill-cg"
QUEUES = 4
PRODUCERS = 8
#: One-way latency of the replication link (see the module docstring).
LINK_DELAY_S = 0.02
#: Reading the slave and catching up wait this long at most (a slave reconnects every 5 s).
WAIT_S = 30.0
#: The slave dispatches what it holds well within this; with the master down nothing more
#: arrives, so a message not there by then is lost.
DISPATCH_WAIT_S = 10.0
#: What the master logs when a slave's connection asks for the log (each connection once).
SLAVE_ASKS = "requests the commit log from"


class Received:
    """Keys the consumer group's listener got (thread safe: listeners may run anywhere)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: set[str] = set()

    async def on_messages(self, messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        with self._lock:
            for m in messages:
                self._keys.update(m.keys)

    def missing(self, keys: set[str]) -> set[str]:
        with self._lock:
            return keys - self._keys

    async def wait_for(self, keys: set[str], timeout_s: float, context: str) -> None:
        """Until every key in ``keys`` was received (polled; bounded)."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while missing := self.missing(keys):
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(
                    f"the consumer group lacks {len(missing)} of {len(keys)} acknowledged "
                    f"message(s) after {timeout_s} s, e.g. {sorted(missing)[:5]}; {context}"
                )
            await asyncio.sleep(0.1)


@asynccontextmanager
async def consumer_group(
    namesrv: str, received: Received, group: str = GROUP
) -> AsyncIterator[PushConsumer]:
    """The group, reading from the first offset, with a route refresh every second so
    that it finds the slave alone soon after the master is gone."""
    consumer = PushConsumer(
        group,
        client_config=ClientConfig(
            namesrv_addr=namesrv, poll_name_server_interval_s=1.0, heartbeat_broker_interval_s=1.0
        ),
        config=PushConsumerConfig(
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            rebalance_interval_s=1.0,
            broker_suspend_max_time_s=1.0,
        ),
    )
    consumer.subscribe(TOPIC)
    consumer.register_listener(received.on_messages)
    await consumer.start()
    try:
        yield consumer
    finally:
        await consumer.shutdown()


async def produce_until_killed(
    pair: HaPair, relay: TcpRelay, ledger: Ledger, cycle: int, delay_s: float
) -> None:
    """Producers send until the master dies ``delay_s`` after the cycle's first ack."""
    config = ClientConfig(namesrv_addr=pair.namesrv_addr, poll_name_server_interval_s=1.0)
    async with Producer(f"ha-kill-pg-{cycle}", client_config=config) as producer:
        stop = asyncio.Event()
        ledger.first_ack.clear()
        senders = [
            asyncio.create_task(send_until(producer, TOPIC, f"c{cycle}p{p}", ledger, stop))
            for p in range(PRODUCERS)
        ]
        try:
            async with asyncio.timeout(WAIT_S):
                await ledger.first_ack.wait()
            await asyncio.sleep(delay_s)
            relay.sever()
            pair.kill_master()
        finally:
            stop.set()
            for sender in senders:
                sender.cancel()
            await asyncio.gather(*senders, return_exceptions=True)


async def check_slave_holds_every_ack(api: MQClientAPI, pair: HaPair, ledger: Ledger) -> None:
    problems = await missing_on(
        api, pair.slave_addr, TOPIC, BROKER_NAME, ledger.acks, DISPATCH_WAIT_S
    )
    shown = "\n  ".join(problems[:20])
    assert not problems, f"{len(problems)} acknowledged message(s) not on the slave:\n  {shown}"


async def restart_and_resume(api: MQClientAPI, pair: HaPair) -> list[int]:
    """Start the master again; once the slave's connection reached it and the slave holds
    what the master holds, each queue's max offset."""
    asked = pair.master_log().count(SLAVE_ASKS)
    await asyncio.to_thread(pair.restart_master)
    await eventually_async(
        lambda: pair.master_log().count(SLAVE_ASKS) > asked,
        WAIT_S,
        0.1,
        what="the slave connected to the restarted master",
    )
    return await wait_caught_up(api, pair)


async def wait_caught_up(api: MQClientAPI, pair: HaPair) -> list[int]:
    async def same() -> list[int] | None:
        on_master = await queue_max_offsets(
            api, pair.master_addr, TOPIC, BROKER_NAME, range(QUEUES)
        )
        on_slave = await queue_max_offsets(api, pair.slave_addr, TOPIC, BROKER_NAME, range(QUEUES))
        return on_master if on_master == on_slave else None

    return await eventually_async(same, WAIT_S, 0.2, what="the slave's queues as the master's")


async def run_cycles(root: Path, cycles: int) -> None:
    seed = int(os.environ.get("ORBITMQ_HA_KILL_SEED") or random.randrange(2**32))
    rng = random.Random(seed)
    print(f"HA kill run: seed {seed} (replay: ORBITMQ_HA_KILL_SEED={seed}), {cycles} cycle(s)")
    ledger, received = Ledger(), Received()
    ha_port = free_port()
    with (
        TcpRelay(("127.0.0.1", ha_port), delay_s=LINK_DELAY_S) as relay,
        HaPair(root, ha_port=ha_port, slave_extra=f"haMasterAddress={relay.address}\n") as pair,
    ):
        async with AdminClient(namesrv_addr=pair.namesrv_addr) as admin:
            # Before the slave's first metadata sync (3 s after its start), so that the
            # slave serves the topic's pulls from the start.
            await admin.create_topic(TOPIC, queue_nums=QUEUES)
        api = MQClientAPI(RemotingClient())
        try:
            await wait_for_topic(api, pair.slave_addr, MessageQueue(TOPIC, BROKER_NAME, 0), WAIT_S)
            async with consumer_group(pair.namesrv_addr, received):
                for cycle in range(cycles):
                    delay_s = rng.uniform(0.1, 1.0)
                    await produce_until_killed(pair, relay, ledger, cycle, delay_s)
                    context = (
                        f"seed {seed} cycle {cycle} (killed {delay_s:.2f} s after the "
                        f"first ack): {ledger.describe()}"
                    )
                    print(context)
                    await check_slave_holds_every_ack(api, pair, ledger)
                    keys = {ack.key for ack in ledger.acks}
                    await received.wait_for(keys, WAIT_S, context)
                    late = Received()
                    async with consumer_group(pair.namesrv_addr, late, f"{GROUP}-late-{cycle}"):
                        await late.wait_for(keys, WAIT_S, f"a group started now; {context}")
                    ends = await restart_and_resume(api, pair)
                    print(f"cycle {cycle}: the slave caught up, queue max offsets {ends}")
        finally:
            await api.remoting.close()


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_one_kill_of_the_master_loses_nothing_acknowledged(tmp_path: Path) -> None:
    await run_cycles(tmp_path, cycles=1)


@pytest.mark.fault
@pytest.mark.timeout(300)
async def test_three_kills_of_the_master_lose_nothing_acknowledged(tmp_path: Path) -> None:
    await run_cycles(tmp_path, cycles=3)
