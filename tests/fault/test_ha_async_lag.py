"""An ASYNC_MASTER's slave keeps up under steady load (issue 16 §5).

Master and slave run as processes (``tests/fault/ha_pair.py``; ASYNC_MASTER, ASYNC_FLUSH).
Producers in this process send at a fixed rate (2000 messages/s for 3 s) while a poller
asks the slave for each queue's max offset every few milliseconds. A message's lag is the
time from its send's answer to the first poll that finds the slave holding it (its consume
queue reaches the message, i.e. a consumer could read it there); one the slave held before
the answer arrived lags 0. The poll interval and one GET_MAX_OFFSET round trip are included,
so the figures are upper bounds. p50/p99/max are printed; the bounds asserted are generous
(a loaded 2-core CI machine runs three servers and the load here). p50 under 100 ms is what
fails a master that ships only on its idle wakeup (once a second), not on each put.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from orbitmq.client import AdminClient, ClientConfig, MQClientAPI, Producer, SendStatus
from orbitmq.common import Message, MessageQueue
from orbitmq.remoting import RemotingClient
from tests.fault.ha_ledger import queue_max_offsets, wait_for_topic
from tests.fault.ha_pair import BROKER_NAME, HaPair

TOPIC = "HaLagTopic"
QUEUES = 4
RATE_PER_S = 2000
DURATION_S = 3.0
SENDERS = 32
POLL_S = 0.005
P50_BOUND_S = 0.1
P99_BOUND_S = 1.0
WAIT_S = 30.0


@dataclass(slots=True)
class LagBook:
    """Acknowledged sends not yet seen on the slave, by queue and offset, and the lags
    measured. For one event loop."""

    waiting: list[dict[int, float]] = field(default_factory=lambda: [{} for _ in range(QUEUES)])
    on_slave: list[int] = field(default_factory=lambda: [0] * QUEUES)
    lags_s: list[float] = field(default_factory=list)

    def acked(self, queue_id: int, queue_offset: int, at: float) -> None:
        if queue_offset < self.on_slave[queue_id]:
            self.lags_s.append(0.0)
        else:
            self.waiting[queue_id][queue_offset] = at

    def seen(self, queue_id: int, max_offset: int, at: float) -> None:
        self.on_slave[queue_id] = max(self.on_slave[queue_id], max_offset)
        waiting = self.waiting[queue_id]
        for offset in [o for o in waiting if o < max_offset]:
            self.lags_s.append(at - waiting.pop(offset))

    @property
    def pending(self) -> int:
        return sum(len(w) for w in self.waiting)


async def send_at_rate(producer: Producer, book: LagBook) -> tuple[int, float]:
    """RATE_PER_S sends for DURATION_S, message ``i`` not before ``i / RATE_PER_S``;
    how many were answered SEND_OK and the time it took."""
    total = int(RATE_PER_S * DURATION_S)
    next_index = 0
    sent_ok = 0
    started = time.monotonic()

    async def sender() -> None:
        nonlocal next_index, sent_ok
        while next_index < total:
            index = next_index
            next_index += 1
            await asyncio.sleep(max(0.0, started + index / RATE_PER_S - time.monotonic()))
            result = await producer.send(Message(TOPIC, b"lag-%08d" % index + b"." * 200))
            assert result.send_status is SendStatus.SEND_OK, result.send_status
            book.acked(result.message_queue.queue_id, result.queue_offset, time.monotonic())
            sent_ok += 1

    await asyncio.gather(*(sender() for _ in range(SENDERS)))
    return sent_ok, time.monotonic() - started


async def poll_slave(api: MQClientAPI, addr: str, book: LagBook, stop: asyncio.Event) -> None:
    queues = [MessageQueue(TOPIC, BROKER_NAME, q) for q in range(QUEUES)]
    while not stop.is_set() or book.pending:
        maxes = await asyncio.gather(*(api.get_max_offset(addr, mq, 3.0) for mq in queues))
        now = time.monotonic()
        for queue_id, max_offset in enumerate(maxes):
            book.seen(queue_id, max_offset, now)
        await asyncio.sleep(POLL_S)


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_an_async_slave_keeps_up_with_steady_load(tmp_path: Path) -> None:
    with HaPair(tmp_path, role="ASYNC_MASTER", flush="ASYNC_FLUSH") as pair:
        async with AdminClient(namesrv_addr=pair.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, queue_nums=QUEUES)
        api = MQClientAPI(RemotingClient())
        config = ClientConfig(namesrv_addr=pair.namesrv_addr)
        try:
            await wait_for_topic(api, pair.slave_addr, MessageQueue(TOPIC, BROKER_NAME, 0), WAIT_S)
            book, stop = LagBook(), asyncio.Event()
            async with Producer("ha-lag-pg", client_config=config) as producer:
                poller = asyncio.create_task(poll_slave(api, pair.slave_addr, book, stop))
                sent, took_s = await send_at_rate(producer, book)
                stop.set()
                async with asyncio.timeout(WAIT_S):
                    await poller  # until the slave held every acknowledged message
            on_master = await queue_max_offsets(
                api, pair.master_addr, TOPIC, BROKER_NAME, range(QUEUES)
            )
            assert book.on_slave == on_master
        finally:
            await api.remoting.close()
    lags = sorted(book.lags_s)
    p50, p99 = statistics.quantiles(lags, n=100)[49], statistics.quantiles(lags, n=100)[98]
    print(
        f"ASYNC_MASTER lag: {sent} messages in {took_s:.2f} s ({sent / took_s:.0f}/s), "
        f"lag p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {lags[-1] * 1000:.1f} ms"
    )
    assert len(lags) == sent
    # The load was steady: the producers kept at least half the rate (the machine may be
    # shared), so the lag was measured under load.
    assert sent / took_s > RATE_PER_S * 0.5, f"only {sent / took_s:.0f}/s sent"
    assert p50 < P50_BOUND_S, f"p50 lag {p50:.3f} s"
    assert p99 < P99_BOUND_S, f"p99 lag {p99:.3f} s"
