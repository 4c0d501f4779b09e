"""Consume with the official C++ client's clustering ``PushConsumer`` and time it.

Run with the compat virtualenv's Python:
``python consumer.py MODE NAMESRV TOPIC GROUP COUNT [--threads K] [--timeout-s T]``

MODE:

* ``throughput``: after the parent's go, start the consumer and wait until COUNT distinct
  measured bodies (kind ``m``) arrived; report the time from the first delivery to the last.
* ``latency``: start at once; ``ready`` after the first delivery (the queues are assigned and
  pulled). Record receive - send (``time.monotonic_ns``, system-wide on Linux) of every
  measured body. The parent's line on stdin is the number of measured messages to wait for
  (COUNT is only the upper bound used for sizing).

The result line has ``received`` (deliveries), ``unique`` (distinct measured seqs),
``seconds``, ``client_cpu_s`` and, for ``latency``, ``e2e_ns`` (a list). Ends with
``os._exit``: ``PushConsumer.shutdown()`` segfaults inside the client library.
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

from client_common import emit, finish, parse, start_watchdog, wait_go
from rocketmq.client import PushConsumer


class Tally:
    """Deliveries seen by the listener threads; sets ``done`` at the expected count."""

    def __init__(self, expected: int, keep_latency: bool) -> None:
        self.expected = expected
        self.keep_latency = keep_latency
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.first_delivery = threading.Event()
        self.seqs: set[int] = set()
        self.received = 0
        self.first: float | None = None
        self.last: float | None = None
        self.e2e_ns: list[int] = []

    def on_message(self, message: Any) -> None:
        """The listener: parse the body header, count, note times."""
        now_ns = time.monotonic_ns()
        kind, sent_ns, seq = parse(message.body)
        with self.lock:
            self.received += 1
            self.first_delivery.set()
            if kind != "m" or seq in self.seqs:
                return
            self.seqs.add(seq)
            now = time.monotonic()
            if self.first is None:
                self.first = now
            self.last = now
            if self.keep_latency:
                self.e2e_ns.append(now_ns - sent_ns)
            if len(self.seqs) >= self.expected:
                self.done.set()

    def expect(self, count: int) -> None:
        """Set the number of measured messages to wait for."""
        with self.lock:
            self.expected = count
            if len(self.seqs) >= count:
                self.done.set()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["throughput", "latency"])
    parser.add_argument("namesrv")
    parser.add_argument("topic")
    parser.add_argument("group")
    parser.add_argument("count", type=int)
    parser.add_argument("--threads", type=int, default=0, help="0: the library's default")
    parser.add_argument("--timeout-s", type=float, default=120.0)
    args = parser.parse_args()
    start_watchdog(args.timeout_s + 60)
    latency = args.mode == "latency"
    tally = Tally(args.count, keep_latency=latency)
    consumer = PushConsumer(args.group)
    consumer.set_namesrv_addr(args.namesrv)
    if args.threads:
        consumer.set_thread_count(args.threads)
    consumer.subscribe(args.topic, tally.on_message)
    if latency:
        consumer.start()
        if not tally.first_delivery.wait(60):
            emit("error", error="no delivery within 60 s of start")
            finish(3)
        emit("ready")
        tally.expect(int(wait_go()))
    else:
        emit("ready")
        wait_go()
        consumer.start()
    cpu0 = time.process_time()
    ok = tally.done.wait(args.timeout_s)
    with tally.lock:
        seconds = (tally.last or 0.0) - (tally.first or 0.0)
        result: dict[str, Any] = {
            "mode": args.mode,
            "complete": ok,
            "received": tally.received,
            "unique": len(tally.seqs),
            "seconds": round(seconds, 4),
            "client_cpu_s": round(time.process_time() - cpu0, 3),
        }
        if latency:
            result["e2e_ns"] = list(tally.e2e_ns)
    emit("result", **result)
    finish(0 if ok else 3)


if __name__ == "__main__":
    main()
