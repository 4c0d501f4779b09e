"""Where the time goes in peerbench's OrbitMQ workload: py-spy samples the broker and this
client process during the produce phase and during the consume phase, and the top functions
by self time (the leaf frame of each sample) are printed with their share of the samples.

The workload is peerbench's own (``produce_phase`` with ``--batch`` 500 and ``--inflight``
4, then a group consume), run through ``peerbench_orbitmq``'s adapter against a broker that
the adapter's server class starts (loopback, fresh data directory, stopped by PID).

``--phases ...,paced`` adds the shape of peerbench's latency phase: one message per send at
``--paced-rate`` messages a second while a PushConsumer in this process receives them. It
prints the broker's CPU per message split by thread (user and system time from
``/proc/PID/task``), which is where a low-rate, one-message-per-request load spends.
``pacing`` runs the same loop without sending: the client CPU of the pacing alone.

    python3 -m venv /tmp/pyspy-venv && /tmp/pyspy-venv/bin/pip install py-spy
    PYTHONPATH=/work/main/benchmarks:/work/main/src:/work/shared/peerbench \\
        /tmp/peerbench/venv/bin/python benchmarks/profile_peerbench_orbitmq.py \\
        --py-spy /tmp/pyspy-venv/bin/py-spy -n 200000 --flush SYNC_FLUSH
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from peerbench import servers as srv
from peerbench.bench import produce_phase

import peerbench_orbitmq as po

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>.*?)(?::(?P<line>\d+))?\)$")


class Sampler:
    """``py-spy record -f raw`` on one PID until stopped (SIGINT makes it write the file)."""

    def __init__(self, py_spy: str, pid: int, out: Path, rate: int, native: bool) -> None:
        self.out = out
        argv = [py_spy, "record", "--pid", str(pid), "-f", "raw", "-o", str(out)]
        # --native needs the process stopped while its C stack is read, so it cannot be
        # combined with --nonblocking; it shows what the event loop does outside Python.
        argv += ["-r", str(rate), "--threads", "--native" if native else "--nonblocking"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def _short(frame: str) -> str:
    m = _FRAME.match(frame.strip())
    if not m:
        return frame.strip()
    path = m.group("file")
    for marker in ("/src/", "/site-packages/", "/lib/python3.11/", "/peerbench/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{m.group('func')} ({path})"


def top_self(raw: Path, limit: int) -> str:
    """Self-time table from py-spy's collapsed stacks: the leaf frame of each sample."""
    leaf: collections.Counter[str] = collections.Counter()
    threads: collections.Counter[str] = collections.Counter()
    total = 0
    if not raw.exists():
        return f"(no samples: {raw} missing)"
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        total += n
        threads[frames[0].strip()] += n
        leaf[_short(frames[-1])] += n
    if not total:
        return "(no samples)"
    lines = [f"{total} samples (non-idle)"]
    lines += [f"  thread {t}: {100 * c / total:.1f}%" for t, c in threads.most_common(6)]
    lines += [f"  {100 * c / total:5.1f}%  {f}" for f, c in leaf.most_common(limit)]
    return "\n".join(lines)


