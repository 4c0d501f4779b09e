"""What TLS costs on the remoting protocol: produce and consume with TLS on against off, in
the same run, against one ``orbitmq start`` (a separate process) in tls.server.mode=
permissive, which takes both on one port.

Each repeat runs both modes, in alternating order (plain then TLS, then TLS then plain) so
drift in the machine's load falls on both alike. In each mode a fresh client (its own
connections, so its own TLS handshakes) creates a topic of 4 queues, then:

- *batch produce*: ``--messages`` messages of ``--size`` bytes in batches of ``--batch``,
  ``--inflight`` batches in flight: messages a second;
- *single sends*: ``--singles`` one-message sends, one at a time: median and p99 latency;
- *consume*: a LitePullConsumer reads the batch-produced messages back from the first
  offset: messages a second.

CPU seconds of the broker process and of this one are taken around each phase. The client
checks the server's certificate (a CA made for the run with ``cryptography``); no client
certificate is asked for. The table gives the median over the repeats.

    .venv/bin/python benchmarks/tls_cost_bench.py [--repeats N] [--messages M] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from orbitmq.client import (
    AdminClient,
    ClientConfig,
    LitePullConsumer,
    LitePullConsumerConfig,
    Producer,
    TlsSystemConfig,
)
from orbitmq.common import Message
from orbitmq.protocol import ConsumeFromWhere
from orbitmq.remoting import run

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `tests` is importable from the repository root only
    sys.path.insert(0, str(REPO))

from tests.support import SMALL_STORE_CONF, start_orbitmq  # noqa: E402
from tests.tls_certs import make_pki  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
QUEUES = 4
MODES = ("plain", "tls")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class Phase:
    """Wall time and the CPU seconds of the broker and of this process over one phase."""

    def __init__(self, broker_pid: int) -> None:
        self.broker_pid = broker_pid

    def __enter__(self) -> Phase:
        self._wall, self._cpu = time.monotonic(), time.process_time()
        self._broker = cpu_seconds(self.broker_pid)
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall_s = time.monotonic() - self._wall
        self.client_cpu_s = time.process_time() - self._cpu
        self.broker_cpu_s = cpu_seconds(self.broker_pid) - self._broker


async def one_mode(
    namesrv: str, tls: TlsSystemConfig | None, topic: str, args: argparse.Namespace, pid: int
) -> dict[str, float]:
    def client_config() -> ClientConfig:
        if tls is None:
            return ClientConfig(namesrv_addr=namesrv)
        return ClientConfig(namesrv_addr=namesrv, use_tls=True, tls_config=tls)

    async with AdminClient(client_config=client_config()) as admin:
        await admin.create_topic(topic, queue_nums=QUEUES)
    payload = os.urandom(args.size)
    result: dict[str, float] = {}
    async with Producer(f"tls-bench-{topic}", client_config=client_config()) as producer:
        await producer.send(Message(topic, payload))  # route and connection first
        remaining = args.messages - 1

        async def lane() -> None:
            nonlocal remaining
            while remaining > 0:
                n = min(args.batch, remaining)
                remaining -= n
                await producer.send([Message(topic, payload) for _ in range(n)])

        with Phase(pid) as phase:
            await asyncio.gather(*(lane() for _ in range(args.inflight)))
        result["produce_msg_s"] = args.messages / phase.wall_s
        result["produce_broker_cpu_us"] = phase.broker_cpu_s / args.messages * 1e6
        result["produce_client_cpu_us"] = phase.client_cpu_s / args.messages * 1e6
        latencies = []
        for _ in range(args.singles):
            sent = time.perf_counter()
            await producer.send(Message(topic + "-singles", payload))
            latencies.append((time.perf_counter() - sent) * 1000)
        latencies.sort()
        result["single_p50_ms"] = statistics.median(latencies)
        result["single_p99_ms"] = latencies[int(len(latencies) * 0.99) - 1]
    result.update(await consume(client_config(), topic, args, pid))
    return result


async def consume(
    client_config: ClientConfig, topic: str, args: argparse.Namespace, pid: int
) -> dict[str, float]:
    config = LitePullConsumerConfig(
        pull_batch_size=256, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer = LitePullConsumer(f"tls-bench-{topic}", client_config=client_config, config=config)
    consumer.subscribe(topic)
    got = 0
    with Phase(pid) as phase:
        await consumer.start()
        try:
            while got < args.messages:
                got += len(await consumer.poll(timeout_s=10))
        finally:
            await consumer.shutdown()
    return {
        "consume_msg_s": got / phase.wall_s,
        "consume_broker_cpu_us": phase.broker_cpu_s / got * 1e6,
        "consume_client_cpu_us": phase.client_cpu_s / got * 1e6,
    }


async def bench(namesrv: str, tls: TlsSystemConfig, args: argparse.Namespace, pid: int) -> Any:
    rounds: list[dict[str, Any]] = []
    for repeat in range(args.repeats):
        order = MODES if repeat % 2 == 0 else MODES[::-1]
        for mode in order:
            topic = f"TlsBench{repeat}{mode}"
            measured = await one_mode(namesrv, tls if mode == "tls" else None, topic, args, pid)
            rounds.append({"repeat": repeat, "mode": mode, **measured})
            print(f"repeat {repeat} {mode}: {measured}", flush=True)
    return rounds


def summarize(rounds: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    keys = [k for k in rounds[0] if k not in ("repeat", "mode")]
    return {
        mode: {k: statistics.median(r[k] for r in rounds if r["mode"] == mode) for k in keys}
        for mode in MODES
    }


def show(summary: dict[str, dict[str, float]]) -> None:
    table = Table(title="TLS on against off (median of the repeats)")
    table.add_column("measure")
    for mode in MODES:
        table.add_column(mode, justify="right")
    table.add_column("tls / plain", justify="right")
    for key, plain in summary["plain"].items():
        tls = summary["tls"][key]
        table.add_row(key, f"{plain:,.2f}", f"{tls:,.2f}", f"{tls / plain:.3f}")
    Console().print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--inflight", type=int, default=4)
    parser.add_argument("--singles", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tls-bench-") as folder:
        root = Path(folder)
        pki = make_pki(root)
        config = root / "broker.conf"
        server_keys = pki.server_properties("permissive")
        config.write_text(SMALL_STORE_CONF + "".join(f"{k}={v}\n" for k, v in server_keys.items()))
        process, ready = start_orbitmq(root / "data", root / "start", config)
        try:
            client_tls = TlsSystemConfig().with_properties(pki.client_properties())
            rounds = run(bench(ready[1], client_tls, args, process.pid))
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
    summary = summarize(rounds)
    show(summary)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "args": vars(args) | {"json": str(args.json)},
                    "rounds": rounds,
                    "median": summary,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
