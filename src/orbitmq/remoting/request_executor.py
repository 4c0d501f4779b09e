"""``RequestExecutor``: RocketMQ's per-processor thread pool and its bounded queue, for tasks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from orbitmq.common.errors import ConfigError

T = TypeVar("T")

#: RocketMQ's largest processor queue (sendThreadPoolQueueCapacity, 10000): the default bound
#: where RocketMQ would use an unbounded queue (its publicExecutor).
DEFAULT_CAPACITY: Final = 10_000
#: RocketMQ's BrokerFastFailure remarks, kept byte for byte (operators grep for them): a
#: request that waited too long in its queue, and one cleared because the page cache is busy.
TIMEOUT_CLEAN_QUEUE_REMARK: Final = (
    "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, "
    "period in queue: {waited_ms}ms, size of queue: {queue_size}"
)
PCBUSY_CLEAN_QUEUE_REMARK: Final = (
    "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, "
    "period in queue: {waited_ms}ms, size of queue: {queue_size}"
)


class RequestExecutor:
    """Owns the admission count of the request tasks of the codes it serves.

    At most ``capacity`` requests are admitted and not yet finished (running or waiting to
    run); a request beyond that is refused, and the transport answers SYSTEM_BUSY, so memory
    stays bounded however fast requests arrive. Of the admitted, at most ``concurrency`` run
    at once (None: all of them), like the threads of RocketMQ's pool: a broker that wants its
    sends in arrival order gives that executor ``concurrency=1``.

    ``max_wait_ms`` (read for each request; None: no limit) is how long a request may wait
    between its admission and its start; one that waited longer is answered SYSTEM_BUSY
    "[TIMEOUT_CLEAN_QUEUE]" instead of run, as RocketMQ's BrokerFastFailure clears its
    pools' queues (waitTimeMillsInSendQueue, waitTimeMillsInPullQueue).

    One executor may serve several codes and several servers (RocketMQ's
    sendMessageExecutor serves SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE, on both
    broker ports). Confined to one event loop; not thread-safe.
    """

    def __init__(
        self,
        name: str,
        capacity: int,
        concurrency: int | None = None,
        max_wait_ms: Callable[[], int | None] | None = None,
    ) -> None:
        if capacity < 1:
            raise ConfigError(f"RequestExecutor {name!r}: capacity {capacity} is below 1")
        if concurrency is not None and concurrency < 1:
            raise ConfigError(f"RequestExecutor {name!r}: concurrency {concurrency} is below 1")
        self.name = name
        self.capacity = capacity
        self.concurrency = concurrency
        self.max_wait_ms = max_wait_ms
        self._admitted = 0
        #: Requests refused because ``capacity`` were in (a counter for stats).
        self.refused = 0
        #: Requests answered busy for having waited over ``max_wait_ms`` (for stats).
        self.expired = 0
        self._refusal_logged_at = float("-inf")
        self._slots = asyncio.Semaphore(concurrency) if concurrency is not None else None

    def __repr__(self) -> str:
        return (
            f"RequestExecutor({self.name!r}, admitted={self._admitted}, "
            f"capacity={self.capacity}, concurrency={self.concurrency})"
        )

    @property
    def admitted(self) -> int:
        """Requests admitted and not yet finished."""
        return self._admitted

    def try_admit(self) -> bool:
        """Count one more request in, or return False when ``capacity`` are in already.
        Every True must be matched by one ``release``."""
        if self._admitted >= self.capacity:
            return False
        self._admitted += 1
        return True

    def release(self) -> None:
        self._admitted -= 1

    def expired_remark(self, waited_ms: float) -> str | None:
        """The answer to a request that waited ``waited_ms`` before its start, when that is
        over ``max_wait_ms`` (counted); None: run it."""
        limit = self.max_wait_ms() if self.max_wait_ms is not None else None
        if limit is None or waited_ms < limit:
            return None
        self.expired += 1
        return TIMEOUT_CLEAN_QUEUE_REMARK.format(
            waited_ms=int(waited_ms), queue_size=max(0, self._admitted - 1)
        )

    def note_refusal(self, now_s: float) -> bool:
        """Count a refused request; True at most once per 10 s, so overload is logged
        without flooding the log (RocketMQ samples the same warning)."""
        self.refused += 1
        if now_s - self._refusal_logged_at < 10.0:
            return False
        self._refusal_logged_at = now_s
        return True

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """Start ``work()`` once a concurrency slot is free and await it."""
        if self._slots is None:
            return await work()
        async with self._slots:
            return await work()
