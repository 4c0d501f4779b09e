"""``LoopThread``: an event loop running on a daemon thread of its own, for blocking code
that drives asyncio objects (the ``orbitmq.sync`` facades, ``testing.ThreadedCluster``)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

from orbitmq.common.errors import OrbitError

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How long closing lets cancelled tasks finish, and waits for the loop thread to end.
_DRAIN_S: Final = 5.0


class LoopThread:
    """Owns one event loop and the daemon thread that runs it. ``submit``, ``call``,
    ``build`` and ``close`` are safe from any thread; ``close`` is idempotent.

    ``loop_factory`` makes the loop (the owner picks uvloop or asyncio's); ``error`` is the
    owner's exception type for misuse: a call after ``close``, or a blocking call from the
    loop's own thread."""

    def __init__(
        self,
        name: str,
        what: str,
        *,
        loop_factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop,
        error: Callable[[str], Exception] = OrbitError,
    ) -> None:
        self._what = what
        self._error = error
        self._loop = loop_factory()
        self._lock = threading.Lock()
        self._closing = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def closed(self) -> bool:
        return self._closed

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            self._drain()

    def _drain(self) -> None:
        """After the loop stopped: cancel what is left, so every pending future (a
        ``send_async`` in flight) completes, cancelled, instead of hanging; then close."""
        loop = self._loop
        try:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.wait(pending, timeout=_DRAIN_S))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(
                asyncio.wait_for(loop.shutdown_default_executor(), timeout=_DRAIN_S)
            )
        except Exception:
            log.exception("draining the loop of %s failed", self._what)
        finally:
            loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop. Under the lock so that nothing is scheduled on a
        loop that ``close`` is stopping (it would never run, and its future never end)."""
        with self._lock:
            if self._closed:
                coro.close()  # never awaited, by design: no warning
                raise self._error(f"{self._what} is shut down: create a new one")
            return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def call(self, coro: Coroutine[Any, Any, T], timeout_s: float) -> T:
        """Run ``coro`` on the loop and wait at most ``timeout_s`` for its result."""
        if threading.current_thread() is self._thread:
            # Waiting here for the loop we are running on could never end.
            coro.close()
            raise self._error(
                f"a blocking call to {self._what} from its own loop thread (a send hook or "
                "send_async callback) would deadlock: use the asyncio client there"
            )
        future = self.submit(coro)
        try:
            return future.result(timeout_s)
        except BaseException:
            # Timed out or interrupted (KeyboardInterrupt): stop the work we no longer await.
            future.cancel()
            raise

    def build(self, factory: Callable[[], T], timeout_s: float) -> T:
        """``factory()`` called on the loop: an asyncio object may bind primitives to the
        running loop when it is built. A factory that raises closes this loop thread."""
        try:
            return self.call(_construct(factory), timeout_s)
        except BaseException:
            self.close()  # a bad argument leaves no thread behind
            raise

    def close(
        self, last: Coroutine[Any, Any, object] | None = None, timeout_s: float = _DRAIN_S
    ) -> None:
        """Run ``last`` (the owner's own stop, waited for at most ``timeout_s``), then stop
        the loop, let it drain and join its thread (bounded). Idempotent; from several
        threads at once, the others wait for the first."""
        with self._closing:
            if self._closed:
                if last is not None:
                    last.close()  # stopped already, with the loop
                return
            try:
                if last is not None:
                    self.call(last, timeout_s)
            finally:
                self._stop()

    def _stop(self) -> None:
        with self._lock:
            self._closed = True
            self._loop.call_soon_threadsafe(self._loop.stop)
        if threading.current_thread() is self._thread:
            return  # closing from a callback: the thread ends when the callback returns
        self._thread.join(2 * _DRAIN_S)
        if self._thread.is_alive():
            log.warning("the loop thread of %s did not end in %.0f s", self._what, 2 * _DRAIN_S)


async def _construct(factory: Callable[[], T]) -> T:
    return factory()
