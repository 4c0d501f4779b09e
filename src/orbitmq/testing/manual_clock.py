"""A Clock that moves only when told to."""

from __future__ import annotations

import threading
import time


class ManualClock:
    """Wall-clock milliseconds that tests set and advance. Thread-safe."""

    def __init__(self, now_ms: int | None = None):
        self._lock = threading.Lock()
        self._now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms

    def now_ms(self) -> int:
        with self._lock:
            return self._now_ms

    def set(self, now_ms: int) -> None:
        with self._lock:
            self._now_ms = now_ms

    def advance(self, delta_ms: int) -> int:
        with self._lock:
            self._now_ms += delta_ms
            return self._now_ms
