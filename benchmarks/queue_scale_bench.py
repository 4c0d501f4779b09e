"""One broker with many queues (SPEC R19: ten thousand and more queues on one broker without
write degradation): write rate and broker CPU before and after T x Q queues exist, the
broker's descriptors and mappings, a restart, and a check that nothing acknowledged is lost.

    .venv/bin/python benchmarks/queue_scale_bench.py [--topics 100] [--queues 100]
        [--messages 20000] [--rounds 3] [--nofile N] [--kill] [--src PATH] [--python PATH]

Run from the repository root. To measure a commit other than the working tree, unpack it and
run both the broker and the bench's client from it::

    mkdir /tmp/qs-head && git archive HEAD | tar -x -C /tmp/qs-head
    PYTHONPATH=/tmp/qs-head/src .venv/bin/python benchmarks/queue_scale_bench.py \\
        --src /tmp/qs-head/src

A name server (``orbitmq namesrv``) and a broker (``orbitmq broker -c broker.conf``) run as
subprocesses on free loopback ports, with a store in a temporary directory on the
repository's disk (64 MiB commit log files, small index files; consume queues keep RocketMQ's
300,000-unit files, which the store creates sparse), deleted afterwards. Phases:

1. baseline: ``--messages`` 1 KiB messages to a 4-queue topic by ``--concurrency`` tasks
   each sending synchronously, ``--rounds`` times; msg/s and broker CPU us/msg (utime + stime
   from ``/proc/<pid>/stat``);
2. scale: ``--topics`` topics of ``--queues`` queues made with UPDATE_AND_CREATE_TOPIC, then
   one 1 KiB message sent to every queue (``--inflight`` sends at once); time, failures,
   then the wait until every acknowledged message is in its consume queue (the dispatch
   creates a queue's files on its first message; no progress for ``--stall-timeout`` s ends
   the wait), and the broker's open descriptors (``/proc/<pid>/fd``, sorted by what they
   point at) and mappings (``/proc/<pid>/maps``);
3. after: phase 1 again with the many queues in place, each round followed by one of
   ``--messages`` written round robin over all T x Q queues (topic i mod T, queue
   (i div T) mod Q: SPEC R19's many queues at full speed); the 4-queue rate's ratio to the
   baseline, the round robin's ratio to the 4-queue rate of the same phase; whether the
   4-queue topic's acknowledged messages are readable before the restart;
4. restart: SIGTERM (``--kill``: SIGKILL, so the store recovers) and a fresh start; time to
   stop, to the ready line and to the first answered request; descriptors after the start;
5. verify: every queue read back from its first offset; each acknowledged message must be
   at its queue offset with its id. Lost messages must be 0.

``--nofile N`` runs the broker with RLIMIT_NOFILE N (soft and hard, through ``prlimit``), to
reproduce a broker running out of descriptors. The broker's stderr is watched for "Too many
open files", tracebacks and ERROR lines; they are counted and the first distinct ones shown.
Every wait is bounded: a broker not ready after ``--ready-timeout`` s is a result, not a hang.
``--py-spy PATH`` records the broker in each phase (folded stacks next to the JSON).

Prints one table (phase, figure, value); writes JSON to ``benchmarks/results/`` (git-ignored)
or ``--json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.table import Table

import orbitmq
from orbitmq.client import AdminClient, Producer, ProducerConfig, QueueReader, SendStatus
from orbitmq.client.send_result import SendResult
from orbitmq.common import Message, MessageQueue
from orbitmq.common import message_const as mc
from orbitmq.remoting import run

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "benchmarks" / "results"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CLUSTER = "QueueScaleCluster"
BROKER_NAME = "broker-qs"
BASE_TOPIC = "QsBase"
BASE_QUEUES = 4  # RocketMQ's defaultTopicQueueNums, what a producer's auto-created topic gets
BODY_SIZE = 1024
WARMUP_MESSAGES = 500  # per write phase, not timed: routes, connections, first file pages
IDLE_SECONDS = 5.0
NAMESRV_READY = "OrbitMQ name server ready"
BROKER_READY = "OrbitMQ broker ready"
#: Store settings that keep the temporary store small; the rest are RocketMQ's defaults
#: (consume queues: 300,000 units a file, created sparse and reserved in 128 KiB chunks).
STORE_CONF = {
    "mappedFileSizeCommitLog": 64 * 1024 * 1024,
    "maxHashSlotNum": 50_000,
    "maxIndexNum": 200_000,
}
#: stderr lines worth reporting, by kind.
STDERR_PATTERNS = {
    "too_many_open_files": re.compile(r"Too many open files|Errno 24|EMFILE"),
    "cannot_allocate_memory": re.compile(r"Cannot allocate memory|Errno 12|ENOMEM"),
    "traceback": re.compile(r"^Traceback \(most recent call last\)"),
    "error_line": re.compile(r"\b(ERROR|CRITICAL)\b"),
    "exception_line": re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b(:|$)"),
}
MAX_DISTINCT_LINES = 25

_T = TypeVar("_T")


# -- the processes ------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads) in seconds; 0.0 once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def own_cpu_seconds() -> float:
    """This process's CPU (the bench's client), every thread."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent busy (every core), from ``/proc/stat``."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


@dataclass(slots=True)
class ProcFigures:
    """What the broker holds at one moment. ``fd_kinds`` sorts its descriptors by what they
    point at; ``cq_files`` counts the distinct consume-queue files among them, so two
    descriptors per file (CPython's mmap keeps a dup of the descriptor it maps) show."""

    fds: int
    maps: int
    rss_kib: int
    #: The heap part of the RSS; the rest is pages of mapped store files.
    rss_anon_kib: int
    threads: int
    nofile_soft: int
    nofile_hard: int
    fd_kinds: dict[str, int]
    cq_files: int

    def text(self) -> str:
        kinds = ", ".join(
            f"{k} {n:,}" for k, n in sorted(self.fd_kinds.items(), key=lambda x: -x[1])
        )
        return (
            f"{self.fds:,} fds ({kinds}; {self.cq_files:,} distinct consume-queue files), "
            f"{self.maps:,} maps, RSS {self.rss_kib / 1024:,.0f} MiB "
            f"(anon {self.rss_anon_kib / 1024:,.0f}), {self.threads} threads"
        )


def fd_kind(target: str) -> str:
    for part in ("consumequeue", "commitlog", "index"):
        if f"/{part}/" in target:
            return part
    if target.startswith(("socket:", "pipe:", "anon_inode:")):
        return target.split(":", 1)[0]
    return "other"


