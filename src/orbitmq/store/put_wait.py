"""What a stored message waits for before the broker answers its send: the sync that covers
it (SYNC_FLUSH, ``GroupCommitService``) and a slave's report past it (SYNC_MASTER, the HA
service's group transfer). RocketMQ's ``GroupCommitRequest`` serves both; so does ours.

A request is answered by the service thread that sees it done. An event loop's request
carries the loop's own future (``waiter``), which the service completes in one
``call_soon_threadsafe`` per loop and round (``answer_requests``); a thread's request carries
a ``concurrent.futures.Future`` it blocks on.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Protocol

from orbitmq.store.put_message_result import PutMessageStatus

Waiter = asyncio.Future[PutMessageStatus]


class GroupCommitRequest:
    """A wait for the commit log to be flushed to disk (or held by a slave) up to
    ``next_offset``. Answered with PUT_OK or the status of the failure; a request left
    unanswered is timed out by whoever waits (``wait`` cancels the future, the loop's timer
    completes ``waiter`` with the timeout status), so that the service drops it."""

    __slots__ = ("future", "next_offset", "waiter")

    def __init__(self, next_offset: int, waiter: Waiter | None = None):
        self.next_offset = next_offset
        self.waiter = waiter
        self.future: Future[PutMessageStatus] | None = Future() if waiter is None else None

    def wait(self, timeout_s: float, timeout_status: PutMessageStatus) -> PutMessageStatus:
        """For a thread: the answer, or ``timeout_status`` after ``timeout_s``."""
        assert self.future is not None, "an event loop's request is awaited through its waiter"
        try:
            return self.future.result(timeout_s)
        except TimeoutError:
            self.future.cancel()
            return timeout_status

    @property
    def abandoned(self) -> bool:
        """Its waiter gave up (timed out): no one reads an answer any more."""
        if self.waiter is not None:
            return self.waiter.done()
        return self.future is not None and self.future.cancelled()


def answer_requests(answers: list[tuple[GroupCommitRequest, PutMessageStatus]]) -> None:
    """From a service thread: complete each request's future, grouping loop waiters so that
    each loop is woken once for all of its answers."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[Waiter, PutMessageStatus]]] = {}
    for request, status in answers:
        if request.waiter is not None:
            by_loop.setdefault(request.waiter.get_loop(), []).append((request.waiter, status))
        elif request.future is not None and request.future.set_running_or_notify_cancel():
            request.future.set_result(status)
    for loop, settled in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop closed while we waited
            loop.call_soon_threadsafe(_settle, settled)


def _settle(answers: list[tuple[Waiter, PutMessageStatus]]) -> None:
    """Runs on the waiters' loop: complete those still waiting (not timed out)."""
    for waiter, status in answers:
        if not waiter.done():
            waiter.set_result(status)


@dataclass(slots=True)
class PutWaiters:
    """An event loop's futures for one put, made on the loop before the append (which may run
    on another thread): the flush's under SYNC_FLUSH, the slave's under SYNC_MASTER."""

    flush: Waiter | None
    replica: Waiter | None


@dataclass(slots=True)
class PutWait:
    """What one appended message waits for. ``replica_status`` is SLAVE_NOT_AVAILABLE when a
    SYNC_MASTER had no slave fit to wait for at the append (the answer is then known at once),
    else PUT_OK."""

    flush: GroupCommitRequest | None = None
    replica: GroupCommitRequest | None = None
    replica_status: PutMessageStatus = PutMessageStatus.PUT_OK

    def wait(self, sync_flush_timeout_s: float, slave_timeout_s: float) -> PutMessageStatus:
        """For a thread: what ``await_put_wait`` answers on a loop."""
        started = time.monotonic()
        flush_status = replica_status = PutMessageStatus.PUT_OK
        if self.flush is not None:
            flush_status = self.flush.wait(
                sync_flush_timeout_s, PutMessageStatus.FLUSH_DISK_TIMEOUT
            )
        if self.replica is not None:
            left_s = max(0.0, started + slave_timeout_s - time.monotonic())
            replica_status = self.replica.wait(left_s, PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
        else:
            replica_status = self.replica_status
        return replica_status if replica_status is not PutMessageStatus.PUT_OK else flush_status


class GroupTransfer(Protocol):
    """A SYNC_MASTER's replication as the store sees it (the HA service): whether a slave is
    fit to wait for, and the wait itself. Both are called from any thread."""

    def is_slave_ok(self, master_put_where: int) -> bool:
        """A slave is connected and less than haSlaveFallbehindMax behind."""
        ...

    def put_request(self, request: GroupCommitRequest) -> None:
        """Answer ``request`` PUT_OK once a slave reported an offset at or past it."""
        ...


async def await_put_wait(
    wait: PutWait, waiters: PutWaiters, sync_flush_timeout_s: float, slave_timeout_s: float
) -> PutMessageStatus:
    """On the loop: the status a put's send is answered with once the flush and the slave
    have answered (both waits run at once, as RocketMQ combines its two futures). A flush
    failure is reported unless the slave's wait failed too, whose status then wins, as in
    RocketMQ's asyncPutMessage. Both deadlines count from the same start, and both futures
    are pending together, so awaiting one after the other costs no extra time."""
    flush_status = replica_status = PutMessageStatus.PUT_OK
    loop = asyncio.get_running_loop()
    started = loop.time()
    if wait.flush is not None and waiters.flush is not None:
        flush_status = await _answer_by(
            waiters.flush, started + sync_flush_timeout_s, PutMessageStatus.FLUSH_DISK_TIMEOUT
        )
    if wait.replica is not None and waiters.replica is not None:
        replica_status = await _answer_by(
            waiters.replica, started + slave_timeout_s, PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        )
    else:
        replica_status = wait.replica_status
    return replica_status if replica_status is not PutMessageStatus.PUT_OK else flush_status


async def _answer_by(
    waiter: Waiter, deadline: float, timeout_status: PutMessageStatus
) -> PutMessageStatus:
    """``waiter``'s answer, or ``timeout_status`` once the loop's clock reaches ``deadline``
    (the waiter is then done, so the service skips it). A timer on the future, as
    ``Channel.invoke`` does, not ``asyncio.timeout_at``: that one makes a Timeout object and
    cancels the task to end the wait, about 3 µs more per SYNC_FLUSH send."""
    timer = waiter.get_loop().call_at(deadline, _time_out, waiter, timeout_status)
    try:
        return await waiter
    finally:
        timer.cancel()


def _time_out(waiter: Waiter, timeout_status: PutMessageStatus) -> None:
    if not waiter.done():
        waiter.set_result(timeout_status)
