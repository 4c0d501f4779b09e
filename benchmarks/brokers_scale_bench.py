"""Several brokers per host (issue 20 §2): produce and consume msg/s of ``orbitmq start
--brokers N`` for N = 1 and N = 2, client processes scaled with N, and the scaling ratio.

    .venv/bin/python benchmarks/brokers_scale_bench.py [--brokers 1,2] [--rounds 1]
        [--seconds 8] [--inflight 32] [--queues 8] [--size 1024] [--batch 1]

Run from the repository root. For each N (interleaved when ``--rounds`` > 1): ``orbitmq start
--brokers N`` on free loopback ports with a store in a temporary directory (64 MiB commit log
files; console, gRPC and metrics off), a topic with ``--queues`` queues on every broker
(created cluster-wide, as mqadmin updateTopic -c does), then

1. produce: N producer processes (one per broker), each with ``--inflight`` tasks sending
   ``--size``-byte messages synchronously (``--batch`` B > 1: batches of B) for ``--seconds``
   s; the producers spread over every broker's queues. msg/s is what all of them had acknowledged;
2. consume: N push-consumer processes in one group read that backlog for at most
   ``--seconds`` s; msg/s is the messages received over the time from the first to the last.

Each phase records the CPU seconds (utime + stime, /proc) of the brokers, of the name server
process (the command's own process, which also serves the console when on) and of the client
processes, so per-message costs come out: broker us/msg, client us/msg, name server CPU/s.
Prints one table; writes JSON to ``benchmarks/results/`` (git-ignored) or ``--json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
READY = re.compile(r"OrbitMQ ready: name server (\S+), brokers? ")
TOPIC = "ScaleTopic"
CONF = "mappedFileSizeCommitLog=67108864\nmaxHashSlotNum=50000\nmaxIndexNum=200000\n"


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (every thread), 0.0 once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


# -- client processes ----------------------------------------------------------------------


async def produce(
    namesrv: str, seconds: float, inflight: int, size: int, batch: int
) -> dict[str, Any]:
    from orbitmq.client import Producer, SendStatus  # noqa: PLC0415
    from orbitmq.common import Message  # noqa: PLC0415

    body = os.urandom(size)
    sent = failed = 0
    async with Producer(f"scale-pg-{os.getpid()}", namesrv_addr=namesrv) as producer:
        await producer.send(Message(TOPIC, body))  # the route, before the clock starts
        await wait_for_go()
        cpu_before = own_cpu_seconds()
        start = time.time()
        deadline = start + seconds

        async def worker() -> None:
            nonlocal sent, failed
            while time.time() < deadline:
                try:
                    if batch > 1:
                        result = await producer.send([Message(TOPIC, body)] * batch)
                    else:
                        result = await producer.send(Message(TOPIC, body))
                except Exception:  # counted; the bench goes on
                    failed += 1
                    continue
                if result.send_status is SendStatus.SEND_OK:
                    sent += batch
                else:
                    failed += batch

        await asyncio.gather(*(worker() for _ in range(inflight)))
        end = time.time()
        cpu = own_cpu_seconds() - cpu_before
    return {"sent": sent, "failed": failed, "start": start, "end": end, "cpu_s": cpu}


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def wait_for_go() -> None:
    """Say "ready" and wait for the bench's "go" (every client starts sending at once, and
    the brokers' CPU is sampled around the work only, not the clients' start-up)."""
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)


async def consume(namesrv: str, seconds: float, idle_s: float = 1.0) -> dict[str, Any]:
    from orbitmq.client import PushConsumer, PushConsumerConfig  # noqa: PLC0415
    from orbitmq.protocol import ConsumeFromWhere  # noqa: PLC0415

    received = 0
    first = last = 0.0

    async def on_messages(messages: Any, context: Any) -> None:
        nonlocal received, first, last
        now = time.time()
        if not received:
            first = now
        received += len(messages)
        last = now

    config = PushConsumerConfig(consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer = PushConsumer("scale-cg", namesrv_addr=namesrv, config=config)
    consumer.subscribe(TOPIC)
    consumer.register_listener(on_messages)
    await wait_for_go()
    cpu_before = own_cpu_seconds()
    began = time.time()
    await consumer.start()
    try:
        # Until the backlog is drained (nothing for idle_s once messages came) or time is up.
        while time.time() - began < seconds:
            await asyncio.sleep(0.1)
            if received and time.time() - last > idle_s:
                break
    finally:
        cpu = own_cpu_seconds() - cpu_before
        await consumer.shutdown()
    return {"received": received, "first": first, "last": last, "cpu_s": cpu}


def client_main(args: argparse.Namespace) -> None:
    if args.role == "producer":
        result = asyncio.run(
            produce(args.namesrv, args.seconds, args.inflight, args.size, args.batch)
        )
    else:
        result = asyncio.run(consume(args.namesrv, args.seconds + 30))
    print(json.dumps(result), flush=True)


# -- the run -------------------------------------------------------------------------------


def start_group(brokers: int, root: Path) -> tuple[subprocess.Popen[bytes], str]:
    conf = root / "broker.conf"
    conf.write_text(CONF)
    out = root / "start.out"
    with out.open("wb") as out_file:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "orbitmq.cli", "start", "-c", str(conf)),
                *("--brokers", str(brokers), "--data-dir", str(root / "data")),
                *("--namesrv-port", "0", "--listen-port", "0", "--console-port", "-1"),
                *("--grpc-port", "-1", "--log-level", "WARNING"),
            ],
            stdout=out_file,
            stderr=(root / "start.err").open("wb"),
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in out.read_text().splitlines():
            match = READY.match(line)
            if match:
                return process, match.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"no ready line: {out.read_text()} {(root / 'start.err').read_text()}")


async def create_topic(namesrv: str, queues: int) -> None:
    from orbitmq.client import AdminClient  # noqa: PLC0415

    async with AdminClient(namesrv_addr=namesrv) as admin:
        await admin.create_topic(TOPIC, queue_nums=queues, cluster="DefaultCluster")


def start_clients(
    role: str, count: int, namesrv: str, args: argparse.Namespace
) -> list[subprocess.Popen[str]]:
    """``count`` client processes, each ready (connected, routed) and waiting for "go"."""
    command = [sys.executable, __file__, "--role", role, "--namesrv", namesrv]
    command += ["--seconds", str(args.seconds), "--inflight", str(args.inflight)]
    command += ["--size", str(args.size), "--batch", str(args.batch)]
    clients = [
        subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(count)
    ]
    for client in clients:
        assert client.stdout is not None
        assert client.stdout.readline().strip() == "ready"
    return clients


def finish_clients(clients: list[subprocess.Popen[str]], timeout_s: float) -> list[Any]:
    """ "go" to every client, then each one's result."""
    for client in clients:
        assert client.stdin is not None
        client.stdin.write("go\n")
        client.stdin.flush()
    results = []
    for client in clients:
        assert client.stdout is not None
        results.append(json.loads(client.stdout.readline()))
    for client in clients:
        client.communicate(timeout=timeout_s)
    return results


