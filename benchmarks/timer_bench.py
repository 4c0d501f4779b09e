"""Timer messages: memory of pending timers and lateness of due ones, through the store.

(a) ``--pending N`` timers spread uniformly over 3 days are put into a MessageStore (the
broker's put path: intake into rmq_sys_wheel_timer) and filed into the wheel by a
TimerMessageStore; the process's RSS (VmRSS) is read before the first put and after the
last timer is filed (pages of the mapped store files released, as the broker's idle release
does), and the intake rate (puts + filing) is reported.

(a') ``--broker-pending N``: the same through a real ``orbitmq start`` process (name server
and broker) and a real producer (64 sends in flight): the broker process's RSS before the
sends and after them, each read after ``--idle`` seconds without puts (the broker drops its
mapped files' pages from its resident set after 10 s idle, as it does in service).

(b) ``--rate R`` timers per second fall due for ``--seconds S`` seconds: all are put first
(due from 2 s after the puts end), then the timer thread runs; lateness of each is its
delivered copy's store timestamp minus its TIMER_OUT_MS.

Store and timer store run in this process, without the network: the numbers are the
broker's store, not its remoting. One core.

    .venv/bin/python benchmarks/timer_bench.py [--pending N] [--broker-pending N] [--idle S]
        [--rate R] [--seconds S]
        [--dir PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orbitmq.client import Producer
from orbitmq.common import Message, MessageExtBrokerInner, decode_message
from orbitmq.common import message_const as mc
from orbitmq.common.topic import RMQ_SYS_WHEEL_TIMER_TOPIC
from orbitmq.store import GetMessageStatus, MessageStore, MessageStoreConfig, TimerMessageStore

TOPIC = "TimerBench"
THREE_DAYS_MS = 3 * 24 * 3600 * 1000


def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def timer_message(body: bytes, deliver_ms: int, queue_id: int) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(
        topic=TOPIC,
        body=body,
        queue_id=queue_id,
        properties={mc.PROPERTY_TIMER_DELIVER_MS: str(deliver_ms), mc.PROPERTY_TAGS: "T"},
        born_host=("127.0.0.1", 1),
        store_host=("127.0.0.1", 10911),
    )


def open_store(root: Path) -> tuple[MessageStore, TimerMessageStore]:
    config = MessageStoreConfig(store_path_root_dir=str(root))
    store = MessageStore(config)
    store.load()
    store.start()
    timers = TimerMessageStore(store, config, clock=store.clock)
    timers.load()
    return store, timers


def bench_pending(root: Path, count: int) -> dict[str, float]:
    store, timers = open_store(root)
    body = b"x" * 100
    store.release_mapped_pages()
    before = rss_bytes()
    start = time.perf_counter()
    base = now_ms() + 60_000
    rng = random.Random(1)
    for i in range(count):
        due = base + rng.randrange(THREE_DAYS_MS - 120_000)
        result = store.put_message(timer_message(body, due, i % 8))
        assert result.is_ok, result.status
    put_s = time.perf_counter() - start
    store.wait_for_dispatch(600)
    while not timers.enqueue(now_ms()):
        pass
    total_s = time.perf_counter() - start
    filed = timers.curr_queue_offset
    timers.flush()
    store.release_mapped_pages()
    after = rss_bytes()
    timers.shutdown()
    store.shutdown()
    return {
        "pending": filed,
        "rss_before_mb": before / 2**20,
        "rss_after_mb": after / 2**20,
        "rss_growth_mb": (after - before) / 2**20,
        "put_per_s": count / put_s,
        "intake_per_s": count / total_s,
    }


READY = re.compile(r"OrbitMQ ready: name server (\S+), broker (\S+)")


def process_rss_bytes(pid: int, field: str = "VmRSS") -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


async def send_timers(namesrv: str, count: int, concurrency: int) -> float:
    """Send ``count`` timers spread over 3 days through a real producer, ``concurrency``
    sends in flight; seconds taken."""
    rng = random.Random(2)
    base = now_ms() + 120_000
    left = count
    async with Producer("timer-bench", namesrv_addr=namesrv) as producer:

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                msg = Message(TOPIC, b"x" * 100)
                msg.deliver_time_ms = base + rng.randrange(THREE_DAYS_MS - 240_000)
                await producer.send(msg)

        await producer.send(Message(TOPIC, b"warm-up"))
        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - start


def bench_broker_pending(root: Path, count: int, idle_s: float) -> dict[str, float]:
    """(a) through a real `orbitmq start` process: its RSS before the sends and after them,
    once idle for ``idle_s`` (the broker drops mapped pages after 10 s without puts)."""
    root.mkdir(parents=True)
    out = (root / "out").open("w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "orbitmq.cli", "start", "--data-dir", str(root / "data"),
         "--namesrv-port", "0", "--listen-port", "0"],
        stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        match = None
        for _ in range(300):
            out.seek(0)
            match = next(filter(None, map(READY.search, out.read().splitlines())), None)
            if match:
                break
            time.sleep(0.05)
        assert match, "the broker did not start"
        time.sleep(idle_s)
        before = process_rss_bytes(process.pid)
        anon_before = process_rss_bytes(process.pid, "RssAnon")
        send_s = asyncio.run(send_timers(match.group(1), count, 64))
        time.sleep(idle_s)
        after = process_rss_bytes(process.pid)
        anon_after = process_rss_bytes(process.pid, "RssAnon")
    finally:
        process.terminate()
        process.wait(60)
    return {
        "pending": count,
        "broker_rss_before_mb": before / 2**20,
        "broker_rss_after_mb": after / 2**20,
        "broker_rss_growth_mb": (after - before) / 2**20,
        "broker_anon_growth_mb": (anon_after - anon_before) / 2**20,
        "sends_per_s": count / send_s,
    }


def bench_due(root: Path, rate: int, seconds: int) -> dict[str, float]:
    store, timers = open_store(root)
    count = rate * seconds
    body = b"y" * 100
    first_due = None
    dues: list[int] = []
    for i in range(count):
        dues.append(i * 1000 // rate)
    begin = now_ms() + 2000 + count * 1000 // 10_000  # after the puts end
    for i, offset in enumerate(dues):
        due = begin + offset
        first_due = first_due or due
        assert store.put_message(timer_message(body, due, i % 8)).is_ok
    store.wait_for_dispatch(600)
    assert now_ms() < begin, "puts took longer than planned: lower --rate or --seconds"
    timers.start()
    deadline = time.monotonic() + seconds + 30
    while timers.delivered < count and time.monotonic() < deadline:
        time.sleep(0.2)
    store.wait_for_dispatch(60)
    late: list[int] = []
    for queue_id in range(8):
        offset = 0
        while True:
            got = store.get_message("bench", TOPIC, queue_id, offset, 32)
            if got.status is not GetMessageStatus.FOUND:
                break
            for record in got.message_buffers:
                message = decode_message(record)
                late.append(
                    message.store_timestamp - int(message.properties[mc.PROPERTY_TIMER_OUT_MS])
                )
            offset = got.next_begin_offset
    timers.shutdown()
    store.shutdown()
    late.sort()
    return {
        "due": count,
        "delivered": len(late),
        "late_min_ms": late[0],
        "late_p50_ms": statistics.median(late),
        "late_p99_ms": late[int(len(late) * 0.99) - 1],
        "late_max_ms": late[-1],
        "timer_queue": store.get_max_offset_in_queue(RMQ_SYS_WHEEL_TIMER_TOPIC, 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=1_000_000)
    parser.add_argument("--broker-pending", type=int, default=0, help="(a) via `orbitmq start`")
    parser.add_argument("--idle", type=float, default=15.0, help="seconds idle before RSS")
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="timer-bench-", dir=args.dir))
    try:
        results: dict[str, dict[str, float]] = {}
        if args.pending:
            results["pending"] = bench_pending(base / "pending", args.pending)
        if args.broker_pending:
            results["broker"] = bench_broker_pending(
                base / "broker", args.broker_pending, args.idle
            )
        if args.rate and args.seconds:
            results["due"] = bench_due(base / "due", args.rate, args.seconds)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"{'measure':<24} value")
    for part, values in results.items():
        for key, value in values.items():
            print(f"{part + '.' + key:<24} {value:,.1f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
