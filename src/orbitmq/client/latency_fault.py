"""The producer's latency fault strategy: RocketMQ's MQFaultStrategy and
LatencyFaultToleranceImpl.

After each send the producer reports how long the broker took; a slow or failed broker is
then avoided for a while that grows with the latency, so sends drift to healthy brokers.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from orbitmq.client.topic_publish_info import ThreadLocalIndex, TopicPublishInfo
from orbitmq.common import SYSTEM_CLOCK, Clock, MessageQueue

#: RocketMQ's latencyMax: latency thresholds, ms ...
DEFAULT_LATENCY_MAX_MS: tuple[int, ...] = (50, 100, 550, 1000, 2000, 3000, 15000)
#: ... and notAvailableDuration: how long a broker at or above each threshold is avoided, ms.
DEFAULT_NOT_AVAILABLE_DURATION_MS: tuple[int, ...] = (0, 0, 30000, 60000, 120000, 180000, 600000)
#: The latency RocketMQ assumes for a broker that failed outright (isolation), ms.
ISOLATION_LATENCY_MS = 30000


def _java_rotating_position(index: int, step: int, size: int) -> int:
    """RocketMQ's ``Math.abs(index++) % size`` with Java int overflow: past 2**31 - 1 the index
    goes negative, ``abs`` folds it back, and the one value ``abs`` cannot fold maps to 0."""
    value = (index + step + 2**31) % 2**32 - 2**31
    if value == -(2**31):
        return 0
    return abs(value) % size


@dataclass(slots=True)
class FaultItem:
    """One broker's last reported latency and the time it may be used again."""

    name: str
    current_latency_ms: int
    start_timestamp_ms: int

    def is_available(self, now_ms: int) -> bool:
        return now_ms >= self.start_timestamp_ms


class LatencyFaultTolerance:
    """RocketMQ's LatencyFaultToleranceImpl: owns the table of brokers with reported latency
    and when each becomes available again. Shared by all topics of one producer; safe from
    several threads."""

    def __init__(
        self, clock: Clock = SYSTEM_CLOCK, which_item_worst: ThreadLocalIndex | None = None
    ) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._items: dict[str, FaultItem] = {}
        self._which_item_worst = which_item_worst or ThreadLocalIndex()

    def update_fault_item(
        self, name: str, current_latency_ms: int, not_available_duration_ms: int
    ) -> None:
        """Record a latency; the broker is then unavailable for ``not_available_duration_ms``."""
        start = self._clock.now_ms() + not_available_duration_ms
        with self._lock:
            item = self._items.get(name)
            if item is None:
                self._items[name] = FaultItem(name, current_latency_ms, start)
            else:
                item.current_latency_ms = current_latency_ms
                item.start_timestamp_ms = start

    def is_available(self, name: str) -> bool:
        """Whether the broker may be used now; a broker never reported is available."""
        with self._lock:
            item = self._items.get(name)
        return item is None or item.is_available(self._clock.now_ms())

    def remove(self, name: str) -> None:
        """Forget the broker (it no longer takes this topic's writes)."""
        with self._lock:
            self._items.pop(name, None)

    def pick_one_at_least(self) -> str | None:
        """A least-bad broker: order the reported brokers available first, then by latency,
        then by when they come back, and rotate among the better half (just the best one
        when fewer than four are known). ``None`` when none is known."""
        now_ms = self._clock.now_ms()
        with self._lock:
            items = list(self._items.values())
        if not items:
            return None
        items.sort(
            key=lambda it: (
                not it.is_available(now_ms),
                it.current_latency_ms,
                it.start_timestamp_ms,
            )
        )
        half = len(items) // 2
        if half <= 0:
            return items[0].name
        return items[self._which_item_worst.increment_and_get() % half].name


class MQFaultStrategy:
    """RocketMQ's MQFaultStrategy: owns the latency thresholds, the avoidance durations and a
    LatencyFaultTolerance, and chooses the queue for each send. Safe from several threads.

    ``send_latency_fault_enable`` is off by default, as in RocketMQ: then latencies are not
    recorded and selection is round robin that only steps off the broker of a failed attempt.
    """

    def __init__(
        self,
        clock: Clock = SYSTEM_CLOCK,
        *,
        send_latency_fault_enable: bool = False,
        latency_max_ms: Sequence[int] = DEFAULT_LATENCY_MAX_MS,
        not_available_duration_ms: Sequence[int] = DEFAULT_NOT_AVAILABLE_DURATION_MS,
        latency_fault_tolerance: LatencyFaultTolerance | None = None,
    ) -> None:
        if len(latency_max_ms) != len(not_available_duration_ms):
            raise ValueError(
                f"latency_max_ms has {len(latency_max_ms)} entries but not_available_duration_ms"
                f" has {len(not_available_duration_ms)}; they must pair up"
            )
        self.send_latency_fault_enable = send_latency_fault_enable
        self.latency_max_ms = tuple(latency_max_ms)
        self.not_available_duration_ms = tuple(not_available_duration_ms)
        self.latency_fault_tolerance = latency_fault_tolerance or LatencyFaultTolerance(clock)

    def update_fault_item(self, broker_name: str, current_latency_ms: int, isolation: bool) -> None:
        """Report a send's latency; ``isolation`` means the send failed and the broker is avoided
        as if it had taken ``ISOLATION_LATENCY_MS`` (ten minutes with the defaults)."""
        if not self.send_latency_fault_enable:
            return
        duration = self.compute_not_available_duration(
            ISOLATION_LATENCY_MS if isolation else current_latency_ms
        )
        self.latency_fault_tolerance.update_fault_item(broker_name, current_latency_ms, duration)

    def compute_not_available_duration(self, current_latency_ms: int) -> int:
        """The avoidance duration of the highest threshold the latency reaches, else 0."""
        for latency_max, duration in zip(
            reversed(self.latency_max_ms), reversed(self.not_available_duration_ms), strict=True
        ):
            if current_latency_ms >= latency_max:
                return duration
        return 0

    def select_one_message_queue(
        self, tp_info: TopicPublishInfo, last_broker_name: str | None
    ) -> MessageQueue:
        """The queue for the next send attempt of one message."""
        if not self.send_latency_fault_enable:
            return tp_info.select_one_message_queue(last_broker_name)
        # RocketMQ 4.9.8 ignores last_broker_name here: availability alone decides.
        queues = tp_info.message_queues
        index = tp_info.send_which_queue.increment_and_get()
        for i in range(len(queues)):
            mq = queues[_java_rotating_position(index, i, len(queues))]
            if self.latency_fault_tolerance.is_available(mq.broker_name):
                return mq
        not_best_broker = self.latency_fault_tolerance.pick_one_at_least()
        write_queue_nums = tp_info.queue_nums_of_broker(not_best_broker)
        if write_queue_nums > 0:
            mq = tp_info.select_one_message_queue()
            if not_best_broker is None:
                return mq
            # A queue of the least-bad broker, numbered from the rotating index; RocketMQ
            # builds it rather than looking it up in the route's queue list.
            queue_id = tp_info.send_which_queue.increment_and_get() % write_queue_nums
            return MessageQueue(mq.topic, not_best_broker, queue_id)
        if not_best_broker is not None:
            # The table is shared by all topics: the least-bad broker may not serve this one, so
            # it is dropped and plain round robin decides.
            self.latency_fault_tolerance.remove(not_best_broker)
        return tp_info.select_one_message_queue()
