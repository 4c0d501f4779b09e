"""Pure Python against the mypyc-compiled hot path: the broker's CPU per produced message
(issue 20 §1), both builds in one run, interleaved.

Each round starts ``orbitmq start`` twice on free loopback ports, once with ``ORBITMQ_PURE=1``
(every compiled module from its source) and once with ``ORBITMQ_PURE=0`` (compiled; the order
alternates from round to round), with a store in a temporary directory (64 MiB commit log
files; console, gRPC and metrics off) and a topic of 4 queues. A producer in this process
warms the broker up (1,000 single sends, 8 batches), then

1. single sends: ``--singles`` messages of ``--size`` bytes, one request at a time, paced
   at ``--rate`` msg/s (the peer line-up's latency load);
2. batches: ``--batches`` batches of 500 such messages, 4 requests in flight.

The broker process's CPU seconds (utime + stime of every thread, /proc) over each phase,
divided by the messages it stored, are the table's µs/msg: the median of ``--rounds``
rounds, with the lowest and highest. A phase at a fixed rate includes what the broker spends
while idle between requests (timers, the flush and dispatch threads' waits), as the line-up's
``srv us/msg`` does.

CPU time moves with the machine's other load (caches, frequency). ``--callgrind`` counts
instructions instead: the broker runs under ``valgrind --tool=callgrind`` (about 50 times
slower), singles are sent unpaced, and each phase's count, zeroed and dumped by
``callgrind_control`` around it, is divided by the messages: the same count every run, up
to the broker's timers, which fire by wall time. Use few messages (``--singles 300
--batches 10``).

Prints one table; writes JSON to ``benchmarks/results/`` (git-ignored) or ``--json``. Needs
a compiled build (``make``, or ``pip install -e .``).

    .venv/bin/python benchmarks/compiled_broker_cpu.py [--rounds 3] [--rate 1000]
        [--singles 5000] [--batches 100] [--size 1024] [--callgrind]
        [--builds pure,compiled] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from orbitmq.client import AdminClient, Producer, SendStatus
from orbitmq.common import Message
from orbitmq.remoting.event_loop import run

REPO = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
READY = re.compile(r"OrbitMQ ready: name server (\S+), broker ")
TOPIC = "CompiledCpuTopic"
CONF = "mappedFileSizeCommitLog=67108864\nmaxHashSlotNum=50000\nmaxIndexNum=200000\n"
#: Under callgrind a request takes ~50 times longer: no flow control for time in the queue.
CALLGRIND_CONF = "waitTimeMillsInSendQueue=600000\nosPageCacheBusyTimeOutMills=600000\n"
BATCH = 500
BATCHES_IN_FLIGHT = 4
#: The two builds, by the value of ORBITMQ_PURE.
MODES = {"pure": "1", "compiled": "0"}


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (every thread)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class Meter:
    """The broker's cost between ``start`` and ``stop``: CPU µs, or instructions when it runs
    under callgrind (``out`` is its --callgrind-out-file, each dump ``out.N``)."""

    def __init__(self, pid: int, out: Path | None) -> None:
        self._pid = pid
        self._out = out
        self._dumps = 0
        self._cpu = 0.0

    def start(self) -> None:
        if self._out is None:
            self._cpu = cpu_seconds(self._pid)
        else:
            subprocess.run(
                ["callgrind_control", "-z", str(self._pid)], check=True, capture_output=True
            )

    def stop(self) -> float:
        if self._out is None:
            return (cpu_seconds(self._pid) - self._cpu) * 1e6
        subprocess.run(["callgrind_control", "-d", str(self._pid)], check=True, capture_output=True)
        self._dumps += 1
        dump = self._out.with_name(f"{self._out.name}.{self._dumps}")
        for line in dump.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return float(line.split()[1])
        raise SystemExit(f"no totals in {dump}")


def build_of(mode: str) -> str:
    """What ``orbitmq --version`` says the build runs with ORBITMQ_PURE for ``mode``."""
    env = {**os.environ, "ORBITMQ_PURE": MODES[mode]}
    done = subprocess.run(
        [sys.executable, "-m", "orbitmq.cli", "--version"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def start_broker(
    root: Path, mode: str, callgrind: Path | None
) -> tuple[subprocess.Popen[bytes], str]:
    conf = root / "broker.conf"
    conf.write_text(CONF + (CALLGRIND_CONF if callgrind is not None else ""))
    out = root / "start.out"
    with out.open("wb") as out_file, (root / "start.err").open("wb") as err_file:
        valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind}"]
        process = subprocess.Popen(
            [
                *(valgrind if callgrind is not None else []),
                *(sys.executable, "-m", "orbitmq.cli", "start", "-c", str(conf)),
                *("--data-dir", str(root / "data"), "--namesrv-port", "0"),
                *("--listen-port", "0", "--console-port", "-1", "--grpc-port", "-1"),
                *("--log-level", "WARNING"),
            ],
            stdout=out_file,
            stderr=err_file,
            env={**os.environ, "ORBITMQ_PURE": MODES[mode]},
        )
    deadline = time.monotonic() + (900 if callgrind is not None else 60)
    while time.monotonic() < deadline:
        match = READY.search(out.read_text())
        if match:
            return process, match.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"no ready line: {out.read_text()} {(root / 'start.err').read_text()}")


async def single_sends(
    producer: Producer, body: bytes, count: int, rate: float, timeout_s: float
) -> int:
    """``count`` sends, one at a time, paced at ``rate`` per second (0: unpaced); the
    messages stored."""
    loop = asyncio.get_running_loop()
    interval = 1 / rate if rate else 0.0
    next_send = loop.time()
    stored = 0
    for _ in range(count):
        result = await producer.send(Message(TOPIC, body), timeout_s=timeout_s)
        stored += result.send_status is SendStatus.SEND_OK
        next_send += interval
        delay = next_send - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
    return stored


async def batch_sends(producer: Producer, body: bytes, count: int, timeout_s: float) -> int:
    """``count`` batches of BATCH, BATCHES_IN_FLIGHT at a time; the messages stored."""
    left = count
    stored = 0

    async def worker() -> None:
        nonlocal left, stored
        while left > 0:
            left -= 1
            result = await producer.send([Message(TOPIC, body)] * BATCH, timeout_s=timeout_s)
            stored += BATCH if result.send_status is SendStatus.SEND_OK else 0

    await asyncio.gather(*(worker() for _ in range(BATCHES_IN_FLIGHT)))
    return stored


async def measure(namesrv: str, meter: Meter, args: argparse.Namespace) -> dict[str, float]:
    """The broker's cost (CPU µs or instructions) per stored message in each phase."""
    async with AdminClient(namesrv_addr=namesrv) as admin:
        await admin.create_topic(TOPIC, queue_nums=4, cluster="DefaultCluster")
    body = os.urandom(args.size)
    rate = 0.0 if args.callgrind else args.rate
    timeout_s = 600.0 if args.callgrind else 10.0
    costs: dict[str, float] = {}
    async with Producer("compiled-cpu-pg", namesrv_addr=namesrv) as producer:
        await single_sends(producer, body, args.singles // 5, rate * 4, timeout_s)  # warm-up
        await batch_sends(producer, body, 8, timeout_s)
        meter.start()
        stored = await single_sends(producer, body, args.singles, rate, timeout_s)
        costs["single"] = meter.stop() / stored
        meter.start()
        stored = await batch_sends(producer, body, args.batches, timeout_s)
        costs["batch"] = meter.stop() / stored
    return costs


def one_round(mode: str, args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="compiled-cpu-") as tmp:
        out = Path(tmp) / "callgrind.out" if args.callgrind else None
        process, namesrv = start_broker(Path(tmp), mode, out)
        try:
            return run(measure(namesrv, Meter(process.pid, out), args))
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--singles", type=int, default=5000)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--callgrind", action="store_true", help="count instructions")
    parser.add_argument("--builds", default="pure,compiled", help="pure, compiled or both")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    modes = [mode for mode in MODES if mode in args.builds.split(",")]
    builds = {mode: build_of(mode) for mode in modes}
    if "compiled:" not in builds.get("compiled", "compiled:"):
        raise SystemExit(f"no compiled build ({builds['compiled']}): run make")
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    for round_no in range(args.rounds):
        order = modes if round_no % 2 == 0 else modes[::-1]
        for mode in order:
            results[mode].append(one_round(mode, args))
            print(f"round {round_no + 1} {mode}: {results[mode][-1]}", flush=True)

    unit = "instructions/msg" if args.callgrind else "µs/msg"
    table = Table(title=f"Broker CPU per message, {args.size}-byte messages ({unit})")
    table.add_column("build")
    paced = "unpaced" if args.callgrind else f"at {args.rate:g}/s"
    table.add_column(f"single sends {paced}", justify="right")
    table.add_column(f"batches of {BATCH}", justify="right")
    summary: dict[str, dict[str, float]] = {}
    for mode in modes:
        row = [mode]
        summary[mode] = {}
        for phase in ("single", "batch"):
            values = [r[phase] for r in results[mode]]
            summary[mode][phase] = statistics.median(values)
            digits = 0 if args.callgrind else 2
            row.append(
                f"{statistics.median(values):,.{digits}f} "
                f"({min(values):,.{digits}f}-{max(values):,.{digits}f})"
            )
        table.add_row(*row)
    ratios = {}
    if len(modes) == len(MODES):
        ratios = {p: summary["pure"][p] / summary["compiled"][p] for p in ("single", "batch")}
        table.add_row("pure / compiled", f"{ratios['single']:.2f}x", f"{ratios['batch']:.2f}x")
    Console().print(table)

    path = args.json or REPO / "benchmarks" / "results" / (
        f"compiled-broker-cpu-{dt.datetime.now(dt.UTC):%Y%m%d-%H%M}.json"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "args": vars(args) | {"json": str(args.json) if args.json else None},
        "builds": builds,
        "rounds": results,
        "median": summary,
        "pure_over_compiled": ratios,
    }
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"JSON: {path}")


if __name__ == "__main__":
    main()
