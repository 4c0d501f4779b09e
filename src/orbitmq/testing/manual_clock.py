"""A Clock that moves only when told to."""

from __future__ import annotations

import threading
import time


class ManualClock:
    """Wall-clock milliseconds and a monotonic reading that tests set and advance. Thread-safe.

    ``advance`` moves both readings; ``set`` moves the wall clock only (an operator setting
    the time), so the monotonic reading never goes back.
    """

    def __init__(self, now_ms: int | None = None):
        self._lock = threading.Lock()
        self._now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        #: Whole milliseconds, so that many small advances add up exactly.
        self._monotonic_ms = 0

    def now_ms(self) -> int:
        with self._lock:
            return self._now_ms

    def monotonic(self) -> float:
        with self._lock:
            return self._monotonic_ms / 1000

    def set(self, now_ms: int) -> None:
        with self._lock:
            self._now_ms = now_ms

    def advance(self, delta_ms: int) -> int:
        with self._lock:
            self._now_ms += delta_ms
            self._monotonic_ms += delta_ms
            return self._now_ms
