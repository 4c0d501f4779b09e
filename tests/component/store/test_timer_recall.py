"""Recalling a timer message (RocketMQ 5.3's RECALL_MESSAGE) through a real store on disk,
driven by a ManualClock: a recall marker (TIMER_DEL_UNIQKEY, due when its timer is due) drops
its timer, which is never delivered, the marker neither; others of the same time still go;
the recall survives a crash and restart."""

from __future__ import annotations

from pathlib import Path

from orbitmq.common import MessageExtBrokerInner
from orbitmq.common import message_const as mc
from orbitmq.store import MessageStore
from orbitmq.store.timer import build_delete_key
from orbitmq.store.timer.timer_message_store import DELIVER_BATCH
from orbitmq.testing import ManualClock
from tests.component.store.test_timer_message_store import (
    START_MS,
    _delivered,
    _pass,
    _timer,
    _timers,
)
from tests.conftest import StoreFactory
from tests.support import make_message


def _marker(timer: MessageExtBrokerInner) -> MessageExtBrokerInner:
    """The message RECALL_MESSAGE stores for ``timer`` (as sent, before intake moved it)."""
    real_topic = timer.properties[mc.PROPERTY_REAL_TOPIC]
    unique_key = timer.properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]
    properties = {
        mc.PROPERTY_TIMER_DEL_UNIQKEY: build_delete_key(real_topic, unique_key),
        mc.PROPERTY_TIMER_DELIVER_MS: timer.properties[mc.PROPERTY_TIMER_OUT_MS],
        mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: unique_key,
    }
    return make_message(real_topic, b"0", uniq_key=False, properties=properties)


def _put_timer(store: MessageStore, body: bytes, due_ms: int) -> MessageExtBrokerInner:
    timer = _timer(body, {mc.PROPERTY_TIMER_DELIVER_MS: str(due_ms)})
    assert store.put_message(timer).is_ok
    return timer


def test_a_recalled_timer_is_never_delivered(store_factory: StoreFactory) -> None:
    clock = ManualClock(START_MS)
    store = store_factory(clock=clock, start=False)
    timers = _timers(store, clock)
    due = START_MS + 2000
    kept = _put_timer(store, b"kept", due)
    recalled = _put_timer(store, b"recalled", due)
    later = _put_timer(store, b"later", due + 1000)
    _pass(store, timers)
    assert store.put_message(_marker(recalled)).is_ok
    assert store.put_message(_marker(later)).is_ok
    _pass(store, timers)
    clock.advance(2000)
    _pass(store, timers)
    assert [m.body for m in _delivered(store)] == [b"kept"]
    clock.advance(5000)
    _pass(store, timers)
    assert [m.body for m in _delivered(store)] == [b"kept"]
    assert (timers.delivered, timers.recalled) == (1, 2)
    assert kept.properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]


def test_a_marker_meets_its_timer_past_a_full_batch(store_factory: StoreFactory) -> None:
    """More timers of one time than a delivery batch: the marker, read last, still drops
    its timer (a batch never splits one due time)."""
    clock = ManualClock(START_MS)
    store = store_factory(clock=clock, start=False)
    timers = _timers(store, clock)
    due = START_MS + 1000
    target = _put_timer(store, b"target", due)
    for i in range(DELIVER_BATCH + 10):
        _put_timer(store, b"o%d" % i, due)
    assert store.put_message(_marker(target)).is_ok
    _pass(store, timers)
    clock.advance(1000)
    _pass(store, timers)
    bodies = [m.body for m in _delivered(store)]
    assert len(bodies) == DELIVER_BATCH + 10 and b"target" not in bodies
    assert timers.recalled == 1


def test_a_recall_holds_across_a_crash(store_factory: StoreFactory, tmp_path: Path) -> None:
    root = tmp_path / "store"
    clock = ManualClock(START_MS)
    store = store_factory(root, clock=clock, start=False)
    timers = _timers(store, clock)
    due = START_MS + 3000
    recalled = _put_timer(store, b"recalled", due)
    _put_timer(store, b"kept", due)
    _pass(store, timers)
    assert store.put_message(_marker(recalled)).is_ok
    _pass(store, timers)
    store.commit_log.mapped_file_queue.flush(0)
    timers.flush()
    store.shutdown()  # a crash: the timer store is never shut down

    clock.advance(10_000)
    store = store_factory(root, clock=clock, start=False)
    timers = _timers(store, clock)
    _pass(store, timers)
    _pass(store, timers)
    assert [m.body for m in _delivered(store)] == [b"kept"]
    assert timers.recalled == 1
