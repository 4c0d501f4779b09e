"""Storage-engine benchmark: append, dispatch and consume-queue read throughput of MessageStore.

    python benchmarks/store_bench.py [--quick] [--messages N] [--json PATH] [--markdown PATH]

Every scenario gets a fresh store with RocketMQ's default file sizes in a temporary directory
on the repository's disk. The machine's own limits (sequential write of the same bytes, memcpy
into a mapping, fdatasync rate) are measured in the same run, so results read as ratios.
Prints one table; writes JSON to benchmarks/results/ (git-ignored) or ``--json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import gc
import hashlib
import json
import mmap
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import uvloop
from rich.console import Console
from rich.table import Table

from orbitmq.common import (
    Message,
    MessageExtBatch,
    MessageExtBrokerInner,
    OsFileSystem,
    UniqueIdGenerator,
    encode_batch_messages,
)
from orbitmq.common import message_const as mc
from orbitmq.store import (
    FlushDiskType,
    GetMessageStatus,
    MessageStore,
    MessageStoreConfig,
    PutMessageStatus,
)

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "benchmarks" / "results"
MB = 1_000_000
MIB = 1 << 20
TOPIC = "BenchTopic"
QUEUES = 4  # RocketMQ's defaultTopicQueueNums; items go round robin, as the default selector
TAGS = "TagA"
BORN_HOST = ("10.0.0.1", 52000)
CONSUMER_GROUP = "BenchGroup"
READ_BATCH = 32
SAMPLE_INTERVAL_S = 0.05
DRAIN_LIMIT_S = 1.0  # "dispatch kept up": drained within this after the last put, and never
MAX_LAG_LIMIT_S = 1.0  # further behind than this many seconds of appended bytes
TARGET_128_MSGS_S = 250_000
TARGET_1K_MSGS_S = 200_000
SYNC_VS_ASYNC_MIN = 0.80
MEMORY_FLAT_MIB = 32

ASYNC = FlushDiskType.ASYNC_FLUSH
SYNC = FlushDiskType.SYNC_FLUSH


# -- what is measured ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scenario:
    """One append run: body size, messages per put (1 = single puts), flush mode."""

    body_size: int
    batch_size: int
    flush: FlushDiskType
    messages: int
    #: asyncio tasks putting at once (SYNC_FLUSH); 1 = a plain loop of put_message.
    concurrency: int
    #: warmMapedFileEnable: commit log and index files get all their blocks when created.
    warm: bool = False

    @property
    def name(self) -> str:
        size = f"{self.body_size // 1024} KiB" if self.body_size >= 1024 else f"{self.body_size} B"
        kind = "single" if self.batch_size == 1 else f"batch {self.batch_size}"
        warm = " warm" if self.warm else ""
        return f"{size} {kind} {self.flush.value.split('_')[0]}{warm}"


@dataclass(slots=True)
class AppendResult:
    """One append run's rates, dispatch lag, syncs and memory samples (MB = 10^6 bytes)."""

    name: str
    body_size: int
    batch_size: int
    flush: str
    concurrency: int
    messages: int
    failed_puts: int
    stored_bytes: int
    put_s: float
    drain_s: float
    msgs_per_s: float
    payload_mb_per_s: float
    stored_mb_per_s: float
    #: Messages over the time until the last one was dispatched (visible to consumers).
    end_to_end_msgs_per_s: float
    max_lag_bytes: int
    final_lag_bytes: int
    #: The max lag in seconds of appending at this run's rate.
    max_lag_s: float
    kept_up: bool
    commit_log_syncs: int
    syncs_per_s: float
    rss_anon_kib: dict[str, int]
    #: CPU time of this process (all threads) over wall time, puts and drain; with the GIL
    #: about 1.0 is one busy core. Other load on the machine shows as a lower figure.
    cpu_per_wall: float
    load_average_1m: float
    ratio_to_seq_write: float = 0.0


@dataclass(slots=True)
class ReadResult:
    """Reading every consume queue of one run's store from offset 0 to the end."""

    source: str
    messages: int
    expected: int
    read_s: float
    msgs_per_s: float
    payload_mb_per_s: float
    stored_mb_per_s: float


