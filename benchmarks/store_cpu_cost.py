"""CPU cost per message of the store's three hot paths, each measured alone.

Append (batches of 32) and single puts run without the background services; dispatch then
reads the appended log (runs of 32 records of one queue), dispatch singles the single puts'
log (the queue changes at every record, as a slave replays single sends to 4 queues). Times
are CPU seconds of this process (``time.process_time``), so other load on the machine moves
them less than wall time. Prints one table; ``--json`` writes the numbers.

    .venv/bin/python benchmarks/store_cpu_cost.py [--messages N] [--repeat R] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from orbitmq.common import (
    Message,
    MessageExtBatch,
    MessageExtBrokerInner,
    UniqueIdGenerator,
    encode_batch_messages,
)
from orbitmq.store import MessageStore, MessageStoreConfig

BODY = b"x" * 128
BATCH = 32
TOPIC = "BenchTopic"
BORN_HOST = ("10.0.0.1", 52000)


def _store(root: str) -> MessageStore:
    store = MessageStore(MessageStoreConfig(store_path_root_dir=root))
    store.load()
    return store


def _properties(ids: UniqueIdGenerator) -> dict[str, str]:
    return {"TAGS": "TagA", "UNIQ_KEY": ids.create(), "WAIT": "true"}


def _cpu_us_per_message(work: Callable[[], int]) -> float:
    started = time.process_time()
    count = work()
    return (time.process_time() - started) / count * 1e6


def measure_once(messages: int, root: str) -> dict[str, float]:
    """Microseconds of CPU per message for append, dispatch, single puts and their dispatch."""
    ids = UniqueIdGenerator()
    bodies = [
        encode_batch_messages([Message(TOPIC, BODY, 0, _properties(ids)) for _ in range(BATCH)])
        for _ in range(messages // BATCH)
    ]
    batched = _store(f"{root}/batched")

    def append() -> int:
        for i, body in enumerate(bodies):
            batched.put_message(
                MessageExtBatch(topic=TOPIC, queue_id=i % 4, body=body, born_host=BORN_HOST)
            )
        return len(bodies) * BATCH

    append_us = _cpu_us_per_message(append)
    dispatch_us = _cpu_us_per_message(batched.reput_message_service.do_reput)
    batched.shutdown()
    singles = _store(f"{root}/single")
    inner = [
        MessageExtBrokerInner(
            topic=TOPIC,
            body=BODY,
            queue_id=i % 4,
            properties=_properties(ids),
            born_host=BORN_HOST,
        )
        for i in range(messages // 4)
    ]

    def put_singles() -> int:
        for message in inner:
            singles.put_message(message)
        return len(inner)

    single_us = _cpu_us_per_message(put_singles)
    singles_dispatch_us = _cpu_us_per_message(singles.reput_message_service.do_reput)
    singles.shutdown()
    return {
        "append": append_us,
        "dispatch": dispatch_us,
        "single put": single_us,
        "dispatch singles": singles_dispatch_us,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runs = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parent.parent) as root:
            runs.append(measure_once(args.messages, root))
    table = Table(
        title=f"CPU µs per 128 B message ({args.messages:,} messages, {args.repeat} runs)"
    )
    for column in ("path", "median", "min", "max", "msgs per CPU second"):
        table.add_column(column, justify="right")
    summary = {}
    for path in runs[0]:
        values = [run[path] for run in runs]
        median = statistics.median(values)
        summary[path] = {"median_us": median, "runs_us": values}
        table.add_row(
            path,
            f"{median:.2f}",
            f"{min(values):.2f}",
            f"{max(values):.2f}",
            f"{1e6 / median:,.0f}",
        )
    Console().print(table)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
