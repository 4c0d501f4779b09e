"""gRPC produce against remoting produce, same run, same broker, same client count.

    .venv/bin/python benchmarks/grpc_bench.py [--clients 8] [--seconds 10] [--size 1024]
                                              [--official] [--json PATH]

Run from the repository root. One ``orbitmq start`` (a subprocess, as users run it) serves
both protocols. Each phase runs ``--clients`` concurrent senders for ``--seconds`` (after a
second of warm-up), each sending one ``--size``-byte message at a time and waiting for its
answer (a synchronous send, the client's round trip included), to a NORMAL topic of 8
queues:

* grpc: SendMessage through OrbitMQ's own typed stub (grpc.aio), one channel per sender;
* remoting: OrbitMQ's ``Producer.send`` (SEND_MESSAGE_V2), one producer per sender;
* grpc-official (``--official``): the official RocketMQ 5 Python client 5.1.2 (its own
  virtualenv, ``.venv-compat/python-5x``), ``--clients`` threads sharing one ``Producer``.

The drivers of the first two run in this process (uvloop); the broker's CPU per message
comes from ``/proc/<pid>/stat`` (utime + stime over the phase). One table; JSON goes to
``benchmarks/results/`` (git-ignored) or ``--json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc.aio
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # `tests` is importable from the repository root only
    sys.path.insert(0, str(REPO))

from orbitmq.client import ClientConfig, Producer  # noqa: E402
from orbitmq.common import Message  # noqa: E402
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode  # noqa: E402
from orbitmq.protocol.header import CreateTopicRequestHeader  # noqa: E402
from orbitmq.proxy import MessagingServiceStub  # noqa: E402
from orbitmq.proxy.v2 import definition_pb2 as d  # noqa: E402
from orbitmq.proxy.v2 import service_pb2 as pb  # noqa: E402
from orbitmq.remoting import RemotingClient, install_uvloop  # noqa: E402
from tests.compat.client_venv import (  # noqa: E402
    PYTHON_5X_IMPORT_CHECK,
    PYTHON_5X_REQUIREMENT,
    compat_venv,
)
from tests.support import start_orbitmq  # noqa: E402

RESULTS_DIR = REPO / "benchmarks" / "results"
OFFICIAL_DRIVER = REPO / "benchmarks" / "grpc_clients" / "python5_send_loop.py"
WARM_UP_S = 1.0
TOPIC = "GrpcBenchTopic"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of process ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


async def create_topic(broker: str) -> None:
    header = CreateTopicRequestHeader(
        topic=TOPIC,
        default_topic="TBW102",
        read_queue_nums=8,
        write_queue_nums=8,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        order=False,
    )
    fields = {**header.to_ext_fields(), "attributes": "+message.type=NORMAL"}
    client = RemotingClient(connect_timeout_s=2.0)
    try:
        request = RemotingCommand.create_request(RequestCode.UPDATE_AND_CREATE_TOPIC, fields)
        response = await client.invoke(broker, request, 5.0)
        assert response.code == ResponseCode.SUCCESS, response.remark
    finally:
        await client.close()


Sender = Callable[[], Awaitable[None]]


async def drive(senders: list[Sender], seconds: float) -> dict[str, Any]:
    """Run every sender in a loop; count sends and their latencies after the warm-up."""
    start = time.monotonic()
    measure_from, stop_at = start + WARM_UP_S, start + WARM_UP_S + seconds
    latencies: list[float] = []

    async def loop(send: Sender) -> None:
        while True:
            began = time.monotonic()
            if began >= stop_at:
                return
            await send()
            if began >= measure_from:
                latencies.append(time.monotonic() - began)

    await asyncio.gather(*(loop(send) for send in senders))
    latencies.sort()
    return {
        "messages": len(latencies),
        "msg_per_s": len(latencies) / seconds,
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
    }


async def grpc_phase(endpoint: str, clients: int, body: bytes, seconds: float) -> dict[str, Any]:
    channels = [grpc.aio.insecure_channel(endpoint) for _ in range(clients)]
    metadata = (("x-mq-client-id", f"bench@{os.getpid()}"), ("x-mq-language", "PYTHON"))

    def sender(stub: MessagingServiceStub) -> Sender:
        async def send() -> None:
            message = d.Message(topic=d.Resource(name=TOPIC), body=body)
            message.system_properties.message_id = uuid.uuid4().hex.upper()
            message.system_properties.message_type = d.NORMAL
            message.system_properties.tag = "bench"
            response = await stub.SendMessage(
                pb.SendMessageRequest(messages=[message]), metadata=metadata, timeout=10
            )
            assert response.status.code == d.OK, response.status

        return send

    try:
        return await drive([sender(MessagingServiceStub(c)) for c in channels], seconds)
    finally:
        for channel in channels:
            await channel.close(None)


async def remoting_phase(namesrv: str, clients: int, body: bytes, seconds: float) -> dict[str, Any]:
    producers = [
        Producer(
            "grpc-bench-pg",
            namesrv_addr=namesrv,
            client_config=ClientConfig(instance_name=f"bench-{i}"),
        )
        for i in range(clients)
    ]
    for producer in producers:
        await producer.start()

    def sender(producer: Producer) -> Sender:
        async def send() -> None:
            message = Message(TOPIC, body)
            message.tags = "bench"
            await producer.send(message)

        return send

    try:
        return await drive([sender(p) for p in producers], seconds)
    finally:
        for producer in producers:
            await producer.shutdown()


def official_phase(endpoint: str, clients: int, size: int, seconds: float) -> dict[str, Any]:
    python = compat_venv("python-5x", PYTHON_5X_REQUIREMENT, PYTHON_5X_IMPORT_CHECK)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    args = [endpoint, TOPIC, clients, size, WARM_UP_S, seconds]
    result = subprocess.run(
        [str(python), str(OFFICIAL_DRIVER), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=seconds + 120,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    line = json.loads(result.stdout.strip().splitlines()[-1])
    return dict(line)


def measured(pid: int, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    before = cpu_seconds(pid)
    result = run()
    cpu = cpu_seconds(pid) - before
    result["broker_cpu_us_per_msg"] = cpu / max(1, result["messages"]) * 1e6
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--official", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    install_uvloop()
    body = b"x" * args.size
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="grpc-bench-") as tmp:
        process, ready = start_orbitmq(Path(tmp) / "data", Path(tmp) / "orbitmq")
        try:
            namesrv, broker, endpoint = ready[1], ready[2], ready[7]
            asyncio.run(create_topic(broker))
            time.sleep(1.0)  # the broker registers the new topic with the name server
            phases: dict[str, Callable[[], dict[str, Any]]] = {
                "grpc": lambda: asyncio.run(grpc_phase(endpoint, args.clients, body, args.seconds)),
                "remoting": lambda: asyncio.run(
                    remoting_phase(namesrv, args.clients, body, args.seconds)
                ),
            }
            if args.official:
                phases["grpc-official"] = lambda: official_phase(
                    endpoint, args.clients, args.size, args.seconds
                )
            for name, run in phases.items():
                results[name] = measured(process.pid, run)
        finally:
            process.terminate()
            process.wait(timeout=30)
    report(args, results)


def report(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> None:
    remoting = results["remoting"]["msg_per_s"]
    table = Table(title=f"produce, {args.size} B, {args.clients} clients, {args.seconds:g} s")
    for column in ("driver", "msg/s", "vs remoting", "p50 ms", "p99 ms", "broker CPU µs/msg"):
        table.add_column(column, justify="left" if column == "driver" else "right")
    for name, r in results.items():
        table.add_row(
            name,
            f"{r['msg_per_s']:.0f}",
            f"{r['msg_per_s'] / remoting:.0%}",
            f"{r['p50_ms']:.2f}",
            f"{r['p99_ms']:.2f}",
            f"{r['broker_cpu_us_per_msg']:.0f}",
        )
    Console().print(table)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    path = args.json or RESULTS_DIR / f"grpc_bench-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"args": {k: str(v) for k, v in vars(args).items()}, "results": results}
    path.write_text(json.dumps(document, indent=2))
    print(f"JSON: {path}")


if __name__ == "__main__":
    main()