@dataclass(slots=True)
class MachineLimits:
    """The disk and memory speeds this run's results are compared with."""

    when: str
    bytes: int
    seq_write_mb_per_s: float
    seq_write_only_s: float
    seq_fdatasync_s: float
    mmap_copy_mb_per_s: float
    fdatasync_per_s: float


@dataclass(slots=True)
class Target:
    """A goal of the storage-engine issue and whether this run met it."""

    name: str
    passed: bool
    detail: str


@dataclass(slots=True)
class Report:
    """Everything one benchmark run found; written as JSON. Built on the main thread only."""

    command: str
    started: str
    machine: dict[str, Any]
    appends: list[AppendResult] = field(default_factory=list)
    read: ReadResult | None = None
    #: Measured before and after the scenarios: this disk's speed varies over a run.
    limits: list[MachineLimits] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0


# -- the machine ------------------------------------------------------------------------


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _proc_field(text: str, key: str) -> str:
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == key:
            return value.strip()
    return ""


def rss_anon_kib() -> int:
    """Anonymous resident memory of this process (heap, not the mapped files)."""
    return int(_proc_field(_read_text("/proc/self/status"), "RssAnon").split()[0] or 0)


def filesystem_of(path: Path) -> dict[str, str]:
    """The mount holding ``path``: device, type and mount point, from /proc/mounts."""
    real = os.path.realpath(path)
    best = {"device": "?", "type": "?", "mount_point": "/"}
    best_len = -1
    for line in _read_text("/proc/mounts").splitlines():
        device, mount_point, fs_type, *_ = line.split()
        inside = real == mount_point or real.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) > best_len:
            best = {"device": device, "type": fs_type, "mount_point": mount_point}
            best_len = len(mount_point)
    return best


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def git_state() -> dict[str, Any]:
    """The commit, and which source files differ from it (the engine is under active work,
    so a result names the exact tree it measured: the sha1 of ``git diff HEAD -- src``)."""
    changed = _git("status", "--porcelain", "--untracked-files=all", "--", "src").splitlines()
    diff = _git("diff", "HEAD", "--", "src")
    return {
        "commit": _git("rev-parse", "--short", "HEAD") or "unknown",
        "src_changes": [line.split(maxsplit=1)[-1] for line in changed],
        "src_diff_sha1": hashlib.sha1(diff.encode()).hexdigest()[:12] if diff else "",
    }


def describe_git(git: dict[str, Any]) -> str:
    if not git["src_changes"]:
        return git["commit"]
    count = len(git["src_changes"])
    return f"{git['commit']} + {count} changed src files (diff sha1 {git['src_diff_sha1']})"


