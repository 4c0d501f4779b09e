"""Issue 16 §6 in one run: what a slave costs a master's producers, and how fast it follows.

    .venv/bin/python benchmarks/ha_pair_bench.py [--messages 200000] [--repeats 3]
        [--procs 1] [--inflight 4] [--batch 500] [--size 1024] [--backlog-mb 1024]
        [--rate 2000] [--seconds 10] [--modes lone,async,sync] [--json PATH]

Run from the repository root. Each produce measurement starts its own cluster of real
``orbitmq`` processes on loopback (fixed ports, ``--base-port``), fresh data directories:
a name server, a master (``flushDiskType=SYNC_FLUSH``: SEND_OK after the fsync) and, for
the pairs, a slave (``brokerRole=SLAVE``) that must hold an HA connection before anything
is timed. The modes:

- ``lone``: the master alone (ASYNC_MASTER, no slave connected);
- ``async``: ASYNC_MASTER + slave (the slave copies in the background);
- ``sync``: SYNC_MASTER + slave (a send is answered once the slave has it; needs the
  SYNC_MASTER wait, else it measures the same as ``async``).

The producers are the peer line-up's (``benchmarks/peerbench_orbitmq.py``): ``--procs``
client processes, each with one ``Producer``, ``--inflight`` concurrent batch requests of
``--batch`` 1 KiB messages into a 4-queue topic, started together after a warm-up; msg/s is
the messages over the first start to the last ack. The modes are interleaved within each of
``--repeats`` rounds (machine noise moves all three alike), and the ratios async/lone and
sync/lone are taken per round, then their median reported. CPU per message is the master's
and the slave's utime+stime (``/proc/<pid>/stat``) over the timed window, divided by the
messages; the slave's window runs until it is idle again (it may copy after the last ack).

Then the store pair of ``benchmarks/replication_bench.py`` (in this process): catch-up of a
``--backlog-mb`` backlog and lag at ``--rate`` msg/s. Prints tables; writes JSON to
``benchmarks/results/`` (git-ignored) or ``--json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import multiprocessing as mp
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from queue import Empty
from typing import Any

from rich.progress import Progress

from orbitmq.client import AdminClient, Producer, SendStatus
from orbitmq.client.producer import ProducerConfig
from orbitmq.common import Message
from orbitmq.remoting import run
from replication_bench import measure_store_pair

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
TOPIC = "HaPairBench"
QUEUE_NUMS = 4
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
MODES = ("lone", "async", "sync")
ROLE = {"lone": "ASYNC_MASTER", "async": "ASYNC_MASTER", "sync": "SYNC_MASTER"}


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def ha_connected(port: int) -> bool:
    """An established TCP connection to ``port`` on this machine (the slave's HA link)."""
    wanted = f":{port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        parts = line.split()
        if parts[1].endswith(wanted) and parts[3] == "01":
            return True
    return False


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


@dataclass
class Cluster:
    """A name server, a master and maybe a slave, each an ``orbitmq`` process."""

    root: Path
    mode: str
    base_port: int
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def namesrv(self) -> str:
        return f"{HOST}:{self.base_port}"

    @property
    def master_port(self) -> int:
        return self.base_port + 35  # VIP channel at - 2, HA at + 1

    @property
    def slave_port(self) -> int:
        return self.base_port + 45

    def _broker_conf(self, name: str, port: int, extra: str) -> Path:
        conf = self.root / f"{name}.conf"
        conf.write_text(
            "brokerClusterName=DefaultCluster\nbrokerName=broker-a\n"
            f"brokerIP1={HOST}\nbindAddress={HOST}\nlistenPort={port}\n"
            f"namesrvAddr={self.namesrv}\nstorePathRootDir={self.root / name}\n"
            "flushDiskType=SYNC_FLUSH\n" + extra
        )
        return conf

    def _spawn(self, name: str, *args: str) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO / "src")}
        with (self.root / f"{name}.log").open("wb") as log:
            self.processes[name] = subprocess.Popen(
                [sys.executable, "-m", "orbitmq.cli", "--log-level", "WARNING", *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )

    def _wait_ready(self, name: str, marker: str) -> None:
        deadline = time.monotonic() + 60
        while marker not in (self.root / f"{name}.log").read_text(errors="replace"):
            if self.processes[name].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start: see {self.root / f'{name}.log'}")
            time.sleep(0.05)

    def start(self) -> None:
        ports = [self.base_port, self.master_port, self.master_port - 2, self.master_port + 1]
        if self.mode != "lone":
            ports += [self.slave_port, self.slave_port - 2, self.slave_port + 1]
        taken = [port for port in ports if not port_free(port)]
        if taken:
            raise RuntimeError(f"ports {taken} are in use: choose another --base-port")
        self._spawn("namesrv", "namesrv", "--listen-port", str(self.base_port), "--bind", HOST)
        self._wait_ready("namesrv", "name server ready")
        master = self._broker_conf("master", self.master_port, f"brokerRole={ROLE[self.mode]}\n")
        self._spawn("master", "broker", "-c", str(master))
        if self.mode != "lone":
            slave = self._broker_conf("slave", self.slave_port, "brokerId=1\nbrokerRole=SLAVE\n")
            self._spawn("slave", "broker", "-c", str(slave))
        for name in self.processes:
            if name != "namesrv":
                self._wait_ready(name, "broker ready")
        deadline = time.monotonic() + 60
        while self.mode != "lone" and not ha_connected(self.master_port + 1):
            if time.monotonic() > deadline:
                raise RuntimeError("the slave made no HA connection to the master in 60 s")
            time.sleep(0.05)

    def pid(self, name: str) -> int | None:
        process = self.processes.get(name)
        return None if process is None else process.pid

    def stop(self) -> None:
        for name in ("slave", "master", "namesrv"):
            process = self.processes.get(name)
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def _create_topic(namesrv: str) -> None:
    deadline = time.monotonic() + 30
    while True:  # the master registers with the name server just after it starts
        admin = AdminClient(namesrv_addr=namesrv)
        try:
            await admin.start()
            if await admin.master_addrs():
                await admin.create_topic(TOPIC, queue_nums=QUEUE_NUMS)
                return
        except Exception:
            if time.monotonic() > deadline:
                raise
        finally:
            await admin.shutdown()
        await asyncio.sleep(0.2)


async def _produce(
    namesrv: str, count: int, batch: int, inflight: int, size: int, go: MpEvent
) -> tuple[float, float]:
    producer = Producer(
        f"ha-pair-bench-{os.getpid()}",
        namesrv_addr=namesrv,
        config=ProducerConfig(send_msg_timeout_s=30.0),
    )
    payload = os.urandom(size)
    await producer.start()

    async def send(n: int) -> None:
        result = await producer.send([Message(TOPIC, payload) for _ in range(n)])
        if result.send_status is not SendStatus.SEND_OK:
            raise RuntimeError(f"send answered {result.send_status.name}")

    try:
        for _ in range(2):  # route, connection, the broker's first writes
            await send(batch)
        await asyncio.to_thread(go.wait)
        remaining = count
        started = time.monotonic()

        async def lane() -> None:
            nonlocal remaining
            while remaining > 0:
                n = min(batch, remaining)
                remaining -= n
                await send(n)

        await asyncio.gather(*(lane() for _ in range(inflight)))
        return started, time.monotonic()
    finally:
        await producer.shutdown()


def _producer_process(
    namesrv: str,
    count: int,
    options: tuple[int, int, int],
    ready: Any,
    go: MpEvent,
    results: Any,
) -> None:
    """One client process: warm up, say so, wait for ``go``, send ``count``, report."""
    batch, inflight, size = options

    async def main() -> tuple[float, float]:
        ready.put(os.getpid())
        return await _produce(namesrv, count, batch, inflight, size, go)

    results.put(run(main()))


def _wait_idle(pid: int, limit_s: float = 20.0) -> float:
    """The process's CPU seconds once it used under 2 % of a core for 0.5 s (the slave
    copying what the master acked last), or after ``limit_s``."""
    deadline = time.monotonic() + limit_s
    before = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = cpu_seconds(pid)
        if now - before <= 0.01:
            return now
        before = now
    return before


def measure_produce(mode: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """One cluster, one timed produce phase: msg/s and the brokers' CPU per message."""
    cluster = Cluster(root, mode, args.base_port)
    context = mp.get_context("spawn")
    ready, results, go = context.Queue(), context.Queue(), context.Event()
    workers: list[Any] = []
    try:
        cluster.start()
        run(_create_topic(cluster.namesrv))
        share = args.messages // args.procs
        for _ in range(args.procs):
            options = (args.batch, args.inflight, args.size)
            worker = context.Process(
                target=_producer_process,
                args=(cluster.namesrv, share, options, ready, go, results),
            )
            worker.start()
            workers.append(worker)
        for _ in workers:
            ready.get(timeout=120)
        time.sleep(1.0)  # the warm-up batches are acked before the clock starts
        master_pid, slave_pid = cluster.pid("master"), cluster.pid("slave")
        assert master_pid is not None
        master_cpu = cpu_seconds(master_pid)
        slave_cpu = cpu_seconds(slave_pid) if slave_pid else 0.0
        go.set()
        windows = [results.get(timeout=600) for _ in workers]
        master_cpu = cpu_seconds(master_pid) - master_cpu
        slave_cpu = _wait_idle(slave_pid) - slave_cpu if slave_pid else 0.0
    except Empty as exc:
        raise RuntimeError(f"{mode}: a producer process did not answer in time") from exc
    finally:
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.kill()
        cluster.stop()
    total = share * args.procs
    elapsed = max(end for _, end in windows) - min(start for start, _ in windows)
    return {
        "mode": mode,
        "messages": total,
        "seconds": elapsed,
        "msg_per_s": total / elapsed,
        "master_cpu_us_per_msg": master_cpu * 1e6 / total,
        "slave_cpu_us_per_msg": slave_cpu * 1e6 / total if slave_pid else None,
    }


def summarize(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Medians per mode, and the per-round ratios to the lone master with their median."""
    summary: dict[str, Any] = {}
    modes = [mode for mode in MODES if all(mode in r for r in rounds)]
    for mode in modes:
        figures = [r[mode] for r in rounds]
        summary[mode] = {
            "msg_per_s": statistics.median(f["msg_per_s"] for f in figures),
            "master_cpu_us_per_msg": statistics.median(f["master_cpu_us_per_msg"] for f in figures),
            "slave_cpu_us_per_msg": (
                statistics.median(f["slave_cpu_us_per_msg"] for f in figures)
                if mode != "lone"
                else None
            ),
        }
    if "lone" in modes:
        for mode in modes:
            if mode == "lone":
                continue
            ratios = [r[mode]["msg_per_s"] / r["lone"]["msg_per_s"] for r in rounds]
            summary[mode]["ratios"] = ratios
            summary[mode]["ratio_median"] = statistics.median(ratios)
    return summary


def _print_produce(rounds: list[dict[str, dict[str, Any]]], summary: dict[str, Any]) -> None:
    print(
        f"{'round':<6} {'mode':<6} {'msg/s':>10} {'ratio':>7} {'master us/msg':>14} "
        f"{'slave us/msg':>13}"
    )
    for i, round_ in enumerate(rounds, 1):
        for mode, f in round_.items():
            ratio = f["msg_per_s"] / round_["lone"]["msg_per_s"] if "lone" in round_ else None
            slave = f["slave_cpu_us_per_msg"]
            print(
                f"{i:<6} {mode:<6} {f['msg_per_s']:>10,.0f} "
                f"{'' if ratio is None else f'{ratio:.3f}':>7} "
                f"{f['master_cpu_us_per_msg']:>14.1f} {'' if slave is None else f'{slave:.1f}':>13}"
            )
    for mode, s in summary.items():
        ratio = s.get("ratio_median")
        slave = s["slave_cpu_us_per_msg"]
        print(
            f"{'median':<6} {mode:<6} {s['msg_per_s']:>10,.0f} "
            f"{'' if ratio is None else f'{ratio:.3f}':>7} "
            f"{s['master_cpu_us_per_msg']:>14.1f} {'' if slave is None else f'{slave:.1f}':>13}"
        )


def _print_replication(catch_up: dict[str, Any], steady: dict[str, Any]) -> None:
    print(
        f"catch-up: {catch_up['messages']} messages / {catch_up['bytes'] / 1e6:.0f} MB "
        f"copied in {catch_up['copy_s']:.2f} s = {catch_up['copy_mb_per_s']:.0f} MB/s "
        f"(dispatched in {catch_up['dispatched_s']:.2f} s)"
    )
    print(
        f"steady: {steady['messages']} messages at {steady['achieved_rate']:.0f} msg/s, "
        f"lag p50 / p99 / max {steady['lag_p50_ms']:.2f} / {steady['lag_p99_ms']:.2f} / "
        f"{steady['lag_max_ms']:.2f} ms"
    )


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--procs", type=int, default=1)
    parser.add_argument("--inflight", type=int, default=4)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--base-port", type=int, default=19876)
    parser.add_argument("--backlog-mb", type=int, default=1024, help="0: no store-pair phases")
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    args.modes = [m for m in args.modes.split(",") if m]
    unknown = set(args.modes) - set(MODES)
    if unknown:
        parser.error(f"--modes: unknown {sorted(unknown)} (of {', '.join(MODES)})")
    return args


def main() -> None:
    args = _arguments()
    rounds: list[dict[str, dict[str, Any]]] = []
    catch_up: dict[str, Any] | None = None
    steady: dict[str, Any] | None = None
    with Progress() as progress:
        task = progress.add_task("produce", total=args.repeats * len(args.modes))
        for i in range(args.repeats):
            round_: dict[str, dict[str, Any]] = {}
            for mode in args.modes:
                progress.update(task, description=f"round {i + 1}: {mode}")
                root = Path(tempfile.mkdtemp(prefix=f"ha-pair-{mode}-"))
                try:
                    round_[mode] = measure_produce(mode, args, root)
                finally:
                    shutil.rmtree(root, ignore_errors=True)
                progress.advance(task)
            rounds.append(round_)
        if args.backlog_mb:
            progress.update(task, description="store pair: catch-up and lag")
            catch_up, steady = measure_store_pair(
                args.backlog_mb * 1024 * 1024, args.rate, args.seconds
            )
    summary = summarize(rounds)
    _print_produce(rounds, summary)
    if catch_up is not None and steady is not None:
        catch_up.pop("client", None)
        _print_replication(catch_up, steady)
    out = args.json or REPO / "benchmarks" / "results" / (
        f"ha-pair-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {"args": {k: str(v) for k, v in vars(args).items()}, "rounds": rounds}
    out.write_text(
        json.dumps(record | {"summary": summary, "catch_up": catch_up, "steady": steady}, indent=2)
    )
    print(f"JSON: {out}")


if __name__ == "__main__":
    main()
