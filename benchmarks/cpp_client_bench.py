"""OrbitMQ through the official RocketMQ C++ client, with peer brokers in the same run.

    .venv/bin/python benchmarks/cpp_client_bench.py [-n 20000] [--size 1024] [--skip-peers]

Run from the repository root. For each flush mode (ASYNC_FLUSH, the default, and SYNC_FLUSH
through ``orbitmq start -c broker.conf``) a fresh ``orbitmq start`` is measured with the C++
client 2.1.0 (``rocketmq-python-cvs``, in ``.venv-compat/cpp-cvs``), one client subprocess per
phase (scripts in ``benchmarks/cpp_clients/``):

* produce: N messages with ``send_sync`` (a round trip each), ``send_batch`` (``--batch``
  messages a request) and ``send_async`` (at most ``--inflight`` awaiting their callback);
* consume: a clustering ``PushConsumer`` reads the ``send_sync`` topic back, first delivery to
  last;
* latency: a producer at ``--latency-rate`` msg/s for ``--latency-seconds`` (after 1 s of
  warm-up) with the send time in the body; a ``PushConsumer`` in another process records
  receive - send; and the producer records send -> ack.

For every phase the broker's CPU (utime + stime from ``/proc/<pid>/stat``, between the go
given to the client and its result) per message, and its RSS (idle after start; peak sampled
during the phase, and VmHWM). Then ``peerbench`` (``/work/shared/peerbench``) runs the peers
with the same message count and size, with their own Python clients, and one table shows all.
JSON goes to ``benchmarks/results/`` (git-ignored) or ``--json``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import platform
import queue
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # `tests` is importable from the repository root only
    sys.path.insert(0, str(REPO))

from tests.compat.client_venv import CPP_CVS_REQUIREMENT, compat_venv  # noqa: E402
from tests.support import start_orbitmq  # noqa: E402

CLIENTS = REPO / "benchmarks" / "cpp_clients"
RESULTS_DIR = REPO / "benchmarks" / "results"
PEERBENCH_DIR = Path("/work/shared/peerbench")
PEERBENCH_PYTHON = Path("/tmp/peerbench/venv/bin/python")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
FLUSH_MODES = ("ASYNC_FLUSH", "SYNC_FLUSH")


# --------------------------------------------------------------------- the broker process ---


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads) in seconds, from ``/proc/<pid>/stat``."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def status_kib(pid: int, key: str) -> int:
    """A ``kB`` line of ``/proc/<pid>/status`` (VmRSS, VmHWM), in KiB; 0 if absent."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


class RssSampler:
    """Samples the broker's VmRSS every 50 ms on a daemon thread; ``take_peak`` returns the
    largest sample since the last call."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="rss-sampler")
        self.thread.start()

    def _run(self) -> None:
        while not self.stop_event.wait(0.05):
            try:
                rss = status_kib(self.pid, "VmRSS")
            except OSError:
                return
            with self.lock:
                self.peak = max(self.peak, rss)

    def take_peak(self) -> int:
        """The peak VmRSS (KiB) since the previous call, sampled now too."""
        with contextlib.suppress(OSError):
            rss = status_kib(self.pid, "VmRSS")
            with self.lock:
                self.peak = max(self.peak, rss)
        with self.lock:
            peak, self.peak = self.peak, 0
        return peak

    def stop(self) -> None:
        """Stop sampling (bounded join)."""
        self.stop_event.set()
        self.thread.join(timeout=2)


# ------------------------------------------------------------------------ client scripts ---


class ClientProcess:
    """A script of ``cpp_clients/`` under the C++ client's virtualenv, driven by JSON lines.

    Its stdout is read by a daemon thread into a queue; ``expect`` waits (bounded) for one
    event. ``close`` kills it if it is still running."""

    def __init__(self, python: Path, home: Path, script: str, args: Sequence[object]) -> None:
        home.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            # The C++ library writes its logs here, not to /logs.
            "ROCKETMQ_HOME": str(home),
            "ROCKETMQ_CLIENT_LOG_DIR": str(home / "logs"),
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("PYTHONPATH", None)
        self.name = f"{script} {args[0]}"
        self.stderr_path = home / f"{script}-{args[0]}-{time.monotonic_ns()}.err"
        with self.stderr_path.open("wb") as err:
            self.process = subprocess.Popen(
                [str(python), str(CLIENTS / script), *map(str, args)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                cwd=home,
                env=env,
                text=True,
            )
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("{"):
                with contextlib.suppress(json.JSONDecodeError):
                    self.lines.put(json.loads(line))
        self.lines.put(None)  # end of output

    def expect(self, event: str, timeout_s: float) -> dict[str, Any]:
        """The next line with ``event``; RuntimeError on an error line, exit, or timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"{self.name}: no {event!r} within {timeout_s} s")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                err = self.stderr_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{self.name}: exited before {event!r}: {err}")
            if line.get("event") == "error":
                raise RuntimeError(f"{self.name}: {line.get('error')}")
            if line.get("event") == event:
                return line

    def send(self, text: str) -> None:
        """Write one line to its stdin."""
        assert self.process.stdin is not None
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def close(self) -> None:
        """Wait briefly for it to leave, then kill it."""
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


