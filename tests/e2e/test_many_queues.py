"""Ten thousand queues on one broker (R19), as a real process started with a soft limit of
1024 open files: written, read, restarted, read again, every acknowledged message there.

Before consume-queue files were bounded, a broker held two descriptors per queue file: at 10k
queues it ran out (EMFILE), its dispatch stopped for good and a restart never came up.
``make fault`` runs a longer version (more queues, kill -9 restarts)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

import pytest

from orbitmq.client import AdminClient, Producer, QueueReader, SendStatus
from orbitmq.common import Message, MessageQueue
from tests.support import start_orbitmq

#: Enough files to run out at two descriptors each, under the limit the broker gets.
OPEN_FILES_LIMIT = 1024
IN_FLIGHT = 64


async def _create(namesrv: str, topics: int, queues: int) -> None:
    async with AdminClient(namesrv_addr=namesrv) as admin:
        await asyncio.gather(
            *(admin.create_topic(f"Many{t}", queue_nums=queues) for t in range(topics))
        )


async def _send_one_each(namesrv: str, topics: int, queues: int) -> set[bytes]:
    """One message into every queue; the bodies acknowledged."""
    acked: set[bytes] = set()
    gate = asyncio.Semaphore(IN_FLIGHT)
    async with Producer("many-queues", namesrv_addr=namesrv) as producer:
        broker = (await producer.fetch_publish_message_queues("Many0"))[0].broker_name

        async def send(topic: str, queue_id: int) -> None:
            body = f"{topic}/{queue_id}".encode()
            async with gate:
                result = await producer.send(
                    Message(topic, body), queue=MessageQueue(topic, broker, queue_id)
                )
            assert result.send_status is SendStatus.SEND_OK
            assert result.message_queue.queue_id == queue_id
            acked.add(body)

        await asyncio.gather(*(send(f"Many{t}", q) for t in range(topics) for q in range(queues)))
    return acked


async def _read_all(namesrv: str, topics: int) -> set[bytes]:
    bodies: set[bytes] = set()
    gate = asyncio.Semaphore(IN_FLIGHT)
    async with QueueReader(namesrv) as reader:

        async def read(mq: MessageQueue, low: int, high: int) -> None:
            async with gate:
                async for batch in reader.read(mq, low, high):
                    bodies.update(m.body for m in batch)

        ranges = await asyncio.gather(*(reader.queue_offsets(f"Many{t}") for t in range(topics)))
        await asyncio.gather(
            *(read(mq, low, high) for found in ranges for mq, (low, high) in found.items())
        )
    return bodies


def _read_until(namesrv: str, topics: int, acked: set[bytes], timeout_s: float = 60) -> None:
    """Every acknowledged message is read back once dispatch has caught up (a send is
    answered before its consume-queue unit is written, as in RocketMQ)."""

    async def poll() -> set[bytes]:
        async with asyncio.timeout(timeout_s):
            while (found := await _read_all(namesrv, topics)) != acked:
                assert found <= acked, f"never sent: {sorted(found - acked)[:5]}"
                await asyncio.sleep(0.5)
        return found

    assert asyncio.run(poll()) == acked


def _stop(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    process.send_signal(sig)
    process.wait(timeout=120)


def run_many_queues(tmp_path: Path, topics: int, queues: int, kill: bool) -> None:
    data_dir = tmp_path / "data"
    process, ready = start_orbitmq(
        data_dir, tmp_path / "first", open_files_soft_limit=OPEN_FILES_LIMIT
    )
    try:
        namesrv = ready.group(1)
        asyncio.run(_create(namesrv, topics, queues))
        acked = asyncio.run(_send_one_each(namesrv, topics, queues))
        assert len(acked) == topics * queues
        _read_until(namesrv, topics, acked)
        _stop(process, signal.SIGKILL if kill else signal.SIGTERM)

        process, ready = start_orbitmq(
            data_dir, tmp_path / "again", open_files_soft_limit=OPEN_FILES_LIMIT
        )
        _read_until(ready.group(1), topics, acked)
        err = (tmp_path / "first.err").read_text() + (tmp_path / "again.err").read_text()
        assert "Too many open files" not in err
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.slow
def test_ten_thousand_queues_written_read_and_restarted(tmp_path: Path) -> None:
    run_many_queues(tmp_path, topics=100, queues=100, kill=False)


@pytest.mark.fault
def test_twenty_thousand_queues_survive_a_kill_9(tmp_path: Path) -> None:
    run_many_queues(tmp_path, topics=200, queues=100, kill=True)
