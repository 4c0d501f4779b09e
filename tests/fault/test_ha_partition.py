"""A SYNC_MASTER cut off from its slave by a network partition (issue 16 §5).

Name server, master and slave run as processes (``tests/fault/ha_pair.py``); the slave's
haMasterAddress is a relay in this process (``tests/tcp_relay.py``), so the test can cut
the replication link without touching either broker. The master runs with slaveTimeout
500 ms and drops a slave it has not heard from for 2 s (haHousekeepingInterval).

- Before the cut, sends are answered SEND_OK.
- Cut: the next sends wait slaveTimeout and are answered FLUSH_SLAVE_TIMEOUT; once the
  master has dropped the silent connection (and says so in its log) they are answered
  SLAVE_NOT_AVAILABLE at once. None is answered SEND_OK.
- Everything answered SEND_OK is on the slave throughout.
- Restore: the slave connects again, copies what it missed (the messages answered
  FLUSH_SLAVE_TIMEOUT and SLAVE_NOT_AVAILABLE too, at the queue offsets they were given),
  and sends are answered SEND_OK again.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest

from orbitmq.client import AdminClient, ClientConfig, MQClientAPI, Producer, SendStatus
from orbitmq.common import MessageQueue
from orbitmq.remoting import RemotingClient
from tests.fault.ha_ledger import Ledger, missing_on, send_keyed, wait_for_topic
from tests.fault.ha_pair import BROKER_NAME, HaPair, free_port
from tests.tcp_relay import TcpRelay

TOPIC = "HaPartitionTopic"
SLAVE_TIMEOUT_S = 0.5
HOUSEKEEPING_MS = 2000
MASTER_CONF = (
    f"slaveTimeout={int(SLAVE_TIMEOUT_S * 1000)}\nhaHousekeepingInterval={HOUSEKEEPING_MS}\n"
)
#: The slave connects again every 5 s (RocketMQ's HAClient); catching up takes about that.
WAIT_S = 30.0


class Sender:
    """Sends keys ``p-0``, ``p-1``, ... one at a time into one ledger. For one event loop."""

    def __init__(self, producer: Producer, ledger: Ledger) -> None:
        self._producer = producer
        self.ledger = ledger
        self._seq = 0

    async def send(self) -> tuple[SendStatus | None, float]:
        """One send's answer (None: it failed) and how long it took."""
        started = time.monotonic()
        key = f"p-{self._seq}"
        self._seq += 1
        status = await send_keyed(self._producer, TOPIC, key, self.ledger)
        return status, time.monotonic() - started

    async def until(self, wanted: SendStatus, timeout_s: float, pause_s: float = 0.0) -> None:
        """Send, ``pause_s`` apart, until one is answered ``wanted``."""
        answers: Counter[str] = Counter()
        deadline = time.monotonic() + timeout_s
        while True:
            status = (await self.send())[0]
            if status is wanted:
                return
            answers[status.name if status else "failed"] += 1
            assert time.monotonic() < deadline, f"no {wanted.name} in {timeout_s} s: {answers}"
            await asyncio.sleep(pause_s)


async def assert_slave_holds(api: MQClientAPI, pair: HaPair, ledger: Ledger, what: str) -> None:
    problems = await missing_on(api, pair.slave_addr, TOPIC, BROKER_NAME, ledger.acks, WAIT_S)
    shown = "\n  ".join(problems[:20])
    assert not problems, f"{len(problems)} {what} message(s) not on the slave:\n  {shown}"


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_a_partition_times_out_then_drops_the_slave_and_heals(tmp_path: Path) -> None:
    ha_port = free_port()
    with (
        TcpRelay(("127.0.0.1", ha_port)) as relay,
        HaPair(
            tmp_path,
            ha_port=ha_port,
            master_extra=MASTER_CONF,
            slave_extra=f"haMasterAddress={relay.address}\n",
        ) as pair,
    ):
        async with AdminClient(namesrv_addr=pair.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, queue_nums=2)
        api = MQClientAPI(RemotingClient())
        config = ClientConfig(namesrv_addr=pair.namesrv_addr)
        try:
            await wait_for_topic(api, pair.slave_addr, MessageQueue(TOPIC, BROKER_NAME, 0), WAIT_S)
            async with Producer("ha-partition-pg", client_config=config) as producer:
                sender = Sender(producer, Ledger())
                await sender.until(SendStatus.SEND_OK, WAIT_S)  # the slave has connected

                relay.cut()
                await during_the_cut(sender)
                assert f"closed: no report for {HOUSEKEEPING_MS} ms" in pair.master_log()
                await assert_slave_holds(api, pair, sender.ledger, "acknowledged")

                relay.restore()
                # Then SEND_OK again (on a loaded machine a send may still miss 500 ms).
                for _ in range(5):
                    await sender.until(SendStatus.SEND_OK, WAIT_S, pause_s=0.05)
            ledger = sender.ledger
            print(f"partition: {len(ledger.acks)} acknowledged, others {dict(ledger.others)}")
            assert relay.connections >= 2, "the slave never connected again"
            # What was stored during the cut reached the slave after it, where it was put.
            catch_up = Ledger(acks=ledger.acks + ledger.unreplicated)
            await assert_slave_holds(api, pair, catch_up, "acknowledged or stored")
        finally:
            await api.remoting.close()


async def during_the_cut(sender: Sender) -> None:
    """FLUSH_SLAVE_TIMEOUT after slaveTimeout each, until the master drops the slave; then
    SLAVE_NOT_AVAILABLE at once. Never SEND_OK."""
    timed_out: list[float] = []
    deadline = time.monotonic() + WAIT_S
    while True:
        assert time.monotonic() < deadline, f"still no SLAVE_NOT_AVAILABLE: {timed_out}"
        status, took_s = await sender.send()
        if status is SendStatus.SLAVE_NOT_AVAILABLE:
            break
        assert status is SendStatus.FLUSH_SLAVE_TIMEOUT, f"{status} during the cut"
        timed_out.append(took_s)
    # The master holds a silent slave for haHousekeepingInterval: some sends wait on it.
    assert len(timed_out) >= 2, timed_out
    assert min(timed_out) >= SLAVE_TIMEOUT_S * 0.9, timed_out
    for _ in range(5):
        status, took_s = await sender.send()
        assert status is SendStatus.SLAVE_NOT_AVAILABLE, status
        assert took_s < SLAVE_TIMEOUT_S, took_s