# ------------------------------------------------------------------------------ phases ---


@dataclass
class Phase:
    """One measured phase against one broker."""

    system: str
    phase: str
    client: str
    msgs: int
    seconds: float
    broker_cpu_s: float
    client_cpu_s: float
    peak_rss_kib: int = 0
    errors: int = 0
    note: str = ""
    latency: dict[str, float] = field(default_factory=dict)
    #: Messages the CPU figures are divided by when not ``msgs`` (latency: with warm-up).
    cpu_msgs: int = 0

    @property
    def msgs_per_s(self) -> float:
        """Messages per second of the phase's own timing."""
        return self.msgs / self.seconds if self.seconds > 0 else float("nan")

    def us_per_msg(self, cpu_s: float) -> float:
        """CPU microseconds per message (of ``cpu_msgs`` if set, else of ``msgs``)."""
        msgs = self.cpu_msgs or self.msgs
        return cpu_s / msgs * 1e6 if msgs else float("nan")


def percentiles(values_ns: Sequence[int]) -> dict[str, float]:
    """p50 / p99 / max in milliseconds (nearest rank); empty for no values."""
    if not values_ns:
        return {}
    ordered = sorted(values_ns)

    def rank(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] / 1e6

    return {"p50_ms": rank(50), "p99_ms": rank(99), "max_ms": ordered[-1] / 1e6}


@dataclass
class Broker:
    """A running ``orbitmq start`` and the means to measure it."""

    process: subprocess.Popen[bytes]
    namesrv: str
    flush: str
    sampler: RssSampler
    idle_rss_kib: int
    #: The broker's CPU while idle (the 2 s after start), in % of one core.
    idle_cpu_pct: float

    @property
    def pid(self) -> int:
        """The broker process id."""
        return self.process.pid


@contextlib.contextmanager
def orbitmq(workdir: Path, flush: str) -> Iterator[Broker]:
    """``orbitmq start`` with ``flushDiskType=flush``; idle RSS and CPU taken over the 2 s
    after start; stopped with SIGTERM (then SIGKILL after 15 s) on exit."""
    conf = workdir / f"broker-{flush}.conf"
    conf.write_text(f"flushDiskType={flush}\n")
    process, ready = start_orbitmq(workdir / f"data-{flush}", workdir / f"orbitmq-{flush}", conf)
    sampler = RssSampler(process.pid)
    try:
        cpu0, t0 = cpu_seconds(process.pid), time.monotonic()
        time.sleep(2.0)  # no traffic: the idle readings
        idle_cpu = (cpu_seconds(process.pid) - cpu0) / (time.monotonic() - t0) * 100
        idle = status_kib(process.pid, "VmRSS")
        sampler.take_peak()
        yield Broker(process, ready[1], flush, sampler, idle, idle_cpu)
    finally:
        sampler.stop()
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


