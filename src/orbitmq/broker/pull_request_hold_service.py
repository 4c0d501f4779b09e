"""``PullRequestHoldService``: pulls that found nothing, held until a message arrives for
their queue or their suspend time runs out (RocketMQ's long polling:
``PullRequestHoldService`` and ``ManyPullRequest``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from orbitmq.common.periodic import cancel_and_wait, run_every
from orbitmq.filter import SubscriptionData
from orbitmq.protocol import RemotingCommand
from orbitmq.remoting import ChannelContext
from orbitmq.store import MessageFilter, MessageStore

log = logging.getLogger(__name__)

#: How often held requests are re-checked in long-polling mode (RocketMQ: 5 s).
LONG_POLLING_CHECK_INTERVAL_MS: Final = 5000


@dataclass(eq=False, slots=True)
class PullRequest:
    """One held pull: the request to run again, its connection, and until when it waits
    (``suspend_timestamp_s`` is the loop's clock)."""

    ctx: ChannelContext
    request: RemotingCommand
    timeout_ms: int
    suspend_timestamp_s: float
    pull_from_this_offset: int
    subscription: SubscriptionData | None
    message_filter: MessageFilter
    deadline: asyncio.TimerHandle | None = field(default=None, repr=False)

    @property
    def deadline_s(self) -> float:
        return self.suspend_timestamp_s + self.timeout_ms / 1000


#: Runs a held request again and writes its answer (``executeRequestWhenWakeup``).
Wakeup = Callable[[PullRequest], None]


class PullRequestHoldService:
    """Owns the held pulls, by (topic, queue id).

    A held pull is run again (through ``wakeup``) as soon as the store reports a message
    past its offset in its queue whose tag code its filter accepts (a message for other tags
    leaves it waiting, as in RocketMQ), when its suspend time is over (a timer per request), and
    at the latest on the periodic check (every 5 s with long polling, else every
    ``short_polling_time_ms``), which also catches arrivals missed in between.

    Everything runs on the event loop given to ``start``; only ``message_arriving`` (the
    store's listener) may be called from other threads.
    """

    def __init__(
        self,
        store: MessageStore,
        wakeup: Wakeup,
        *,
        long_polling_enable: bool = True,
        short_polling_time_ms: int = 1000,
    ) -> None:
        self._store = store
        self._wakeup = wakeup
        self.check_interval_ms = (
            LONG_POLLING_CHECK_INTERVAL_MS if long_polling_enable else short_polling_time_ms
        )
        self._table: dict[tuple[str, int], list[PullRequest]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._task = asyncio.create_task(self._run(), name="PullRequestHoldService")

    async def stop(self) -> None:
        """Stop checking; held requests are dropped unanswered (their connections close
        with the server, as RocketMQ's do on shutdown)."""
        task, self._task = self._task, None
        self._loop = None
        await cancel_and_wait(task)
        for requests in self._table.values():
            for request in requests:
                if request.deadline is not None:
                    request.deadline.cancel()
        self._table.clear()

    async def _run(self) -> None:
        await run_every(
            lambda: self.check_interval_ms / 1000, self.check_hold_request, "check hold request"
        )

    # -- holding ------------------------------------------------------------------------

    @property
    def held_count(self) -> int:
        return sum(len(requests) for requests in self._table.values())

    def suspend_pull_request(self, topic: str, queue_id: int, request: PullRequest) -> None:
        """Hold ``request`` until a message arrives or its time is over."""
        self._table.setdefault((topic, queue_id), []).append(request)
        loop = asyncio.get_running_loop()
        delay_s = max(0.0, request.deadline_s - loop.time())
        request.deadline = loop.call_later(delay_s, self._expire, topic, queue_id, request)

    def _expire(self, topic: str, queue_id: int, request: PullRequest) -> None:
        requests = self._table.get((topic, queue_id))
        if requests is None or request not in requests:
            return
        requests.remove(request)
        if not requests:
            del self._table[(topic, queue_id)]
        self._run_again(request)

    def check_hold_request(self) -> None:
        """Re-check every held queue against its current max offset."""
        for topic, queue_id in list(self._table):
            max_offset = self._store.get_max_offset_in_queue(topic, queue_id)
            self.notify_message_arriving(topic, queue_id, max_offset)

    def message_arriving(
        self, topic: str, queue_id: int, max_offset: int, tags_codes: frozenset[int]
    ) -> None:
        """The store's MessageArrivingListener: safe from the reput thread, and from the
        loop itself; the work runs on the loop. Ignored while the service is not running."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if threading.get_ident() == self._loop_thread:
            # A put on the loop dispatched its own records: no thread hop (and no wakeup
            # write) needed; still later, not inside the put.
            loop.call_soon(self.notify_message_arriving, topic, queue_id, max_offset, tags_codes)
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(
                self.notify_message_arriving, topic, queue_id, max_offset, tags_codes
            )

    def notify_message_arriving(
        self,
        topic: str,
        queue_id: int,
        max_offset: int,
        tags_codes: frozenset[int] | None = None,
    ) -> None:
        """Run again the requests of this queue that now have something to read, or whose
        time is over; keep the others. ``tags_codes``: those of the messages that arrived;
        None (the periodic check) when unknown, which wakes every request behind
        ``max_offset``."""
        key = (topic, queue_id)
        requests = self._table.pop(key, None)
        if not requests:
            return
        now_s = asyncio.get_running_loop().time()
        kept: list[PullRequest] = []
        for request in requests:
            newest = max_offset
            if newest <= request.pull_from_this_offset:
                newest = self._store.get_max_offset_in_queue(topic, queue_id)
            wanted = tags_codes is None or any(
                request.message_filter.is_matched_by_consume_queue(code) for code in tags_codes
            )
            if (newest > request.pull_from_this_offset and wanted) or now_s >= request.deadline_s:
                self._run_again(request)
            else:
                kept.append(request)
        if kept:
            self._table.setdefault(key, []).extend(kept)

    def _run_again(self, request: PullRequest) -> None:
        if request.deadline is not None:
            request.deadline.cancel()
            request.deadline = None
        try:
            self._wakeup(request)
        except Exception:
            log.exception("execute request when wakeup failed")
