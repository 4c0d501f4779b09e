"""Cold backlog reads against the head (issue 20 §4, R20): does a consumer catching up on a
backlog that is not in the page cache slow producers and consumers at the head?

    .venv/bin/python benchmarks/cold_read_bench.py [--backlog-gib 2] [--rate 2000]
        [--phase-s 10] [--modes threads,inline,coldctr] [--rounds 1] [--hot-ratio 1]
        [--warmup-s 5] [--dir /tmp] [--json PATH]

Run from the repository root; check free disk first (``df -h``: the backlog plus 1 GiB).
One broker runs as an ``orbitmq broker`` process (ASYNC_FLUSH, no name server); the clients
run in this process, each on its own connection.

1. fill: ``--backlog-gib`` of 16 KiB messages into the 4 queues of ColdBacklog;
2. ``--rounds`` times, for each mode (``threads``: coldReadMaxInFlight 4, cold pulls read
   on threads; ``inline``: coldReadMaxInFlight 0, every pull reads on the event loop as
   before issue 20; ``coldctr``: as ``threads`` with RocketMQ 5's cold data flow control on,
   coldDataFlowControlEnable, accessMessageInMemoryHotRatio ``--hot-ratio`` so that the
   backlog lies in the cold area whatever the RAM, other keys at their defaults;
   ``coldctr:N`` the same with cgColdReadThreshold N bytes):
   stop the broker, sync, drop every commit log file from the page cache
   (``posix_fadvise(POSIX_FADV_DONTNEED)``), start the broker again, run the producer and
   the head consumer for ``--warmup-s`` uncounted seconds, then run phases of
   ``--phase-s`` seconds alternately without and with backlog readers (none, backlog,
   none, backlog). In every phase a producer sends 1 KiB messages to ColdHead at
   ``--rate`` msg/s (ack latency: request to response) and a head consumer long-polls its
   4 queues (e2e latency: send to receipt). In backlog phases 4 readers (one per queue,
   each its own connection) pull ColdBacklog from where they stopped, 32 messages a pull;
   they send no heartbeat, so under ``coldctr`` their group's cold pulls are held as a
   pull consumer's are (3-8 s, then one message) once it read cgColdReadThreshold in the
   5 s window.

Prints one table (mode, phase, sends, ack p50/p99, e2e p50/p99, backlog MB read, MB/s, the
broker's CPU seconds in the phase; the JSON splits them into loop and other threads) and
the ratios backlog/none of the p99s per mode (pooled over the two phases of each kind and
every round; with several rounds, each round's ratios too);
writes JSON to ``benchmarks/results/`` (git-ignored) or ``--json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import mmap
import multiprocessing
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from orbitmq.common import MessageExtBrokerInner, decode_messages
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import PullMessageRequestHeader, SendMessageRequestHeader
from orbitmq.protocol.pull_sys_flag import FLAG_SUBSCRIPTION, FLAG_SUSPEND
from orbitmq.remoting import RemotingClient
from orbitmq.store import ColdReader, MessageStore, MessageStoreConfig
from orbitmq.store.page_residency import is_resident, mapping_address

REPO = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
BACKLOG = "ColdBacklog"
HEAD = "ColdHead"
QUEUES = 4
BACKLOG_BODY = b"b" * (16 * 1024)
HEAD_BODY_BYTES = 1024
STAMP = struct.Struct(">q")


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


class Broker:
    """One ``orbitmq broker`` process on ``root``; restarted with other settings."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    def start(self, settings: str) -> None:
        """Start with the common keys and ``settings`` (broker.conf lines)."""
        conf = self.root / "broker.conf"
        conf.write_text(
            "brokerClusterName=DefaultCluster\nbrokerName=broker-a\n"
            f"brokerIP1={HOST}\nbindAddress={HOST}\nlistenPort={self.port}\n"
            f"storePathRootDir={self.root / 'store'}\nflushDiskType=ASYNC_FLUSH\n"
            f"mappedPageReleaseIdleInterval=1000\n{settings}"
        )
        log_path = self.root / "broker.log"
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO / "src")}
        command = [sys.executable, "-m", "orbitmq.cli", "--log-level", "WARNING", "broker"]
        with log_path.open("ab") as log:
            start = log.tell()
            self.process = subprocess.Popen(
                [*command, "-c", str(conf)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        deadline = time.monotonic() + 120
        while "broker ready" not in log_path.read_text(errors="replace")[start:]:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the broker did not start: see {log_path}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=120)
        self.process = None


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) process ``pid`` used so far: its main thread (the
    broker's event loop) and its other threads (flush, reput, cold reads ...) together
    (/proc/PID/task/*/stat; Python's thread names do not reach the kernel)."""
    tick = os.sysconf("SC_CLK_TCK")
    used = {"loop": 0.0, "threads": 0.0}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        spent = (int(fields[11]) + int(fields[12])) / tick
        used["loop" if int(task.name) == pid else "threads"] += spent
    return used


def drop_commit_log(root: Path) -> int:
    """Sync, then drop every commit log file from the page cache; bytes dropped."""
    os.sync()
    dropped = 0
    for path in sorted((root / "store" / "commitlog").iterdir()):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            dropped += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return dropped


def cached_fraction(root: Path) -> float:
    """The share of the commit log's pages (up to their data) in the page cache (mincore)."""
    cached = total = 0
    for path in sorted((root / "store" / "commitlog").iterdir()):
        fd = os.open(path, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            with mmap.mmap(fd, size) as mapping:
                address = mapping_address(mapping)
                step = 1 << 20
                for position in range(0, size, step):
                    total += 1
                    cached += is_resident(address, position, min(step, size - position))
        finally:
            os.close(fd)
    return cached / total if total else 0.0


def _send_request(topic: str, queue_id: int, body: bytes) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="cold-bench",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=QUEUES,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties="",
    )
    return RemotingCommand.create_request(
        RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), body
    )


def _pull_request(topic: str, queue_id: int, offset: int, group: str) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND,
        commit_offset=0,
        suspend_timeout_millis=1000,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )
    return RemotingCommand.create_request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


async def fill(address: str, backlog_bytes: int) -> dict[str, float]:
    """``backlog_bytes`` of 16 KiB messages into ColdBacklog, 64 sends in flight."""
    client = RemotingClient(connect_timeout_s=5.0)
    began = time.monotonic()
    sent = 0
    total = backlog_bytes // len(BACKLOG_BODY)

    async def one(index: int) -> None:
        while True:
            request = _send_request(BACKLOG, index % QUEUES, BACKLOG_BODY)
            response = await client.invoke(address, request, 30.0)
            if response.code != ResponseCode.SYSTEM_BUSY:
                break
            # The broker's fast failure on a busy (shared) machine: back off as clients do.
            await asyncio.sleep(0.1)
        if response.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"backlog send failed: {response.code} {response.remark}")

    try:
        for queue_id in range(QUEUES):  # the head topic exists before its consumer pulls
            await client.invoke(address, _send_request(HEAD, queue_id, STAMP.pack(0)), 30.0)
        while sent < total:
            batch = min(64, total - sent)
            await asyncio.gather(*(one(sent + i) for i in range(batch)))
            sent += batch
    finally:
        await client.close()
    elapsed = time.monotonic() - began
    return {"messages": sent, "seconds": elapsed, "mb_per_s": sent * 16 / 1024 / elapsed}


class Phase:
    """One timed phase: the paced producer, the head consumer and maybe the readers."""

    def __init__(self, address: str, rate: int, seconds: float, offsets: list[int] | None):
        self.address, self.rate, self.seconds = address, rate, seconds
        self.backlog_offsets = offsets
        self.acks: list[float] = []
        self.e2e: list[float] = []
        self.backlog_bytes = 0
        self.errors = 0
        self.done = asyncio.Event()

    async def _produce(self, client: RemotingClient) -> None:
        loop = asyncio.get_running_loop()
        tick_s = 0.005
        per_tick = max(1, round(self.rate * tick_s))
        pending: set[asyncio.Task[None]] = set()

        async def one(index: int) -> None:
            began = time.perf_counter_ns()
            body = STAMP.pack(began).ljust(HEAD_BODY_BYTES, b"h")
            response = await client.invoke(
                self.address, _send_request(HEAD, index % QUEUES, body), 10
            )
            if response.code == ResponseCode.SUCCESS:
                self.acks.append((time.perf_counter_ns() - began) / 1e6)
            else:
                self.errors += 1

        start = loop.time()
        index = 0
        while (now := loop.time()) < start + self.seconds:
            due = int((now - start) / tick_s) * per_tick + per_tick
            while index < due:
                task = loop.create_task(one(index))
                pending.add(task)
                task.add_done_callback(pending.discard)
                index += 1
            await asyncio.sleep(tick_s - (loop.time() - start) % tick_s)
        if pending:
            await asyncio.gather(*pending)
        self.done.set()

    async def _consume(self, client: RemotingClient, queue_id: int, offset: int) -> None:
        while not self.done.is_set():
            request = _pull_request(HEAD, queue_id, offset, "cold-bench-head")
            response = await client.invoke(self.address, request, 10)
            now = time.perf_counter_ns()
            if response.code == ResponseCode.SUCCESS:
                for message in decode_messages(response.body):
                    self.e2e.append((now - STAMP.unpack_from(message.body)[0]) / 1e6)
            elif response.code != ResponseCode.PULL_NOT_FOUND:
                raise RuntimeError(f"head pull failed: {response.code} {response.remark}")
            offset = int(response.ext_fields["nextBeginOffset"])

    async def run(self, head_offsets: list[int]) -> dict[str, Any]:
        producer, consumer = (
            RemotingClient(connect_timeout_s=5.0),
            RemotingClient(connect_timeout_s=5.0),
        )
        reader = None
        if self.backlog_offsets is not None:
            context = multiprocessing.get_context("spawn")
            results: Any = context.Queue()
            go = context.Event()
            reader = context.Process(
                target=read_backlog,
                args=(self.address, self.backlog_offsets, self.seconds, results, go),
            )
            reader.start()
            # The reader's imports are done before the clock starts.
            assert await asyncio.to_thread(results.get, True, 120) == "ready"
            go.set()
        tasks = [asyncio.create_task(self._produce(producer))]
        tasks += [
            asyncio.create_task(self._consume(consumer, q, head_offsets[q])) for q in range(QUEUES)
        ]
        began = time.monotonic()
        try:
            await asyncio.gather(*tasks)
        finally:
            await producer.close()
            await consumer.close()
        elapsed = time.monotonic() - began
        if reader is not None:
            self.backlog_bytes, offsets = await asyncio.to_thread(results.get, True, 120)
            self.backlog_offsets[:] = offsets
            reader.join()
        return {
            "sends": len(self.acks),
            "send_errors": self.errors,
            "received": len(self.e2e),
            "ack_ms": self.acks,
            "e2e_ms": self.e2e,
            "backlog_mb": self.backlog_bytes / 2**20,
            "backlog_mb_per_s": self.backlog_bytes / 2**20 / elapsed,
        }


def read_backlog(address: str, offsets: list[int], seconds: float, results: Any, go: Any) -> None:
    """In a process of its own (its CPU is not the measuring clients'): 4 readers, one per
    ColdBacklog queue and connection, pull from ``offsets`` for ``seconds``; puts (bytes
    read, offsets reached) on ``results``."""
    read = [0]

    async def one(queue_id: int, until: float) -> None:
        client = RemotingClient(connect_timeout_s=5.0)
        try:
            while time.monotonic() < until:
                request = _pull_request(BACKLOG, queue_id, offsets[queue_id], "cold-bench-backlog")
                response = await client.invoke(address, request, 30)
                if response.code == ResponseCode.SUCCESS:
                    read[0] += len(response.body or b"")
                elif response.code == ResponseCode.PULL_NOT_FOUND:
                    offsets[queue_id] = 0  # read it all: start again (it is cached by now)
                    continue
                elif response.code != ResponseCode.PULL_RETRY_IMMEDIATELY:
                    raise RuntimeError(f"backlog pull failed: {response.code} {response.remark}")
                offsets[queue_id] = int(response.ext_fields["nextBeginOffset"])
        finally:
            await client.close()

    async def all_queues() -> None:
        until = time.monotonic() + seconds
        await asyncio.gather(*(one(q, until) for q in range(QUEUES)))

    results.put("ready")
    go.wait()
    asyncio.run(all_queues())
    results.put((read[0], offsets))


async def _head_offsets(address: str) -> list[int]:
    """Where ColdHead's queues end now (the head consumer starts there)."""
    client = RemotingClient(connect_timeout_s=5.0)
    offsets = []
    try:
        for queue_id in range(QUEUES):
            request = _pull_request(HEAD, queue_id, 1 << 62, "cold-bench-head")
            response = await client.invoke(address, request, 10)
            offsets.append(int(response.ext_fields.get("maxOffset", 0)))
    finally:
        await client.close()
    return offsets


def mode_settings(mode: str, hot_ratio: int) -> str:
    """The broker.conf lines of a mode."""
    if mode == "inline":
        return "coldReadMaxInFlight=0\n"
    name, _, threshold = mode.partition(":")
    if name == "coldctr":
        # coldctr:N: with cgColdReadThreshold N (bytes per 5 s window) instead of 3 MiB.
        return (
            "coldReadMaxInFlight=4\ncoldDataFlowControlEnable=true\n"
            f"accessMessageInMemoryHotRatio={hot_ratio}\n"
            + (f"cgColdReadThreshold={int(threshold)}\n" if threshold else "")
        )
    if mode == "threads":
        return "coldReadMaxInFlight=4\n"
    raise ValueError(f"unknown mode {mode!r}")


def run_mode(
    broker: Broker, mode: str, round_no: int, args: argparse.Namespace
) -> list[dict[str, Any]]:
    broker.stop()
    # Dropped once the broker has started (its recovery reads the last files again) and
    # released its mapped pages (mappedPageReleaseIdleInterval: 1 s idle); mapped pages
    # would stay in the page cache.
    broker.start(mode_settings(mode, args.hot_ratio))
    deadline = time.monotonic() + 30
    while True:
        dropped = drop_commit_log(broker.root)
        if cached_fraction(broker.root) < 0.02 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    print(
        f"# {mode}: dropped {dropped / 2**30:.2f} GiB of commit log from the page cache; "
        f"share of its MiB still cached: {cached_fraction(broker.root):.1%}"
    )
    backlog_offsets = [0] * QUEUES
    if args.warmup_s > 0:
        # The first seconds after a restart are slower whatever the mode (the head's new
        # files, the first pulls): not counted.
        offsets = asyncio.run(_head_offsets(broker.address))
        asyncio.run(Phase(broker.address, args.rate, args.warmup_s, None).run(offsets))
    rows = []
    for kind in ("none", "backlog", "none", "backlog"):
        offsets = asyncio.run(_head_offsets(broker.address))
        phase = Phase(
            broker.address, args.rate, args.phase_s, backlog_offsets if kind == "backlog" else None
        )
        assert broker.process is not None
        cpu_before = thread_cpu_s(broker.process.pid)
        row = {"mode": mode, "round": round_no, "phase": kind} | asyncio.run(phase.run(offsets))
        cpu_after = thread_cpu_s(broker.process.pid)
        # The broker's CPU in the phase: its loop, and its other threads (a thread that
        # ended during the phase takes its time with it).
        row["broker_cpu_s"] = {
            name: round(spent - cpu_before[name], 2) for name, spent in cpu_after.items()
        }
        rows.append(row)
        print(_line(row), flush=True)
    return rows


def loop_cost(root: Path, mib: int, pulls: int) -> dict[str, Any]:
    """Time the event loop spends per cold pull, in this process on a store of its own
    (``mib`` MiB of 16 KiB messages in one queue, dropped from the page cache): reading
    inline (the views joined on the loop, page faults and all) against the cold reader
    (the loop's part only: the read, then joining the copies after the thread's pread)."""
    config = MessageStoreConfig(store_path_root_dir=str(root / "loop" / "store"))
    store = MessageStore(config)
    store.load()
    store.start()
    for _ in range(mib * 64):
        message = MessageExtBrokerInner(
            BACKLOG, body=BACKLOG_BODY, queue_id=0, born_host=(HOST, 1), store_host=(HOST, 2)
        )
        assert store.put_message(message).is_ok
    assert store.wait_for_dispatch()
    store.shutdown()
    figures: dict[str, Any] = {}
    for mode in ("inline", "threads"):
        store = MessageStore(config)
        store.load()
        store.start()
        store.release_mapped_pages()  # mapped pages would stay in the page cache
        drop_commit_log(root / "loop")
        print(f"# loop cost, {mode}: share of MiB cached {cached_fraction(root / 'loop'):.1%}")
        reader = ColdReader(store.commit_log, 4)
        on_loop: list[float] = []

        async def pull_all(
            store: MessageStore = store,
            reader: ColdReader = reader,
            mode: str = mode,
            on_loop: list[float] = on_loop,
        ) -> None:
            offset = 0
            for _ in range(pulls):
                began = time.perf_counter_ns()
                result = store.get_message("g", BACKLOG, 0, offset, 32)
                if mode == "threads" and result.cold_offsets is not None:
                    spent = time.perf_counter_ns() - began
                    await reader.load(result)
                    began = time.perf_counter_ns() - spent
                result.body()
                on_loop.append((time.perf_counter_ns() - began) / 1e6)
                offset = result.next_begin_offset

        asyncio.run(pull_all())
        store.shutdown()
        figures[mode] = {
            "pulls": len(on_loop),
            "loop_ms_p50": _percentile(on_loop, 0.5),
            "loop_ms_p99": _percentile(on_loop, 0.99),
            "loop_ms_max": max(on_loop),
            "loop_ms_total": sum(on_loop),
            "loaded_on_threads": reader.loaded_count,
        }
        print(f"# loop time per cold pull, {mode}: {figures[mode]}", flush=True)
    return figures


def _ratios(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The p99s of the backlog phases over those of the phases without, pooled over
    ``rows``."""
    pooled = {kind: [r for r in rows if r["phase"] == kind] for kind in ("none", "backlog")}
    ratio = {}
    for figure in ("ack_ms", "e2e_ms"):
        p99 = {
            kind: _percentile([v for r in group for v in r[figure]], 0.99)
            for kind, group in pooled.items()
        }
        ratio[figure] = {"none_p99": p99["none"], "backlog_p99": p99["backlog"]}
        ratio[figure]["ratio"] = p99["backlog"] / p99["none"]
    return ratio


def _print_ratios(label: str, ratio: dict[str, dict[str, float]]) -> None:
    print(
        f"# {label}: ack p99 {ratio['ack_ms']['none_p99']:.2f} -> "
        f"{ratio['ack_ms']['backlog_p99']:.2f} ms ({ratio['ack_ms']['ratio']:.2f}x), "
        f"e2e p99 {ratio['e2e_ms']['none_p99']:.2f} -> "
        f"{ratio['e2e_ms']['backlog_p99']:.2f} ms ({ratio['e2e_ms']['ratio']:.2f}x)"
    )


def _line(row: dict[str, Any]) -> str:
    acks, e2e = row["ack_ms"], row["e2e_ms"]
    return (
        f"{row['mode']:14} {row['phase']:8} {row['sends']:7d} "
        f"{_percentile(acks, 0.5):8.2f} {_percentile(acks, 0.99):8.2f} "
        f"{_percentile(e2e, 0.5):8.2f} {_percentile(e2e, 0.99):8.2f} "
        f"{row['backlog_mb']:9.0f} {row['backlog_mb_per_s']:7.1f} "
        f"{sum(row['broker_cpu_s'].values()):7.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backlog-gib", type=float, default=2.0)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--phase-s", type=float, default=10.0)
    parser.add_argument("--modes", default="threads,inline")
    parser.add_argument("--rounds", type=int, default=1, help="the modes run in turn, N times")
    parser.add_argument(
        "--warmup-s", type=float, default=5.0, help="an uncounted phase after each restart"
    )
    parser.add_argument(
        "--hot-ratio", type=int, default=1, help="coldctr's accessMessageInMemoryHotRatio (%%)"
    )
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--loop-mib", type=int, default=256, help="0 skips the loop-cost part")
    args = parser.parse_args()
    report: dict[str, Any] = {"settings": {k: str(v) for k, v in vars(args).items()}}
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="cold-read-bench-") as tmp:
        if args.loop_mib:
            # Pulls stop short of the last 80 MiB: reads that recent are not asked about.
            pulls = max(1, (args.loop_mib - 80) * 4)
            report["loop_cost"] = loop_cost(Path(tmp), args.loop_mib, pulls)
        broker = Broker(Path(tmp))
        broker.start(mode_settings("threads", args.hot_ratio))
        try:
            report["fill"] = asyncio.run(fill(broker.address, int(args.backlog_gib * 2**30)))
            print(f"# fill: {report['fill']}")
            print(
                "mode           phase      sends   ack50    ack99    e2e50    e2e99  backlogMB"
                "    MB/s  cpu(s)"
            )
            rows = []
            for round_no in range(1, args.rounds + 1):
                for mode in args.modes.split(","):
                    rows += run_mode(broker, mode, round_no, args)
        finally:
            broker.stop()
    report["ratios"] = {}
    report["round_ratios"] = {}
    for mode in args.modes.split(","):
        mine = [r for r in rows if r["mode"] == mode]
        report["ratios"][mode] = _ratios(mine)
        _print_ratios(f"{mode}", report["ratios"][mode])
        if args.rounds > 1:
            report["round_ratios"][mode] = []
            for round_no in range(1, args.rounds + 1):
                ratio = _ratios([r for r in mine if r["round"] == round_no])
                report["round_ratios"][mode].append(ratio)
                _print_ratios(f"{mode} round {round_no}", ratio)
    for row in rows:
        for figure in ("ack_ms", "e2e_ms"):
            values = row.pop(figure)
            row[figure.replace("_ms", "_p50_ms")] = _percentile(values, 0.5)
            row[figure.replace("_ms", "_p99_ms")] = _percentile(values, 0.99)
    report["phases"] = rows
    out = args.json or REPO / "benchmarks" / "results" / (
        f"cold_read_{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"# JSON: {out}")


if __name__ == "__main__":
    main()
