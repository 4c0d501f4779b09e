"""CPU cost of the broker's traffic counters on the send and pull paths (BrokerStatsManager
and StoreStatsService), per request and per message.

Each round runs what the send processor adds around a put (a clock read before it, then its
hook: the put's time and outcome, the topic's messages and bytes) or what the pull processor
adds around a read, over 100 topics, and subtracts a round that only walks the same keys.
Times are CPU seconds of this process (``time.process_time``).
Prints one table; ``--json`` writes the numbers.

    .venv/bin/python benchmarks/broker_stats_cost.py [--requests N] [--repeat R] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from orbitmq.broker.broker_stats_manager import BrokerStatsManager

# The processors' own hooks, measured as they run (private to their modules).
from orbitmq.broker.pull_message_processor import _count_get as count_get
from orbitmq.broker.send_message_processor import _count_put as count_put
from orbitmq.broker.store_stats_service import StoreStatsService
from orbitmq.protocol.header import PullMessageRequestHeader
from orbitmq.store import (
    AppendMessageResult,
    AppendMessageStatus,
    GetMessageResult,
    GetMessageStatus,
    PutMessageResult,
    PutMessageStatus,
)

TOPICS = [f"BenchTopic{i}" for i in range(100)]
GROUP = "bench_group"


def _cpu_ns(work: Callable[[], None], requests: int) -> float:
    """CPU nanoseconds per request of ``work`` (which runs ``requests`` of them)."""
    started = time.process_time()
    work()
    return (time.process_time() - started) / requests * 1e9


def _put_result(msg_num: int) -> PutMessageResult:
    append = AppendMessageResult(AppendMessageStatus.PUT_OK, wrote_bytes=200 * msg_num)
    append.msg_num = msg_num
    return PutMessageResult(PutMessageStatus.PUT_OK, append)


def measure_once(requests: int) -> dict[str, float]:
    broker_stats = BrokerStatsManager("DefaultCluster")
    stats = (broker_stats, StoreStatsService(broker_stats))
    keys = [TOPICS[i % len(TOPICS)] for i in range(requests)]
    pull_headers = [
        PullMessageRequestHeader(
            consumer_group=GROUP,
            topic=topic,
            queue_id=0,
            queue_offset=0,
            max_msg_nums=32,
            sys_flag=0,
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription="*",
            sub_version=0,
        )
        for topic in TOPICS
    ]
    found = GetMessageResult(
        GetMessageStatus.FOUND,
        message_buffers=[memoryview(b"x")] * 32,
        buffer_total_size=32 * 200,
    )
    monotonic_ns = time.monotonic_ns

    def baseline() -> None:
        for topic in keys:
            _ = topic

    # What the processors run per request: a clock read before the store, then the hook.
    def sends(msg_num: int) -> Callable[[], None]:
        result = _put_result(msg_num)

        def run() -> None:
            for topic in keys:
                began = monotonic_ns()
                count_put(stats, topic, result, began)

        return run

    def pulls() -> None:
        for i in range(requests):
            began = monotonic_ns()
            count_get(stats, pull_headers[i % len(pull_headers)], found, began)

    base = _cpu_ns(baseline, requests)
    single = _cpu_ns(sends(1), requests) - base
    batch = _cpu_ns(sends(32), requests) - base
    pull = _cpu_ns(pulls, requests) - base
    return {
        "send_ns_per_request": single,
        "send_ns_per_message_single": single,
        "send_ns_per_message_batch32": batch / 32,
        "pull_ns_per_request": pull,
        "pull_ns_per_message_32": pull / 32,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runs = [measure_once(args.requests) for _ in range(args.repeat)]
    medians = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    table = Table(title=f"Broker stats counters: CPU ns (median of {args.repeat} runs)")
    table.add_column("path")
    table.add_column("ns", justify="right")
    for key, value in medians.items():
        table.add_row(key, f"{value:.0f}")
    Console().print(table)
    if args.json is not None:
        args.json.write_text(json.dumps({"runs": runs, "median": medians}, indent=2))


if __name__ == "__main__":
    main()
