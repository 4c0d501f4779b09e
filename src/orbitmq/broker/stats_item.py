"""``StatsItem``: one counter of a broker statistic, sampled into the last minute, hour and day
(RocketMQ's StatsItem, as VIEW_BROKER_STATS_DATA reads it).

The counter holds a running value (messages, for GROUP_GET_NUMS) and how many times it was
added to. A sample records both with its time; each window keeps a few samples (the minute:
7 taken every 10 s, the hour: 7 every 10 min, the day: 25 every hour) and reports the
difference between its first and last one. A window's first sample is preceded by a zero
sample one period earlier, so a counter sampled once already reports what it counted."""

from __future__ import annotations

import threading
from collections import deque
from typing import Final, NamedTuple

from orbitmq.protocol import BrokerStatsItem

#: How often each window is sampled, ms, and how many samples it keeps.
MINUTE_SAMPLE_PERIOD_MS: Final = 10_000
HOUR_SAMPLE_PERIOD_MS: Final = 10 * 60_000
DAY_SAMPLE_PERIOD_MS: Final = 60 * 60_000
_MINUTE_SAMPLES: Final = 7
_HOUR_SAMPLES: Final = 7
_DAY_SAMPLES: Final = 25


class CallSnapshot(NamedTuple):
    """The counter at one sample."""

    timestamp_ms: int
    times: int
    value: int


class _Window:
    """The samples of one window (not thread safe: its StatsItem locks)."""

    def __init__(self, period_ms: int, max_samples: int) -> None:
        self.period_ms = period_ms
        self.samples: deque[CallSnapshot] = deque(maxlen=max_samples)

    def sample(self, snapshot: CallSnapshot) -> None:
        if not self.samples:
            self.samples.append(CallSnapshot(snapshot.timestamp_ms - self.period_ms, 0, 0))
        self.samples.append(snapshot)

    def stats(self) -> BrokerStatsItem:
        """What was added between the first and last sample, per second and per add."""
        if not self.samples:
            return BrokerStatsItem()
        first, last = self.samples[0], self.samples[-1]
        total = last.value - first.value
        span_ms = last.timestamp_ms - first.timestamp_ms
        times = last.times - first.times
        return BrokerStatsItem(
            sum=total,
            tps=total * 1000.0 / span_ms if span_ms > 0 else 0.0,
            avgpt=total / times if times > 0 else 0.0,
        )


class StatsItem:
    """Owns one counter and its three windows. Safe from several threads (one lock): a
    broker's event loop adds and samples while an admin request or a test thread reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = 0
        self._times = 0
        self._minute = _Window(MINUTE_SAMPLE_PERIOD_MS, _MINUTE_SAMPLES)
        self._hour = _Window(HOUR_SAMPLE_PERIOD_MS, _HOUR_SAMPLES)
        self._day = _Window(DAY_SAMPLE_PERIOD_MS, _DAY_SAMPLES)

    def add_value(self, inc_value: int, inc_times: int) -> None:
        with self._lock:
            self._value += inc_value
            self._times += inc_times

    def sampling_in_seconds(self, now_ms: int) -> None:
        self._sample(self._minute, now_ms)

    def sampling_in_minutes(self, now_ms: int) -> None:
        self._sample(self._hour, now_ms)

    def sampling_in_hour(self, now_ms: int) -> None:
        self._sample(self._day, now_ms)

    def _sample(self, window: _Window, now_ms: int) -> None:
        with self._lock:
            window.sample(CallSnapshot(now_ms, self._times, self._value))

    def stats_data_in_minute(self) -> BrokerStatsItem:
        with self._lock:
            return self._minute.stats()

    def stats_data_in_hour(self) -> BrokerStatsItem:
        with self._lock:
            return self._hour.stats()

    def stats_data_in_day(self) -> BrokerStatsItem:
        with self._lock:
            return self._day.stats()
