"""What message trace (R41) costs a producer's send.

Trace off and on, interleaved so that machine noise hits both:

* ``hooks``: the send path's own part, without a broker: SendMessageTraceHook's before and
  after around a canned answer (one record built and queued); and ``batching``, the
  dispatcher's later encoding of the records into trace messages (its send a no-op here),
  which runs on the same event loop but off the send. CPU per send.
* ``e2e``: sequential ``Producer.send`` of 1 KiB messages to a broker of a ThreadedCluster
  (another thread of this process, loopback), in alternating blocks with the trace hook off
  and on (one producer, one connection), trace records going to RMQ_SYS_TRACE_TOPIC on the
  same broker. Wall time and CPU of the whole process per send, so the trace producer's
  sends and the broker's storing and indexing of the trace messages count too.

    PYTHONPATH=src .venv/bin/python benchmarks/trace_cost_bench.py [--sends N] [--rounds R]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from orbitmq.client import Producer, ProducerConfig, SendContext, SendResult, SendStatus
from orbitmq.client.trace import AsyncTraceDispatcher, SendMessageTraceHook
from orbitmq.common import SYSTEM_CLOCK, Message, MessageQueue
from orbitmq.testing import ThreadedCluster

TOPIC = "TraceBenchTopic"
BODY = b"x" * 1024


class NoSender:
    async def start(self) -> None:
        pass

    async def shutdown(self) -> None:
        pass

    async def send(self, msg: Message, *, timeout_s: float | None = None) -> object:
        return None


async def hooks_round(sends: int, trace: bool) -> tuple[float, float]:
    """CPU seconds per send of the hook path, and of the batching it causes later."""
    dispatcher = AsyncTraceDispatcher(NoSender(), queue_capacity=sends + 1)
    hook = SendMessageTraceHook(dispatcher, SYSTEM_CLOCK)
    hooks = [hook] if trace else []
    mq = MessageQueue(TOPIC, "broker-a", 0)
    result = SendResult(SendStatus.SEND_OK, "7F0000010000000000000000000000AA", mq, 1, "0" * 32)
    msg = Message(TOPIC, BODY, properties={"TAGS": "TagA", "KEYS": "k1"})
    began = time.process_time()
    for _ in range(sends):
        context = SendContext("bench-pg", msg, mq, "127.0.0.1:10911")
        for h in hooks:
            h.send_message_before(context)
        context.result = result
        for h in hooks:
            h.send_message_after(context)
    hooks = time.process_time()
    await dispatcher.flush()
    return (hooks - began) / sends, (time.process_time() - hooks) / sends


async def e2e_blocks(
    namesrv: str, sends: int, blocks: int
) -> dict[bool, list[tuple[float, float]]]:
    """(wall, CPU) seconds per send of sequential sends through a broker, in ``blocks``
    blocks of ``sends`` with trace off and as many with it on, alternating on one producer
    (same connection, same client instance) so that only the trace hook and its records'
    sending differ. An on block ends when its records are sent."""
    config = ProducerConfig(enable_trace=True)
    per_send: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    async with Producer("bench-pg", namesrv_addr=namesrv, config=config) as producer:
        dispatcher = producer.trace_dispatcher
        assert dispatcher is not None
        trace_hooks = list(producer.hooks)
        for _ in range(200):  # warm up: routes, connections, the trace topic's route
            await producer.send(Message(TOPIC, BODY))
        await dispatcher.flush()
        for block in range(2 * blocks):
            trace = block % 2 == 1
            producer.hooks[:] = trace_hooks if trace else []
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(sends):
                await producer.send(Message(TOPIC, BODY))
            await dispatcher.flush()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            per_send[trace].append((wall / sends, cpu / sends))
    return per_send


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=1000, help="sends per e2e block")
    parser.add_argument("--rounds", type=int, default=10, help="rounds and e2e block pairs")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    hooks: dict[bool, list[float]] = {False: [], True: []}
    batching: dict[bool, list[float]] = {False: [], True: []}
    with (
        tempfile.TemporaryDirectory() as root,
        ThreadedCluster(root, broker_settings={"trace_topic_enable": True}) as cluster,
    ):
        for _ in range(args.rounds):
            for trace in (False, True):
                h, b = asyncio.run(hooks_round(args.sends * 10, trace))
                hooks[trace].append(h)
                batching[trace].append(b)
        blocks = asyncio.run(e2e_blocks(cluster.namesrv_addr, args.sends, args.rounds))
    wall = {trace: [w for w, _ in blocks[trace]] for trace in (False, True)}
    cpu = {trace: [c for _, c in blocks[trace]] for trace in (False, True)}
    us = {
        name: {trace: statistics.median(values[trace]) * 1e6 for trace in (False, True)}
        for name, values in (
            ("hooks CPU", hooks),
            ("batching CPU", batching),
            ("e2e wall", wall),
            ("e2e CPU", cpu),
        )
    }
    table = Table(title=f"per send, median of {args.rounds} rounds / blocks of {args.sends} sends")
    for column in ("measure", "trace off (us)", "trace on (us)", "cost of trace (us)"):
        table.add_column(column, justify="right")
    for name, pair in us.items():
        table.add_row(
            name, f"{pair[False]:.2f}", f"{pair[True]:.2f}", f"{pair[True] - pair[False]:+.2f}"
        )
    Console().print(table)
    if args.json:
        args.json.write_text(
            json.dumps({k: {str(t): v for t, v in p.items()} for k, p in us.items()})
        )


if __name__ == "__main__":
    main()