def fd_targets(pid: int) -> list[str]:
    targets: list[str] = []
    for name in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile
            targets.append(os.readlink(f"/proc/{pid}/fd/{name}"))
    return targets


def proc_figures(pid: int) -> ProcFigures | None:
    """Descriptors, mappings, RSS, threads and the RLIMIT_NOFILE soft limit; None if gone."""
    try:
        targets = fd_targets(pid)
        with open(f"/proc/{pid}/maps", "rb") as f:
            maps = sum(1 for _ in f)
        status = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        )
        limits = Path(f"/proc/{pid}/limits").read_text()
    except (OSError, ValueError):
        return None
    nofile = re.search(r"^Max open files\s+(\S+)\s+(\S+)", limits, re.M)
    soft, hard = nofile.groups() if nofile else ("-1", "-1")
    return ProcFigures(
        fds=len(targets),
        maps=maps,
        rss_kib=int(status.get("VmRSS", "0 kB").split()[0]),
        rss_anon_kib=int(status.get("RssAnon", "0 kB").split()[0]),
        threads=int(status.get("Threads", "0").strip()),
        nofile_soft=int(soft) if soft.isdigit() else -1,  # -1: unlimited
        nofile_hard=int(hard) if hard.isdigit() else -1,
        fd_kinds=dict(Counter(fd_kind(t) for t in targets)),
        cq_files=len({t for t in targets if "/consumequeue/" in t}),
    )


class StderrWatch:
    """Counts stderr lines of the kinds in STDERR_PATTERNS and keeps the first distinct ones
    (digits folded, so ten thousand EMFILE lines on different files show as one)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.distinct: dict[str, tuple[str, int]] = {}
        self.lock = threading.Lock()

    def feed(self, line: str) -> None:
        kinds = [k for k, p in STDERR_PATTERNS.items() if p.search(line)]
        if not kinds:
            return
        key = re.sub(r"\d+", "#", line)[:200]
        with self.lock:
            self.counts.update(kinds)
            first, n = self.distinct.get(key, (line.rstrip()[:400], 0))
            if n or len(self.distinct) < MAX_DISTINCT_LINES:
                self.distinct[key] = (first, n + 1)

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {
                "counts": dict(self.counts),
                "lines": [{"line": line, "count": n} for line, n in self.distinct.values()],
            }


class ServerProcess:
    """One ``orbitmq`` server subprocess. Daemon threads read its stdout (lines kept with
    their arrival time) and its stderr (to ``err_path``, through ``watch``)."""

    def __init__(
        self, argv: Sequence[str], env: dict[str, str], err_path: Path, watch: StderrWatch
    ) -> None:
        self.argv = list(argv)
        self.started = time.monotonic()
        self.lines: list[tuple[float, str]] = []
        self.watch = watch
        self.process = subprocess.Popen(
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
            text=True,
            errors="replace",
        )
        self.err_path = err_path
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read_out(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append((time.monotonic(), line.rstrip()))

    def _read_err(self) -> None:
        assert self.process.stderr is not None
        with self.err_path.open("a") as err:
            for line in self.process.stderr:
                err.write(line)
                err.flush()
                self.watch.feed(line)

    def line_time(self, prefix: str) -> float | None:
        """Seconds from the start to the first stdout line starting with ``prefix``."""
        for when, line in list(self.lines):
            if line.startswith(prefix):
                return when - self.started
        return None

    async def wait_line(self, prefix: str, timeout_s: float) -> float | None:
        """Seconds until a line starting with ``prefix``; None on timeout or exit."""
        deadline = self.started + timeout_s
        while time.monotonic() < deadline:
            found = self.line_time(prefix)
            if found is not None:
                return found
            if self.process.poll() is not None:
                await asyncio.sleep(0.2)  # let the readers drain what it printed last
                return self.line_time(prefix)
            await asyncio.sleep(0.05)
        return None

    async def stop(self, sig: signal.Signals, timeout_s: float) -> tuple[float, int | None]:
        """Send ``sig`` and wait (bounded) for the exit: (seconds, exit code or None)."""
        began = time.monotonic()
        if self.process.poll() is None:
            self.process.send_signal(sig)
        while self.process.poll() is None and time.monotonic() - began < timeout_s:
            await asyncio.sleep(0.02)
        return time.monotonic() - began, self.process.poll()

    def kill(self) -> None:
        """SIGKILL if still running, and reap."""
        if self.process.poll() is None:
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)


class Profiler:
    """With ``--py-spy``: one py-spy recording of the broker per phase, as folded stacks
    (``--format raw``) in benchmarks/results/; without it, nothing. Sampling is
    non-blocking (the broker is not paused), at 100 Hz."""

    def __init__(self, exe: str | None, stem: str) -> None:
        self.exe = exe
        self.stem = stem
        self.files: list[str] = []

    @contextlib.asynccontextmanager
    async def phase(self, name: str, pid: int, delay_s: float = 0.0) -> AsyncIterator[None]:
        """Record ``pid`` while the block runs (from ``delay_s`` on: a process just spawned
        has no interpreter for py-spy to find yet)."""
        if not self.exe:
            yield
            return
        await asyncio.sleep(delay_s)
        out = RESULTS_DIR / f"{self.stem}-pyspy-{name}.txt"
        argv = [self.exe, "record", "--pid", str(pid), "--rate", "100", "--format", "raw"]
        argv += ["--nonblocking", "--output", str(out)]
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        spy = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            yield
        finally:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file when interrupted
            try:
                await asyncio.to_thread(spy.wait, 60)
            except subprocess.TimeoutExpired:
                spy.kill()
            self.files.append(str(out))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """The name server and broker subprocesses of one run, and how to start them again."""

    args: argparse.Namespace
    workdir: Path
    env: dict[str, str]
    namesrv_port: int = field(default_factory=free_port)
    broker_port: int = field(default_factory=free_port)
    watch: StderrWatch = field(default_factory=StderrWatch)
    namesrv: ServerProcess | None = None
    broker: ServerProcess | None = None
    broker_starts: int = 0
    profiler: Profiler = field(default_factory=lambda: Profiler(None, ""))

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def broker_addr(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    def write_conf(self) -> Path:
        lines = {
            "brokerClusterName": CLUSTER,
            "brokerName": BROKER_NAME,
            "brokerId": 0,
            # Loopback only (a shared machine); brokers that predate the key ignore it.
            "bindAddress": "127.0.0.1",
            "brokerIP1": "127.0.0.1",
            "listenPort": self.broker_port,
            "namesrvAddr": self.namesrv_addr,
            "storePathRootDir": self.workdir / "store",
            "flushDiskType": self.args.flush,
            **STORE_CONF,
        }
        conf = self.workdir / "broker.conf"
        conf.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        return conf

    def _cli(self, *argv: str) -> list[str]:
        return [self.args.python, "-m", "orbitmq.cli", "--log-level", "WARNING", *argv]

    async def start_namesrv(self) -> None:
        conf = self.workdir / "namesrv.conf"
        conf.write_text("bindAddress=127.0.0.1\n")
        argv = self._cli("namesrv", "-c", str(conf), "--listen-port", str(self.namesrv_port))
        self.namesrv = ServerProcess(argv, self.env, self.workdir / "namesrv.err", StderrWatch())
        if await self.namesrv.wait_line(NAMESRV_READY, 60) is None:
            raise RuntimeError(f"the name server printed no ready line: {tail(self.namesrv)}")

    def start_broker(self) -> ServerProcess:
        """Start the broker (under ``--nofile`` through prlimit, which execs it: same pid)."""
        argv = self._cli("broker", "-c", str(self.write_conf()))
        if self.args.nofile:
            # Hard limit too: a server that raises its own soft limit to the hard one would
            # undo a soft limit alone. Lowering it needs no privilege; raising it does.
            n = self.args.nofile
            argv = ["prlimit", f"--nofile={n}:{n}", "--", *argv]
        self.broker_starts += 1
        err = self.workdir / f"broker-{self.broker_starts}.err"
        self.broker = ServerProcess(argv, self.env, err, self.watch)
        return self.broker

    def kill_all(self) -> None:
        for server in (self.broker, self.namesrv):
            if server is not None:
                server.kill()


def tail(server: ServerProcess, chars: int = 1500) -> str:
    """The end of a server's stderr file and its stdout, for error messages."""
    err = ""
    with contextlib.suppress(OSError):
        err = server.err_path.read_text(errors="replace")[-chars:]
    out = " | ".join(line for _, line in server.lines[-5:])
    return f"rc={server.process.poll()} stdout={out!r} stderr={err!r}"


