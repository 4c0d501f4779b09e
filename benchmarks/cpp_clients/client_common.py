"""What the benchmark's C++ client scripts share: the line protocol with the parent, message
bodies, a watchdog.

The scripts run under the compat virtualenv's Python (``rocketmq-python-cvs``), not the
project's: they import nothing from OrbitMQ. Protocol: the script prints JSON lines on stdout;
``{"event": "ready"}`` once the client is started and warmed up, then it waits for one line on
stdin (the parent's go), works, prints ``{"event": "result", ...}`` and leaves with
``os._exit`` (the client library's destructors, and ``PushConsumer.shutdown()``, crash).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

#: Body header: a one-letter kind, the send time (``time.monotonic_ns``, system-wide on
#: Linux), the sequence number; padded to the message size with ``x``.
HEADER_LEN = 1 + 20 + 10


def emit(event: str, **fields: Any) -> None:
    """Print one JSON line for the parent."""
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def wait_go() -> str:
    """Block until the parent writes a line (the watchdog bounds the wait); return it."""
    return sys.stdin.readline().strip()


def start_watchdog(seconds: float) -> None:
    """Leave with status 4 after ``seconds`` whatever happens: nothing here waits forever."""

    def expire() -> None:
        emit("error", error=f"watchdog: still running after {seconds} s")
        os._exit(4)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


def body(kind: str, seq: int, size: int, sent_ns: int = 0) -> bytes:
    """A body of ``size`` bytes (at least the header) carrying kind, send time and seq."""
    head = f"{kind}{sent_ns:020d}{seq:010d}".encode()
    return head + b"x" * max(0, size - len(head))


def parse(raw: bytes) -> tuple[str, int, int]:
    """(kind, send time in ns, seq) of a body made by :func:`body`."""
    return chr(raw[0]), int(raw[1:21]), int(raw[21:HEADER_LEN])


def finish(status: int = 0) -> None:
    """Flush and leave at once, skipping the client library's destructors."""
    sys.stdout.flush()
    os._exit(status)
