"""``PopLongPollingService``: POP and NOTIFICATION requests that found nothing, held until a
message arrives for them or their poll time is over (RocketMQ 5's ``PopLongPollingService``).

Requests are held by polling key (topic, group, queue id; -1 for a request over every
queue). A message stored in a topic wakes the requests of every group on that topic, on its
queue and on -1; one stored in a group's POP retry topic wakes that group's requests on the
original topic. A woken request runs again (and may be held again for the rest of its poll
time); one whose time is over runs once more and answers. popPollingSize bounds the
requests held per key, maxPopPollingSize those held in all; beyond, POLLING_FULL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from orbitmq.common.key_builder import build_pop_retry_topic_v1, build_pop_retry_topic_v2
from orbitmq.common.topic import RETRY_GROUP_TOPIC_PREFIX
from orbitmq.protocol import RemotingCommand
from orbitmq.remoting import ChannelContext

log = logging.getLogger(__name__)

#: (topic, group, queue id): where a request is held.
PollingKey = tuple[str, str, int]
#: Runs a held request again: its answer, or None when it is held again.
Answer = Callable[[], Awaitable[RemotingCommand | None]]


@dataclass(eq=False, slots=True)
class PopRequest:
    """One held request: what to run when woken (``wakeup(timed_out)``) and its deadline
    (the loop's clock)."""

    key: PollingKey
    deadline_s: float
    wakeup: Callable[[bool], None]
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)


class PopLongPollingService:
    """Owns the held POP and NOTIFICATION requests, by polling key.

    Everything runs on the event loop given to ``start``; only ``message_arriving`` (the
    store's listener) may be called from other threads.
    """

    def __init__(self, polling_size: Callable[[], int], max_polling_size: Callable[[], int]):
        self._polling_size = polling_size
        self._max_polling_size = max_polling_size
        self._table: dict[PollingKey, list[PopRequest]] = {}
        #: topic -> the keys held on it, so an arrival finds its requests in one lookup.
        self._by_topic: dict[str, set[PollingKey]] = {}
        self._count = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        #: Held requests running again after a wake-up (kept referenced while they run).
        self._reruns: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    def stop(self) -> None:
        """Drop every held request unanswered (their connections close with the server)."""
        self._loop = None
        for requests in self._table.values():
            for request in requests:
                if request.timer is not None:
                    request.timer.cancel()
        self._table.clear()
        self._by_topic.clear()
        self._count = 0

    @property
    def held_count(self) -> int:
        return self._count

    def polling_num(self, key: PollingKey) -> int:
        return len(self._table.get(key, ()))

    def hold(self, key: PollingKey, poll_ms: int, wakeup: Callable[[bool], None]) -> bool:
        """Hold a request for up to ``poll_ms``; False when the limits are reached."""
        requests = self._table.get(key)
        if (requests is not None and len(requests) >= self._polling_size()) or (
            self._count >= self._max_polling_size()
        ):
            return False
        loop = asyncio.get_running_loop()
        request = PopRequest(key, loop.time() + poll_ms / 1000, wakeup)
        request.timer = loop.call_later(poll_ms / 1000, self._expire, request)
        self._table.setdefault(key, []).append(request)
        self._by_topic.setdefault(key[0], set()).add(key)
        self._count += 1
        return True

    def hold_request(
        self, key: PollingKey, poll_ms: int, ctx: ChannelContext, answer: Answer, what: str
    ) -> bool:
        """Hold a request of ``ctx`` for up to ``poll_ms`` (False when the limits are
        reached). Woken (a message, a revive, its time over), ``answer`` runs again as a
        task of its own and what it answers is written to ``ctx``; nothing is when the
        connection is gone or the request is held again. ``what`` names it in logs."""
        return self.hold(key, poll_ms, lambda _timed_out: self._rerun(ctx, answer, what))

    def _rerun(self, ctx: ChannelContext, answer: Answer, what: str) -> None:
        task = asyncio.get_running_loop().create_task(self._answer_again(ctx, answer, what))
        self._reruns.add(task)
        task.add_done_callback(self._reruns.discard)

    @staticmethod
    async def _answer_again(ctx: ChannelContext, answer: Answer, what: str) -> None:
        if not ctx.is_active:
            return
        try:
            response = await answer()
        except Exception:
            log.exception("held %s request failed on wakeup, %s", what, ctx.remote_address)
            return
        if response is not None:
            ctx.write(response)

    def _remove(self, request: PopRequest) -> bool:
        requests = self._table.get(request.key)
        if requests is None or request not in requests:
            return False
        requests.remove(request)
        self._count -= 1
        if not requests:
            del self._table[request.key]
            keys = self._by_topic.get(request.key[0])
            if keys is not None:
                keys.discard(request.key)
                if not keys:
                    del self._by_topic[request.key[0]]
        return True

    def _expire(self, request: PopRequest) -> None:
        if self._remove(request):
            self._run(request, timed_out=True)

    def _run(self, request: PopRequest, *, timed_out: bool) -> None:
        if request.timer is not None:
            request.timer.cancel()
        try:
            request.wakeup(timed_out)
        except Exception:
            log.exception("waking a held POP request failed")

    # -- arrivals --------------------------------------------------------------------------

    def message_arriving(self, topic: str, queue_id: int) -> None:
        """The store's listener: safe from any thread; the work runs on the loop."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if threading.get_ident() == self._loop_thread:
            loop.call_soon(self.notify_message_arriving, topic, queue_id, None)
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self.notify_message_arriving, topic, queue_id, None)

    def notify_message_arriving(self, topic: str, queue_id: int, group: str | None) -> int:
        """Wake the requests a message in ``topic`` / ``queue_id`` may serve (only
        ``group``'s when given); how many were woken."""
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            keys = self._retry_keys(topic)
        else:
            keys = [
                key
                for key in self._by_topic.get(topic, ())
                if key[2] in (-1, queue_id) and (group is None or key[1] == group)
            ]
        woken = 0
        for key in keys:
            for request in list(self._table.get(key, ())):
                if self._remove(request):
                    self._run(request, timed_out=False)
                    woken += 1
        return woken

    def _retry_keys(self, retry_topic: str) -> list[PollingKey]:
        """The keys of the group a POP retry topic belongs to, on its original topic."""
        keys = []
        for topic, held in self._by_topic.items():
            for key in held:
                if retry_topic in (
                    build_pop_retry_topic_v1(topic, key[1]),
                    build_pop_retry_topic_v2(topic, key[1]),
                ):
                    keys.append(key)
        return keys