# -- measuring ------------------------------------------------------------------------------


@dataclass(slots=True)
class CpuDelta:
    """CPU seconds over one interval: the broker, this process (the client), the name
    server, and everything else on the machine."""

    wall_s: float
    broker_s: float
    client_s: float
    namesrv_s: float
    machine_s: float

    @property
    def other_s(self) -> float:
        return max(0.0, self.machine_s - self.broker_s - self.client_s - self.namesrv_s)


class CpuMeter:
    """Snapshots the CPU counters at ``__init__``; ``delta`` gives the use since."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.broker_pid = cluster.broker.pid if cluster.broker else 0
        self.t0 = time.monotonic()
        self.b0 = cpu_seconds(self.broker_pid)
        self.c0 = own_cpu_seconds()
        self.n0 = cpu_seconds(cluster.namesrv.pid) if cluster.namesrv else 0.0
        self.m0 = machine_busy_seconds()

    def delta(self) -> CpuDelta:
        namesrv = self.cluster.namesrv
        return CpuDelta(
            wall_s=time.monotonic() - self.t0,
            broker_s=cpu_seconds(self.broker_pid) - self.b0,
            client_s=own_cpu_seconds() - self.c0,
            namesrv_s=(cpu_seconds(namesrv.pid) if namesrv else 0.0) - self.n0,
            machine_s=machine_busy_seconds() - self.m0,
        )


@dataclass
class Ledger:
    """Every acknowledged message: (topic, queue id, queue offset) -> its unique id."""

    acked: dict[tuple[str, int, int], str] = field(default_factory=dict)
    not_ok: Counter[str] = field(default_factory=Counter)

    def add(self, result: SendResult) -> None:
        mq = result.message_queue
        self.acked[(mq.topic, mq.queue_id, result.queue_offset)] = result.msg_id
        if result.send_status is not SendStatus.SEND_OK:
            self.not_ok[result.send_status.name] += 1


def describe_error(exc: BaseException) -> str:
    text = str(exc) or repr(exc)
    return f"{type(exc).__name__}: {text}"[:300]


@dataclass(slots=True)
class SendTally:
    """Sends of one phase: acked, failed (with distinct errors) and the time they took."""

    sent: int = 0
    acked: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    @property
    def failed(self) -> int:
        return self.sent - self.acked


async def send_all(
    producer: Producer,
    items: Iterable[tuple[Message, MessageQueue | None]],
    workers: int,
    ledger: Ledger,
) -> SendTally:
    """Send every (message, queue) with ``workers`` tasks, each waiting for its answer
    before the next (a queue of None lets the producer pick, round robin)."""
    tally = SendTally()
    shared = iter(items)  # one iterator, so each item is taken by exactly one worker

    async def worker() -> None:
        for msg, mq in shared:
            tally.sent += 1
            try:
                result = await producer.send(msg, queue=mq)
            except Exception as exc:  # counted and reported: a failure is a result here
                tally.errors[describe_error(exc)] += 1
                continue
            tally.acked += 1
            ledger.add(result)

    began = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(workers)))
    tally.seconds = time.monotonic() - began
    return tally


def body(n: int) -> bytes:
    """A 1 KiB body that names its message (not compressible to nothing, never compressed:
    the client compresses over 4 KiB only)."""
    head = f"queue-scale {n:012d} ".encode()
    return (head + hashlib.sha256(head).hexdigest().encode() * 32)[:BODY_SIZE]


@dataclass(slots=True)
class WriteRound:
    """One timed write of ``--messages`` to the 4-queue topic."""

    acked: int
    failed: int
    seconds: float
    cpu: CpuDelta
    errors: dict[str, int]

    @property
    def msgs_per_s(self) -> float:
        return self.acked / self.seconds if self.seconds else 0.0

    @property
    def broker_us_per_msg(self) -> float:
        return self.cpu.broker_s / self.acked * 1e6 if self.acked else float("nan")

    @property
    def client_us_per_msg(self) -> float:
        return self.cpu.client_s / self.acked * 1e6 if self.acked else float("nan")


async def timed_round(
    producer: Producer,
    cluster: Cluster,
    args: argparse.Namespace,
    ledger: Ledger,
    items: Iterable[tuple[Message, MessageQueue | None]],
) -> WriteRound:
    meter = CpuMeter(cluster)
    tally = await send_all(producer, items, args.concurrency, ledger)
    return WriteRound(tally.acked, tally.failed, tally.seconds, meter.delta(), dict(tally.errors))


def base_messages(n: int, seq: Iterator[int]) -> Iterator[tuple[Message, MessageQueue | None]]:
    """``n`` messages to BASE_TOPIC, the producer picking its 4 queues round robin."""
    for _ in range(n):
        yield Message(BASE_TOPIC, body(next(seq)), properties={mc.PROPERTY_TAGS: "TagA"}), None


def spread_messages(
    n: int, seq: Iterator[int], args: argparse.Namespace, start: int
) -> Iterator[tuple[Message, MessageQueue | None]]:
    """``n`` messages round robin over every T x Q scale queue from position ``start``:
    consecutive messages go to different topics (position i is topic i mod T, queue
    (i div T) mod Q), so each queue is written once every T x Q messages."""
    topics = scale_topics(args)
    total = len(topics) * args.queues
    for i in range(start, start + n):
        k = i % total
        topic, q = topics[k % len(topics)], (k // len(topics)) % args.queues
        msg = Message(topic, body(next(seq)), properties={mc.PROPERTY_TAGS: "TagA"})
        yield msg, MessageQueue(topic, BROKER_NAME, q)


async def write_rounds(
    producer: Producer,
    cluster: Cluster,
    args: argparse.Namespace,
    ledger: Ledger,
    seq: Iterator[int],
) -> list[WriteRound]:
    """A warm-up, then ``--rounds`` timed writes of ``--messages`` to BASE_TOPIC."""
    await send_all(producer, base_messages(WARMUP_MESSAGES, seq), args.concurrency, ledger)
    return [
        await timed_round(producer, cluster, args, ledger, base_messages(args.messages, seq))
        for _ in range(args.rounds)
    ]


async def interleaved_rounds(
    producer: Producer,
    cluster: Cluster,
    args: argparse.Namespace,
    ledger: Ledger,
    seq: Iterator[int],
) -> tuple[list[WriteRound], list[WriteRound]]:
    """With the scale queues in place: ``--rounds`` pairs of timed writes, one to the
    4-queue topic then one round robin over every scale queue (A/B interleaved, so a
    change in the machine's other load hits both sides). Returns (4-queue, spread)."""
    await send_all(producer, base_messages(WARMUP_MESSAGES, seq), args.concurrency, ledger)
    position = 0
    warm = spread_messages(WARMUP_MESSAGES, seq, args, position)
    await send_all(producer, warm, args.concurrency, ledger)
    position += WARMUP_MESSAGES
    base: list[WriteRound] = []
    spread_: list[WriteRound] = []
    for _ in range(args.rounds):
        items = base_messages(args.messages, seq)
        base.append(await timed_round(producer, cluster, args, ledger, items))
        items = spread_messages(args.messages, seq, args, position)
        spread_.append(await timed_round(producer, cluster, args, ledger, items))
        position += args.messages
    return base, spread_


# -- the report -----------------------------------------------------------------------------


class Report:
    """Rows of the one table (phase, figure, value) and the JSON document beside it."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str]] = []
        self.doc: dict[str, Any] = {"phases": {}}

    def row(self, phase: str, figure: str, value: str) -> None:
        self.rows.append((phase, figure, value))
        Console(width=200).print(f"  [{phase}] {figure}: {value}", markup=False, highlight=False)

    def data(self, phase: str, **values: Any) -> None:
        self.doc["phases"].setdefault(phase, {}).update(values)

    def table(self, title: str) -> Table:
        t = Table(title=title)
        t.add_column("phase")
        t.add_column("figure")
        t.add_column("value", overflow="fold")
        last = ""
        for phase, figure, value in self.rows:
            t.add_row(phase if phase != last else "", figure, value)
            last = phase
        return t


def spread(values: Sequence[float], fmt: str) -> str:
    """Median, and min-max when there is more than one value."""
    med = format(statistics.median(values), fmt)
    if len(values) < 2:
        return med
    return f"{med} (min {format(min(values), fmt)}, max {format(max(values), fmt)})"


def report_writes(report: Report, phase: str, rounds: Sequence[WriteRound]) -> None:
    if not rounds:
        report.row(phase, "write", "no round completed")
        return
    acked, failed = sum(r.acked for r in rounds), sum(r.failed for r in rounds)
    report.row(phase, "messages acked / failed", f"{acked:,} / {failed:,} in {len(rounds)} rounds")
    report.row(phase, "msg/s (median of rounds)", spread([r.msgs_per_s for r in rounds], ",.0f"))
    report.row(phase, "broker CPU us/msg", spread([r.broker_us_per_msg for r in rounds], ".1f"))
    report.row(phase, "client CPU us/msg", spread([r.client_us_per_msg for r in rounds], ".1f"))
    other = [r.cpu.other_s / r.cpu.wall_s for r in rounds if r.cpu.wall_s]
    report.row(phase, "other load on the machine (cores)", spread(other, ".2f"))
    errors: Counter[str] = Counter()
    for r in rounds:
        errors.update(r.errors)
    for text, n in errors.most_common(5):
        report.row(phase, "send error", f"{n:,} x {text}")
    report.data(
        phase,
        rounds=[
            {
                **asdict(r),
                "msgs_per_s": r.msgs_per_s,
                "broker_us_per_msg": r.broker_us_per_msg,
                "client_us_per_msg": r.client_us_per_msg,
            }
            for r in rounds
        ],
    )


def report_proc(report: Report, phase: str, label: str, cluster: Cluster) -> ProcFigures | None:
    figures = proc_figures(cluster.broker.pid) if cluster.broker else None
    report.row(phase, label, figures.text() if figures else "broker not running")
    report.data(phase, **{label.replace(" ", "_"): asdict(figures) if figures else None})
    return figures


# -- the phases -----------------------------------------------------------------------------


async def bounded(phase: str, report: Report, timeout_s: float, work: Awaitable[_T]) -> _T | None:
    """``work`` within ``timeout_s``; a timeout or an error becomes a row, not a crash."""
    try:
        async with asyncio.timeout(timeout_s):
            return await work
    except TimeoutError:
        report.row(phase, "FAILED", f"not done within {timeout_s:.0f} s")
    except Exception as exc:
        report.row(phase, "FAILED", describe_error(exc))
    report.data(phase, failed=True)
    return None


async def wait_registered(admin: AdminClient, timeout_s: float) -> float:
    """Seconds until the name server lists the broker as a master."""
    began = time.monotonic()
    while True:
        with contextlib.suppress(Exception):
            if BROKER_NAME in await admin.master_addrs(CLUSTER):
                return time.monotonic() - began
        if time.monotonic() - began > timeout_s:
            raise TimeoutError(f"the broker did not register within {timeout_s} s")
        await asyncio.sleep(0.1)


async def idle_cpu(cluster: Cluster, report: Report, phase: str) -> None:
    """The broker's CPU with no traffic (its timers: flush, dispatch, registration)."""
    meter = CpuMeter(cluster)
    await asyncio.sleep(IDLE_SECONDS)
    d = meter.delta()
    pct = d.broker_s / d.wall_s * 100
    report.row(
        phase, f"broker CPU idle ({IDLE_SECONDS:.0f} s, no traffic)", f"{pct:.1f}% of a core"
    )
    report.data(phase, idle_cpu_pct=pct)


def scale_topics(args: argparse.Namespace) -> list[str]:
    width = len(str(args.topics - 1))
    return [f"QsScale{i:0{width}d}" for i in range(args.topics)]


async def create_topics(
    admin: AdminClient, topics: Sequence[str], queues: int, workers: int
) -> tuple[int, Counter[str]]:
    """UPDATE_AND_CREATE_TOPIC for each topic (each waits until the name server routes it)."""
    shared = iter(topics)
    created = 0
    errors: Counter[str] = Counter()

    async def worker() -> None:
        nonlocal created
        for topic in shared:
            try:
                await admin.create_topic(topic, queue_nums=queues, cluster=CLUSTER)
                created += 1
            except Exception as exc:
                errors[describe_error(exc)] += 1

    await asyncio.gather(*(worker() for _ in range(workers)))
    return created, errors


async def scale_phase(
    admin: AdminClient,
    producer: Producer,
    cluster: Cluster,
    args: argparse.Namespace,
    report: Report,
    ledger: Ledger,
    seq: Iterator[int],
) -> None:
    """Make T x Q queues, then put one message into each."""
    phase = "2 scale"
    topics = scale_topics(args)
    meter = CpuMeter(cluster)
    created, errors = await create_topics(admin, topics, args.queues, args.create_concurrency)
    d = meter.delta()
    report.row(
        phase,
        "topics created / failed",
        f"{created:,} / {len(topics) - created:,} x {args.queues} queues in {d.wall_s:.1f} s "
        f"({args.create_concurrency} at a time; broker CPU {d.broker_s:.1f} s)",
    )
    for text, n in errors.most_common(5):
        report.row(phase, "create error", f"{n:,} x {text}")
    report.data(phase, topics_created=created, create=asdict(d), create_errors=dict(errors))
    report_proc(report, phase, "broker after create", cluster)

    def items() -> Iterator[tuple[Message, MessageQueue | None]]:
        for topic in topics:
            for q in range(args.queues):
                yield Message(topic, body(next(seq))), MessageQueue(topic, BROKER_NAME, q)

    meter = CpuMeter(cluster)
    tally = await send_all(producer, items(), args.inflight, ledger)
    d = meter.delta()
    rate = tally.acked / tally.seconds if tally.seconds else 0.0
    report.row(
        phase,
        "one message per queue: acked / failed",
        f"{tally.acked:,} / {tally.failed:,} in {tally.seconds:.1f} s ({rate:,.0f} msg/s, "
        f"{args.inflight} in flight)",
    )
    us = d.broker_s / tally.acked * 1e6 if tally.acked else float("nan")
    report.row(phase, "broker CPU per first message of a queue", f"{us:,.0f} us")
    for text, n in tally.errors.most_common(5):
        report.row(phase, "send error", f"{n:,} x {text}")
    report.data(
        phase,
        puts={"acked": tally.acked, "failed": tally.failed, "seconds": tally.seconds},
        put_cpu=asdict(d),
        put_errors=dict(tally.errors),
    )
    report_proc(report, phase, "broker after puts", cluster)
    await wait_dispatched(admin, cluster, args, report, ledger)
    report_proc(report, phase, "broker after dispatch", cluster)


def scale_expected(ledger: Ledger, topics: Iterable[str]) -> dict[str, dict[int, int]]:
    """Per scale topic, per queue: the max offset the broker must show (one past the last
    acknowledged message's offset)."""
    wanted = set(topics)
    expected: dict[str, dict[int, int]] = {t: {} for t in wanted}
    for topic, qid, offset in ledger.acked:
        if topic in wanted:
            queues = expected[topic]
            queues[qid] = max(queues.get(qid, 0), offset + 1)
    return expected


async def queue_maxima(admin: AdminClient, topic: str) -> dict[int, int]:
    """Queue id -> max offset of every queue of ``topic`` (GET_TOPIC_STATS_INFO)."""
    return {s.queue_id: s.max_offset for s in await admin.topic_status(topic)}


async def visible_queues(admin: AdminClient, topic: str, expected: dict[int, int]) -> int:
    """Queues of ``topic`` whose max offset reached ``expected``."""
    maxima = await queue_maxima(admin, topic)
    return sum(1 for q, want in expected.items() if maxima.get(q, 0) >= want)


async def base_visibility(admin: AdminClient, report: Report, ledger: Ledger) -> None:
    """Before the restart: are the 4-queue topic's acknowledged messages in its queues (so
    a consumer could read them now)? Waits up to 30 s for the dispatch to catch up."""
    expected = scale_expected(ledger, [BASE_TOPIC])[BASE_TOPIC]
    total = sum(expected.values())
    deadline = time.monotonic() + 30
    visible = 0
    while True:
        with contextlib.suppress(Exception):
            maxima = await queue_maxima(admin, BASE_TOPIC)
            visible = sum(min(maxima.get(q, 0), want) for q, want in expected.items())
        if visible >= total or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)
    report.row(
        "3 after",
        f"{BASE_TOPIC} offsets consumers can read before the restart",
        f"{visible:,} of {total:,} acknowledged",
    )
    report.data("3 after", base_visible=visible, base_expected=total)