class Runner:
    """Runs the phases of one broker with the C++ client scripts."""

    def __init__(self, args: argparse.Namespace, python: Path, home: Path, broker: Broker):
        self.args = args
        self.python = python
        self.home = home
        self.broker = broker
        self.system = f"OrbitMQ {broker.flush}"
        self.clients: list[ClientProcess] = []

    def client(self, script: str, *args: object) -> ClientProcess:
        """Start a client script (closed by ``close_all``)."""
        proc = ClientProcess(self.python, self.home, script, args)
        self.clients.append(proc)
        return proc

    def close_all(self) -> None:
        """Close every client started."""
        for proc in self.clients:
            proc.close()
        self.clients.clear()

    def _measured_run(self, proc: ClientProcess) -> tuple[dict[str, Any], float]:
        """Release a ready client, wait for its result; (result, broker CPU seconds meanwhile).
        The peak RSS is reset first, so the phase's ``take_peak`` covers only this run."""
        proc.expect("ready", 60)
        self.broker.sampler.take_peak()
        cpu0 = cpu_seconds(self.broker.pid)
        proc.send("go")
        result = proc.expect("result", self.args.phase_timeout + 30)
        return result, cpu_seconds(self.broker.pid) - cpu0

    def produce(self, mode: str, topic: str) -> Phase:
        """One producer phase; ``mode`` as ``producer.py`` takes it."""
        a = self.args
        extra = {"batch": ["--batch", a.batch], "async": ["--inflight", a.inflight]}.get(mode, [])
        proc = self.client(
            "producer.py",
            mode,
            self.broker.namesrv,
            topic,
            f"P_{topic}",
            a.n,
            a.size,
            "--timeout-s",
            a.phase_timeout,
            *extra,
        )
        result, cpu = self._measured_run(proc)
        label = {
            "sync": "C++ send_sync",
            "batch": f"C++ send_batch({a.batch})",
            "async": f"C++ send_async(<={a.inflight} in flight)",
        }[mode]
        return Phase(
            self.system,
            "produce",
            label,
            msgs=result["acked"],
            seconds=result["seconds"],
            broker_cpu_s=cpu,
            client_cpu_s=result["client_cpu_s"],
            peak_rss_kib=self.broker.sampler.take_peak(),
            errors=result["errors"] + (a.n - result["acked"]),
            note=result["first_error"] or "",
        )

    def consume(self, topic: str) -> Phase:
        """A clustering PushConsumer reads the N measured messages of ``topic``."""
        a = self.args
        proc = self.client(
            "consumer.py",
            "throughput",
            self.broker.namesrv,
            topic,
            f"C_{topic}",
            a.n,
            "--timeout-s",
            a.phase_timeout,
        )
        result, cpu = self._measured_run(proc)
        return Phase(
            self.system,
            "consume",
            "C++ PushConsumer",
            msgs=result["unique"],
            seconds=result["seconds"],
            broker_cpu_s=cpu,
            client_cpu_s=result["client_cpu_s"],
            peak_rss_kib=self.broker.sampler.take_peak(),
            errors=a.n - result["unique"],
            note="" if result["complete"] else "incomplete",
        )

    def latency(self, topic: str, mode: str) -> Phase:
        """Fixed-rate producer (``rate-sync`` / ``rate-async``) and a PushConsumer."""
        a = self.args
        count = int(a.latency_rate * a.latency_seconds)
        producer = self.client(
            "producer.py",
            mode,
            self.broker.namesrv,
            topic,
            f"P_{topic}",
            count,
            a.size,
            "--rate",
            a.latency_rate,
            "--warmup-s",
            1.0,
            "--inflight",
            a.inflight,
            "--timeout-s",
            a.phase_timeout,
        )
        producer.expect("ready", 60)  # the topic exists now
        consumer = self.client(
            "consumer.py",
            "latency",
            self.broker.namesrv,
            topic,
            f"C_{topic}",
            count,
            "--timeout-s",
            a.phase_timeout,
        )
        consumer.expect("ready", 90)
        self.broker.sampler.take_peak()
        cpu0 = cpu_seconds(self.broker.pid)
        producer.send("go")
        sent = producer.expect("result", a.phase_timeout + 30)
        consumer.send(str(sent["acked"]))
        got = consumer.expect("result", a.phase_timeout + 30)
        cpu = cpu_seconds(self.broker.pid) - cpu0
        warm = int(a.latency_rate * 1.0)
        phase = Phase(
            self.system,
            "latency",
            f"C++ {mode.removeprefix('rate-')} @{a.latency_rate:g}/s",
            msgs=count,
            seconds=sent["seconds"],
            cpu_msgs=count + warm,
            broker_cpu_s=cpu,
            client_cpu_s=sent["client_cpu_s"],
            peak_rss_kib=self.broker.sampler.take_peak(),
            errors=sent["errors"] + (sent["acked"] - got["unique"]),
            note=(
                f"rate {sent['achieved_rate']:.0f}/s, received {got['unique']}/{count}"
                + ("" if got["complete"] else ", incomplete")
            ),
        )
        e2e, ack = percentiles(got["e2e_ns"]), percentiles(sent["ack_ns"])
        phase.latency = {
            **{f"e2e_{k}": v for k, v in e2e.items()},
            **{f"ack_{k}": v for k, v in ack.items()},
        }
        return phase


