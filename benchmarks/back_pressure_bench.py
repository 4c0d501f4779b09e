"""Back-pressure from storage (R10): what a send costs on a healthy disk, and how a broker
answers while its disk stalls.

    .venv/bin/python benchmarks/back_pressure_bench.py [--messages 5000] [--concurrency 16]
        [--stall-ms 500] [--stall-s 5] [--json PATH]

Run from the repository root. A name server and a broker run in this process
(``orbitmq.testing.InProcessCluster``, loopback, a temporary store), the broker's store
writing through a ``FaultInjectingFileSystem``. Phases:

1. healthy: ``--messages`` 1 KiB SEND_MESSAGE_V2 requests, ``--concurrency`` in flight on one
   connection, answers timed from request to response; msg/s, p50 and p99;
2. stalled: every commit log write now takes ``--stall-ms``; ``--concurrency`` senders send
   one request after another for ``--stall-s`` seconds, without retries; each answer is
   counted by its kind (stored, [REJECTREQUEST], [PCBUSY_CLEAN_QUEUE], [TIMEOUT_CLEAN_QUEUE],
   other) with its latency;
3. recovered: the stall ends; the first send's latency and phase 1 again, shorter.

``--healthy-only`` runs phase 1 alone, on the real file system: that also runs against
commits older than the write stall (unpack one, put its ``src`` first on PYTHONPATH), to
compare the send path's cost before and after::

    mkdir /tmp/bp-base && git archive bb5f592 src | tar -x -C /tmp/bp-base
    PYTHONPATH=/tmp/bp-base/src .venv/bin/python benchmarks/back_pressure_bench.py --healthy-only

Prints one table (phase, figure, value); writes JSON to ``benchmarks/results/`` (git-ignored)
or ``--json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import SendMessageRequestHeader
from orbitmq.remoting import RemotingClient
from orbitmq.testing import FaultInjectingFileSystem, InProcessCluster

TOPIC = "BackPressureBench"
BODY = b"x" * 1024


def _request() -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="bench",
        topic=TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=-1,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties="",
    )
    return RemotingCommand.create_request(
        RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), BODY
    )


def _kind(response: RemotingCommand) -> str:
    if response.code == ResponseCode.SUCCESS:
        return "stored"
    remark = response.remark or ""
    return remark[: remark.index("]") + 1] if remark.startswith("[") else f"code {response.code}"


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _timed(client: RemotingClient, addr: str) -> tuple[RemotingCommand, float]:
    began = time.perf_counter()
    response = await client.invoke(addr, _request(), 30)
    return response, (time.perf_counter() - began) * 1000


async def healthy(
    client: RemotingClient, addr: str, messages: int, concurrency: int
) -> dict[str, Any]:
    latencies: list[float] = []
    failures = 0
    left = messages

    async def sender() -> None:
        nonlocal left, failures
        while left > 0:
            left -= 1
            response, ms = await _timed(client, addr)
            latencies.append(ms)
            failures += response.code != ResponseCode.SUCCESS

    began = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(concurrency)))
    elapsed = time.perf_counter() - began
    return {
        "msg_per_s": round(messages / elapsed),
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(_percentile(latencies, 0.99), 2),
        "failures": failures,
    }


async def stalled(
    client: RemotingClient, addr: str, concurrency: int, seconds: float
) -> dict[str, Any]:
    answers: dict[str, list[float]] = {}
    stop = time.perf_counter() + seconds

    async def sender() -> None:
        while time.perf_counter() < stop:
            response, ms = await _timed(client, addr)
            answers.setdefault(_kind(response), []).append(ms)

    await asyncio.gather(*(sender() for _ in range(concurrency)))
    return {
        kind: {
            "count": len(ms),
            "p50_ms": round(statistics.median(ms), 1),
            "max_ms": round(max(ms), 1),
        }
        for kind, ms in sorted(answers.items())
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    fs = FaultInjectingFileSystem()
    seam: dict[str, Any] = {} if args.healthy_only else {"fs": fs}
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as root:
        async with InProcessCluster(Path(root) / "cluster", **seam) as cluster:
            broker = cluster.brokers[0]
            client = RemotingClient()
            try:
                addr = broker.address
                await _timed(client, addr)  # the topic exists
                report: dict[str, Any] = {
                    "healthy": await healthy(client, addr, args.messages, args.concurrency)
                }
                if args.healthy_only:
                    return report
                fs.write_delay_s = args.stall_ms / 1000
                report["stalled"] = await stalled(client, addr, args.concurrency, args.stall_s)
                fs.write_delay_s = 0
                _, first_ms = await _timed(client, addr)
                report["recovered"] = {
                    "first_send_ms": round(first_ms, 1),
                    **await healthy(client, addr, args.messages // 5, args.concurrency),
                }
            finally:
                await client.close()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--stall-ms", type=int, default=500)
    parser.add_argument("--stall-s", type=float, default=5.0)
    parser.add_argument("--healthy-only", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report = asyncio.run(run(args))
    report["settings"] = vars(args) | {"json": str(args.json) if args.json else None}
    print(f"{'phase':<10} {'figure':<32} value")
    for phase in ("healthy", "stalled", "recovered"):
        for figure, value in report.get(phase, {}).items():
            print(f"{phase:<10} {figure:<32} {value}")
    out = args.json or Path("benchmarks/results") / (
        f"back_pressure_{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