async def wait_dispatched(
    admin: AdminClient,
    cluster: Cluster,
    args: argparse.Namespace,
    report: Report,
    ledger: Ledger,
) -> None:
    """Poll until every acknowledged message of phase 2 is in its consume queue (a send is
    answered once the commit log has it; its queue gets it from the dispatch behind). Stops
    when nothing moved for ``--stall-timeout`` s: a dispatch that died is a result."""
    phase = "2 scale"
    expected = scale_expected(ledger, scale_topics(args))
    total = sum(len(q) for q in expected.values())
    visible: dict[str, int] = {}
    pending = {t for t, q in expected.items() if q}
    meter = CpuMeter(cluster)
    last_count, last_move = 0, time.monotonic()
    while pending and time.monotonic() - last_move < args.stall_timeout:
        for topic in sorted(pending):
            with contextlib.suppress(Exception):  # a slow answer: asked again next round
                visible[topic] = await visible_queues(admin, topic, expected[topic])
            if visible.get(topic, 0) == len(expected[topic]):
                pending.discard(topic)
        count = sum(visible.values())
        if count > last_count:
            last_count, last_move = count, time.monotonic()
        if pending:
            await asyncio.sleep(1.0)
    d = meter.delta()
    done = sum(visible.values())
    verdict = "all" if done == total else f"STALLED ({args.stall_timeout:.0f} s without progress)"
    report.row(
        phase,
        "acked messages visible in their queues",
        f"{done:,} of {total:,} queues after {d.wall_s:.1f} s more: {verdict} "
        f"(broker CPU meanwhile {d.broker_s:.1f} s)",
    )
    report.data(phase, dispatch_visible=done, dispatch_expected=total, dispatch_cpu=asdict(d))


