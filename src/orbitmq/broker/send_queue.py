"""``SendQueue``: the sends waiting for the commit log's put lock while the disk is slow, and
the fast failure that answers them busy (RocketMQ's sendThreadPoolQueue and
``BrokerFastFailure``).

RocketMQ's send threads take the put lock; when the disk falls behind, an append stalls in
the page cache, the lock is held, and sends pile up in the send pool's queue, where
``BrokerFastFailure`` (every 10 ms) answers them SYSTEM_BUSY: all of them while the page
cache is busy ("[PCBUSY_CLEAN_QUEUE]"), and those that waited ``waitTimeMillsInSendQueue``
("[TIMEOUT_CLEAN_QUEUE]").

Our sends run on the event loop and append inline: a microsecond-scale append needs no thread
hop. An append that held the put lock ``SLOW_APPEND_MS`` or longer shows a slow disk; from
then on sends append on this queue's one thread, in arrival order, so that the loop stays free
to read requests and answer busy, until an append is fast again: then new sends append inline
even while earlier ones still wait for the thread (waiting for the queue to drain first could
take forever at a steady send rate, each thread hand-over costing up to a GIL switch
interval, and the queue's sends would then time out in it). "Waited in
the send queue" is the time from a send reaching the store to its append starting, as long as
a RocketMQ send waits in its pool's queue for the thread that appends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.common import MessageExtBrokerInner
from orbitmq.remoting import PCBUSY_CLEAN_QUEUE_REMARK, TIMEOUT_CLEAN_QUEUE_REMARK
from orbitmq.store import MessageStore, PutMessageResult, PutWait, PutWaiters

log = logging.getLogger(__name__)

#: An append that held the put lock this long moves the following ones off the loop: a
#: healthy append takes microseconds, and the loop must not stall for the disk.
SLOW_APPEND_MS: Final = 50.0
#: How often waiting sends are checked (BrokerFastFailure's period).
CLEAN_INTERVAL_S: Final = 0.01
#: A slow disk is logged at most this often (it shows in every send's answer anyway).
WARN_INTERVAL_S: Final = 10.0

_Appended = tuple[PutMessageResult, PutWait | None]


@dataclass(slots=True, eq=False)
class _QueuedSend:
    """One send waiting for, or in, its append on the queue's thread. ``started`` and
    ``cleared`` are decided under the queue's lock: a send is appended or answered busy,
    never both."""

    msg: MessageExtBrokerInner
    waiters: PutWaiters | None
    queued_at: float
    answer: asyncio.Future[_Appended | str]
    started: bool = False
    cleared: bool = False


class SendQueue:
    """Owns the thread that appends while the disk is slow and the sends waiting for it.

    ``put`` is called from tasks of the broker's one event loop (not thread-safe otherwise);
    the appending thread and the loop share only the started/cleared decision, under a lock.
    """

    def __init__(self, store: MessageStore, broker_config: BrokerConfig) -> None:
        self._store = store
        self._config = broker_config
        self._lock = threading.Lock()
        self._waiting: deque[_QueuedSend] = deque()
        self._in_flight = 0
        self._executor: ThreadPoolExecutor | None = None
        self._cleaner: asyncio.TimerHandle | None = None
        #: Sends answered busy by the fast failure (for stats and tests).
        self.cleared = 0
        self._warned_at = float("-inf")

    @property
    def off_loop(self) -> bool:
        """Appends go to the queue's thread: the last one, here or on any thread, was slow."""
        return self._store.commit_log.last_lock_held_ms >= SLOW_APPEND_MS

    async def put(self, msg: MessageExtBrokerInner) -> PutMessageResult | str:
        """Store ``msg`` as ``MessageStore.async_put_message`` does, or answer the SYSTEM_BUSY
        remark (a str) when the fast failure cleared it from the queue: then it was not
        stored."""
        store = self._store
        if not self.off_loop:
            return await store.async_put_message(msg)
        loop = asyncio.get_running_loop()
        if self._in_flight == 0 and loop.time() - self._warned_at >= WARN_INTERVAL_S:
            self._warned_at = loop.time()
            log.warning(
                "a commit log append held the put lock %.0f ms: the disk is slow, sends append "
                "off the event loop (see docs/operations.md, Back-pressure)",
                store.commit_log.last_lock_held_ms,
            )
        send = _QueuedSend(msg, store.put_waiters(), loop.time(), loop.create_future())
        self._waiting.append(send)
        self._in_flight += 1
        try:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="SendMessageThread")
            self._executor.submit(self._append, send, loop)
            if self._cleaner is None:
                self._cleaner = loop.call_later(CLEAN_INTERVAL_S, self.clean_expired_request)
            answer = await send.answer
        finally:
            self._in_flight -= 1
            with self._lock:
                # Abandoned (the broker stops): not appended after all, if not begun.
                send.cleared = send.cleared or not send.started
        if isinstance(answer, str):
            return answer
        result, wait = answer
        return await store.await_put(result, wait, send.waiters)

    def _append(self, send: _QueuedSend, loop: asyncio.AbstractEventLoop) -> None:
        """On the queue's thread: append ``send`` unless it was answered busy meanwhile."""
        with self._lock:
            if send.cleared:
                return
            send.started = True
        try:
            appended = self._store.append(send.msg, send.waiters)
        except Exception as exc:  # the loop's task raises it: SYSTEM_ERROR for this send
            _post(loop, _fail, send.answer, exc)
            return
        _post(loop, _settle, send.answer, appended)

    def clean_expired_request(self) -> None:
        """BrokerFastFailure's round: with ``brokerFastFailureEnable``, answer every waiting
        send SYSTEM_BUSY while the page cache is busy, and those that waited
        ``waitTimeMillsInSendQueue`` or longer. Runs on the loop while sends wait."""
        self._cleaner = None
        waiting = [send for send in self._waiting if not (send.started or send.cleared)]
        self._waiting = deque(waiting)
        if not waiting:
            return
        loop = asyncio.get_running_loop()
        if self._config.broker_fast_failure_enable:
            self._waiting = deque(self._clear(waiting, loop.time()))
        self._cleaner = loop.call_later(CLEAN_INTERVAL_S, self.clean_expired_request)

    def _clear(self, waiting: list[_QueuedSend], now: float) -> list[_QueuedSend]:
        """Answer the sends of ``waiting`` that must not wait longer; the others."""
        busy = self._store.commit_log.is_os_page_cache_busy()
        limit_ms = self._config.wait_time_mills_in_send_queue
        kept: list[_QueuedSend] = []
        for index, send in enumerate(waiting):
            waited_ms = (now - send.queued_at) * 1000
            if busy:
                template = PCBUSY_CLEAN_QUEUE_REMARK
            elif waited_ms >= limit_ms:
                template = TIMEOUT_CLEAN_QUEUE_REMARK
            else:
                kept.append(send)
                continue
            with self._lock:
                if send.started:
                    continue
                send.cleared = True
            self.cleared += 1
            remark = template.format(waited_ms=int(waited_ms), queue_size=len(waiting) - index - 1)
            if not send.answer.done():
                send.answer.set_result(remark)
        return kept

    async def close(self) -> None:
        """Wait for the append in progress, if any (the broker is stopping: its store
        shuts down next)."""
        if self._cleaner is not None:
            self._cleaner.cancel()
            self._cleaner = None
        executor, self._executor = self._executor, None
        if executor is not None:
            await asyncio.to_thread(executor.shutdown, True, cancel_futures=True)


def _post(
    loop: asyncio.AbstractEventLoop,
    callback: Callable[[asyncio.Future[_Appended | str], Any], None],
    answer: asyncio.Future[_Appended | str],
    value: object,
) -> None:
    """Hand ``value`` to the loop; a loop closed meanwhile (the broker stopped) has no one
    waiting."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback, answer, value)


def _settle(answer: asyncio.Future[_Appended | str], appended: _Appended) -> None:
    if not answer.done():
        answer.set_result(appended)


def _fail(answer: asyncio.Future[_Appended | str], exc: BaseException) -> None:
    if not answer.done():
        answer.set_exception(exc)
