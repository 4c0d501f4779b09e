"""What message trace (R41) costs a producer's send.

Two measurements, trace off and on, rounds interleaved so that machine noise hits both:

* ``hooks``: the send path's own part, without a broker: SendMessageTraceHook's before and
  after around a canned answer (one record built and queued), and the dispatcher's later
  encoding of the records into trace messages (its send is a no-op here). CPU per send.
* ``e2e``: sequential ``Producer.send`` of 1 KiB messages to a broker of a ThreadedCluster
  (another thread of this process, loopback), trace records going to RMQ_SYS_TRACE_TOPIC on
  the same broker. Wall time and CPU of the whole process per send, so the broker's storing of
  the trace messages counts too.

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


async def hooks_round(sends: int, trace: bool) -> float:
    """CPU seconds per send of the hook path (and the encoding it causes later)."""
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
    await dispatcher.flush()
    return (time.process_time() - began) / sends


async def e2e_round(namesrv: str, sends: int, trace: bool) -> tuple[float, float]:
    """(wall, CPU) seconds per send of sequential sends through a broker."""
    config = ProducerConfig(enable_trace=trace)
    async with Producer(f"bench-pg-{trace}", namesrv_addr=namesrv, config=config) as producer:
        for _ in range(200):  # warm up: routes, connections, the trace topic's route
            await producer.send(Message(TOPIC, BODY))
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(sends):
            await producer.send(Message(TOPIC, BODY))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        # The records' sends ride on the same loop: wait for them inside the measured cost.
        if producer.trace_dispatcher is not None:
            began_wall, began_cpu = time.perf_counter(), time.process_time()
            await producer.trace_dispatcher.flush()
            wall += time.perf_counter() - began_wall
            cpu += time.process_time() - began_cpu
    return wall / sends, cpu / sends


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    hooks: dict[bool, list[float]] = {False: [], True: []}
    wall: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    with (
        tempfile.TemporaryDirectory() as root,
        ThreadedCluster(root, broker_settings={"trace_topic_enable": True}) as cluster,
    ):
        for _ in range(args.rounds):
            for trace in (False, True):
                hooks[trace].append(asyncio.run(hooks_round(args.sends * 4, trace)))
                w, c = asyncio.run(e2e_round(cluster.namesrv_addr, args.sends, trace))
                wall[trace].append(w)
                cpu[trace].append(c)
    us = {
        name: {trace: statistics.median(values[trace]) * 1e6 for trace in (False, True)}
        for name, values in (("hooks CPU", hooks), ("e2e wall", wall), ("e2e CPU", cpu))
    }
    table = Table(title=f"per send, median of {args.rounds} rounds ({args.sends} sends e2e)")
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
