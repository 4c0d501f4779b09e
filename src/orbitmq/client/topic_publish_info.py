"""What a producer knows about where it may send one topic: RocketMQ's TopicPublishInfo, and the
rotating ThreadLocalIndex that spreads sends over the queues."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterable, Mapping

from orbitmq.common import MessageQueue

_INT32_MASK = 0xFFFF_FFFF
_POSITIVE_MASK = 0x7FFF_FFFF


def _random_start() -> int:
    # Each producer (and each thread) starts at a random queue so that many producers that
    # start together do not all hit queue 0 first.
    return random.getrandbits(31)


class ThreadLocalIndex:
    """RocketMQ's ThreadLocalIndex: one counter per thread, starting at a random value and
    answering non-negative ints that wrap like Java's int. Safe from any thread (each thread
    sees its own counter)."""

    def __init__(self, random_start: Callable[[], int] = _random_start) -> None:
        self._random_start = random_start
        self._local = threading.local()

    def increment_and_get(self) -> int:
        """The next index of this thread's counter, in ``0 .. 2**31 - 1``."""
        index: int | None = getattr(self._local, "index", None)
        if index is None:
            index = abs(self._random_start())
        index = (index + 1) & _INT32_MASK
        self._local.index = index
        return index & _POSITIVE_MASK


class TopicPublishInfo:
    """Owns one topic's writable queues (in route order), the writable queue count of each
    broker, and the round-robin index that picks among them.

    Replaced as a whole when the route changes; safe from several threads (the index is per
    thread and the rest is read-only).
    """

    def __init__(
        self,
        message_queues: Iterable[MessageQueue],
        write_queue_nums: Mapping[str, int] | None = None,
        send_which_queue: ThreadLocalIndex | None = None,
        *,
        order_topic: bool = False,
    ) -> None:
        self.message_queues: tuple[MessageQueue, ...] = tuple(message_queues)
        # RocketMQ reads these from the route's writable QueueData; by default, the queues listed.
        if write_queue_nums is None:
            counts: dict[str, int] = {}
            for mq in self.message_queues:
                counts[mq.broker_name] = counts.get(mq.broker_name, 0) + 1
            write_queue_nums = counts
        self.write_queue_nums: Mapping[str, int] = dict(write_queue_nums)
        self.send_which_queue = send_which_queue or ThreadLocalIndex()
        self.order_topic = order_topic

    def ok(self) -> bool:
        """Whether there is any queue to send to."""
        return bool(self.message_queues)

    def select_one_message_queue(self, last_broker_name: str | None = None) -> MessageQueue:
        """The next queue round robin; with ``last_broker_name`` (the broker a failed attempt
        went to), the next queue on another broker if one exists within one lap."""
        if last_broker_name is not None:
            for _ in range(len(self.message_queues)):
                mq = self._next()
                if mq.broker_name != last_broker_name:
                    return mq
        return self._next()

    def queue_nums_of_broker(self, broker_name: str | None) -> int:
        """RocketMQ's getQueueIdByBroker (a misnomer): the broker's writable queue count, or -1
        if the broker does not take writes for this topic."""
        if broker_name is None:
            return -1
        return self.write_queue_nums.get(broker_name, -1)

    def _next(self) -> MessageQueue:
        if not self.message_queues:
            raise ValueError("topic has no message queue to select from")
        return self.message_queues[
            self.send_which_queue.increment_and_get() % len(self.message_queues)
        ]
