"""One process per store, with real processes: a second server on a live data directory is
refused before it touches a byte, and no message the first acknowledged is lost, before,
during or after the attempt, across a clean restart and a kill -9.

The data loss this guards against: a second ``orbitmq start`` on the same data directory
(other ports) used to load and "recover" the live store, zeroing the running broker's
commit-log tail.
"""

from __future__ import annotations

import asyncio
import hashlib
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from orbitmq.client import Producer, SendStatus, queue_offsets, read_queue_range
from orbitmq.common import Message
from tests.support import SMALL_STORE_CONF, run_orbitmq, start_orbitmq

TOPIC = "LockTopic"


async def _produce(namesrv: str, prefix: str, count: int) -> list[bytes]:
    """Send ``count`` messages one by one; the bodies the broker acknowledged."""
    acked: list[bytes] = []
    async with Producer(f"lock-{prefix}", namesrv_addr=namesrv) as producer:
        for i in range(count):
            body = f"{prefix}-{i:05d}".encode()
            result = await producer.send(Message(TOPIC, body))
            assert result.send_status is SendStatus.SEND_OK
            acked.append(body)
    return acked


async def _read_all(namesrv: str) -> list[bytes]:
    bodies: list[bytes] = []
    for mq, (low, high) in (await queue_offsets(namesrv, TOPIC)).items():
        async for batch in read_queue_range(namesrv, TOPIC, mq.broker_name, mq.queue_id, low, high):
            bodies += [m.body for m in batch]
    return bodies


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _assert_refused(done: subprocess.CompletedProcess[str], data_dir: Path, pid: int) -> None:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(data_dir.resolve()) in lines[0]
    assert f"process {pid}" in lines[0]
    assert "ready" not in done.stdout


def _stop(process: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGTERM) -> None:
    process.send_signal(sig)
    process.wait(timeout=30)


@pytest.mark.slow
def test_a_second_server_on_a_live_store_is_refused_and_loses_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first, ready = start_orbitmq(data_dir, tmp_path / "first")
    later: subprocess.Popen[bytes] | None = None
    try:
        namesrv = ready.group(1)
        acked = asyncio.run(_produce(namesrv, "before", 100))

        # During: a producer keeps sending while a second `orbitmq start` (its own ports)
        # and a second `orbitmq broker` try the same directory.
        during: list[bytes] = []
        sender = threading.Thread(
            target=lambda: during.extend(asyncio.run(_produce(namesrv, "during", 300)))
        )
        sender.start()
        conf = tmp_path / "small.conf"
        conf.write_text(SMALL_STORE_CONF)
        start_args = ["-c", str(conf), "--data-dir", str(data_dir)]
        ports = ["--namesrv-port", "0", "--listen-port", "0"]
        _assert_refused(run_orbitmq("start", *start_args, *ports), data_dir, first.pid)
        broker_conf = tmp_path / "broker.conf"
        broker_conf.write_text(f"{SMALL_STORE_CONF}storePathRootDir={data_dir}\nlistenPort=1\n")
        _assert_refused(
            run_orbitmq("broker", "-c", str(broker_conf), "--listen-port", "0"),
            data_dir,
            first.pid,
        )
        sender.join(timeout=60)
        assert not sender.is_alive()
        acked += during
        assert len(during) == 300

        # A refused start changes no byte of the store. The first server is stopped
        # (SIGSTOP) meanwhile: it still holds the lock, but its own timers (offsets,
        # checkpoint) would otherwise write between the two snapshots.
        first.send_signal(signal.SIGSTOP)
        try:
            before = _snapshot(data_dir)
            _assert_refused(run_orbitmq("start", *start_args, *ports), data_dir, first.pid)
            assert _snapshot(data_dir) == before
        finally:
            first.send_signal(signal.SIGCONT)

        acked += asyncio.run(_produce(namesrv, "after", 100))
        assert sorted(asyncio.run(_read_all(namesrv))) == sorted(acked)
        _stop(first)

        # A clean restart reads everything; then kill -9: its lock dies with it and the next
        # start is not blocked by a stale lock.
        later, ready = start_orbitmq(data_dir, tmp_path / "restart")
        assert sorted(asyncio.run(_read_all(ready.group(1)))) == sorted(acked)
        acked += asyncio.run(_produce(ready.group(1), "restarted", 50))
        _stop(later, signal.SIGKILL)
        later, ready = start_orbitmq(data_dir, tmp_path / "after-kill")
        assert sorted(asyncio.run(_read_all(ready.group(1)))) == sorted(acked)
    finally:
        for process in (first, later):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