async def probe_until_answered(admin: AdminClient, cluster: Cluster, deadline: float) -> bool:
    """Ask the broker itself (GET_MAX_OFFSET) until it answers or the deadline passes."""
    mq = MessageQueue(BASE_TOPIC, BROKER_NAME, 0)
    while time.monotonic() < deadline:
        broker = cluster.broker
        if broker is None or broker.process.poll() is not None:
            return False
        try:
            await admin.api.get_max_offset(cluster.broker_addr, mq, 2.0)
            return True
        except Exception:
            await asyncio.sleep(0.1)
    return False


async def restart_phase(cluster: Cluster, args: argparse.Namespace, report: Report) -> bool:
    """Stop the broker (SIGTERM, or SIGKILL with ``--kill``), start it again; True when it
    answers within ``--ready-timeout``."""
    phase = "4 restart"
    old = cluster.broker
    assert old is not None
    sig = signal.SIGKILL if args.kill else signal.SIGTERM
    cpu_before = cpu_seconds(old.pid)
    async with cluster.profiler.phase("4-stop", old.pid):
        seconds, rc = await old.stop(sig, args.stop_timeout)
    if rc is None:
        report.row(phase, f"{sig.name} -> exit", f"still running after {seconds:.1f} s: killed")
        old.kill()
    else:
        report.row(phase, f"{sig.name} -> exit", f"{seconds:.2f} s, exit code {rc}")
    report.data(phase, signal=sig.name, stop_s=seconds, exit_code=rc, broker_cpu_total_s=cpu_before)
    broker = cluster.start_broker()
    async with cluster.profiler.phase("4-start", broker.pid, delay_s=0.5):
        ready = await broker.wait_line(BROKER_READY, args.ready_timeout)
    if ready is None:
        rc = broker.process.poll()
        why = (
            f"exited with code {rc} after {time.monotonic() - broker.started:.1f} s"
            if rc is not None
            else f"still starting after {args.ready_timeout:.0f} s"
        )
        report.row(phase, "ready line", f"none: {why}")
        report.row(phase, "broker output", tail(broker, 600))
        report.data(phase, ready_s=None)
        report_proc(report, phase, "broker not ready", cluster)
        return False
    ready_cpu = cpu_seconds(broker.pid)
    report.row(phase, "start -> ready line", f"{ready:.2f} s (broker CPU {ready_cpu:.1f} s)")
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        answered = await probe_until_answered(admin, cluster, broker.started + args.ready_timeout)
        first = time.monotonic() - broker.started
        report.row(
            phase,
            "start -> first answered request",
            f"{first:.2f} s" if answered else f"no answer within {args.ready_timeout:.0f} s",
        )
        # After SIGKILL the name server still lists the old registration until it expires,
        # so this is immediate there; after SIGTERM the broker unregistered and must return.
        registered = await bounded(
            phase, report, args.ready_timeout, wait_registered(admin, args.ready_timeout)
        )
        since = time.monotonic() - broker.started
        if registered is not None:
            report.row(phase, "start -> listed by the name server", f"{since:.2f} s")
    report.data(
        phase,
        ready_s=ready,
        ready_broker_cpu_s=ready_cpu,
        first_answer_s=first if answered else None,
        registered_s=since if registered is not None else None,
    )
    report_proc(report, phase, "broker after start", cluster)
    return answered


