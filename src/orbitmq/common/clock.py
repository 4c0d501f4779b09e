"""The clock seam: everything that reads the time takes a ``Clock``."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """A source of wall-clock milliseconds; tests inject one they can move."""

    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch."""
        ...


class SystemClock:
    """The machine's wall clock. Stateless, safe from any thread."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


SYSTEM_CLOCK = SystemClock()
