"""Exponential backoff with jitter for flow control, in gRPC's connection-backoff style.

When a broker answers SYSTEM_BUSY or the proxy throttles, the client waits before retrying;
growing the wait spreads load away from a struggling server, and the jitter keeps many clients
that were refused together from all coming back at the same instant.
"""

from __future__ import annotations

import random
from collections.abc import Callable

DEFAULT_INITIAL_BACKOFF_S = 1.0
DEFAULT_MULTIPLIER = 1.6
DEFAULT_JITTER = 0.2
DEFAULT_MAX_BACKOFF_S = 120.0


class Backoff:
    """Owns the current backoff of one retrying activity (one connection, one stream).

    ``next_delay()`` answers ``current ± jitter * current`` and then grows ``current`` by the
    multiplier up to the maximum; ``reset()`` after a success starts over. The jitter is
    applied to the capped value, as in gRPC, so a delay may exceed the maximum by up to the
    jitter fraction. Not safe from several threads: each activity keeps its own.
    """

    def __init__(
        self,
        *,
        initial_backoff_s: float = DEFAULT_INITIAL_BACKOFF_S,
        multiplier: float = DEFAULT_MULTIPLIER,
        jitter: float = DEFAULT_JITTER,
        max_backoff_s: float = DEFAULT_MAX_BACKOFF_S,
        uniform: Callable[[float, float], float] = random.uniform,
    ) -> None:
        if initial_backoff_s <= 0:
            raise ValueError(f"initial_backoff_s must be > 0, got {initial_backoff_s}")
        if multiplier < 1:
            raise ValueError(f"multiplier must be >= 1, got {multiplier}")
        if not 0 <= jitter < 1:
            raise ValueError(f"jitter must be in [0, 1), got {jitter}")
        if max_backoff_s < initial_backoff_s:
            raise ValueError(
                f"max_backoff_s must be >= initial_backoff_s ({initial_backoff_s}),"
                f" got {max_backoff_s}"
            )
        self.initial_backoff_s = initial_backoff_s
        self.multiplier = multiplier
        self.jitter = jitter
        self.max_backoff_s = max_backoff_s
        # A seam for tests: a seeded random.Random(...).uniform, or a fixed answer.
        self._uniform = uniform
        self._current_s = initial_backoff_s

    def next_delay(self) -> float:
        """Seconds to wait before the next attempt; each call lengthens the following one."""
        current = self._current_s
        self._current_s = min(current * self.multiplier, self.max_backoff_s)
        if self.jitter == 0:
            return current
        spread = self.jitter * current
        return current + self._uniform(-spread, spread)

    def reset(self) -> None:
        """Start over from the initial backoff (after an attempt succeeded)."""
        self._current_s = self.initial_backoff_s
