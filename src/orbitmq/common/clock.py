"""The clock seam: everything that reads the time takes a ``Clock``."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Two readings of the time; tests inject a clock they can move.

    ``now_ms`` is the wall clock (what is stored and shown: store timestamps, delivery times);
    ``monotonic`` measures intervals (deadlines, flush and persist periods, back-offs) and
    never goes back when an operator sets the wall clock.
    """

    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary start; never decreases."""
        ...


class SystemClock:
    """The machine's clocks. Stateless, safe from any thread."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()


SYSTEM_CLOCK = SystemClock()