def measure(brokers: int, args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="brokers-scale-", dir=REPO / "benchmarks"))
    process, namesrv = start_group(brokers, root)
    try:
        members = children(process.pid) if brokers > 1 else [process.pid]
        asyncio.run(create_topic(namesrv, args.queues))
        row: dict[str, Any] = {"brokers": brokers}
        for role, phase in (("producer", "produce"), ("consumer", "consume")):
            clients = start_clients(role, brokers, namesrv, args)
            broker_cpu = sum(cpu_seconds(p) for p in members)
            namesrv_cpu = cpu_seconds(process.pid) if brokers > 1 else 0.0
            began = time.time()
            results = finish_clients(clients, args.seconds + 120)
            wall = time.time() - began
            broker_cpu = sum(cpu_seconds(p) for p in members) - broker_cpu
            if role == "producer":
                count = sum(r["sent"] for r in results)
                span = max(r["end"] for r in results) - min(r["start"] for r in results)
                row["produce_failed"] = sum(r["failed"] for r in results)
            else:
                count = sum(r["received"] for r in results)
                got = [r for r in results if r["received"]]
                span = max(r["last"] for r in got) - min(r["first"] for r in got) if got else 0
            row[f"{phase}_msgs"] = count
            row[f"{phase}_msg_s"] = count / span if span > 0 else 0.0
            row[f"{phase}_broker_us_msg"] = broker_cpu / count * 1e6 if count else 0.0
            client_cpu = sum(r["cpu_s"] for r in results)
            row[f"{phase}_client_us_msg"] = client_cpu / count * 1e6 if count else 0.0
            if brokers > 1:
                row[f"{phase}_namesrv_cpu_s_per_s"] = (
                    cpu_seconds(process.pid) - namesrv_cpu
                ) / wall
        return row
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", default="1,2")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--inflight", type=int, default=32)
    parser.add_argument("--queues", type=int, default=8)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=1, help="messages per send (1: single)")
    parser.add_argument("--json")
    parser.add_argument("--role", choices=("producer", "consumer"), help=argparse.SUPPRESS)
    parser.add_argument("--namesrv", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        client_main(args)
        return
    counts = [int(n) for n in args.brokers.split(",")]
    load_before = os.getloadavg()
    rows = [measure(n, args) for _ in range(args.rounds) for n in counts]
    print(
        f"{'N':>3} {'produce msg/s':>14} {'broker us/msg':>14} {'client us/msg':>14} "
        f"{'consume msg/s':>14} {'broker us/msg':>14} {'client us/msg':>14}"
    )
    for r in rows:
        print(
            f"{r['brokers']:>3} {r['produce_msg_s']:>14.0f} {r['produce_broker_us_msg']:>14.1f} "
            f"{r['produce_client_us_msg']:>14.1f} {r['consume_msg_s']:>14.0f} "
            f"{r['consume_broker_us_msg']:>14.1f} {r['consume_client_us_msg']:>14.1f}"
        )
    base = [r for r in rows if r["brokers"] == counts[0]]
    for n in counts[1:]:
        top = [r for r in rows if r["brokers"] == n]
        for phase in ("produce", "consume"):
            ratio = (
                sum(r[f"{phase}_msg_s"] for r in top)
                / len(top)
                / (sum(r[f"{phase}_msg_s"] for r in base) / len(base))
            )
            print(f"{phase} scaling N={n} / N={counts[0]}: {ratio:.2f}x")
    result = {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "args": {k: v for k, v in vars(args).items() if k not in ("role", "namesrv")},
        "rows": rows,
    }
    path = Path(args.json or REPO / "benchmarks" / "results" / "brokers_scale.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print(f"JSON: {path}")


if __name__ == "__main__":
    main()
