from __future__ import annotations

from orbitmq.broker.rebalance_lock_manager import (
    REBALANCE_LOCK_MAX_LIVE_TIME_MS,
    RebalanceLockManager,
)
from orbitmq.common import MessageQueue
from orbitmq.testing import ManualClock

MQ0 = MessageQueue("t", "broker-a", 0)
MQ1 = MessageQueue("t", "broker-a", 1)


def make() -> tuple[ManualClock, RebalanceLockManager]:
    clock = ManualClock(1_000_000)
    return clock, RebalanceLockManager(clock=clock)


def test_first_client_gets_the_lock_and_others_are_refused() -> None:
    _, manager = make()
    assert manager.try_lock_batch("g", {MQ0, MQ1}, "c1") == {MQ0, MQ1}
    assert manager.try_lock_batch("g", {MQ0, MQ1}, "c2") == set()
    assert manager.is_locked("g", MQ0, "c1")
    assert not manager.is_locked("g", MQ0, "c2")


def test_groups_are_independent() -> None:
    _, manager = make()
    assert manager.try_lock_batch("g1", {MQ0}, "c1") == {MQ0}
    assert manager.try_lock_batch("g2", {MQ0}, "c2") == {MQ0}


def test_lock_returns_only_the_queues_this_client_holds() -> None:
    _, manager = make()
    manager.try_lock_batch("g", {MQ0}, "c1")
    assert manager.try_lock_batch("g", {MQ0, MQ1}, "c2") == {MQ1}
    assert manager.try_lock_batch("g", {MQ0, MQ1}, "c1") == {MQ0}


def test_lock_expires_after_60_seconds_without_renewal() -> None:
    clock, manager = make()
    manager.try_lock_batch("g", {MQ0}, "c1")
    clock.advance(REBALANCE_LOCK_MAX_LIVE_TIME_MS)
    assert manager.try_lock_batch("g", {MQ0}, "c2") == set()  # exactly 60 s: still held
    clock.advance(1)
    assert not manager.is_locked("g", MQ0, "c1")
    assert manager.try_lock_batch("g", {MQ0}, "c2") == {MQ0}
    assert manager.try_lock_batch("g", {MQ0}, "c1") == set()


def test_renewal_extends_the_lock() -> None:
    clock, manager = make()
    manager.try_lock_batch("g", {MQ0}, "c1")
    clock.advance(50_000)
    assert manager.try_lock_batch("g", {MQ0}, "c1") == {MQ0}
    clock.advance(50_000)
    assert manager.try_lock_batch("g", {MQ0}, "c2") == set()


def test_holder_relocks_after_its_own_lock_lapsed() -> None:
    clock, manager = make()
    manager.try_lock_batch("g", {MQ0}, "c1")
    clock.advance(REBALANCE_LOCK_MAX_LIVE_TIME_MS + 1)
    assert manager.try_lock_batch("g", {MQ0}, "c1") == {MQ0}
    assert manager.is_locked("g", MQ0, "c1")


def test_unlock_releases_only_the_holders_queues() -> None:
    _, manager = make()
    manager.try_lock_batch("g", {MQ0}, "c1")
    manager.try_lock_batch("g", {MQ1}, "c2")
    manager.unlock_batch("g", {MQ0, MQ1}, "c1")
    assert manager.try_lock_batch("g", {MQ0, MQ1}, "c3") == {MQ0}
    assert manager.is_locked("g", MQ1, "c2")


def test_unlock_of_unknown_group_or_queue_is_harmless() -> None:
    _, manager = make()
    manager.unlock_batch("nope", {MQ0}, "c1")
    manager.try_lock_batch("g", {MQ0}, "c1")
    manager.unlock_batch("g", {MQ1}, "c1")
    assert manager.is_locked("g", MQ0, "c1")
