"""The base of every background loop (RocketMQ's ``ServiceThread``)."""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from typing import Final

from orbitmq.common.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

#: After an error a service's loop pauses this long, doubling while errors go on, up to
#: the most.
FIRST_PAUSE_AFTER_ERROR_S: Final = 0.1
MAX_PAUSE_AFTER_ERROR_S: Final = 10.0


class Service(ABC):
    """A background thread with start, shutdown, wakeup and an interruptible wait.

    ``run`` loops while ``is_stopped()`` is false and pauses with ``wait_for_running``; a
    ``wakeup`` makes the current or next wait return at once. An exception out of ``run``
    is logged and ``run`` is called again after a pause (the loop never dies of an
    OSError such as EMFILE or ENOSPC); ``run`` must therefore leave its state consistent
    whatever line raised. ``clock``'s monotonic reading says whether ``run`` went on long
    enough before an error for the pause to start small again. start/shutdown/wakeup are
    safe from any thread.
    """

    def __init__(self, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._stopped = threading.Event()
        #: Unlocked while a wakeup is pending: a plain lock used as a binary semaphore, whose
        #: acquire and release are one C call each. ``threading.Event``'s ``set`` and ``wait``
        #: run a ``Condition`` in Python, and the thread that answers a group commit held
        #: the GIL through its next wait's few microseconds, just after waking the event
        #: loop, which then slept again on the GIL: two more futex calls and a task switch
        #: per SYNC_FLUSH send.
        self._wakeup_pending = threading.Lock()
        self._wakeup_pending.acquire()
        self._thread: threading.Thread | None = None

    @property
    def service_name(self) -> str:
        return type(self).__name__

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stopped.clear()
        self._thread = threading.Thread(target=self._main, name=self.service_name, daemon=True)
        self._thread.start()

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Stop the loop and wait up to ``timeout_s`` for it to end."""
        self._stopped.set()
        self.wakeup()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
            if thread.is_alive():
                log.warning("%s did not stop within %.1f s", self.service_name, timeout_s)

    def is_stopped(self) -> bool:
        return self._stopped.is_set()

    def wakeup(self) -> None:
        # Checked first: under load a wakeup is usually still pending from the previous call.
        if self._wakeup_pending.locked():
            try:  # noqa: SIM105 - contextlib.suppress would cost more than the release
                self._wakeup_pending.release()
            except RuntimeError:
                pass  # another thread released it first: the wakeup is pending

    def wait_for_running(self, interval_s: float) -> None:
        """Sleep up to ``interval_s`` unless woken (a pending wakeup is taken at once), then
        call ``on_wait_end``."""
        self._wakeup_pending.acquire(timeout=interval_s)
        self.on_wait_end()

    def on_wait_end(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Hook run after every wait; group commit swaps its request lists here."""

    def _main(self) -> None:
        # A service that dies leaves the store without its flushes, dispatch or retention
        # for the rest of the process's life (one EMFILE was enough): an error is logged
        # and the loop goes on after a pause that grows while the errors go on.
        pause_s = FIRST_PAUSE_AFTER_ERROR_S
        while True:
            started = self._clock.monotonic()
            try:
                self.run()
                return
            except Exception:
                if self.is_stopped():
                    log.exception("%s failed while stopping", self.service_name)
                    return
                if self._clock.monotonic() - started > MAX_PAUSE_AFTER_ERROR_S:
                    pause_s = FIRST_PAUSE_AFTER_ERROR_S  # ran fine for a while: a new error
                log.exception("%s failed; going on in %.1f s", self.service_name, pause_s)
            self._stopped.wait(pause_s)
            pause_s = min(pause_s * 2, MAX_PAUSE_AFTER_ERROR_S)

    @abstractmethod
    def run(self) -> None:
        """The loop body; return when ``is_stopped()``."""