async def read_queue(reader: QueueReader, mq: MessageQueue, low: int, high: int) -> dict[int, str]:
    found: dict[int, str] = {}
    async for batch in reader.read(mq, low, high):
        for m in batch:
            found[m.queue_offset] = m.unique_key or ""
    return found


async def verify_phase(
    cluster: Cluster, args: argparse.Namespace, report: Report, ledger: Ledger
) -> None:
    """Read every queue from its min to its max offset; each acked message must be there."""
    phase = "5 verify"
    expected: dict[tuple[str, int], dict[int, str]] = {}
    for (topic, qid, offset), msg_id in ledger.acked.items():
        expected.setdefault((topic, qid), {})[offset] = msg_id
    for topic in scale_topics(args):
        for q in range(args.queues):
            expected.setdefault((topic, q), {})
    began = time.monotonic()
    found: dict[tuple[str, int], dict[int, str]] = {}
    errors: Counter[str] = Counter()
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        bounds: dict[tuple[str, int], tuple[int, int]] = {}
        for topic in sorted({t for t, _ in expected}):
            try:
                for s in await admin.topic_status(topic):
                    bounds[(topic, s.queue_id)] = (s.min_offset, s.max_offset)
            except Exception as exc:
                errors[describe_error(exc)] += 1
    reader = QueueReader(cluster.namesrv_addr)
    shared = iter(sorted(bounds.items()))

    async def worker() -> None:
        for (topic, q), (low, high) in shared:
            if high <= low:
                continue
            try:
                found[(topic, q)] = await read_queue(
                    reader, MessageQueue(topic, BROKER_NAME, q), low, high
                )
            except Exception as exc:
                errors[describe_error(exc)] += 1

    try:
        await asyncio.gather(*(worker() for _ in range(args.inflight)))
    finally:
        await reader.close()
    lost = sum(
        1
        for key, offsets in expected.items()
        for offset, msg_id in offsets.items()
        if found.get(key, {}).get(offset) != msg_id
    )
    stored = sum(len(v) for v in found.values())
    unacked = sum(
        1 for key, got in found.items() for offset in got if offset not in expected.get(key, {})
    )
    missing_queues = sum(1 for key in expected if key not in bounds)
    acked = len(ledger.acked)
    seconds = time.monotonic() - began
    report.row(phase, "acked messages", f"{acked:,}")
    report.row(phase, "read back", f"{stored:,} from {len(found):,} queues in {seconds:.1f} s")
    report.row(phase, "LOST (acked, not read back at its offset with its id)", f"{lost:,}")
    report.row(phase, "stored though not acked (send failed or timed out)", f"{unacked:,}")
    if missing_queues:
        report.row(phase, "queues the broker does not report", f"{missing_queues:,}")
    for text, n in errors.most_common(5):
        report.row(phase, "read error", f"{n:,} x {text}")
    report.data(
        phase,
        acked=acked,
        stored=stored,
        lost=lost,
        stored_not_acked=unacked,
        queues_not_reported=missing_queues,
        errors=dict(errors),
        seconds=seconds,
        not_send_ok=dict(ledger.not_ok),
    )


