"""What Prometheus metrics (metricsExporterType=PROM) cost the produce and consume paths.

Two measurements, both in CPU time of this process (``time.process_time``):

1. The hot-path work itself, per message: what the send path adds per stored message
   (``MessageCounters.record_in`` with a producer's usual properties, and the request's
   ``RpcLatencyRecorder.record`` with the loop clock read), and what the pull path adds per
   pulled message (``record_out`` and the request's latency record, shared by a pull of
   ``--batch`` messages), against the same code path with metrics off (the ``None`` checks).
2. End to end: one broker with metrics and one without, in this process (an
   ``InProcessCluster`` each); rounds alternate between them. A round sends ``--messages``
   messages one by one with OrbitMQ's producer, then pulls them back in batches of
   ``--batch`` (PULL_MESSAGE through the client API). The table gives the median CPU per
   message of each mode and the difference; client and broker share the process, so the
   difference is the metrics' share of everything a message costs here.

    .venv/bin/python benchmarks/metrics_cost.py [--rounds N] [--messages M] [--batch B]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from orbitmq.broker.metrics import MessageCounters
from orbitmq.client import Producer
from orbitmq.client.admin_client import AdminClient
from orbitmq.common import Message, MessageQueue
from orbitmq.common.metrics_exporter_type import MetricsExporterType
from orbitmq.protocol import RequestCode, ResponseCode
from orbitmq.protocol.header import PullMessageRequestHeader
from orbitmq.protocol.pull_sys_flag import FLAG_SUBSCRIPTION
from orbitmq.remoting import RpcLatencyRecorder, run
from orbitmq.testing import InProcessCluster

TOPIC = "MetricsBench"
#: What a RocketMQ producer puts in a message's properties, as the broker parses them.
PROPERTIES = {"UNIQ_KEY": "7F0000011F9C18B4AAC2", "WAIT": "true", "TAGS": "TagA", "KEYS": "k1"}
# As the server sees them: plain ints off the wire, the processors' enum members.
SEND_MESSAGE_V2, PULL_MESSAGE = int(RequestCode.SEND_MESSAGE_V2), int(RequestCode.PULL_MESSAGE)
SUCCESS = ResponseCode.SUCCESS


def per_call_ns(func: Callable[[], None], calls: int, rounds: int) -> float:
    """Median CPU ns per call of ``func`` over ``rounds`` rounds of ``calls`` calls."""
    samples = []
    for _ in range(rounds):
        start = time.process_time_ns()
        for _ in range(calls):
            func()
        samples.append((time.process_time_ns() - start) / calls)
    return statistics.median(samples)


async def hot_path_ns(batch: int, rounds: int) -> dict[str, float]:
    """The lines the send and pull paths run per request, with metrics on and off, on the
    loop the servers run on (uvloop when installed: its clock is the one read)."""
    admitted = asyncio.get_running_loop().time()

    def send_hook(counters: MessageCounters | None, rpc: RpcLatencyRecorder | None) -> None:
        # SendMessageProcessor.process_request, then ProcessorTable._serve.
        if counters is not None:
            counters.record_in(TOPIC, PROPERTIES, 1, 230)
        if rpc is not None:
            rpc.record(SEND_MESSAGE_V2, SUCCESS, admitted)

    def pull_hook(counters: MessageCounters | None, rpc: RpcLatencyRecorder | None) -> None:
        # PullMessageProcessor.process, then ProcessorTable._serve.
        if counters is not None:
            counters.record_out(TOPIC, "cg", 0, batch, batch * 230, 100)
        if rpc is not None:
            rpc.record(PULL_MESSAGE, SUCCESS, admitted)

    counters, rpc = MessageCounters(), RpcLatencyRecorder()
    cases: list[tuple[str, Callable[..., None], tuple[Any, Any], int]] = [
        ("produce", send_hook, (counters, rpc), 1),
        ("produce, message counts only", send_hook, (counters, None), 1),
        ("produce, rpc latency only", send_hook, (None, rpc), 1),
        (f"consume (pull of {batch})", pull_hook, (counters, rpc), batch),
    ]
    calls = 200_000
    result = {}
    # Interleaved: on, off, on, off ...; the median of each.
    for name, hook, on, per_message in cases:
        on_ns, off_ns = [], []
        for _ in range(rounds):
            on_ns.append(per_call_ns(lambda h=hook, a=on: h(*a), calls, 1) / per_message)
            off_ns.append(per_call_ns(lambda h=hook: h(None, None), calls, 1) / per_message)
        result[f"{name} on"] = statistics.median(on_ns)
        result[f"{name} off"] = statistics.median(off_ns)
        result[f"{name} added"] = result[f"{name} on"] - result[f"{name} off"]
    return result


async def one_round(cluster: InProcessCluster, messages: int, batch: int, seq: int) -> float:
    """CPU seconds to send ``messages`` and pull them back."""
    queue = MessageQueue(TOPIC, "broker-a", 0)
    addr = cluster.brokers[0].address
    async with (
        Producer("bench_pg", namesrv_addr=cluster.namesrv_addr) as producer,
        AdminClient(namesrv_addr=cluster.namesrv_addr) as admin,
    ):
        start_offset = await admin.api.get_max_offset(addr, queue, 3.0)
        await producer.send(Message(TOPIC, b"warm-up"), queue=queue)
        begin = time.process_time()
        for i in range(messages):
            await producer.send(Message(TOPIC, b"m%08d-%d" % (i, seq)), queue=queue)
        offset, got = start_offset + 1, 0
        while got < messages:
            header = PullMessageRequestHeader(
                consumer_group="bench_cg",
                topic=TOPIC,
                queue_id=0,
                queue_offset=offset,
                max_msg_nums=batch,
                sys_flag=FLAG_SUBSCRIPTION,
                commit_offset=0,
                suspend_timeout_millis=0,
                subscription="*",
                sub_version=0,
                expression_type="TAG",
            )
            result = await admin.api.pull_message(addr, header, None, 3.0)
            got += len(result.messages)
            offset = result.next_begin_offset
        return time.process_time() - begin


async def end_to_end(rounds: int, messages: int, batch: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as root:
        on_settings: dict[str, Any] = {
            "metrics_exporter_type": MetricsExporterType.PROM,
            "metrics_prom_exporter_port": 0,
        }
        async with (
            InProcessCluster(Path(root) / "on", broker_settings=on_settings) as on,
            InProcessCluster(Path(root) / "off") as off,
        ):
            samples: dict[str, list[float]] = {"on": [], "off": []}
            for seq in range(rounds):
                order = [("on", on), ("off", off)] if seq % 2 == 0 else [("off", off), ("on", on)]
                for name, cluster in order:
                    seconds = await one_round(cluster, messages, batch, seq)
                    samples[name].append(seconds / messages * 1e6)
    on_us, off_us = statistics.median(samples["on"]), statistics.median(samples["off"])
    return {
        "on us/msg": on_us,
        "off us/msg": off_us,
        "added us/msg": on_us - off_us,
        "on spread": [min(samples["on"]), max(samples["on"])],
        "off spread": [min(samples["off"]), max(samples["off"])],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    hot = run(hot_path_ns(args.batch, args.rounds))
    e2e = run(end_to_end(args.rounds, args.messages, args.batch))
    table = Table(title="Metrics cost per message (CPU, median of interleaved rounds)")
    table.add_column("measure")
    table.add_column("metrics on", justify="right")
    table.add_column("metrics off", justify="right")
    table.add_column("added", justify="right")
    for name in [key.removesuffix(" on") for key in hot if key.endswith(" on")]:
        table.add_row(
            f"hot path, {name}",
            f"{hot[f'{name} on']:.0f} ns",
            f"{hot[f'{name} off']:.0f} ns",
            f"{hot[f'{name} added']:.0f} ns",
        )
    table.add_row(
        f"send + pull end to end (batch {args.batch})",
        f"{e2e['on us/msg']:.1f} us",
        f"{e2e['off us/msg']:.1f} us",
        f"{e2e['added us/msg']:+.1f} us",
    )
    Console().print(table)
    print(
        f"end-to-end spread (min..max us/msg): on {e2e['on spread'][0]:.1f}..."
        f"{e2e['on spread'][1]:.1f}, off {e2e['off spread'][0]:.1f}..{e2e['off spread'][1]:.1f}"
    )
    if args.json:
        args.json.write_text(json.dumps({"hot_path_ns": hot, "end_to_end": e2e}, indent=2))


if __name__ == "__main__":
    main()