def run_orbitmq(
    args: argparse.Namespace, python: Path, workdir: Path, flush: str, say: Console
) -> tuple[list[Phase], dict[str, float]]:
    """Every phase against one fresh broker; the phases and its RSS figures (KiB)."""
    phases: list[Phase] = []
    with orbitmq(workdir, flush) as broker:
        runner = Runner(args, python, workdir / f"home-{flush}", broker)
        say.print(
            f"[{runner.system}] pid {broker.pid}, idle RSS {broker.idle_rss_kib} KiB, "
            f"idle CPU {broker.idle_cpu_pct:.1f}% of a core"
        )
        latency_mode = "rate-sync" if args.latency_sync else "rate-async"
        steps: list[tuple[str, str, Callable[[], Phase]]] = [
            ("produce", "C++ send_sync", lambda: runner.produce("sync", "BenchSync")),
            ("produce", "C++ send_batch", lambda: runner.produce("batch", "BenchBatch")),
            ("produce", "C++ send_async", lambda: runner.produce("async", "BenchAsync")),
            ("consume", "C++ PushConsumer", lambda: runner.consume("BenchSync")),
            ("latency", latency_mode, lambda: runner.latency("BenchLatency", latency_mode)),
        ]
        try:
            for phase, client, step in steps:
                try:
                    phases.append(step())
                except RuntimeError as exc:  # reported in the table, not hidden
                    phases.append(failed(runner.system, phase, client, exc))
                    runner.close_all()
                say.print(f"  {describe(phases[-1])}")
        finally:
            runner.close_all()
        rss = {
            "idle_kib": broker.idle_rss_kib,
            "hwm_kib": status_kib(broker.pid, "VmHWM"),
            "idle_cpu_pct": round(broker.idle_cpu_pct, 1),
        }
    return phases, rss


def failed(system: str, phase: str, client: str, exc: Exception) -> Phase:
    """A phase that did not complete, with the reason as its note."""
    return Phase(system, phase, client, 0, 0.0, 0.0, 0.0, errors=1, note=str(exc)[:300])


def describe(p: Phase) -> str:
    """One line about a phase, for the progress log."""
    text = (
        f"{p.phase:<8} {p.client:<32} {p.msgs:>7} msgs {p.msgs_per_s:>9,.0f} msg/s  "
        f"broker {p.us_per_msg(p.broker_cpu_s):6.0f} us/msg  "
        f"client {p.us_per_msg(p.client_cpu_s):6.0f} us/msg  errors {p.errors}"
    )
    if p.latency:
        text += f"  e2e p50/p99 {p.latency.get('e2e_p50_ms', 0):.2f}/"
        text += f"{p.latency.get('e2e_p99_ms', 0):.2f} ms"
    return text + (f"  ({p.note})" if p.note else "")


# ------------------------------------------------------------------------------- peers ---


def wait_for_peerbench(timeout_s: float, say: Console) -> bool:
    """Wait (bounded) for peerbench's virtualenv, which its setup script makes."""
    deadline = time.monotonic() + timeout_s
    while not PEERBENCH_PYTHON.exists():
        if time.monotonic() > deadline:
            return False
        say.print("waiting for /tmp/peerbench/venv (see /tmp/peerbench-setup.log) ...")
        time.sleep(10)
    return True