async def write_phase(
    phase: str,
    producer: Producer,
    cluster: Cluster,
    args: argparse.Namespace,
    report: Report,
    ledger: Ledger,
    seq: Iterator[int],
) -> list[WriteRound]:
    rounds = await bounded(
        phase, report, args.phase_timeout, write_rounds(producer, cluster, args, ledger, seq)
    )
    report_writes(report, phase, rounds or [])
    report_proc(report, phase, "broker after writes", cluster)
    return rounds or []


async def after_phase(
    producer: Producer,
    cluster: Cluster,
    args: argparse.Namespace,
    report: Report,
    ledger: Ledger,
    seq: Iterator[int],
) -> list[WriteRound]:
    """Phase 3: the 4-queue writes again, interleaved with round-robin writes over every
    scale queue; the spread's rate against the 4-queue rate of the same phase."""
    phase, spread_phase = "3 after", "3 spread"
    both = await bounded(
        phase,
        report,
        args.phase_timeout,
        interleaved_rounds(producer, cluster, args, ledger, seq),
    )
    after, spread_ = both or ([], [])
    report_writes(report, phase, after)
    report_writes(report, spread_phase, spread_)
    report_proc(report, spread_phase, "broker after writes", cluster)
    if after and spread_:
        rate = statistics.median(r.msgs_per_s for r in spread_) / statistics.median(
            r.msgs_per_s for r in after
        )
        cpu = statistics.median(r.broker_us_per_msg for r in spread_) / statistics.median(
            r.broker_us_per_msg for r in after
        )
        pairs = [s.msgs_per_s / a.msgs_per_s for a, s in zip(after, spread_, strict=True)]
        total = args.topics * args.queues
        report.row(
            spread_phase,
            f"msg/s round robin over {total:,} queues / {BASE_QUEUES} queues (same phase)",
            f"{rate:.2f} (pairs: {', '.join(f'{x:.2f}' for x in pairs)})",
        )
        report.row(spread_phase, "broker CPU us/msg spread / 4 queues", f"{cpu:.2f}")
        report.data(
            spread_phase, ratio_msgs_per_s=rate, ratio_broker_us_per_msg=cpu, pair_ratios=pairs
        )
    return after


def report_ratio(report: Report, before: Sequence[WriteRound], after: Sequence[WriteRound]) -> None:
    if not before or not after:
        return
    rate = statistics.median(r.msgs_per_s for r in after) / statistics.median(
        r.msgs_per_s for r in before
    )
    cpu = statistics.median(r.broker_us_per_msg for r in after) / statistics.median(
        r.broker_us_per_msg for r in before
    )
    report.row("3 after", "msg/s after / baseline", f"{rate:.2f}")
    report.row("3 after", "broker CPU us/msg after / baseline", f"{cpu:.2f}")
    report.data("3 after", ratio_msgs_per_s=rate, ratio_broker_us_per_msg=cpu)


async def run_phases(cluster: Cluster, args: argparse.Namespace, report: Report) -> None:
    """Every phase against one cluster; failures become rows, later phases still run where
    they can."""
    ledger = Ledger()
    seq = iter(range(1 << 62))
    await cluster.start_namesrv()
    broker = cluster.start_broker()
    ready = await broker.wait_line(BROKER_READY, args.ready_timeout)
    if ready is None:
        report.row("0 start", "FAILED", f"no ready line: {tail(broker)}")
        return
    report.row("0 start", "broker start -> ready line", f"{ready:.2f} s")
    figures = report_proc(report, "0 start", "broker after start", cluster)
    if figures:
        report.row(
            "0 start",
            "broker RLIMIT_NOFILE soft / hard",
            f"{figures.nofile_soft:,} / {figures.nofile_hard:,}",
        )
    config = ProducerConfig(send_msg_timeout_s=args.send_timeout)
    admin = AdminClient(namesrv_addr=cluster.namesrv_addr)
    producer = Producer("QsBenchProducer", namesrv_addr=cluster.namesrv_addr, config=config)
    await admin.start()
    await producer.start()
    try:
        await wait_registered(admin, 60)
        await admin.create_topic(BASE_TOPIC, queue_nums=BASE_QUEUES, cluster=CLUSTER)
        spy = cluster.profiler
        async with spy.phase("1-baseline", broker.pid):
            before = await write_phase("1 baseline", producer, cluster, args, report, ledger, seq)
        await idle_cpu(cluster, report, "1 baseline")
        async with spy.phase("2-scale", broker.pid):
            await bounded(
                "2 scale",
                report,
                args.phase_timeout,
                scale_phase(admin, producer, cluster, args, report, ledger, seq),
            )
        async with spy.phase("2-idle", broker.pid):
            await idle_cpu(cluster, report, "2 scale")
        async with spy.phase("3-after", broker.pid):
            after = await after_phase(producer, cluster, args, report, ledger, seq)
        report_ratio(report, before, after)
        await base_visibility(admin, report, ledger)
    finally:
        # Stopped before the restart: a producer heartbeating into a stopping broker only
        # adds noise to its shutdown.
        await producer.shutdown()
        await admin.shutdown()
    if await restart_phase(cluster, args, report):
        await bounded(
            "5 verify", report, args.phase_timeout, verify_phase(cluster, args, report, ledger)
        )
    else:
        report.row("5 verify", "not run", "the broker did not answer after the restart")
        report.data("5 verify", acked=len(ledger.acked), lost=None)


# -- main -----------------------------------------------------------------------------------


