"""``GroupGetStats``: how many messages this broker's pulls handed out to each consumer group:
RocketMQ's BrokerStatsManager GROUP_GET_NUMS, keyed ``topic@group``, with its minute, hour
and day windows (``StatsItem``) that VIEW_BROKER_STATS_DATA answers from, plus running
totals by queue, so that a test or tool can tell which broker of a group, the master or a
slave, served a group's pulls."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import NamedTuple

from orbitmq.broker.stats_item import (
    DAY_SAMPLE_PERIOD_MS,
    HOUR_SAMPLE_PERIOD_MS,
    MINUTE_SAMPLE_PERIOD_MS,
    StatsItem,
)
from orbitmq.common import SYSTEM_CLOCK, Clock
from orbitmq.common.periodic import cancel_and_wait, run_every
from orbitmq.protocol import GROUP_GET_NUMS, group_get_nums_key


class GroupGetKey(NamedTuple):
    """One running total's key."""

    group: str
    topic: str
    queue_id: int


class GroupGetStats:
    """Owns the counters and the tasks that sample them (``start`` / ``stop``, on the
    broker's event loop). Counting and reading are safe from several threads (one lock):
    the pull processor adds on the broker's event loop while a test thread may read."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._nums: Counter[GroupGetKey] = Counter()
        self._items: dict[str, StatsItem] = {}
        self._tasks: list[asyncio.Task[None]] = []

    def inc_group_get_nums(self, group: str, topic: str, queue_id: int, count: int) -> None:
        """One pull of ``group`` handed out ``count`` messages of ``topic``'s queue."""
        if count <= 0:
            return
        key = group_get_nums_key(topic, group)
        with self._lock:
            self._nums[GroupGetKey(group, topic, queue_id)] += count
            item = self._items.get(key)
            if item is None:
                item = self._items[key] = StatsItem()
        item.add_value(count, 1)

    def group_get_nums(self, group: str, topic: str, queue_id: int | None = None) -> int:
        """Messages ``group`` pulled from ``topic`` here (from one queue, or all of them)."""
        with self._lock:
            return sum(
                n
                for key, n in self._nums.items()
                if key.group == group
                and key.topic == topic
                and (queue_id is None or key.queue_id == queue_id)
            )

    def stats_item(self, key: str) -> StatsItem | None:
        """The counter of ``key`` (``topic@group``); None before the group pulled any."""
        with self._lock:
            return self._items.get(key)

    def sampling_in_seconds(self) -> None:
        """Sample every counter's minute window (every 10 s once started)."""
        for item in self._all_items():
            item.sampling_in_seconds(self._clock.now_ms())

    def sampling_in_minutes(self) -> None:
        for item in self._all_items():
            item.sampling_in_minutes(self._clock.now_ms())

    def sampling_in_hour(self) -> None:
        for item in self._all_items():
            item.sampling_in_hour(self._clock.now_ms())

    def _all_items(self) -> list[StatsItem]:
        with self._lock:
            return list(self._items.values())

    async def start(self) -> None:
        if self._tasks:
            return
        for period_ms, job in (
            (MINUTE_SAMPLE_PERIOD_MS, self.sampling_in_seconds),
            (HOUR_SAMPLE_PERIOD_MS, self.sampling_in_minutes),
            (DAY_SAMPLE_PERIOD_MS, self.sampling_in_hour),
        ):
            self._tasks.append(
                asyncio.create_task(run_every(period_ms / 1000, job, f"{GROUP_GET_NUMS} sampling"))
            )

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            await cancel_and_wait(task)
