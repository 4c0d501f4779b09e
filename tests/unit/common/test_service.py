"""The Service base: start, wakeup, interruptible waits, shutdown. No sleeps: events only."""

from __future__ import annotations

import errno
import threading
import time

from orbitmq.common import Service

LONG_S = 60.0  # a wait that would outlast the test: returning early proves a wakeup
TIMEOUT_S = 5.0


class LoopService(Service):
    """Each round: signal that it is about to wait, wait, record the round."""

    def __init__(self) -> None:
        super().__init__()
        self.about_to_wait = threading.Event()
        self.woke = threading.Event()
        self.rounds = 0
        self.wait_ends = 0
        self.thread: threading.Thread | None = None
        self.finished = threading.Event()

    def on_wait_end(self) -> None:
        self.wait_ends += 1

    def run(self) -> None:
        self.thread = threading.current_thread()
        while not self.is_stopped():
            self.about_to_wait.set()
            self.wait_for_running(LONG_S)
            self.about_to_wait.clear()
            self.rounds += 1
            self.woke.set()
        self.finished.set()


def test_start_runs_in_a_named_thread_and_wakeup_ends_the_wait() -> None:
    service = LoopService()
    service.start()
    try:
        assert service.about_to_wait.wait(TIMEOUT_S)
        assert service.thread is not None
        assert service.thread is not threading.current_thread()
        assert service.thread.name == "LoopService"
        assert service.thread.daemon
        assert service.rounds == 0
        service.wakeup()
        assert service.woke.wait(TIMEOUT_S), "wait_for_running did not return on wakeup"
        assert service.rounds >= 1
        assert service.wait_ends >= 1
    finally:
        service.shutdown(TIMEOUT_S)


def test_each_wakeup_ends_one_wait() -> None:
    service = LoopService()
    service.start()
    try:
        for expected_round in range(1, 4):
            service.woke.clear()
            assert service.about_to_wait.wait(TIMEOUT_S)
            service.wakeup()
            assert service.woke.wait(TIMEOUT_S)
            assert service.rounds >= expected_round
    finally:
        service.shutdown(TIMEOUT_S)


def test_shutdown_interrupts_the_wait_and_joins_the_thread() -> None:
    service = LoopService()
    service.start()
    assert service.about_to_wait.wait(TIMEOUT_S)
    started = time.monotonic()
    service.shutdown(TIMEOUT_S)
    assert time.monotonic() - started < LONG_S / 2
    assert service.is_stopped()
    assert service.finished.is_set()
    assert service.thread is not None
    assert not service.thread.is_alive()
    service.shutdown(TIMEOUT_S)  # a second shutdown is harmless


def live_threads(name: str) -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == name and t.is_alive()}


def test_start_twice_starts_one_thread() -> None:
    service = LoopService()
    service.start()
    try:
        assert service.about_to_wait.wait(TIMEOUT_S)
        first = service.thread
        running = live_threads("LoopService")
        assert first in running
        service.start()  # Thread.start returns once a new thread runs, so none appeared
        assert live_threads("LoopService") == running
        assert service.thread is first
    finally:
        service.shutdown(TIMEOUT_S)


def test_restart_after_shutdown() -> None:
    service = LoopService()
    service.start()
    assert service.about_to_wait.wait(TIMEOUT_S)
    service.shutdown(TIMEOUT_S)
    first = service.thread
    service.finished.clear()
    service.about_to_wait.clear()
    service.start()
    try:
        assert service.about_to_wait.wait(TIMEOUT_S)
        assert not service.is_stopped()
        assert service.thread is not first
    finally:
        service.shutdown(TIMEOUT_S)
    assert service.finished.is_set()


class Idle(Service):
    def __init__(self) -> None:
        super().__init__()
        self.wait_ends = 0

    def on_wait_end(self) -> None:
        self.wait_ends += 1

    def run(self) -> None:  # pragma: no cover - never started
        raise AssertionError


def test_wakeup_before_the_wait_makes_the_next_wait_return_at_once() -> None:
    service = Idle()
    service.wakeup()
    started = time.monotonic()
    service.wait_for_running(LONG_S)
    assert time.monotonic() - started < LONG_S / 2
    assert service.wait_ends == 1


def test_a_wakeup_is_consumed_by_one_wait() -> None:
    service = Idle()
    service.wakeup()
    service.wait_for_running(LONG_S)
    started = time.monotonic()
    service.wait_for_running(0.05)  # no pending wakeup: waits the full interval
    assert time.monotonic() - started >= 0.04
    assert service.wait_ends == 2


def test_shutdown_of_a_service_never_started() -> None:
    service = Idle()
    service.shutdown(TIMEOUT_S)
    assert service.is_stopped()
    assert service.service_name == "Idle"


class FailingService(Service):
    """Raises from ``run`` the first ``failures`` times, then loops quietly."""

    def __init__(self, failures: int, error: Exception) -> None:
        super().__init__()
        self.failures = failures
        self.error = error
        self.calls = 0
        self.running = threading.Event()

    def run(self) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        self.running.set()
        while not self.is_stopped():
            self.wait_for_running(LONG_S)


def test_a_service_survives_errors_out_of_run_and_goes_on() -> None:
    """An OSError such as EMFILE must not end a store's flush or dispatch for good."""
    service = FailingService(3, OSError(errno.EMFILE, "Too many open files"))
    service.start()
    try:
        assert service.running.wait(TIMEOUT_S), "the service died of its errors"
        assert service.calls == 4
    finally:
        service.shutdown(TIMEOUT_S)


def test_a_service_stopped_while_it_pauses_after_an_error_ends_at_once() -> None:
    service = FailingService(10**6, RuntimeError("always"))
    service.start()
    started = time.monotonic()
    thread = service._thread
    assert thread is not None
    service.shutdown(TIMEOUT_S)
    assert time.monotonic() - started < TIMEOUT_S
    assert not thread.is_alive()
