"""``BrokerStatsManager``: RocketMQ's per-key traffic counters and their minute, hour and day
windows (``StatsItemSet`` / ``StatsItem``), which VIEW_BROKER_STATS_DATA (315), mqadmin
statsAll and a group's consume rate read.

The stats names and keys are RocketMQ's: TOPIC_PUT_NUMS and TOPIC_PUT_SIZE by topic,
GROUP_GET_NUMS, GROUP_GET_SIZE and GROUP_GET_LATENCY by ``topic@group``, SNDBCK_PUT_NUMS by
``topic@group``, BROKER_PUT_NUMS and BROKER_GET_NUMS by the cluster's name.

Cost on the send and pull paths: one dict lookup and three or four integer additions per
request (not per message). The counters of one key are kept together in one ``Traffic``
record (calls, messages, bytes, latency), so TOPIC_PUT_NUMS and TOPIC_PUT_SIZE, or the three
GROUP_GET_* names, are views of the same record rather than separate tables to update; the
broker-wide BROKER_PUT_NUMS and BROKER_GET_NUMS are the sums of those records, taken when
sampled.

Sampling, as RocketMQ's: every 10 s each record is sampled into its minute window (7 samples,
one minute), every 10 min into its hour window (7 samples), every hour into its day window
(25 samples). A window's ``sum`` is the growth between its first and last sample.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Final

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.periodic import cancel_and_wait, run_every
from orbitmq.protocol.body import TOPIC_GROUP_SEPARATOR
from orbitmq.protocol.body.broker_stats import (
    BROKER_GET_NUMS,
    BROKER_PUT_NUMS,
    GROUP_GET_LATENCY,
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
    SNDBCK_PUT_NUMS,
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
)

#: A sample: (time ms, calls, messages, bytes, latency ms), cumulative.
Sample = tuple[int, int, int, int, int]
_CALLS, _NUMS, _SIZE, _LATENCY = 1, 2, 3, 4

SAMPLE_INTERVAL_S: Final = 10.0
#: Window lengths in samples and the period of each sample (RocketMQ's StatsItem).
_MINUTE: Final = (7, 10_000)
_HOUR: Final = (7, 600_000)
_DAY: Final = (25, 3_600_000)
#: Ticks of SAMPLE_INTERVAL_S between hour-window and day-window samples.
_TICKS_PER_HOUR_SAMPLE: Final = 60
_TICKS_PER_DAY_SAMPLE: Final = 360


class Traffic:
    """Cumulative counters of one key and their three windows of samples. Plain data,
    confined to the broker's event loop."""

    __slots__ = ("calls", "day", "hour", "latency_ms", "minute", "nums", "size")

    def __init__(self) -> None:
        self.calls = 0
        self.nums = 0
        self.size = 0
        self.latency_ms = 0
        self.minute: deque[Sample] = deque(maxlen=_MINUTE[0])
        self.hour: deque[Sample] = deque(maxlen=_HOUR[0])
        self.day: deque[Sample] = deque(maxlen=_DAY[0])

    def sample(self, window: deque[Sample], period_ms: int, now_ms: int) -> None:
        """Add the current counters to ``window``; an empty window first gets a zero sample
        one period back, as RocketMQ seeds it, so a new key's first window is not empty."""
        if not window:
            window.append((now_ms - period_ms, 0, 0, 0, 0))
        window.append((now_ms, self.calls, self.nums, self.size, self.latency_ms))


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    """A window of one counter: its growth, per second, per call, and the calls."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0
    times: int = 0


def _snapshot(window: deque[Sample], index: int, count_calls: bool) -> StatsSnapshot:
    if not window:
        return StatsSnapshot()
    first, last = window[0], window[-1]
    total = last[index] - first[index]
    span_ms = last[0] - first[0]
    calls = last[_CALLS] - first[_CALLS] if count_calls else 0
    return StatsSnapshot(
        sum=total,
        tps=total * 1000.0 / span_ms if span_ms > 0 else 0.0,
        avgpt=total / calls if calls > 0 else 0.0,
        times=calls,
    )


@dataclass(frozen=True, slots=True)
class StatsItem:
    """One counter (``index`` of a ``Traffic`` record) of one key, as RocketMQ's StatsItem
    reads it. The BROKER_* counters count no calls (RocketMQ adds to their value only), so
    their ``avgpt`` is 0 as in RocketMQ."""

    traffic: Traffic
    index: int
    count_calls: bool = True

    def stats_data_in_minute(self) -> StatsSnapshot:
        return _snapshot(self.traffic.minute, self.index, self.count_calls)

    def stats_data_in_hour(self) -> StatsSnapshot:
        return _snapshot(self.traffic.hour, self.index, self.count_calls)

    def stats_data_in_day(self) -> StatsSnapshot:
        return _snapshot(self.traffic.day, self.index, self.count_calls)


class BrokerStatsManager:
    """Owns the traffic records by key and the task that samples them.

    The ``on_*`` methods are the send, pull and send-back paths' hooks. Everything runs on the
    broker's event loop (the hooks, the sampling task and the readers): not thread-safe.
    """

    def __init__(self, cluster_name: str, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.cluster_name = cluster_name
        self._clock = clock
        self.topic_put: dict[str, Traffic] = {}
        # Keyed by (topic, group), which hashes two strings whose hashes are cached: no
        # "topic@group" string is built on the pull path.
        self.group_get: dict[tuple[str, str], Traffic] = {}
        self.send_back: dict[tuple[str, str], Traffic] = {}
        self.broker_put = Traffic()
        self.broker_get = Traffic()
        self._ticks = 0
        self._task: asyncio.Task[None] | None = None

    # -- the hot paths ---------------------------------------------------------------------

    def on_put(self, topic: str, nums: int, size: int) -> None:
        """A stored send (one call) of ``nums`` messages and ``size`` bytes."""
        traffic = self.topic_put.get(topic)
        if traffic is None:
            traffic = self.topic_put[topic] = Traffic()
        traffic.calls += 1
        traffic.nums += nums
        traffic.size += size

    def on_get(self, topic: str, group: str, nums: int, size: int, latency_ms: int) -> None:
        """A pull that found ``nums`` messages of ``size`` bytes, read in ``latency_ms``."""
        key = (topic, group)
        traffic = self.group_get.get(key)
        if traffic is None:
            traffic = self.group_get[key] = Traffic()
        traffic.calls += 1
        traffic.nums += nums
        traffic.size += size
        traffic.latency_ms += latency_ms

    def on_send_back(self, topic: str, group: str) -> None:
        """A message of ``topic`` sent back for a retry by ``group``."""
        key = (topic, group)
        traffic = self.send_back.get(key)
        if traffic is None:
            traffic = self.send_back[key] = Traffic()
        traffic.calls += 1
        traffic.nums += 1

    # -- reading ---------------------------------------------------------------------------

    def get_stats_item(self, stats_name: str, stats_key: str) -> StatsItem | None:
        """RocketMQ's ``getStatsItem``: None for an unknown name or a key never counted."""
        by_topic = {TOPIC_PUT_NUMS: _NUMS, TOPIC_PUT_SIZE: _SIZE}
        if stats_name in by_topic:
            traffic = self.topic_put.get(stats_key)
            return None if traffic is None else StatsItem(traffic, by_topic[stats_name])
        by_topic_and_group = {
            GROUP_GET_NUMS: (self.group_get, _NUMS),
            GROUP_GET_SIZE: (self.group_get, _SIZE),
            GROUP_GET_LATENCY: (self.group_get, _LATENCY),
            SNDBCK_PUT_NUMS: (self.send_back, _NUMS),
        }
        if stats_name in by_topic_and_group:
            table, index = by_topic_and_group[stats_name]
            # A topic has no '@' (RocketMQ's topic characters): the first one separates.
            topic, _, group = stats_key.partition(TOPIC_GROUP_SEPARATOR)
            traffic = table.get((topic, group))
            return None if traffic is None else StatsItem(traffic, index)
        if stats_key != self.cluster_name:
            return None
        if stats_name == BROKER_PUT_NUMS:
            return StatsItem(self.broker_put, _NUMS, count_calls=False)
        if stats_name == BROKER_GET_NUMS:
            return StatsItem(self.broker_get, _NUMS, count_calls=False)
        return None

    def tps_group_get_nums(self, group: str, topic: str) -> float:
        """Messages per second ``group`` pulled from ``topic`` over the last minute."""
        traffic = self.group_get.get((topic, group))
        return 0.0 if traffic is None else _snapshot(traffic.minute, _NUMS, True).tps

    def put_totals(self) -> tuple[int, int]:
        """Messages and bytes stored since the start, over every topic (RocketMQ sums its
        per-topic counters too; the send path then pays for one counter, not two)."""
        records = self.topic_put.values()
        return sum(t.nums for t in records), sum(t.size for t in records)

    def get_totals(self) -> tuple[int, int]:
        """Pulls that found messages, and the messages they took, over every key."""
        records = self.group_get.values()
        return sum(t.calls for t in records), sum(t.nums for t in records)

    # -- sampling --------------------------------------------------------------------------

    def _records(self) -> list[Traffic]:
        """Every record, the broker totals brought up to date first."""
        self.broker_put.nums = self.put_totals()[0]
        self.broker_get.nums = self.get_totals()[1]
        records = [self.broker_put, self.broker_get]
        for table in (self.topic_put, self.group_get, self.send_back):
            records.extend(table.values())
        return records

    def sampling_in_seconds(self) -> None:
        """The 10-second sample of every key (the minute windows)."""
        now = self._clock.now_ms()
        for traffic in self._records():
            traffic.sample(traffic.minute, _MINUTE[1], now)

    def sampling_in_minutes(self) -> None:
        """The 10-minute sample of every key (the hour windows)."""
        now = self._clock.now_ms()
        for traffic in self._records():
            traffic.sample(traffic.hour, _HOUR[1], now)

    def sampling_in_hour(self) -> None:
        """The hourly sample of every key (the day windows)."""
        now = self._clock.now_ms()
        for traffic in self._records():
            traffic.sample(traffic.day, _DAY[1], now)

    def _tick(self) -> None:
        self.sampling_in_seconds()
        self._ticks += 1
        if self._ticks % _TICKS_PER_HOUR_SAMPLE == 0:
            self.sampling_in_minutes()
        if self._ticks % _TICKS_PER_DAY_SAMPLE == 0:
            self.sampling_in_hour()

    async def start(self) -> None:
        """Take the first samples now and then every 10 s (RocketMQ starts its three
        schedules at once)."""
        if self._task is not None:
            return
        self.sampling_in_seconds()
        self.sampling_in_minutes()
        self.sampling_in_hour()
        self._task = asyncio.create_task(
            run_every(SAMPLE_INTERVAL_S, self._tick, "broker stats sampling"),
            name="BrokerStatsManager",
        )

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
