"""Produce with the official C++ client (``rocketmq-python-cvs``) and time it.

Run with the compat virtualenv's Python:
``python producer.py MODE NAMESRV TOPIC GROUP COUNT SIZE [--batch B] [--inflight K]
[--rate R] [--warmup-s W] [--timeout-s T]``

MODE:

* ``sync``: ``send_sync``, one round trip per message.
* ``batch``: ``send_batch`` of ``--batch`` messages (one request per batch).
* ``async``: ``send_async`` with at most ``--inflight`` sends awaiting their callback.
* ``rate-sync`` / ``rate-async``: COUNT messages at ``--rate`` per second after ``--warmup-s``
  of warm-up at the same rate (bodies of kind ``w``, not measured); measured bodies (kind
  ``m``) carry their send time. Reports the send->ack latency of every measured message.

Before ``ready`` it sends one message (kind ``w``), so the route is known and the topic made.
The result line has ``sent``, ``acked``, ``errors``, ``seconds`` (first send to last ack),
``client_cpu_s``, and for rate modes ``ack_ns`` (a list) and ``achieved_rate``.
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

from client_common import body, emit, finish, start_watchdog, wait_go
from rocketmq.client import Message, Producer, SendStatus


def make(topic: str, raw: bytes) -> Message:
    """A message of ``topic`` with body ``raw``."""
    message = Message(topic)
    message.set_body(raw)
    return message


class AsyncSends:
    """``send_async`` with a bound on sends awaiting their callback; counts outcomes."""

    def __init__(self, producer: Producer, inflight: int) -> None:
        self.producer = producer
        self.slots = threading.BoundedSemaphore(inflight)
        self.inflight = inflight
        self.lock = threading.Lock()
        self.acked = 0
        self.errors: list[str] = []
        self.ack_ns: list[int] = []

    def send(self, message: Message, sent_ns: int | None, timeout_s: float) -> bool:
        """Start one send; False if no slot freed within ``timeout_s``."""
        if not self.slots.acquire(timeout=timeout_s):
            return False

        def on_success(result: Any) -> None:
            now = time.monotonic_ns()
            with self.lock:
                if result.status == SendStatus.OK:
                    self.acked += 1
                    if sent_ns is not None:
                        self.ack_ns.append(now - sent_ns)
                else:
                    self.errors.append(str(result.status))
            self.slots.release()

        def on_exception(exc: Exception) -> None:
            with self.lock:
                self.errors.append(repr(exc)[:200])
            self.slots.release()

        try:
            self.producer.send_async(message, on_success, on_exception)
        except Exception as exc:
            self.slots.release()
            with self.lock:
                self.errors.append(repr(exc)[:200])
        return True

    def drain(self, timeout_s: float) -> bool:
        """Wait (bounded) until no send awaits its callback."""
        deadline = time.monotonic() + timeout_s
        taken = 0
        while taken < self.inflight:
            if not self.slots.acquire(timeout=max(0.0, deadline - time.monotonic())):
                break
            taken += 1
        for _ in range(taken):
            self.slots.release()
        return taken == self.inflight


def run_throughput(args: argparse.Namespace, producer: Producer) -> dict[str, Any]:
    """Send COUNT messages as fast as MODE allows; the counts and the wall time."""
    errors: list[str] = []
    acked = 0
    start = time.monotonic()
    cpu0 = time.process_time()
    if args.mode == "sync":
        for i in range(args.count):
            try:
                result = producer.send_sync(make(args.topic, body("m", i, args.size)))
            except Exception as exc:
                errors.append(repr(exc)[:200])
                continue
            if result.status == SendStatus.OK:
                acked += 1
            else:
                errors.append(str(result.status))
    elif args.mode == "batch":
        for first in range(0, args.count, args.batch):
            last = min(args.count, first + args.batch)
            messages = [make(args.topic, body("m", i, args.size)) for i in range(first, last)]
            try:
                result = producer.send_batch(messages)
            except Exception as exc:
                errors.append(repr(exc)[:200])
                continue
            if result.status == SendStatus.OK:
                acked += len(messages)
            else:
                errors.append(str(result.status))
    else:  # async
        sends = AsyncSends(producer, args.inflight)
        for i in range(args.count):
            if not sends.send(make(args.topic, body("m", i, args.size)), None, args.timeout_s):
                errors.append("no send slot freed in time")
                break
        if not sends.drain(args.timeout_s):
            errors.append("callbacks still outstanding at the deadline")
        acked = sends.acked
        errors.extend(sends.errors)
    seconds = time.monotonic() - start
    return {
        "sent": args.count,
        "acked": acked,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "seconds": round(seconds, 4),
        "client_cpu_s": round(time.process_time() - cpu0, 3),
    }


def run_rate(args: argparse.Namespace, producer: Producer) -> dict[str, Any]:
    """Warm-up, then COUNT messages at a fixed rate; send->ack latency of each measured one."""
    warm = int(args.rate * args.warmup_s)
    total = warm + args.count
    sends = AsyncSends(producer, args.inflight) if args.mode == "rate-async" else None
    ack_ns: list[int] = []
    errors: list[str] = []
    start = time.monotonic()
    cpu0 = time.process_time()
    measured_start = start
    for i in range(total):
        due = start + i / args.rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        if i == warm:
            measured_start = time.monotonic()
        kind, seq = ("w", i) if i < warm else ("m", i - warm)
        sent_ns = time.monotonic_ns()
        message = make(args.topic, body(kind, seq, args.size, sent_ns))
        if sends is not None:
            if not sends.send(message, sent_ns if kind == "m" else None, args.timeout_s):
                errors.append("no send slot freed in time")
                break
            continue
        try:
            result = producer.send_sync(message)
        except Exception as exc:
            errors.append(repr(exc)[:200])
            continue
        if result.status != SendStatus.OK:
            errors.append(str(result.status))
        elif kind == "m":
            ack_ns.append(time.monotonic_ns() - sent_ns)
    produce_wall = time.monotonic() - measured_start
    if sends is not None:
        if not sends.drain(args.timeout_s):
            errors.append("callbacks still outstanding at the deadline")
        ack_ns = sends.ack_ns
        errors.extend(sends.errors)
    return {
        "sent": args.count,
        "acked": len(ack_ns),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "seconds": round(produce_wall, 4),
        "achieved_rate": round(args.count / max(produce_wall, 1e-9), 1),
        "client_cpu_s": round(time.process_time() - cpu0, 3),
        "ack_ns": ack_ns,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["sync", "batch", "async", "rate-sync", "rate-async"])
    parser.add_argument("namesrv")
    parser.add_argument("topic")
    parser.add_argument("group")
    parser.add_argument("count", type=int)
    parser.add_argument("size", type=int)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--inflight", type=int, default=128)
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--warmup-s", type=float, default=1.0)
    parser.add_argument("--timeout-s", type=float, default=120.0)
    args = parser.parse_args()
    start_watchdog(args.timeout_s + 60)
    producer = Producer(args.group, timeout=10_000)
    producer.set_namesrv_addr(args.namesrv)
    producer.start()
    first = producer.send_sync(make(args.topic, body("w", 0, args.size)))
    emit("ready", status=first.status.name)
    wait_go()
    if args.mode.startswith("rate"):
        result = run_rate(args, producer)
    else:
        result = run_throughput(args, producer)
    emit("result", mode=args.mode, **result)
    finish(0)


if __name__ == "__main__":
    main()
