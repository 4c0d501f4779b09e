"""``GroupGetStats``: how many messages this broker's pulls handed out, per consumer group,
topic and queue: RocketMQ's BrokerStatsManager GROUP_GET_NUMS ("topic@group"), kept here as
plain running totals (no per-minute sampling) and split by queue, so that a test or tool can
tell which broker of a group, the master or a slave, served a group's pulls."""

from __future__ import annotations

import threading
from collections import Counter
from typing import NamedTuple


class GroupGetKey(NamedTuple):
    """One counter's key."""

    group: str
    topic: str
    queue_id: int


class GroupGetStats:
    """Owns the totals. Safe from several threads (one lock); the pull processor adds on the
    broker's event loop while a test thread may read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nums: Counter[GroupGetKey] = Counter()

    def inc_group_get_nums(self, group: str, topic: str, queue_id: int, count: int) -> None:
        """``count`` messages of ``topic``'s queue ``queue_id`` were pulled by ``group``."""
        if count <= 0:
            return
        with self._lock:
            self._nums[GroupGetKey(group, topic, queue_id)] += count

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