def src_digest(python: str, env: dict[str, str]) -> dict[str, str]:
    """Where the broker's interpreter imports orbitmq from, and a digest of that tree's .py
    files (which code ran, even from an unpacked archive with no git)."""
    out = subprocess.run(
        [python, "-c", "import orbitmq, os; print(os.path.dirname(orbitmq.__file__))"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    pkg = out.stdout.strip()
    digest = hashlib.sha256()
    if pkg:
        for path in sorted(Path(pkg).rglob("*.py")):
            digest.update(str(path.relative_to(pkg)).encode())
            digest.update(path.read_bytes())
    return {"package": pkg or f"? {out.stderr[-300:]}", "sha256_py": digest.hexdigest()[:16]}


def git_head() -> str:
    out = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip()


def machine() -> dict[str, Any]:
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    max_map = Path("/proc/sys/vm/max_map_count").read_text().strip()
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "vm_max_map_count": int(max_map),
        "nofile_limit_of_bench": resource.getrlimit(resource.RLIMIT_NOFILE),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--topics", type=int, default=100, help="topics made in phase 2")
    p.add_argument("--queues", type=int, default=100, help="queues of each (1..1024)")
    p.add_argument("--messages", type=int, default=20_000, help="messages per write round")
    p.add_argument("--rounds", type=int, default=3, help="timed write rounds per write phase")
    p.add_argument(
        "--concurrency", type=int, default=16, help="synchronous senders in phases 1 and 3"
    )
    p.add_argument("--inflight", type=int, default=128, help="sends at once in phases 2 and 5")
    p.add_argument("--create-concurrency", type=int, default=4, help="topics created at once")
    p.add_argument("--flush", default="ASYNC_FLUSH", choices=["ASYNC_FLUSH", "SYNC_FLUSH"])
    p.add_argument("--kill", action="store_true", help="restart with SIGKILL, not SIGTERM")
    p.add_argument("--nofile", type=int, help="the broker's RLIMIT_NOFILE (soft and hard)")
    p.add_argument(
        "--python", default=str(REPO / ".venv" / "bin" / "python"), help="the servers' Python"
    )
    p.add_argument("--src", type=Path, help="source tree put first on the servers' PYTHONPATH")
    p.add_argument("--work-dir", type=Path, help="parent of the temporary store directory")
    p.add_argument("--ready-timeout", type=float, default=300.0, help="s for a broker start")
    p.add_argument("--stop-timeout", type=float, default=120.0, help="s for a broker stop")
    p.add_argument("--phase-timeout", type=float, default=900.0, help="s for each phase")
    p.add_argument("--stall-timeout", type=float, default=60.0, help="s without dispatch progress")
    p.add_argument("--py-spy", help="py-spy executable: record the broker in every phase")
    p.add_argument("--send-timeout", type=float, default=10.0, help="s for each send")
    p.add_argument("--keep", action="store_true", help="keep the store directory")
    p.add_argument("--json", type=Path, help="result file (default benchmarks/results/)")
    return p.parse_args(argv)


def server_env(args: argparse.Namespace) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if args.src is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(args.src.resolve()), os.environ.get("PYTHONPATH", "")) if p
        )
    return env


def save_stderr(cluster: Cluster, stem: str) -> list[str]:
    """Copy the servers' stderr files next to the JSON when they say anything (capped)."""
    saved: list[str] = []
    for err in sorted(cluster.workdir.glob("*.err")):
        text = err.read_bytes()
        if text.strip():
            out = RESULTS_DIR / f"{stem}-{err.name}"
            out.write_bytes(text[:1_000_000] + (b"\n[... cut]\n" if len(text) > 1_000_000 else b""))
            saved.append(str(out))
    return saved


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.ERROR)  # the client's retry chatter would bury the rows
    say = Console(width=max(160, Console().width))
    command = shlex.join([sys.executable, *sys.argv]) if argv is None else shlex.join(argv)
    started = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    stem = f"queue_scale-{time.strftime('%Y%m%d-%H%M%S')}"
    env = server_env(args)
    report = Report()
    info = machine()
    # The repository's HEAD when the run began; the code measured is ``broker_code`` (from
    # --src when given, which may be another commit's archive).
    head = git_head()
    code = src_digest(args.python, env)
    say.print(f"command: {command}")
    say.print(f"broker code: {code}; bench client: {Path(orbitmq.__file__).parent}")

    def on_signal(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    parent = args.work_dir or Path(tempfile.gettempdir())
    workdir = Path(tempfile.mkdtemp(prefix="orbitmq-qscale-", dir=parent))
    same_disk = os.stat(workdir).st_dev == os.stat(REPO).st_dev
    say.print(f"store in {workdir} ({'same' if same_disk else 'NOT the same'} device as the repo)")
    cluster = Cluster(args, workdir, env, profiler=Profiler(args.py_spy, stem))
    load0 = os.getloadavg()
    began = time.monotonic()
    try:
        run(run_phases(cluster, args, report))
    except Exception as exc:
        report.row("run", "FAILED", describe_error(exc))
    finally:
        cluster.kill_all()
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        saved = save_stderr(cluster, stem)
        if args.keep:
            say.print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    stderr = cluster.watch.snapshot()
    for kind, n in sorted(stderr["counts"].items()):
        report.row("stderr", kind.replace("_", " "), f"{n:,} lines")
    for item in stderr["lines"][:10]:
        report.row("stderr", f"x{item['count']:,}", item["line"])
    title = (
        f"One broker, {args.topics:,} x {args.queues:,} queues "
        f"(nofile {args.nofile or 'inherited'}, restart by {'SIGKILL' if args.kill else 'SIGTERM'})"
    )
    say.print()
    say.print(report.table(title))
    doc = {
        "command": command,
        "started": started,
        "seconds": time.monotonic() - began,
        "repo_git_head_at_start": head,
        "broker_code": code,
        "client_code": str(Path(orbitmq.__file__).parent),
        "machine": info,
        "loadavg_before": load0,
        "loadavg_after": os.getloadavg(),
        "args": {k: str(v) for k, v in vars(args).items()},
        "store_conf": STORE_CONF,
        "rows": report.rows,
        **report.doc,
        "stderr": stderr,
        "stderr_files": saved,
        "py_spy_files": cluster.profiler.files,
    }
    out = args.json or RESULTS_DIR / f"{stem}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2, default=str))
    say.print(f"JSON: {out}")
    lost = report.doc["phases"].get("5 verify", {}).get("lost")
    return 0 if lost == 0 and not stderr["counts"] else 1


if __name__ == "__main__":
    sys.exit(main())