def run_peers(args: argparse.Namespace, workdir: Path, say: Console) -> tuple[list[Phase], str]:
    """peerbench for ``--peers`` with the same N, size and latency settings; its phases and
    its command line."""
    out = workdir / "peerbench.json"
    command = [
        str(PEERBENCH_PYTHON),
        "-m",
        "peerbench",
        "--peers",
        args.peers,
        "-n",
        str(args.n),
        "--sizes",
        str(args.size),
        "--latency-rate",
        str(int(args.latency_rate)),
        "--latency-seconds",
        str(args.latency_seconds),
        "--base-dir",
        str(workdir / "peerbench-data"),
        "--out",
        str(out),
    ]
    say.print(f"[peers] cd {PEERBENCH_DIR} && {shlex.join(command)}")
    log = workdir / "peerbench.log"
    with log.open("w") as log_file:
        try:
            subprocess.run(
                command,
                cwd=PEERBENCH_DIR,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                timeout=args.peer_timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            say.print(f"[peers] peerbench did not finish within {args.peer_timeout} s")
    say.print(log.read_text(errors="replace"))
    if not out.exists():
        return [], shlex.join(command)
    return peer_phases(json.loads(out.read_text())), shlex.join(command)


def peer_phases(doc: dict[str, Any]) -> list[Phase]:
    """peerbench's JSON as phases (its produce/consume CPU figures are for the whole phase)."""
    phases: list[Phase] = []
    batch, inflight = doc["meta"]["opts"]["batch"], doc["meta"]["opts"]["inflight"]
    for result in doc["results"]:
        name = result["peer"]
        if result.get("fatal"):
            phases.append(failed(name, "produce", "-", RuntimeError(result["fatal"])))
            continue
        for row in result["throughput"]:
            for key, client in (
                ("produce", f"Python, {batch}/batch x {inflight} in flight"),
                ("consume", f"Python, fetch {batch}"),
            ):
                r = row[key]
                phases.append(
                    Phase(
                        name,
                        key,
                        client,
                        msgs=r["msgs"],
                        seconds=r["seconds"],
                        broker_cpu_s=r["server_cpu_s"],
                        client_cpu_s=r["client_cpu_s"],
                        note=f"other load {100 * r['other_cpu_s'] / max(r['seconds'], 1e-9):.0f}%",
                    )
                )
        lat = result.get("latency")
        if lat:
            phase = Phase(
                name,
                "latency",
                f"Python @{lat['rate_target']}/s",
                msgs=lat["sent"],
                seconds=lat["sent"] / max(lat["achieved_rate"], 1e-9),
                broker_cpu_s=float("nan"),
                client_cpu_s=float("nan"),
                errors=lat["sent"] - lat["unique_received"] + lat["send_errors"],
                note=f"rate {lat['achieved_rate']:.0f}/s",
            )
            for prefix, key in (("e2e", "e2e"), ("ack", "produce_ack")):
                for stat in ("p50_ms", "p99_ms", "max_ms"):
                    if stat in lat[key]:
                        phase.latency[f"{prefix}_{stat}"] = lat[key][stat]
            phases.append(phase)
        phases.extend(
            failed(name, "error", "-", RuntimeError(e)) for e in result.get("errors") or []
        )
    return phases


# ------------------------------------------------------------------------------ report ---


def machine() -> dict[str, Any]:
    """CPU model, cores, load average, kernel, Python."""
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "loadavg": os.getloadavg(),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def table(phases: Sequence[Phase], rss: dict[str, dict[str, float]]) -> Table:
    """All systems' phases in one table."""
    t = Table(title="Produce / consume / latency, 1 run (broker CPU us/msg is the fair column)")
    for name, justify in (
        ("system", "left"),
        ("phase", "left"),
        ("client", "left"),
        ("msgs", "right"),
        ("msg/s", "right"),
        ("broker CPU us/msg", "right"),
        ("client CPU us/msg", "right"),
        ("e2e p50/p99 ms", "right"),
        ("ack p50/p99 ms", "right"),
        ("broker RSS MiB", "right"),
        ("errors / note", "left"),
    ):
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for p in phases:
        lat = p.latency
        e2e = f"{lat['e2e_p50_ms']:.2f}/{lat['e2e_p99_ms']:.2f}" if "e2e_p50_ms" in lat else ""
        ack = f"{lat['ack_p50_ms']:.2f}/{lat['ack_p99_ms']:.2f}" if "ack_p50_ms" in lat else ""
        broker_us = p.us_per_msg(p.broker_cpu_s)
        client_us = p.us_per_msg(p.client_cpu_s)
        mem = ""
        if p.peak_rss_kib:
            mem = f"peak {p.peak_rss_kib / 1024:.0f}"
        t.add_row(
            p.system,
            p.phase,
            p.client,
            f"{p.msgs}",
            f"{p.msgs_per_s:,.0f}" if p.msgs else "-",
            "-" if math.isnan(broker_us) else f"{broker_us:.0f}",
            "-" if math.isnan(client_us) else f"{client_us:.0f}",
            e2e,
            ack,
            mem,
            f"{p.errors}" + (f" {p.note}" if p.note else ""),
        )
    for system, figures in rss.items():
        t.add_row(
            system,
            "memory",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            f"idle {figures['idle_kib'] / 1024:.0f}, HWM {figures['hwm_kib'] / 1024:.0f}",
            f"idle CPU {figures['idle_cpu_pct']:.1f}% of a core",
        )
    return t


# -------------------------------------------------------------------------------- main ---


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=20000, help="messages per throughput phase")
    parser.add_argument("--size", type=int, default=1024, help="body size in bytes")
    parser.add_argument("--batch", type=int, default=64, help="messages per send_batch")
    parser.add_argument("--inflight", type=int, default=128, help="send_async in flight")
    parser.add_argument("--latency-rate", type=float, default=2000.0, help="msg/s")
    parser.add_argument("--latency-seconds", type=float, default=10.0)
    parser.add_argument(
        "--latency-sync",
        action="store_true",
        help="latency producer with send_sync (default send_async)",
    )
    parser.add_argument("--flush", default=",".join(FLUSH_MODES), help="flush modes to run")
    parser.add_argument("--phase-timeout", type=float, default=180.0, help="seconds per phase")
    parser.add_argument("--peers", default="redis-always,redis-everysec,nats-js")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--peer-timeout", type=float, default=900.0)
    parser.add_argument("--peer-venv-wait", type=float, default=600.0)
    parser.add_argument("--json", type=Path, help="result file (default benchmarks/results/)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run everything; print the table; 1 if any phase lost messages or failed."""
    args = parse_args(argv)
    say = Console(width=max(200, Console().width))
    command = shlex.join([sys.executable, *sys.argv]) if argv is None else shlex.join(argv)
    info = machine()
    started = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    say.print(f"command: {command}")
    say.print(
        f"machine: {info['cpu']}, {info['cores']} cores, load average "
        f"{' '.join(f'{x:.2f}' for x in info['loadavg'])} (before the run), "
        f"Linux {info['kernel']}, Python {info['python']}; started {started}"
    )

    def on_signal(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    python = compat_venv("cpp-cvs", CPP_CVS_REQUIREMENT)
    say.print(f"C++ client: {CPP_CVS_REQUIREMENT} (official C++ client 2.1.0) via {python}")
    phases: list[Phase] = []
    rss: dict[str, dict[str, float]] = {}
    peer_command = ""
    with tempfile.TemporaryDirectory(prefix="orbitmq-cppbench-") as tmp:
        workdir = Path(tmp)
        for flush in args.flush.split(","):
            try:
                got, figures = run_orbitmq(args, python, workdir, flush, say)
            except RuntimeError as exc:
                say.print(f"[OrbitMQ {flush}] FAILED: {exc}")
                phases.append(failed(f"OrbitMQ {flush}", "run", "-", exc))
                continue
            phases.extend(got)
            rss[f"OrbitMQ {flush}"] = figures
        if not args.skip_peers:
            if wait_for_peerbench(args.peer_venv_wait, say):
                got, peer_command = run_peers(args, workdir, say)
                phases.extend(got)
            else:
                say.print("peerbench's virtualenv never appeared: peers skipped")
    say.print()
    say.print(table(phases, rss))
    say.print(
        "OrbitMQ rows: the official C++ client 2.1.0 (rocketmq-python-cvs, ctypes), one "
        "client process per phase. Peer rows: peerbench with each peer's own Python client "
        "(the C++ client speaks only RocketMQ), pipelined. msg/s therefore compares clients "
        "as much as brokers; broker CPU us/msg does not depend on the client. Latency-phase "
        "broker CPU for OrbitMQ includes the 1 s warm-up; peerbench does not measure it."
    )
    doc = {
        "command": command,
        "peer_command": peer_command,
        "started": started,
        "machine": info,
        "args": {k: str(v) for k, v in vars(args).items()},
        "phases": [{**vars(p), "msgs_per_s": p.msgs_per_s} for p in phases],
        "rss_kib": rss,
    }
    out = args.json or RESULTS_DIR / f"cpp_client_bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2))
    say.print(f"JSON: {out}")
    return 1 if any(p.errors for p in phases) else 0


if __name__ == "__main__":
    sys.exit(main())
