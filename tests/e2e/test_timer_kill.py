"""Timer messages survive kill -9 of a real `orbitmq start`: timers due while it was down
are delivered right after it comes back, the others at their time; none is lost."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from orbitmq.client import Producer, SendStatus, queue_offsets, read_queue_range
from orbitmq.common import Message, MessageExt
from orbitmq.common import message_const as mc
from tests.support import SMALL_STORE_CONF, start_orbitmq

TOPIC = "TimerKillTopic"


async def _send_timers(namesrv: str, prefix: str, delay_ms: int, count: int) -> list[bytes]:
    acked = []
    async with Producer(f"timer-{prefix}", namesrv_addr=namesrv) as producer:
        for i in range(count):
            message = Message(TOPIC, f"{prefix}-{i:04d}".encode())
            message.delay_ms = delay_ms
            result = await producer.send(message)
            assert result.send_status is SendStatus.SEND_OK
            acked.append(message.body)
    return acked


async def _read_all(namesrv: str) -> list[MessageExt]:
    found: list[MessageExt] = []
    for mq, (low, high) in (await queue_offsets(namesrv, TOPIC)).items():
        async for batch in read_queue_range(namesrv, TOPIC, mq.broker_name, mq.queue_id, low, high):
            found += batch
    return found


async def _wait_for(namesrv: str, count: int, timeout_s: float) -> list[MessageExt]:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            found = await _read_all(namesrv)
        except Exception:  # the topic's route is not registered yet
            found = []
        if len({m.body for m in found}) >= count or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.1)


@pytest.mark.timeout(90)
def test_timers_survive_kill_9(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    conf = tmp_path / "timers.conf"
    conf.write_text(SMALL_STORE_CONF + "mappedFileSizeTimerLog=520000\ntimerFlushIntervalMs=200\n")
    process, ready = start_orbitmq(data_dir, tmp_path / "first", conf)
    restarted = None
    try:
        namesrv = ready.group(1)
        soon = asyncio.run(_send_timers(namesrv, "soon", 1500, 100))
        later = asyncio.run(_send_timers(namesrv, "later", 6000, 100))
        process.kill()  # SIGKILL: no shutdown, no last flush
        process.wait(timeout=30)
        time.sleep(1.5)  # the first hundred fall due while nothing runs

        restarted, ready = start_orbitmq(data_dir, tmp_path / "second", conf)
        namesrv = ready.group(1)
        early = asyncio.run(_wait_for(namesrv, 100, 20))
        assert {m.body for m in early} >= set(soon), "timers due while down were not delivered"
        found = asyncio.run(_wait_for(namesrv, 200, 30))
        assert {m.body for m in found} == set(soon) | set(later)  # none lost (maybe twice)
        for message in found:
            due = int(message.properties[mc.PROPERTY_TIMER_OUT_MS])
            assert message.store_timestamp >= due  # never early, even across the crash
    finally:
        for proc in (process, restarted):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