def thread_cpu(pid: int) -> dict[str, tuple[str, float, float]]:
    """Thread id -> (name, user s, system s) of every thread of ``pid``, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    threads = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended
        threads[task.name] = (name, int(fields[11]) / tick, int(fields[12]) / tick)
    return threads


async def paced(
    adapter: po.OrbitMQSync, topic: str, args: argparse.Namespace, *, send: bool = True
) -> int:
    """Single-message sends at ``args.paced_rate``/s for ``args.paced_seconds`` while a
    PushConsumer of this process receives them; returns the number received.

    Without ``send`` only the pacing loop runs (no sends, no consumer): peerbench's latency
    producer paces with the same ``asyncio.sleep`` of under a millisecond, which uvloop's
    millisecond timers turn into a busy loop; this shows what that loop alone costs."""
    total = int(args.paced_rate * args.paced_seconds)
    consumer = None
    if send:
        await adapter.reset(topic)  # an empty topic and a new group: only these are received
        consumer = adapter.consume(topic, total, None, time.monotonic() + 60)
        consumer = asyncio.ensure_future(consumer)
        await asyncio.sleep(1.0)  # the consumer's rebalance and first pulls
    payload = b"x" * args.size
    sends: set[asyncio.Future[None]] = set()
    start = time.monotonic()
    sent = 0
    while sent < total:  # peerbench's latency loop: send what is due, sleep until the next
        due = min(total, int((time.monotonic() - start) * args.paced_rate) + 1)
        if due > sent:
            if send:
                request = adapter.produce_batch(topic, [payload] * (due - sent))
                request = asyncio.ensure_future(request)
                sends.add(request)
                request.add_done_callback(sends.discard)
            sent = due
        await asyncio.sleep(max(0.0, start + sent / args.paced_rate - time.monotonic()))
    if sends:
        await asyncio.wait(sends)
    return total if consumer is None else await consumer


def print_thread_cpu(pid: int, before: dict, after: dict, count: int) -> None:
    for tid, (comm, user, system) in sorted(after.items()):
        # Python does not name its threads for the OS: the main thread is the one whose id
        # is the process id; the store's services follow in their start order.
        name = "main" if tid == str(pid) else comm
        _, user0, system0 = before.get(tid, (comm, 0.0, 0.0))
        used = (user - user0, system - system0)
        if sum(used) >= 0.01:
            print(
                f"  broker thread {tid} ({name}): user {used[0] / count * 1e6:.0f} "
                f"+ system {used[1] / count * 1e6:.0f} us/msg"
            )


async def workload(args: argparse.Namespace, server_pid: int, out_dir: Path) -> dict:
    opts = {"host": srv.HOST, "ports": dict(srv.DEFAULT_PORTS), "batch": args.batch}
    adapter = po.OrbitMQSync(opts)
    await adapter.connect()
    topic = "pb-profile"
    await adapter.reset(topic)
    await produce_phase(adapter, topic, 2 * args.batch, args.size, args.batch, 1, 1e12)
    await adapter.consume(topic, 2 * args.batch, None, time.monotonic() + 30)
    results = {}
    for phase in args.phases.split(","):
        samplers = []
        if args.py_spy:
            samplers = [
                Sampler(
                    args.py_spy, server_pid, out_dir / f"broker-{phase}.txt", args.rate, args.native
                ),
                Sampler(
                    args.py_spy,
                    os.getpid(),
                    out_dir / f"client-{phase}.txt",
                    args.rate,
                    args.native,
                ),
            ]
            await asyncio.sleep(1.0)  # let py-spy attach
        t0, c0 = time.perf_counter(), time.process_time()
        s0 = srv.process_cpu_seconds([server_pid])
        threads0 = thread_cpu(server_pid)
        if phase in ("paced", "pacing"):
            count = await paced(adapter, topic, args, send=phase == "paced")
        elif phase == "produce":
            count = await produce_phase(
                adapter, topic, args.n, args.size, args.batch, args.inflight, time.monotonic() + 300
            )
        else:
            count = await adapter.consume(topic, args.n, None, time.monotonic() + 300)
        wall = time.perf_counter() - t0
        cpu = {"client": time.process_time() - c0, "server": srv.process_cpu_seconds([server_pid])}
        cpu["server"] -= s0
        for s in samplers:
            s.stop()
        results[phase] = (count, wall, cpu)
        print(
            f"{phase}: {count} msgs in {wall:.2f} s = {count / wall:,.0f} msg/s; "
            f"server {cpu['server'] / count * 1e6:.1f} us/msg, "
            f"client {cpu['client'] / count * 1e6:.1f} us/msg"
            + (" (under py-spy sampling)" if samplers else "")
        )
        print_thread_cpu(server_pid, threads0, thread_cpu(server_pid), count)
    await adapter.reset(topic)
    await adapter.close()
    return results


def rss_mib(pid: int) -> str:
    """RSS now and the peak (VmHWM) of ``pid``, from /proc."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                fields[key] = int(value.split()[0]) / 1024
    return (
        f"RSS {fields.get('VmRSS', 0):.1f} MiB (anonymous {fields.get('RssAnon', 0):.1f}, "
        f"file-backed {fields.get('RssFile', 0):.1f}), VmHWM {fields.get('VmHWM', 0):.1f} MiB"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--inflight", type=int, default=4)
    ap.add_argument(
        "--phases", default="produce,consume", help="of produce, consume, paced, pacing"
    )
    ap.add_argument("--paced-rate", type=int, default=2000, help="paced phase: messages/s")
    ap.add_argument("--paced-seconds", type=float, default=8.0)
    ap.add_argument("--flush", choices=["SYNC_FLUSH", "ASYNC_FLUSH"], default="SYNC_FLUSH")
    ap.add_argument("--py-spy", help="path of the py-spy executable (none: no profile)")
    ap.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    ap.add_argument("--native", action="store_true", help="py-spy: include C frames")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--out", default="/tmp/peerbench/orbitmq-profile")
    args = ap.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    cls = po.OrbitMQSyncServer if args.flush == "SYNC_FLUSH" else po.OrbitMQAsyncServer
    server = cls(str(out_dir / "data"), dict(srv.DEFAULT_PORTS))
    server.start()
    try:
        time.sleep(2.0)
        print(f"broker idle 2 s after start: {rss_mib(server.main_pid())}")
        try:
            import uvloop  # noqa: PLC0415 - optional, as in peerbench

            uvloop.install()
        except ImportError:
            pass
        asyncio.run(workload(args, server.main_pid(), out_dir))
        time.sleep(2.0)
        print(f"broker idle 2 s after the phases: {rss_mib(server.main_pid())}")
        # mappedPageReleaseIdleInterval (10 s by default) after the last put or read, the
        # store drops its mapped pages from the process (within a quarter interval more).
        time.sleep(11.0)
        print(f"broker idle 13 s after the phases: {rss_mib(server.main_pid())}")
    finally:
        server.stop()
    if args.py_spy:
        for phase in args.phases.split(","):
            for who in ("broker", "client"):
                print(f"\n== {who}, {phase} phase: top {args.top} by self time ==")
                print(top_self(out_dir / f"{who}-{phase}.txt", args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