def machine_info(work_dir: Path) -> dict[str, Any]:
    meminfo_kib = int(_proc_field(_read_text("/proc/meminfo"), "MemTotal").split()[0] or 0)
    return {
        "cpu_model": _proc_field(_read_text("/proc/cpuinfo"), "model name") or platform.machine(),
        "nproc": len(os.sched_getaffinity(0)),
        "ram_gib": round(meminfo_kib / MIB, 1),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "kernel": platform.release(),
        "event_loop": f"uvloop {uvloop.__version__}",
        "work_dir": str(work_dir),
        "filesystem": filesystem_of(work_dir),
        "git": git_state(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def pick_work_root(requested: str | None) -> Path:
    """A directory on the repository's disk: the system temp dir if it is that disk (and not
    tmpfs), else git-ignored benchmarks/results/."""
    if requested:
        return Path(requested)
    tmp = Path(tempfile.gettempdir())
    same_disk = os.stat(tmp).st_dev == os.stat(REPO).st_dev
    if same_disk and filesystem_of(tmp)["type"] not in {"tmpfs", "ramfs"}:
        return tmp
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    return RESULTS_DIR


# -- messages ---------------------------------------------------------------------------


class MessageFactory:
    """Builds messages as RocketMQ's clients send them: TAGS, WAIT and a fresh UNIQ_KEY.
    Safe from several threads (the id generator is)."""

    def __init__(self) -> None:
        self._uniq = UniqueIdGenerator()

    def properties(self) -> dict[str, str]:
        return {
            mc.PROPERTY_TAGS: TAGS,
            mc.PROPERTY_WAIT_STORE_MSG_OK: "true",
            mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: self._uniq.create(),
        }

    def singles(self, count: int, body: bytes) -> list[MessageExtBrokerInner]:
        born = int(time.time() * 1000)
        return [
            MessageExtBrokerInner(
                topic=TOPIC,
                body=body,
                queue_id=i % QUEUES,
                properties=self.properties(),
                born_timestamp=born,
                born_host=BORN_HOST,
            )
            for i in range(count)
        ]

    def batches(self, count: int, body: bytes, batch_size: int) -> list[MessageExtBatch]:
        """``count`` messages in batches; the batch's own WAIT property is appended to every
        message's by the store, as a client's MessageBatch makes it."""
        born = int(time.time() * 1000)
        result = []
        for i in range(count // batch_size):
            encoded = encode_batch_messages(
                Message(TOPIC, body, 0, self.properties()) for _ in range(batch_size)
            )
            result.append(
                MessageExtBatch(
                    topic=TOPIC,
                    body=encoded,
                    queue_id=i % QUEUES,
                    properties={mc.PROPERTY_WAIT_STORE_MSG_OK: "true"},
                    born_timestamp=born,
                    born_host=BORN_HOST,
                )
            )
        return result

    def build(self, scenario: Scenario) -> Sequence[MessageExtBrokerInner]:
        body = bytes(i % 251 for i in range(scenario.body_size))
        if scenario.batch_size == 1:
            return self.singles(scenario.messages, body)
        return self.batches(scenario.messages, body, scenario.batch_size)


# -- instruments ------------------------------------------------------------------------


class CountingFileSystem(OsFileSystem):
    """The real file system, counting the syncs made by the commit log's flush services
    (group commits under SYNC_FLUSH, interval flushes under ASYNC_FLUSH).

    They are recognised by thread name: no extra system call, which would add a GIL
    hand-off to every group commit. Written by one flush thread, read between runs."""

    _FLUSH_THREADS = frozenset({"GroupCommitService", "FlushRealTimeService"})

    def __init__(self) -> None:
        self.commit_log_syncs = 0

    def sync(self, fd: int) -> None:
        super().sync(fd)
        if threading.current_thread().name in self._FLUSH_THREADS:
            self.commit_log_syncs += 1


class Sampler:
    """A background thread sampling the dispatch lag and RssAnon every ``interval_s``.

    Use as a context manager; read ``samples`` after it exits (the thread has ended)."""

    def __init__(self, store: MessageStore, interval_s: float = SAMPLE_INTERVAL_S):
        self._store = store
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)
        #: (seconds since start, dispatch lag in bytes, RssAnon in KiB)
        self.samples: list[tuple[float, int, int]] = []
        self._started = 0.0

    def __enter__(self) -> Sampler:
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            elapsed = time.perf_counter() - self._started
            self.samples.append((elapsed, self._store.dispatch_behind_bytes, rss_anon_kib()))

    def max_lag(self, until_s: float) -> int:
        return max((lag for t, lag, _ in self.samples if t <= until_s), default=0)

    def rss_near(self, at_s: float) -> int:
        if not self.samples:
            return rss_anon_kib()
        return min(self.samples, key=lambda s: abs(s[0] - at_s))[2]


# -- append scenarios -------------------------------------------------------------------


def open_store(
    directory: Path, flush: FlushDiskType, warm: bool = False
) -> tuple[MessageStore, CountingFileSystem]:
    """A fresh store with RocketMQ's default sizes (1 GiB commit log files, 300,000-unit
    consume queues, 5M-slot / 20M-entry index files), started; ``warm``: files get all their
    blocks when created (warmMapedFileEnable)."""
    config = MessageStoreConfig(
        store_path_root_dir=str(directory), flush_disk_type=flush, warm_maped_file_enable=warm
    )
    fs = CountingFileSystem()
    store = MessageStore(config, fs=fs)
    store.load()
    store.start()
    return store, fs


def put_in_loop(store: MessageStore, items: Sequence[MessageExtBrokerInner]) -> int:
    """Plain put_message calls on this thread; returns the number of failed puts."""
    put = store.put_message
    ok = PutMessageStatus.PUT_OK
    return sum(1 for item in items if put(item).status is not ok)


async def put_concurrently(
    store: MessageStore, items: Sequence[MessageExtBrokerInner], concurrency: int
) -> int:
    """``concurrency`` tasks on one loop awaiting async_put_message, so that appends arriving
    during a sync are acknowledged by the next one (group commit); returns failed puts."""
    feed = iter(items)
    failed = 0

    async def producer() -> None:
        nonlocal failed
        for item in feed:
            result = await store.async_put_message(item)
            if result.status is not PutMessageStatus.PUT_OK:
                failed += 1

    await asyncio.gather(*(producer() for _ in range(concurrency)))
    return failed


def put_all(store: MessageStore, scenario: Scenario, items: Sequence[MessageExtBrokerInner]) -> int:
    if scenario.concurrency <= 1:
        return put_in_loop(store, items)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(put_concurrently(store, items, scenario.concurrency))


@dataclass(slots=True)
class Measurement:
    """What one append run observed, before rates are derived."""

    failed_puts: int
    stored_bytes: int
    put_s: float
    drain_s: float
    max_lag_bytes: int
    final_lag_bytes: int
    commit_log_syncs: int
    rss_anon_kib: dict[str, int]
    cpu_s: float


def run_scenario(
    scenario: Scenario,
    items: Sequence[MessageExtBrokerInner],
    store: MessageStore,
    fs: CountingFileSystem,
) -> AppendResult:
    """Put every item, then wait for dispatch to drain; the store stays open."""
    rss_start = rss_anon_kib()
    syncs_before = fs.commit_log_syncs
    cpu_started = time.process_time()
    with Sampler(store) as sampler:
        started = time.perf_counter()
        failed = put_all(store, scenario, items)
        put_s = time.perf_counter() - started
        final_lag = store.dispatch_behind_bytes
        syncs = fs.commit_log_syncs - syncs_before
        if not store.wait_for_dispatch(timeout_s=300):
            raise RuntimeError(f"{scenario.name}: dispatch did not drain within 300 s")
        drain_s = time.perf_counter() - started - put_s
        rss_end = rss_anon_kib()
    measured = Measurement(
        failed_puts=failed,
        stored_bytes=store.max_phy_offset,
        put_s=put_s,
        drain_s=drain_s,
        max_lag_bytes=max(sampler.max_lag(put_s), final_lag),
        final_lag_bytes=final_lag,
        commit_log_syncs=syncs,
        rss_anon_kib={"start": rss_start, "middle": sampler.rss_near(put_s / 2), "end": rss_end},
        cpu_s=time.process_time() - cpu_started,
    )
    return summarize(scenario, measured)


def summarize(scenario: Scenario, m: Measurement) -> AppendResult:
    stored_per_s = m.stored_bytes / m.put_s
    max_lag_s = m.max_lag_bytes / stored_per_s
    return AppendResult(
        name=scenario.name,
        body_size=scenario.body_size,
        batch_size=scenario.batch_size,
        flush=scenario.flush.value,
        concurrency=scenario.concurrency,
        messages=scenario.messages,
        failed_puts=m.failed_puts,
        stored_bytes=m.stored_bytes,
        put_s=m.put_s,
        drain_s=m.drain_s,
        msgs_per_s=scenario.messages / m.put_s,
        payload_mb_per_s=scenario.messages * scenario.body_size / m.put_s / MB,
        stored_mb_per_s=stored_per_s / MB,
        end_to_end_msgs_per_s=scenario.messages / (m.put_s + m.drain_s),
        max_lag_bytes=m.max_lag_bytes,
        final_lag_bytes=m.final_lag_bytes,
        max_lag_s=max_lag_s,
        kept_up=m.drain_s < DRAIN_LIMIT_S and max_lag_s < MAX_LAG_LIMIT_S,
        commit_log_syncs=m.commit_log_syncs,
        syncs_per_s=m.commit_log_syncs / m.put_s,
        rss_anon_kib=m.rss_anon_kib,
        cpu_per_wall=m.cpu_s / (m.put_s + m.drain_s),
        load_average_1m=os.getloadavg()[0],
    )


def plan(messages: int, warm: bool = False) -> list[tuple[Scenario, Scenario]]:
    """Pairs (ASYNC, SYNC) that share one set of built messages, 128 B batch 32 first.

    ``messages`` is the count of the batched 128 B runs; 1 KiB runs use half, single puts a
    fifth of the same size's batched count (they are the slowest per message)."""
    pairs = []
    for body_size, divisor in ((128, 1), (1024, 2)):
        for batch_size in (32, 128, 1):
            count = messages // divisor // (5 if batch_size == 1 else 1)
            count -= count % batch_size
            tasks = 64 if batch_size == 1 else 32
            pairs.append(
                (
                    Scenario(body_size, batch_size, ASYNC, count, 1, warm),
                    Scenario(body_size, batch_size, SYNC, count, tasks, warm),
                )
            )
    return pairs


def probe_stored_bytes(scenario: Scenario, root: Path) -> int:
    """The commit log bytes ``scenario`` will write: one put item stored in a scratch store."""
    sample = replace(scenario, messages=scenario.batch_size)
    directory = Path(tempfile.mkdtemp(prefix="store_bench-probe-", dir=root))
    store, _ = open_store(directory, ASYNC)
    try:
        for item in MessageFactory().build(sample):
            store.put_message(item)
        return store.max_phy_offset * scenario.messages // sample.messages
    finally:
        store.shutdown()
        shutil.rmtree(directory, ignore_errors=True)


def is_read_source(scenario: Scenario) -> bool:
    return (scenario.body_size, scenario.batch_size, scenario.flush) == (128, 32, ASYNC)


# -- consume-queue reads ----------------------------------------------------------------


def read_all_queues(store: MessageStore, scenario: Scenario) -> ReadResult:
    """Read every queue from offset 0 to its end, ``READ_BATCH`` messages per get_message
    (views into the mapped commit log, as a pull response is built from)."""
    count = stored = 0
    started = time.perf_counter()
    for queue_id in range(QUEUES):
        offset, end = 0, store.get_max_offset_in_queue(TOPIC, queue_id)
        while offset < end:
            result = store.get_message(CONSUMER_GROUP, TOPIC, queue_id, offset, READ_BATCH)
            if result.status is not GetMessageStatus.FOUND:
                raise RuntimeError(f"queue {queue_id} offset {offset}: {result.status.name}")
            count += result.message_count
            stored += result.buffer_total_size
            offset = result.next_begin_offset
    read_s = time.perf_counter() - started
    return ReadResult(
        source=scenario.name,
        messages=count,
        expected=scenario.messages,
        read_s=read_s,
        msgs_per_s=count / read_s,
        payload_mb_per_s=count * scenario.body_size / read_s / MB,
        stored_mb_per_s=stored / read_s / MB,
    )


# -- running ----------------------------------------------------------------------------


def run_one(
    scenario: Scenario, items: Sequence[MessageExtBrokerInner], root: Path
) -> tuple[AppendResult, ReadResult | None]:
    directory = Path(tempfile.mkdtemp(prefix="store_bench-", dir=root))
    store, fs = open_store(directory, scenario.flush, scenario.warm)
    try:
        result = run_scenario(scenario, items, store, fs)
        read = read_all_queues(store, scenario) if is_read_source(scenario) else None
    finally:
        store.shutdown()
        shutil.rmtree(directory, ignore_errors=True)
        os.sync()  # the next run starts without this one's writeback
    return result, read


def run_pair(
    pair: tuple[Scenario, Scenario], root: Path, progress: Console
) -> tuple[list[AppendResult], ReadResult | None]:
    """Build the messages once (not timed), then run both flush modes on fresh stores."""
    items = MessageFactory().build(pair[0])
    # The built messages live through the runs; keep the collector from rescanning them.
    gc.collect()
    gc.freeze()
    results, read = [], None
    try:
        for scenario in pair:
            progress.log(f"{scenario.name}: {scenario.messages:,} messages")
            result, scenario_read = run_one(scenario, items, root)
            results.append(result)
            read = read or scenario_read
    finally:
        gc.unfreeze()
    return results, read


# -- the machine's limits ---------------------------------------------------------------


def sequential_write(directory: Path, total: int) -> tuple[float, float]:
    """os.write of 1 MiB chunks, then one fdatasync: (write seconds, sync seconds)."""
    path = directory / "seq-write"
    chunk = bytes(i % 251 for i in range(MIB))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        started = time.perf_counter()
        for _ in range(total // MIB):
            os.write(fd, chunk)
        written = time.perf_counter()
        os.fdatasync(fd)
        return written - started, time.perf_counter() - written
    finally:
        os.close(fd)
        path.unlink()


def mmap_copy(directory: Path, total: int) -> float:
    """Seconds to copy ``total`` bytes into a preallocated mapped file, 1 MiB at a time."""
    path = directory / "mmap-copy"
    chunk = bytes(i % 251 for i in range(MIB))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.posix_fallocate(fd, 0, total)
        with mmap.mmap(fd, total) as mapped:
            started = time.perf_counter()
            for position in range(0, total, MIB):
                mapped[position : position + MIB] = chunk
            return time.perf_counter() - started
    finally:
        os.close(fd)
        path.unlink()


def fdatasync_rate(directory: Path, duration_s: float) -> float:
    """Syncs per second of a 4 KiB pwrite + fdatasync loop, appending into a preallocated
    file as the commit log does."""
    path = directory / "fsync-rate"
    page = bytes(4096)
    size = 256 * MIB
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.posix_fallocate(fd, 0, size)
        count = 0
        started = time.perf_counter()
        deadline = started + duration_s
        while time.perf_counter() < deadline:
            os.pwrite(fd, page, count * 4096 % size)
            os.fdatasync(fd)
            count += 1
        return count / (time.perf_counter() - started)
    finally:
        os.close(fd)
        path.unlink()


def measure_limits(when: str, root: Path, total: int, fsync_s: float) -> MachineLimits:
    total = max(MIB, -(-total // MIB) * MIB)
    directory = Path(tempfile.mkdtemp(prefix="store_bench-limits-", dir=root))
    try:
        write_s, sync_s = sequential_write(directory, total)
        os.sync()
        copy_s = mmap_copy(directory, total)
        os.sync()
        rate = fdatasync_rate(directory, fsync_s)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return MachineLimits(
        when=when,
        bytes=total,
        seq_write_mb_per_s=total / (write_s + sync_s) / MB,
        seq_write_only_s=write_s,
        seq_fdatasync_s=sync_s,
        mmap_copy_mb_per_s=total / copy_s / MB,
        fdatasync_per_s=rate,
    )


# -- targets ----------------------------------------------------------------------------


def find(
    results: Iterable[AppendResult], body_size: int, batch_size: int, flush: FlushDiskType
) -> AppendResult | None:
    for result in results:
        key = (result.body_size, result.batch_size, result.flush)
        if key == (body_size, batch_size, flush.value):
            return result
    return None


def throughput_target(results: list[AppendResult], body_size: int, goal: int) -> Target:
    main, big = find(results, body_size, 32, ASYNC), find(results, body_size, 128, ASYNC)
    label = "128 B" if body_size == 128 else "1 KiB"
    if main is None:
        return Target(f">= {goal:,} msgs/s {label} batched ASYNC", False, "not run")
    detail = f"batch 32: {main.msgs_per_s:,.0f} msgs/s"
    if big is not None:
        detail += f" (batch 128: {big.msgs_per_s:,.0f})"
    return Target(f">= {goal:,} msgs/s {label} batched ASYNC", main.msgs_per_s >= goal, detail)


def sync_target(results: list[AppendResult]) -> Target:
    ratios = []
    for body_size, label in ((128, "128 B"), (1024, "1 KiB")):
        sync, asynchronous = find(results, body_size, 32, SYNC), find(results, body_size, 32, ASYNC)
        if sync is not None and asynchronous is not None:
            ratios.append((label, sync.msgs_per_s / asynchronous.msgs_per_s))
    passed = bool(ratios) and all(r >= SYNC_VS_ASYNC_MIN for _, r in ratios)
    detail = ", ".join(f"{label}: {ratio:.0%}" for label, ratio in ratios)
    return Target("SYNC >= 80 % of ASYNC (batch 32)", passed, f"SYNC/ASYNC {detail}")


def dispatch_target(results: list[AppendResult]) -> Target:
    kept = [r for r in results if r.kept_up]
    worst = max(results, key=lambda r: r.drain_s)
    detail = (
        f"kept up in {len(kept)} of {len(results)} runs (drain < {DRAIN_LIMIT_S:g} s and max "
        f"lag < {MAX_LAG_LIMIT_S:g} s of appends); slowest drain {worst.drain_s:.2f} s "
        f"({worst.name})"
    )
    return Target("dispatch at least as fast as append", len(kept) == len(results), detail)


def memory_summary(results: list[AppendResult]) -> dict[str, Any]:
    largest = max(results, key=lambda r: r.stored_bytes)
    rss = largest.rss_anon_kib
    return {
        "run": largest.name,
        "stored_bytes": largest.stored_bytes,
        "rss_anon_kib": rss,
        "growth_kib": rss["end"] - rss["start"],
    }


def memory_target(memory: dict[str, Any]) -> Target:
    growth_mib = memory["growth_kib"] / 1024
    detail = (
        f"RssAnon {memory['rss_anon_kib']['start'] / 1024:,.0f} -> "
        f"{memory['rss_anon_kib']['middle'] / 1024:,.0f} -> "
        f"{memory['rss_anon_kib']['end'] / 1024:,.0f} MiB while the log grew by "
        f"{memory['stored_bytes'] / MB:,.0f} MB ({memory['run']})"
    )
    return Target(
        f"memory flat (growth < {MEMORY_FLAT_MIB} MiB)", growth_mib < MEMORY_FLAT_MIB, detail
    )


def evaluate(report: Report) -> None:
    results = report.appends
    if report.limits:
        best = max(limits.seq_write_mb_per_s for limits in report.limits)
        for result in results:
            result.ratio_to_seq_write = result.stored_mb_per_s / best
    report.memory = memory_summary(results)
    report.targets = [
        throughput_target(results, 128, TARGET_128_MSGS_S),
        throughput_target(results, 1024, TARGET_1K_MSGS_S),
        sync_target(results),
        dispatch_target(results),
        memory_target(report.memory),
    ]


# -- output -----------------------------------------------------------------------------

COLUMNS = (
    "Scenario",
    "msgs",
    "tasks",
    "msgs/s",
    "payload MB/s",
    "stored MB/s",
    "vs seq write",
    "syncs/s",
    "max lag MB (s)",
    "final lag MB",
    "drain s",
    "visible msgs/s",
    "kept up",
    "cpu",
    "load",
)


def append_row(r: AppendResult) -> list[str]:
    return [
        r.name,
        f"{r.messages:,}",
        str(r.concurrency),
        f"{r.msgs_per_s:,.0f}",
        f"{r.payload_mb_per_s:,.1f}",
        f"{r.stored_mb_per_s:,.1f}",
        f"{r.ratio_to_seq_write:.2f}",
        f"{r.syncs_per_s:,.0f}",
        f"{r.max_lag_bytes / MB:,.1f} ({r.max_lag_s:.2f})",
        f"{r.final_lag_bytes / MB:,.1f}",
        f"{r.drain_s:.2f}",
        f"{r.end_to_end_msgs_per_s:,.0f}",
        "yes" if r.kept_up else "NO",
        f"{r.cpu_per_wall:.2f}",
        f"{r.load_average_1m:.1f}",
    ]


def read_row(read: ReadResult) -> list[str]:
    name = f"CQ read ({read.source}, {READ_BATCH}/get)"
    row = [name, f"{read.messages:,}", "1", f"{read.msgs_per_s:,.0f}"]
    row += [f"{read.payload_mb_per_s:,.1f}", f"{read.stored_mb_per_s:,.1f}"]
    return row + ["-"] * (len(COLUMNS) - len(row))


def header_lines(report: Report) -> list[str]:
    m = report.machine
    fs = m["filesystem"]
    return [
        f"store_bench {report.started}  command: {report.command}",
        f"{m['cpu_model']}, {m['nproc']} CPUs, {m['ram_gib']} GiB RAM, {m['python']}, "
        f"{m['event_loop']}, Linux {m['kernel']}",
        f"work dir {m['work_dir']} on {fs['device']} ({fs['type']}, {fs['mount_point']}), "
        f"git {describe_git(m['git'])}",
    ]


def footer_lines(report: Report) -> list[str]:
    lines = []
    for lim in report.limits:
        lines.append(
            f"Machine limits {lim.when} ({lim.bytes / MB:,.0f} MB): os.write 1 MiB + fdatasync "
            f"{lim.seq_write_mb_per_s:,.0f} MB/s (write {lim.seq_write_only_s:.2f} s, sync "
            f"{lim.seq_fdatasync_s:.2f} s); memcpy into mmap {lim.mmap_copy_mb_per_s:,.0f} "
            f"MB/s; 4 KiB pwrite + fdatasync {lim.fdatasync_per_s:,.0f}/s"
        )
    read = report.read
    if read is not None and read.messages != read.expected:
        lines.append(f"CQ read found {read.messages:,} messages, expected {read.expected:,}")
    for target in report.targets:
        lines.append(f"[{'PASS' if target.passed else 'FAIL'}] {target.name}: {target.detail}")
    failed = sum(r.failed_puts for r in report.appends)
    loads = [report.machine.get(f"load_average_at_{w}", ["?"])[0] for w in ("start", "end")]
    lines.append(
        f"Failed puts: {failed}. Total time {report.elapsed_s:.0f} s. "
        f"Load average (1 min) at start {loads[0]}, at end {loads[1]}."
    )
    return lines


def print_report(report: Report, console: Console) -> None:
    for line in header_lines(report):
        console.print(line, highlight=False)
    table = Table(
        title="OrbitMQ storage engine (MB = 10^6 bytes)",
        caption="vs seq write = stored MB/s / the better sequential-write MB/s (limits below); "
        "max lag (s) = the lag in seconds of appending at the run's rate; cpu = this process's "
        "CPU s per wall s; load = 1-min load average after the run",
    )
    for i, column in enumerate(COLUMNS):
        table.add_column(column, justify="left" if i == 0 else "right", no_wrap=True)
    for result in report.appends:
        table.add_row(*append_row(result))
    if report.read is not None:
        table.add_section()
        table.add_row(*read_row(report.read))
    console.print(table)
    for line in footer_lines(report):
        console.print(line, highlight=False, markup=False)


def markdown(report: Report) -> str:
    """The same results as Markdown, for docs/benchmarks.md."""
    rows = [append_row(r) for r in report.appends]
    if report.read is not None:
        rows.append(read_row(report.read))
    lines = [f"| {' | '.join(COLUMNS)} |", "|" + "---|" * len(COLUMNS)]
    lines += [f"| {' | '.join(row)} |" for row in rows]
    lines += ["", *(f"- {line}" for line in footer_lines(report))]
    return "\n".join(["\n".join(f"    {h}" for h in header_lines(report)), "", *lines, ""])


def write_json(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(report), indent=2) + "\n")


# -- main -------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run for smoke testing")
    parser.add_argument(
        "--messages",
        type=int,
        help="messages of each batched 128 B run (default 1,000,000; 100,000 with --quick)",
    )
    parser.add_argument("--json", type=Path, help="where to write the JSON results")
    parser.add_argument("--markdown", type=Path, help="also write the results as Markdown")
    parser.add_argument("--dir", help="work directory (default: a temp dir on the repo's disk)")
    parser.add_argument(
        "--warm-maped-file",
        action="store_true",
        help="stores with warmMapedFileEnable (files get every block when created)",
    )
    return parser.parse_args(argv)


def run(args: argparse.Namespace, progress: Console) -> Report:
    started = time.perf_counter()
    root = pick_work_root(args.dir)
    messages = args.messages or (100_000 if args.quick else 1_000_000)
    report = Report(
        command=" ".join(["python", *sys.argv]),
        started=dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        machine=machine_info(root),
    )
    pairs = plan(messages, args.warm_maped_file)
    fsync_s = 0.5 if args.quick else 2.0
    progress.log("machine limits")
    largest = max(probe_stored_bytes(pair[0], root) for pair in pairs)
    report.limits.append(measure_limits("before", root, largest, fsync_s))
    for pair in pairs:
        results, read = run_pair(pair, root, progress)
        report.appends += results
        report.read = report.read or read
    progress.log("machine limits")
    report.limits.append(measure_limits("after", root, largest, fsync_s))
    report.machine["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    evaluate(report)
    report.elapsed_s = time.perf_counter() - started
    return report


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console(width=None if sys.stdout.isatty() else 230)
    report = run(args, Console(stderr=True, log_path=False))
    print_report(report, console)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    json_path = args.json or RESULTS_DIR / f"store_bench-{stamp}.json"
    write_json(report, json_path)
    if args.markdown:
        args.markdown.write_text(markdown(report))
    console.print(f"JSON: {json_path}", highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
