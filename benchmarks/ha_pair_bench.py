"""Issue 16 §6 in one run: what a slave costs a master's producers, and how fast it follows.

    .venv/bin/python benchmarks/ha_pair_bench.py [--messages 200000] [--repeats 3]
        [--procs 1] [--inflight 4] [--batch 500] [--size 1024] [--backlog-mb 1024]
        [--rate 2000] [--seconds 10] [--modes lone,async,sync] [--json PATH]

Run from the repository root. Every phase starts its own cluster of real ``orbitmq``
processes on loopback (fixed ports from ``--base-port``; fresh data directories): a name
server, a master and, for the pairs, a slave (``brokerRole=SLAVE``) that holds its HA
connection before anything is timed.

1. Produce, the modes interleaved in each of ``--repeats`` rounds (machine noise moves all
   three alike), the master on ``flushDiskType=SYNC_FLUSH`` (SEND_OK after the fsync):
   ``lone`` the master alone (ASYNC_MASTER, no slave); ``async`` ASYNC_MASTER + slave (the
   slave copies in the background); ``sync`` SYNC_MASTER + slave (a send is answered once
   the slave reported holding it). The producers are the peer line-up's: ``--procs``
   client processes, each with one ``Producer`` and ``--inflight`` concurrent batch
   requests of ``--batch`` messages of ``--size`` bytes into a 4-queue topic, started
   together after a warm-up; msg/s is the messages over the first start to the last ack.
   The ratios async/lone and sync/lone are taken per round and their median reported. CPU
   per message is the master's and the slave's utime+stime (``/proc/<pid>/stat``) over the
   timed window, divided by the messages; the slave's window runs until it is idle again.
2. Lag (``--seconds``; 0 skips it): an ASYNC_MASTER pair on ASYNC_FLUSH (a send is acked
   once appended); ``--rate`` single messages a second into queue 0, each sent on time
   whatever the previous one's answer. A message's lag is from its ack in the producer to
   the first look (every 0.2 ms, from another process) at the slave's commit log file that
   finds it written (``SlaveCommitLog``: the files are read where they lie, so nothing
   asks the slave). p50, p99 and max, and how many sends failed.
3. Catch-up (``--backlog-mb``; 0 skips it): the master alone takes that many MiB of
   message bodies; then the slave process starts. From its HA connection to the backlog's
   last byte in the slave's commit log (copied), and to the last message in the slave's
   consume queues (readable): MB/s of the master's commit log.

Prints tables; writes JSON (after each phase) to ``benchmarks/results/`` (git-ignored) or
``--json``. ``benchmarks/replication_bench.py`` measures the same copy and lag between two
stores in one process (no broker, no client): the store path alone.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import functools
import json
import mmap
import multiprocessing as mp
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from queue import Empty
from typing import Any

from rich.progress import Progress

from orbitmq.client import AdminClient, MQClientAPI, Producer
from orbitmq.client.producer import ProducerConfig
from orbitmq.common import (
    MESSAGE_MAGIC_CODE,
    Message,
    MessageQueue,
    OrbitError,
    decode_message_id,
)
from orbitmq.remoting import RemotingClient, run

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
TOPIC = "HaPairBench"
BROKER_NAME = "broker-a"
#: mapedFileSizeCommitLog's default: the file a message's physical offset falls in.
COMMIT_LOG_FILE_BYTES = 1024 * 1024 * 1024
#: How often the slave's commit log is looked at (cheap: a few mmap reads).
POLL_PAUSE_S = 0.0002
QUEUE_NUMS = 4
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
MODES = ("lone", "async", "sync")
ROLE = {"lone": "ASYNC_MASTER", "async": "ASYNC_MASTER", "sync": "SYNC_MASTER"}


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def ha_connected(port: int) -> bool:
    """An established TCP connection to ``port`` on this machine (the slave's HA link)."""
    wanted = f":{port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        parts = line.split()
        if parts[1].endswith(wanted) and parts[3] == "01":
            return True
    return False


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


@dataclass
class Cluster:
    """A name server, a master and maybe a slave, each an ``orbitmq`` process."""

    root: Path
    mode: str
    base_port: int
    flush_disk_type: str = "SYNC_FLUSH"
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def namesrv(self) -> str:
        return f"{HOST}:{self.base_port}"

    @property
    def master_port(self) -> int:
        return self.base_port + 35  # VIP channel at - 2, HA at + 1

    @property
    def slave_port(self) -> int:
        return self.base_port + 45

    def _broker_conf(self, name: str, port: int, extra: str) -> Path:
        conf = self.root / f"{name}.conf"
        conf.write_text(
            "brokerClusterName=DefaultCluster\nbrokerName=broker-a\n"
            f"brokerIP1={HOST}\nbindAddress={HOST}\nlistenPort={port}\n"
            f"namesrvAddr={self.namesrv}\nstorePathRootDir={self.root / name}\n"
            f"flushDiskType={self.flush_disk_type}\n" + extra
        )
        return conf

    def _spawn(self, name: str, *args: str) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO / "src")}
        with (self.root / f"{name}.log").open("wb") as log:
            self.processes[name] = subprocess.Popen(
                [sys.executable, "-m", "orbitmq.cli", "--log-level", "WARNING", *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )

    def _wait_ready(self, name: str, marker: str) -> None:
        deadline = time.monotonic() + 60
        while marker not in (self.root / f"{name}.log").read_text(errors="replace"):
            if self.processes[name].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start: see {self.root / f'{name}.log'}")
            time.sleep(0.05)

    def start(self, *, slave: bool = True) -> None:
        """The name server and the master; the slave too unless ``slave`` is false or the
        mode is ``lone`` (``start_slave`` adds it later)."""
        ports = [self.base_port, self.master_port, self.master_port - 2, self.master_port + 1]
        if self.mode != "lone":
            ports += [self.slave_port, self.slave_port - 2, self.slave_port + 1]
        taken = [port for port in ports if not port_free(port)]
        if taken:
            raise RuntimeError(f"ports {taken} are in use: choose another --base-port")
        self._spawn("namesrv", "namesrv", "--listen-port", str(self.base_port), "--bind", HOST)
        self._wait_ready("namesrv", "name server ready")
        master = self._broker_conf("master", self.master_port, f"brokerRole={ROLE[self.mode]}\n")
        self._spawn("master", "broker", "-c", str(master))
        self._wait_ready("master", "broker ready")
        if slave and self.mode != "lone":
            self.start_slave()

    def spawn_slave(self) -> None:
        slave = self._broker_conf("slave", self.slave_port, "brokerId=1\nbrokerRole=SLAVE\n")
        self._spawn("slave", "broker", "-c", str(slave))

    def start_slave(self) -> None:
        """The slave, returned once it is ready and holds its HA connection."""
        self.spawn_slave()
        self.wait_ha_connected()
        self._wait_ready("slave", "broker ready")

    def wait_ha_connected(self) -> float:
        """Polls every millisecond for the slave's HA connection; the monotonic time it
        was first seen."""
        deadline = time.monotonic() + 60
        while not ha_connected(self.master_port + 1):
            if time.monotonic() > deadline:
                raise RuntimeError("the slave made no HA connection to the master in 60 s")
            time.sleep(0.001)
        return time.monotonic()

    def pid(self, name: str) -> int | None:
        process = self.processes.get(name)
        return None if process is None else process.pid

    def stop(self) -> None:
        for name in ("slave", "master", "namesrv"):
            process = self.processes.get(name)
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def _create_topic(namesrv: str) -> None:
    deadline = time.monotonic() + 30
    while True:  # the master registers with the name server just after it starts
        admin = AdminClient(namesrv_addr=namesrv)
        try:
            await admin.start()
            if await admin.master_addrs():
                await admin.create_topic(TOPIC, queue_nums=QUEUE_NUMS)
                return
        except Exception:
            if time.monotonic() > deadline:
                raise
        finally:
            await admin.shutdown()
        await asyncio.sleep(0.2)


@dataclass
class ProducerWindow:
    """One producer process's timed phase: its monotonic start and end, and how many
    sends answered each status (a SYNC_MASTER answers FLUSH_SLAVE_TIMEOUT after
    ``slaveTimeout`` without the slave's report: the batch is stored on the master)."""

    started: float
    ended: float
    statuses: Counter[str]
    latencies_ms: list[float]
    cpu_s: float


async def _produce(
    namesrv: str, count: int, options: tuple[int, int, int], ready: Any, go: MpEvent
) -> ProducerWindow:
    batch, inflight, size = options
    producer = Producer(
        f"ha-pair-bench-{os.getpid()}",
        namesrv_addr=namesrv,
        config=ProducerConfig(send_msg_timeout_s=30.0),
    )
    payload = os.urandom(size)
    statuses: Counter[str] = Counter()
    latencies_ms: list[float] = []
    await producer.start()

    async def send(n: int) -> None:
        batch_of = [Message(TOPIC, payload) for _ in range(n)]
        sent_at = time.monotonic()
        result = await producer.send(batch_of)
        latencies_ms.append((time.monotonic() - sent_at) * 1000)
        statuses[result.send_status.name] += 1

    try:
        for _ in range(2):  # route, connection, the broker's first writes
            await send(batch)
        statuses.clear()
        latencies_ms.clear()
        ready.put(os.getpid())
        await asyncio.to_thread(go.wait)
        remaining = count
        started, cpu = time.monotonic(), cpu_seconds(os.getpid())

        async def lane() -> None:
            nonlocal remaining
            while remaining > 0:
                n = min(batch, remaining)
                remaining -= n
                await send(n)

        await asyncio.gather(*(lane() for _ in range(inflight)))
        ended = time.monotonic()
        cpu = cpu_seconds(os.getpid()) - cpu
        return ProducerWindow(started, ended, statuses, latencies_ms, cpu)
    finally:
        await producer.shutdown()


def _producer_process(
    namesrv: str,
    count: int,
    options: tuple[int, int, int],
    ready: Any,
    go: MpEvent,
    results: Any,
) -> None:
    """One client process: warm up, say so on ``ready``, wait for ``go``, send ``count``,
    report its window (or its error, on both queues, so that nobody waits for it)."""
    try:
        results.put(run(_produce(namesrv, count, options, ready, go)))
    except Exception as exc:
        ready.put(f"error: {exc!r}")
        results.put(f"error: {exc!r}")


def _wait_idle(pid: int, limit_s: float = 20.0) -> float:
    """The process's CPU seconds once it used under 2 % of a core for 0.5 s (the slave
    copying what the master acked last), or after ``limit_s``."""
    deadline = time.monotonic() + limit_s
    before = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = cpu_seconds(pid)
        if now - before <= 0.01:
            return now
        before = now
    return before


def _check(answer: Any) -> Any:
    if isinstance(answer, str) and answer.startswith("error"):
        raise RuntimeError(f"a producer process failed: {answer}")
    return answer


def _run_producers(
    namesrv: str, count: int, args: argparse.Namespace, on_go: Callable[[], None]
) -> list[ProducerWindow]:
    """``--procs`` producer processes send ``count`` messages in all, started together
    after their warm-up (``on_go`` runs just before); their windows."""
    context = mp.get_context("spawn")
    ready, results, go = context.Queue(), context.Queue(), context.Event()
    workers: list[Any] = []
    try:
        for _ in range(args.procs):
            options = (args.batch, args.inflight, args.size)
            worker = context.Process(
                target=_producer_process,
                args=(namesrv, count // args.procs, options, ready, go, results),
            )
            worker.start()
            workers.append(worker)
        for _ in workers:
            _check(ready.get(timeout=120))
        on_go()
        go.set()
        return [_check(results.get(timeout=600)) for _ in workers]
    except Empty as exc:
        raise RuntimeError("a producer process did not answer in time") from exc
    finally:
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.kill()


def measure_produce(mode: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """One cluster, one timed produce phase: msg/s and the brokers' CPU per message."""
    cluster = Cluster(root, mode, args.base_port)
    cpu_before: dict[str, float] = {}
    try:
        cluster.start()
        run(_create_topic(cluster.namesrv))
        master_pid, slave_pid = cluster.pid("master"), cluster.pid("slave")
        assert master_pid is not None

        def mark() -> None:
            cpu_before["master"] = cpu_seconds(master_pid)
            cpu_before["slave"] = cpu_seconds(slave_pid) if slave_pid else 0.0

        windows = _run_producers(cluster.namesrv, args.messages, args, mark)
        master_cpu = cpu_seconds(master_pid) - cpu_before["master"]
        slave_cpu = _wait_idle(slave_pid) - cpu_before["slave"] if slave_pid else 0.0
    finally:
        cluster.stop()
    total = args.messages // args.procs * args.procs
    elapsed = max(w.ended for w in windows) - min(w.started for w in windows)
    statuses: Counter[str] = Counter()
    for window in windows:
        statuses.update(window.statuses)
    latencies = sorted(ms for window in windows for ms in window.latencies_ms)
    return {
        "statuses": dict(statuses),
        "batch_latency_ms": {
            "p50": statistics.median(latencies),
            "p99": latencies[max(0, int(len(latencies) * 0.99) - 1)],
            "max": latencies[-1],
        },
        "mode": mode,
        "messages": total,
        "seconds": elapsed,
        "msg_per_s": total / elapsed,
        "master_cpu_us_per_msg": master_cpu * 1e6 / total,
        "slave_cpu_us_per_msg": slave_cpu * 1e6 / total if slave_pid else None,
        "producer_cpu_us_per_msg": sum(w.cpu_s for w in windows) * 1e6 / total,
    }


async def _queue_max_offsets(api: MQClientAPI, addr: str, queue_ids: range) -> list[int]:
    return [
        await api.get_max_offset(addr, MessageQueue(TOPIC, BROKER_NAME, queue_id), 5.0)
        for queue_id in queue_ids
    ]


class SlaveCommitLog:
    """Reads a slave's commit log files where they lie, read-only through mmap: the page
    cache shows the slave's writes as they land, so nothing asks the slave (a poll by
    request would take CPU from the broker it measures). Its ``written`` is what the slave
    holds: every message from the start whose last byte is written (a stored message ends
    with its properties' 0x02 separator, never 0; the HA client appends in order).
    One thread; not thread-safe."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._maps: dict[int, tuple[int, mmap.mmap]] = {}  # file index: (inode, mapping)
        self.written = 0
        self.copied_at: float | None = None

    def byte_at(self, offset: int) -> int:
        index = offset // COMMIT_LOG_FILE_BYTES
        mapped = self._maps.get(index)
        if mapped is None:
            path = self.directory / f"{index * COMMIT_LOG_FILE_BYTES:020d}"
            try:
                with path.open("rb") as file:
                    stat = os.fstat(file.fileno())
                    if stat.st_size < COMMIT_LOG_FILE_BYTES:
                        return 0  # not yet at its full size
                    mapped = stat.st_ino, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
            except FileNotFoundError:
                return 0
            self._maps[index] = mapped
        return mapped[1][offset % COMMIT_LOG_FILE_BYTES]

    def advance(self) -> int:
        """Walks ``written`` over the messages landed since; the new value. A message
        counts once its size and magic code read the same before and after its last byte
        was seen (a copy may land its tail before its middle)."""
        while True:
            size, magic = self._int_at(self.written), self._int_at(self.written + 4)
            if (
                magic != MESSAGE_MAGIC_CODE & 0xFFFFFFFF
                or not 0 < size <= COMMIT_LOG_FILE_BYTES
                or not self.byte_at(self.written + size - 1)
                or self._int_at(self.written) != size
            ):
                self._drop_replaced(self.written // COMMIT_LOG_FILE_BYTES)
                return self.written
            self.written += size

    def holds(self, end: int) -> bool:
        """Whether the byte before ``end`` is written: the HA client appends in order, so
        then everything before it is too."""
        if self.byte_at(end - 1):
            return True
        self._drop_replaced((end - 1) // COMMIT_LOG_FILE_BYTES)
        return False

    def _int_at(self, offset: int) -> int:
        return int.from_bytes(bytes(self.byte_at(offset + i) for i in range(4)), "big")

    def _drop_replaced(self, index: int) -> None:
        # A starting slave may replace a file it made (the slave's truncation of a log
        # it cannot vouch for): a mapping of the old inode would never move again.
        mapped = self._maps.get(index)
        path = self.directory / f"{index * COMMIT_LOG_FILE_BYTES:020d}"
        try:
            replaced = mapped is not None and path.stat().st_ino != mapped[0]
        except FileNotFoundError:
            replaced = True
        if replaced and mapped is not None:
            mapped[1].close()
            del self._maps[index]

    def close(self) -> None:
        for _, buffer in self._maps.values():
            buffer.close()


def _watch_process(directory: Path, ready: MpEvent, until: Any, results: Any) -> None:
    """Follows the slave's commit log (``SlaveCommitLog``) every ``POLL_PAUSE_S`` (``ready``
    once it looks) until it holds more than ``until`` bytes (-1: not known yet), or -2;
    reports the (monotonic time, bytes written) samples where it moved."""
    log = SlaveCommitLog(directory)
    samples: list[tuple[float, int]] = []
    deadline = time.monotonic() + 600
    try:
        while until.value == -1 or 0 <= until.value >= log.written:
            before = log.written
            if log.advance() != before:
                samples.append((time.monotonic(), log.written))
            ready.set()
            if time.monotonic() > deadline:
                break
            time.sleep(POLL_PAUSE_S)
    finally:
        log.close()
    results.put(samples)


@dataclass
class PacedSends:
    """What ``_paced_sends`` saw: (monotonic time of the ack, physical offset) of each
    acked message, and the answers that were errors."""

    acks: list[tuple[float, int]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def _paced_sends(namesrv: str, rate: int, seconds: float, size: int) -> PacedSends:
    """``rate`` single messages a second into queue 0, each sent on time whatever the
    previous one's answer."""
    producer = Producer(f"ha-pair-lag-{os.getpid()}", namesrv_addr=namesrv)
    payload = os.urandom(size)
    queue = MessageQueue(TOPIC, BROKER_NAME, 0)
    seen = PacedSends()

    async def send() -> None:
        try:
            result = await producer.send(Message(TOPIC, payload), queue=queue)
        except OrbitError as exc:
            seen.errors.append(str(exc))
            return
        seen.acks.append((time.monotonic(), decode_message_id(result.offset_msg_id)[1]))

    await producer.start()
    try:
        for _ in range(20):  # route, connection
            await send()
        seen.acks.clear()
        tasks = []
        started = time.monotonic()
        for i in range(int(rate * seconds)):
            delay = started + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(send()))
        await asyncio.gather(*tasks)
    finally:
        await producer.shutdown()
    return seen


def measure_lag(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """An ASYNC_MASTER pair (ASYNC_FLUSH: a send is acked once appended, before disk or
    slave): a message's lag is from its ack in the producer to the first look at the
    slave's commit log (another process, ``SlaveCommitLog``) that finds it written."""
    cluster = Cluster(root, "async", args.base_port, flush_disk_type="ASYNC_FLUSH")
    context = mp.get_context("spawn")
    ready, until, results = context.Event(), context.Value("q", -1), context.Queue()
    watcher = context.Process(
        target=_watch_process, args=(root / "slave" / "commitlog", ready, until, results)
    )
    try:
        cluster.start()
        run(_create_topic(cluster.namesrv))
        watcher.start()
        if not ready.wait(60):
            raise RuntimeError("the commit log watcher did not start in 60 s")
        sends = run(_paced_sends(cluster.namesrv, args.rate, args.seconds, args.size))
        until.value = max(phy_offset for _, phy_offset in sends.acks)
        samples = results.get(timeout=60)
    finally:
        until.value = -2  # done, or failed: the watcher stops either way
        watcher.join(timeout=30)
        cluster.stop()
    lags_ms = []
    position = 0
    for acked_at, phy_offset in sorted(sends.acks, key=lambda ack: ack[1]):
        while samples[position][1] <= phy_offset:
            position += 1
        lags_ms.append(max(0.0, samples[position][0] - acked_at) * 1000)
    lags_ms.sort()
    ack_times = [t for t, _ in sends.acks]
    return {
        "messages": len(sends.acks),
        "errors": len(sends.errors),
        "first_error": sends.errors[0] if sends.errors else None,
        "achieved_rate": len(ack_times) / (max(ack_times) - min(ack_times)),
        "lag_p50_ms": statistics.median(lags_ms),
        "lag_p99_ms": lags_ms[int(len(lags_ms) * 0.99) - 1],
        "lag_max_ms": lags_ms[-1],
    }


def measure_catch_up(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """A master alone takes ``--backlog-mb`` of messages; then its slave process starts.
    From the slave's HA connection to the last message readable on the slave (copied and
    dispatched into its consume queues): MB/s of the master's commit log."""
    cluster = Cluster(root, "async", args.base_port, flush_disk_type="ASYNC_FLUSH")
    count = args.backlog_mb * 1024 * 1024 // args.size // args.procs * args.procs
    try:
        cluster.start(slave=False)
        run(_create_topic(cluster.namesrv))
        _run_producers(cluster.namesrv, count, args, lambda: None)
        end = _commit_log_end(cluster.namesrv)
        # the timed messages, each producer's two warm-up batches, the two probes
        expected = count + 2 * args.batch * args.procs + 2

        async def masters(expected: int) -> list[int]:
            """The master's queue ends once it dispatched all ``expected`` messages."""
            remoting = RemotingClient()
            deadline = time.monotonic() + 120
            try:
                while time.monotonic() < deadline:
                    offsets = await _queue_max_offsets(
                        MQClientAPI(remoting), f"{HOST}:{cluster.master_port}", range(QUEUE_NUMS)
                    )
                    if sum(offsets) >= expected:
                        return offsets
                    await asyncio.sleep(0.05)
            finally:
                await remoting.close()
            raise RuntimeError(f"the master did not dispatch {expected} messages in 120 s")

        wanted = run(masters(expected))
        cluster.spawn_slave()
        slave_pid = cluster.pid("slave")
        assert slave_pid is not None
        connected = cluster.wait_ha_connected()
        cpu_at_connect = cpu_seconds(slave_pid)
        log = SlaveCommitLog(root / "slave" / "commitlog")
        try:
            readable = run(_wait_caught_up(f"{HOST}:{cluster.slave_port}", log, end, wanted))
        finally:
            log.close()
        slave_cpu = cpu_seconds(slave_pid) - cpu_at_connect
    finally:
        cluster.stop()
    copied = (log.copied_at or readable) - connected
    return {
        "messages": sum(wanted),
        "bytes": end,
        "copied_s": copied,
        "copied_mb_per_s": end / copied / 1e6,
        "readable_s": readable - connected,
        "readable_mb_per_s": end / (readable - connected) / 1e6,
        "slave_cpu_s": slave_cpu,
    }


def _commit_log_end(namesrv: str) -> int:
    """The master's commit log end: one more message's physical offset (its offset
    message id), plus its size."""

    async def probe() -> int:
        producer = Producer(f"ha-pair-probe-{os.getpid()}", namesrv_addr=namesrv)
        await producer.start()
        try:
            first = await producer.send(Message(TOPIC, b"p"))
            second = await producer.send(Message(TOPIC, b"p"))
        finally:
            await producer.shutdown()
        start = decode_message_id(first.offset_msg_id)[1]
        return 2 * decode_message_id(second.offset_msg_id)[1] - start

    return run(probe())


async def _wait_caught_up(addr: str, log: SlaveCommitLog, end: int, wanted: list[int]) -> float:
    """Polls every 5 ms until ``addr``'s queues reach ``wanted``; the monotonic time. On
    the way, the time ``log`` reached ``end`` goes in ``log.copied_at``."""
    remoting = RemotingClient()
    api = MQClientAPI(remoting)
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline:
            if log.copied_at is None and log.holds(end):
                log.copied_at = time.monotonic()
            try:
                offsets = await _queue_max_offsets(api, addr, range(len(wanted)))
            except OrbitError:
                offsets = [0] * len(wanted)  # the slave is still starting
            if all(have >= want for have, want in zip(offsets, wanted, strict=True)):
                return time.monotonic()
            await asyncio.sleep(0.005)
    finally:
        await remoting.close()
    raise RuntimeError(f"the slave did not catch up within 600 s (wanted {wanted})")


def summarize(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Medians per mode, and the per-round ratios to the lone master with their median."""
    summary: dict[str, Any] = {}
    modes = [mode for mode in MODES if rounds and all(mode in r for r in rounds)]
    for mode in modes:
        figures = [r[mode] for r in rounds]
        summary[mode] = {
            "msg_per_s": statistics.median(f["msg_per_s"] for f in figures),
            "master_cpu_us_per_msg": statistics.median(f["master_cpu_us_per_msg"] for f in figures),
            "producer_cpu_us_per_msg": statistics.median(
                f["producer_cpu_us_per_msg"] for f in figures
            ),
            "slave_cpu_us_per_msg": (
                statistics.median(f["slave_cpu_us_per_msg"] for f in figures)
                if mode != "lone"
                else None
            ),
        }
    if "lone" in modes:
        for mode in modes:
            if mode == "lone":
                continue
            ratios = [r[mode]["msg_per_s"] / r["lone"]["msg_per_s"] for r in rounds]
            summary[mode]["ratios"] = ratios
            summary[mode]["ratio_median"] = statistics.median(ratios)
    return summary


def _print_produce(rounds: list[dict[str, dict[str, Any]]], summary: dict[str, Any]) -> None:
    print(
        f"{'round':<6} {'mode':<6} {'msg/s':>10} {'ratio':>7} {'master us/msg':>14} "
        f"{'slave us/msg':>13} {'producer us/msg':>16} {'batch ms p50/p99':>17}  "
        "sends not SEND_OK"
    )
    for i, round_ in enumerate(rounds, 1):
        for mode, f in round_.items():
            ratio = f["msg_per_s"] / round_["lone"]["msg_per_s"] if "lone" in round_ else None
            slave = f["slave_cpu_us_per_msg"]
            not_ok = {k: v for k, v in f["statuses"].items() if k != "SEND_OK"}
            latency = f["batch_latency_ms"]
            print(
                f"{i:<6} {mode:<6} {f['msg_per_s']:>10,.0f} "
                f"{'' if ratio is None else f'{ratio:.3f}':>7} "
                f"{f['master_cpu_us_per_msg']:>14.1f} {'' if slave is None else f'{slave:.1f}':>13}"
                f" {f['producer_cpu_us_per_msg']:>16.1f}"
                f" {latency['p50']:>8.1f}/{latency['p99']:<8.1f}  {not_ok or ''}"
            )
    for mode, s in summary.items():
        ratio = s.get("ratio_median")
        slave = s["slave_cpu_us_per_msg"]
        print(
            f"{'median':<6} {mode:<6} {s['msg_per_s']:>10,.0f} "
            f"{'' if ratio is None else f'{ratio:.3f}':>7} "
            f"{s['master_cpu_us_per_msg']:>14.1f} {'' if slave is None else f'{slave:.1f}':>13}"
            f" {s['producer_cpu_us_per_msg']:>16.1f}"
        )


def _print_replication(lag: dict[str, Any] | None, catch_up: dict[str, Any] | None) -> None:
    for name, phase in (("lag", lag), ("catch-up", catch_up)):
        if phase is not None and "error" in phase:
            print(f"{name}: failed: {phase['error']}")
    if lag is not None and "error" not in lag:
        print(
            f"lag: {lag['messages']} messages at {lag['achieved_rate']:.0f} msg/s, "
            f"p50 / p99 / max {lag['lag_p50_ms']:.2f} / {lag['lag_p99_ms']:.2f} / "
            f"{lag['lag_max_ms']:.2f} ms; {lag['errors']} sends failed {lag['first_error'] or ''}"
        )
    if catch_up is not None and "error" not in catch_up:
        print(
            f"catch-up: {catch_up['messages']} messages / {catch_up['bytes'] / 1e6:.0f} MB "
            f"after the slave connected: copied in {catch_up['copied_s']:.2f} s = "
            f"{catch_up['copied_mb_per_s']:.0f} MB/s, readable (dispatched) in "
            f"{catch_up['readable_s']:.2f} s = {catch_up['readable_mb_per_s']:.0f} MB/s "
            f"(slave CPU {catch_up['slave_cpu_s']:.2f} s)"
        )


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--procs", type=int, default=1)
    parser.add_argument("--inflight", type=int, default=4)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--base-port", type=int, default=19876)
    parser.add_argument("--backlog-mb", type=int, default=1024, help="0: no catch-up phase")
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=10, help="0: no lag phase")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    args.modes = [m for m in args.modes.split(",") if m]
    unknown = set(args.modes) - set(MODES)
    if unknown:
        parser.error(f"--modes: unknown {sorted(unknown)} (of {', '.join(MODES)})")
    return args


def _in_fresh_dir(prefix: str, measure: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        return measure(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _save(out: Path, record: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2))


def _phase(record: dict[str, Any], name: str, measure: Callable[[], dict[str, Any]]) -> None:
    """One of the replication phases: its figures, or its error (the others still run)."""
    try:
        record[name] = measure()
    except Exception as exc:  # a phase that fails is reported, not fatal
        record[name] = {"error": repr(exc)}


def main() -> None:
    args = _arguments()
    out = args.json or REPO / "benchmarks" / "results" / (
        f"ha-pair-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    )
    rounds: list[dict[str, dict[str, Any]]] = []
    record: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}}
    with Progress() as progress:
        task = progress.add_task("produce", total=args.repeats * len(args.modes) + 2)
        for i in range(args.repeats):
            round_: dict[str, dict[str, Any]] = {}
            for mode in args.modes:
                progress.update(task, description=f"round {i + 1}: {mode}")
                round_[mode] = _in_fresh_dir(
                    f"ha-pair-{mode}-", functools.partial(measure_produce, mode, args)
                )
                progress.advance(task)
            rounds.append(round_)
            _save(out, record | {"rounds": rounds})
        record |= {"rounds": rounds, "summary": summarize(rounds)}
        if args.seconds:
            progress.update(task, description="lag")
            lag = functools.partial(measure_lag, args)
            _phase(record, "lag", functools.partial(_in_fresh_dir, "ha-pair-lag-", lag))
            _save(out, record)
        progress.advance(task)
        if args.backlog_mb:
            progress.update(task, description="catch-up")
            catch_up = functools.partial(measure_catch_up, args)
            _phase(
                record, "catch_up", functools.partial(_in_fresh_dir, "ha-pair-catch-up-", catch_up)
            )
            _save(out, record)
        progress.advance(task)
    _print_produce(rounds, record["summary"])
    _print_replication(record.get("lag"), record.get("catch_up"))
    _save(out, record)
    print(f"JSON: {out}")


if __name__ == "__main__":
    main()
