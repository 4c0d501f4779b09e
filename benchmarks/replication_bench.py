"""HA log shipping: how fast a slave catches up on a backlog, and how far it lags behind a
master sending at a steady rate.

    .venv/bin/python benchmarks/replication_bench.py [--backlog-mb 256] [--rate 2000]
        [--seconds 10] [--json PATH]

Run from the repository root. A master store with its HAService and a slave store with its
HAClient run in this process on loopback, each on its own temporary directory (both share
one GIL: a slave in its own process has its own). Phases:

1. catch-up: ``--backlog-mb`` of 1 KiB messages are put into the master, then the slave
   connects; the time until its commit log reaches the master's end gives MB/s, and the
   time until its consume queues are dispatched too;
2. steady: ``--rate`` 1 KiB messages per second for ``--seconds``; a watcher samples the
   slave's max offset every 0.5 ms, and a message's lag is the time from its put returning to
   the first sample at or past its end. p50, p99 and max.

Prints one table (phase, figure, value); writes JSON to ``benchmarks/results/`` (git-ignored)
or ``--json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from orbitmq.common.message import MessageExtBrokerInner
from orbitmq.store import HAClient, HAService, MessageStore, MessageStoreConfig
from orbitmq.store.message_store_config import BrokerRole

BODY = b"x" * 1024


def _store(root: Path, role: BrokerRole) -> MessageStore:
    config = MessageStoreConfig(
        store_path_root_dir=str(root),
        broker_role=role,
        mapped_file_size_commit_log=256 * 1024 * 1024,
        max_hash_slot_num=50_000,
        max_index_num=200_000,
        ha_listen_port=0,
    )
    store = MessageStore(config)
    store.load()
    store.start()
    return store


def _message(i: int) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(
        topic="ReplicationBench",
        body=BODY,
        queue_id=i % 8,
        born_timestamp=int(time.time() * 1000),
        born_host=("127.0.0.1", 50000),
    )


def _catch_up(master: MessageStore, slave: MessageStore, port: int, backlog: int) -> dict[str, Any]:
    i = 0
    while master.max_phy_offset < backlog:
        assert master.put_message(_message(i)).is_ok
        i += 1
    end = master.max_phy_offset
    client = HAClient(slave, f"127.0.0.1:{port}")
    started = time.perf_counter()
    client.start()
    while slave.max_phy_offset < end:
        time.sleep(0.001)
    copied_s = time.perf_counter() - started
    slave.wait_for_dispatch(600)
    dispatched_s = time.perf_counter() - started
    return {
        "client": client,
        "messages": i,
        "bytes": end,
        "copy_s": copied_s,
        "copy_mb_per_s": end / copied_s / 1e6,
        "dispatched_s": dispatched_s,
    }


def _steady(master: MessageStore, slave: MessageStore, rate: int, seconds: float) -> dict[str, Any]:
    samples: list[tuple[float, int]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            samples.append((time.perf_counter(), slave.max_phy_offset))
            time.sleep(0.0005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    puts: list[tuple[float, int]] = []
    count = int(rate * seconds)
    started = time.perf_counter()
    for i in range(count):
        due = started + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        result = master.put_message(_message(i))
        assert result.append_result is not None
        append = result.append_result
        puts.append((time.perf_counter(), append.wrote_offset + append.wrote_bytes))
    sent_s = time.perf_counter() - started
    end = master.max_phy_offset
    while slave.max_phy_offset < end:
        time.sleep(0.001)
    time.sleep(0.01)
    stop.set()
    watcher.join()
    lags_ms = []
    position = 0
    for put_at, offset in puts:
        while samples[position][1] < offset:
            position += 1
        lags_ms.append(max(0.0, samples[position][0] - put_at) * 1000)
    lags_ms.sort()
    return {
        "messages": count,
        "achieved_rate": count / sent_s,
        "lag_p50_ms": statistics.median(lags_ms),
        "lag_p99_ms": lags_ms[int(len(lags_ms) * 0.99) - 1],
        "lag_max_ms": lags_ms[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backlog-mb", type=int, default=256)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="replication-bench-") as tmp:
        master = _store(Path(tmp, "master"), BrokerRole.ASYNC_MASTER)
        service = HAService(master, "127.0.0.1")
        service.start()
        master.on_append = service.wakeup
        slave = _store(Path(tmp, "slave"), BrokerRole.SLAVE)
        try:
            catch_up = _catch_up(master, slave, service.port, args.backlog_mb * 1024 * 1024)
            steady = _steady(master, slave, args.rate, args.seconds)
            catch_up.pop("client").shutdown()
        finally:
            service.shutdown()
            slave.shutdown()
            master.shutdown()
    rows = [
        (
            "catch-up",
            "backlog (messages / MB)",
            f"{catch_up['messages']} / {catch_up['bytes'] / 1e6:.0f}",
        ),
        ("catch-up", "copied in (s)", f"{catch_up['copy_s']:.2f}"),
        ("catch-up", "copy rate (MB/s)", f"{catch_up['copy_mb_per_s']:.0f}"),
        ("catch-up", "copied and dispatched in (s)", f"{catch_up['dispatched_s']:.2f}"),
        (
            "steady",
            "messages / achieved rate (msg/s)",
            f"{steady['messages']} / {steady['achieved_rate']:.0f}",
        ),
        (
            "steady",
            "lag p50 / p99 / max (ms)",
            f"{steady['lag_p50_ms']:.2f} / {steady['lag_p99_ms']:.2f} / {steady['lag_max_ms']:.2f}",
        ),
    ]
    print(f"{'phase':<10} {'figure':<36} value")
    for phase, figure, value in rows:
        print(f"{phase:<10} {figure:<36} {value}")
    out = args.json or Path("benchmarks/results") / (
        f"replication-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {"args": vars(args) | {"json": str(args.json)}, "catch_up": catch_up, "steady": steady},
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
