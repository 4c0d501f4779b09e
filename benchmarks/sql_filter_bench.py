"""Scanned messages per second of a filtered read: a store holds N messages of 1 KiB with a
few properties; reads go through ``MessageStore.get_message`` with the broker's filters, as
a pull does, from the first offset to the last, 32 messages a read at most.

Rows: no filter (every message taken in runs), a TAG filter, and SQL92 filters matching
about 10 % of the messages (a numeric comparison, an IN, a combination with a string test),
plus the cost of the expression alone on a ready dict. Times are CPU seconds of this one
process (``time.process_time``): one core. Prints one table; ``--json`` writes the numbers.

    .venv/bin/python benchmarks/sql_filter_bench.py [--messages N] [--repeat R] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from orbitmq.common import Message, MessageExtBatch, encode_batch_messages
from orbitmq.filter import (
    Sql92MessageFilter,
    TagMessageFilter,
    build_subscription_data,
    parse_sql92,
)
from orbitmq.store import GetMessageStatus, MessageFilter, MessageStore, MessageStoreConfig

TOPIC = "BenchSqlTopic"
BODY = b"x" * 1024
BATCH = 32
BORN_HOST = ("10.0.0.1", 52000)
SQL_FILTERS = {
    "sql: a < 10": "a < 10",
    "sql: region IN (..)": "region IN ('eu-1')",
    "sql: a BETWEEN AND STARTSWITH": "a BETWEEN 0 AND 19 AND region STARTSWITH 'eu'",
}


def properties(i: int) -> dict[str, str]:
    """a: 0..99 (a < 10 is 10 %); region: one of ten (eu-1 is 10 %; eu-* 20 %)."""
    regions = ["eu-1", "eu-2", "us-1", "us-2", "us-3", "ap-1", "ap-2", "ap-3", "sa-1", "af-1"]
    return {
        "TAGS": "TagA" if i % 10 == 0 else "TagB",
        "KEYS": f"order-{i}",
        "a": str(i % 100),
        "region": regions[(i // 100) % 10],
        "UNIQ_KEY": f"0A000001{i:024X}",
    }


def fill(root: str, messages: int) -> MessageStore:
    store = MessageStore(MessageStoreConfig(store_path_root_dir=root))
    store.load()
    for start in range(0, messages, BATCH):
        body = encode_batch_messages(
            [Message(TOPIC, BODY, 0, properties(i)) for i in range(start, start + BATCH)]
        )
        store.put_message(MessageExtBatch(topic=TOPIC, queue_id=0, body=body, born_host=BORN_HOST))
    while store.reput_message_service.do_reput():
        pass
    return store


def scan(store: MessageStore, message_filter: MessageFilter | None) -> tuple[int, int, float]:
    """Read the queue from 0 to its end: (scanned, matched, CPU seconds)."""
    offset, matched = 0, 0
    end = store.get_max_offset_in_queue(TOPIC, 0)
    started = time.process_time()
    while offset < end:
        result = store.get_message("g", TOPIC, 0, offset, 32, message_filter)
        if result.status is GetMessageStatus.FOUND:
            matched += len(result.message_buffers)
        offset = result.next_begin_offset
    return end, matched, time.process_time() - started


def evaluate_only(expression: str, rounds: int) -> float:
    """Microseconds per evaluation of the compiled expression on a ready dict."""
    compiled = parse_sql92(expression)
    samples = [properties(i) for i in range(1000)]
    started = time.process_time()
    for _ in range(rounds):
        for sample in samples:
            compiled.matches(sample)
    return (time.process_time() - started) / (rounds * len(samples)) * 1e6


def measure(messages: int, repeat: int) -> list[dict[str, object]]:
    filters: dict[str, MessageFilter | None] = {
        "no filter": None,
        "tag: TagA": TagMessageFilter(build_subscription_data(TOPIC, "TagA")),
    }
    for name, expression in SQL_FILTERS.items():
        filters[name] = Sql92MessageFilter(parse_sql92(expression))
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="sqlbench-") as root:
        store = fill(root, messages)
        try:
            for name, message_filter in filters.items():
                best = min((scan(store, message_filter) for _ in range(repeat)), key=lambda r: r[2])
                scanned, matched, seconds = best
                rows.append(
                    {
                        "read": name,
                        "scanned": scanned,
                        "matched": matched,
                        "cpu_s": round(seconds, 3),
                        "scanned_per_s": round(scanned / seconds),
                    }
                )
        finally:
            store.shutdown()
    for name, expression in SQL_FILTERS.items():
        rows.append(
            {"read": f"{name} (evaluate only)", "us_per_eval": evaluate_only(expression, 20)}
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = measure(args.messages, args.repeat)
    table = Table(title=f"Filtered reads of {args.messages} messages of 1 KiB (one core)")
    for column in ("read", "scanned", "matched", "CPU s", "scanned/s", "µs/eval"):
        table.add_column(column, justify="left" if column == "read" else "right")
    for row in rows:
        table.add_row(
            str(row["read"]),
            str(row.get("scanned", "")),
            str(row.get("matched", "")),
            str(row.get("cpu_s", "")),
            f"{row['scanned_per_s']:,}" if "scanned_per_s" in row else "",
            f"{row['us_per_eval']:.2f}" if "us_per_eval" in row else "",
        )
    Console().print(table)
    if args.json:
        machine = {"python": platform.python_version(), "machine": platform.machine()}
        args.json.write_text(json.dumps({"machine": machine, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
