"""Timers survive a power loss: the timer store on a FaultInjectingFileSystem that tracks what
each sync made durable; the power goes with timers filed but not synced and deliveries not
synced; after recovery every acknowledged timer is delivered (at least once)."""

from __future__ import annotations

from pathlib import Path

from orbitmq.common import decode_message
from orbitmq.common import message_const as mc
from orbitmq.store import FlushDiskType, GetMessageStatus, MessageStore, TimerMessageStore
from orbitmq.testing import FaultInjectingFileSystem, ManualClock
from tests.conftest import StoreFactory
from tests.eventually import eventually
from tests.support import make_message

START_MS = 1_700_000_000_000
OVERRIDES = {"flush_disk_type": FlushDiskType.SYNC_FLUSH, "timer_flush_interval_ms": 3_600_000}


def _pass(store: MessageStore, timers: TimerMessageStore) -> None:
    assert store.wait_for_dispatch()
    timers.step()
    assert store.wait_for_dispatch()


def _bodies(store: MessageStore) -> set[bytes]:
    found: set[bytes] = set()
    offset = 0
    while True:
        got = store.get_message("g", "RealTopic", 0, offset, 32)
        if got.status is not GetMessageStatus.FOUND:
            return found
        found |= {decode_message(b).body for b in got.message_buffers}
        offset = got.next_begin_offset


def test_no_acknowledged_timer_is_lost_to_a_power_loss(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    root = tmp_path / "store"
    clock = ManualClock(START_MS)
    fs = FaultInjectingFileSystem(track_unsynced=True)
    store = store_factory(root, fs=fs, clock=clock, **OVERRIDES)
    timers = TimerMessageStore(store, store.config, clock=clock, fs=fs)
    timers.load()
    sent = []
    for i in range(60):
        delay = 100 * (i % 40 + 1) if i < 40 else 500  # 40 early, 20 after the checkpoint
        if i == 40:
            clock.advance(1500)
            _pass(store, timers)
            end = store.max_phy_offset
            eventually(
                lambda end=end: store.flushed_phy_offset >= end,  # type: ignore[misc]
                what="commit log synced",
            )
            timers.flush()  # a checkpoint: what follows is never synced by the timer store
        msg = make_message(
            "RealTopic", b"t%02d" % i, properties={mc.PROPERTY_TIMER_DELAY_MS: str(delay)}
        )
        assert store.put_message(msg).is_ok  # SYNC_FLUSH: acknowledged once synced
        sent.append(b"t%02d" % i)
    _pass(store, timers)
    clock.advance(1000)
    _pass(store, timers)  # more deliveries, their copies maybe synced, the timer store's not
    assert len(_bodies(store)) > 15

    fs.crash()
    timers.shutdown()
    store.shutdown()
    (root / "abort").touch()
    dropped = fs.drop_unsynced()
    assert any("timerlog" in path or "timerwheel" in path for path in dropped), dropped

    clock.advance(10_000)
    store = store_factory(root, clock=clock, start=False, **OVERRIDES)
    timers = TimerMessageStore(store, store.config, clock=clock)
    timers.load()
    for _ in range(3):
        store.reput_message_service.do_reput()
        timers.step()
    store.reput_message_service.do_reput()
    assert _bodies(store) == set(sent)
    timers.shutdown()
