"""Scanned messages per second of a filtered read: a store holds N messages of 1 KiB with a
few properties; reads go through ``MessageStore.get_message`` with the broker's filters, as
a pull does, from the first offset to the last, 32 messages a read at most.

Rows: no filter (every message taken in runs), a TAG filter, and SQL92 filters matching
about 10 % of the messages (a numeric comparison, an IN, a combination with a string test),
plus the cost of the expression alone on a ready dict, and the same SQL92 read through a
real broker: PULL_MESSAGE requests over a socket (the subscription in each pull, as the lite
pull consumer sends it) to a BrokerController with enablePropertyFilter, client and broker in
this one process. Times are CPU seconds of this process (``time.process_time``): one core.
Prints one table; ``--json`` writes the numbers.

    .venv/bin/python benchmarks/sql_filter_bench.py [--messages N] [--repeat R] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from orbitmq.broker import BrokerConfig, BrokerController
from orbitmq.common import Message, MessageExtBatch, decode_messages, encode_batch_messages
from orbitmq.filter import (
    Sql92MessageFilter,
    TagMessageFilter,
    build_subscription_data,
    parse_sql92,
)
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode, TopicConfig
from orbitmq.protocol.header import PullMessageRequestHeader
from orbitmq.protocol.pull_sys_flag import FLAG_SUBSCRIPTION
from orbitmq.remoting import RemotingClient
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
    put_all(store, messages)
    while store.reput_message_service.do_reput():
        pass
    return store


def put_all(store: MessageStore, messages: int) -> None:
    for start in range(0, messages, BATCH):
        body = encode_batch_messages(
            [Message(TOPIC, BODY, 0, properties(i)) for i in range(start, start + BATCH)]
        )
        store.put_message(MessageExtBatch(topic=TOPIC, queue_id=0, body=body, born_host=BORN_HOST))


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


async def through_broker(messages: int, expression: str) -> dict[str, object]:
    """Pull the whole queue with ``expression`` from a real broker over a socket."""
    with tempfile.TemporaryDirectory(prefix="sqlbench-broker-") as root:
        config = BrokerConfig(
            broker_name="bench",
            broker_ip1="127.0.0.1",
            bind_address="127.0.0.1",
            listen_port=0,
            enable_property_filter=True,
        )
        broker = BrokerController(config, MessageStoreConfig(store_path_root_dir=root))
        await broker.start()
        client = RemotingClient()
        try:
            broker.topic_config_manager.update_topic_config(
                TopicConfig(topic_name=TOPIC, read_queue_nums=1, write_queue_nums=1)
            )
            store = broker.message_store
            await asyncio.to_thread(put_all, store, messages)
            wait = store.reput_message_service.wait_for_dispatch
            assert await asyncio.to_thread(wait, store.commit_log.max_offset, 120)
            return await _pull_all(client, broker.address, expression, messages)
        finally:
            await client.close()
            await broker.stop()


async def _pull_all(
    client: RemotingClient, addr: str, expression: str, messages: int
) -> dict[str, object]:
    offset, matched = 0, 0
    started, started_wall = time.process_time(), time.perf_counter()
    while offset < messages:
        header = PullMessageRequestHeader(
            consumer_group="bench-sql",
            topic=TOPIC,
            queue_id=0,
            queue_offset=offset,
            max_msg_nums=32,
            sys_flag=FLAG_SUBSCRIPTION,
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription=expression,
            sub_version=0,
            expression_type="SQL92",
        )
        request = RemotingCommand.create_request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
        response = await client.invoke(addr, request, 10.0)
        if response.code == ResponseCode.SUCCESS:
            matched += len(decode_messages(response.body or b"", read_body=False))
        elif response.code != ResponseCode.PULL_RETRY_IMMEDIATELY:
            raise RuntimeError(f"pull answered {response.code}: {response.remark}")
        offset = int(response.ext_fields["nextBeginOffset"])
    seconds, wall = time.process_time() - started, time.perf_counter() - started_wall
    return {
        "read": f"broker pull, sql: {expression}",
        "scanned": offset,
        "matched": matched,
        "cpu_s": round(seconds, 3),
        "scanned_per_s": round(offset / seconds),
        "wall_scanned_per_s": round(offset / wall),
    }


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
    rows.append(asyncio.run(through_broker(messages, SQL_FILTERS["sql: a < 10"])))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = measure(args.messages, args.repeat)
    table = Table(title=f"Filtered reads of {args.messages} messages of 1 KiB (one core)")
    for column in ("read", "scanned", "matched", "CPU s", "scanned/s", "wall scanned/s", "µs/eval"):
        table.add_column(column, justify="left" if column == "read" else "right")
    for row in rows:
        table.add_row(
            str(row["read"]),
            str(row.get("scanned", "")),
            str(row.get("matched", "")),
            str(row.get("cpu_s", "")),
            f"{row['scanned_per_s']:,}" if "scanned_per_s" in row else "",
            f"{row['wall_scanned_per_s']:,}" if "wall_scanned_per_s" in row else "",
            f"{row['us_per_eval']:.2f}" if "us_per_eval" in row else "",
        )
    Console(width=120).print(table)
    if args.json:
        machine = {"python": platform.python_version(), "machine": platform.machine()}
        args.json.write_text(json.dumps({"machine": machine, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
