"""Timer messages through a real store on disk, driven by a ManualClock: intake into
rmq_sys_wheel_timer, the wheel and log, delivery at the exact time, checkpoint and recovery."""

from __future__ import annotations

from pathlib import Path

from orbitmq.common import MessageExtBrokerInner, decode_message
from orbitmq.common import message_const as mc
from orbitmq.common.topic import RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_WHEEL_TIMER_TOPIC
from orbitmq.store import GetMessageStatus, MessageStore, PutMessageStatus, TimerMessageStore
from orbitmq.store.timer import TimerCheckpoint
from orbitmq.store.timer.timer_message_store import IDLE_WAIT_MS
from orbitmq.testing import ManualClock
from tests.conftest import StoreFactory
from tests.support import make_message

START_MS = 1_700_000_000_050


def _timer(body: bytes, props: dict[str, str], queue_id: int = 2) -> MessageExtBrokerInner:
    return make_message("RealTopic", body, queue_id=queue_id, tags="TagT", properties=props)


def _timers(store: MessageStore, clock: ManualClock) -> TimerMessageStore:
    timers = TimerMessageStore(store, store.config, clock=clock)
    timers.load()
    return timers


def _pass(store: MessageStore, timers: TimerMessageStore) -> None:
    store.reput_message_service.do_reput()
    timers.step()
    store.reput_message_service.do_reput()


def _checkpoint(store: MessageStore, timers: TimerMessageStore) -> TimerCheckpoint:
    """Sync the commit log (the store's flush service does it when started), flush the
    timer store and read timercheck back."""
    store.commit_log.mapped_file_queue.flush(0)
    timers.flush()
    return TimerCheckpoint.load(store.config.timer_check_file)


def _delivered(store: MessageStore, queue_id: int = 2) -> list[MessageExtBrokerInner]:
    found: list[MessageExtBrokerInner] = []
    while True:  # a read returns 32 messages at most
        got = store.get_message("g", "RealTopic", queue_id, len(found), 32)
        if got.status is not GetMessageStatus.FOUND:
            return found
        found += [decode_message(b) for b in got.message_buffers]  # type: ignore[misc]


def test_each_property_parks_the_message_until_its_exact_time(
    store_factory: StoreFactory,
) -> None:
    clock = ManualClock(START_MS)
    store = store_factory(clock=clock, start=False)
    timers = _timers(store, clock)
    assert store.put_message(_timer(b"sec", {mc.PROPERTY_TIMER_DELAY_SEC: "2"})).is_ok
    assert store.put_message(_timer(b"ms", {mc.PROPERTY_TIMER_DELAY_MS: "1500"})).is_ok
    at = str(START_MS + 1234)
    assert store.put_message(_timer(b"abs", {mc.PROPERTY_TIMER_DELIVER_MS: at})).is_ok
    _pass(store, timers)
    assert _delivered(store) == []
    assert store.get_max_offset_in_queue(RMQ_SYS_WHEEL_TIMER_TOPIC, 0) == 3

    clock.advance(1233)
    _pass(store, timers)
    assert _delivered(store) == []  # one ms early: never
    clock.advance(1)
    _pass(store, timers)
    assert [m.body for m in _delivered(store)] == [b"abs"]
    clock.advance(1500 - 1234)
    _pass(store, timers)
    clock.advance(500)
    _pass(store, timers)
    got = _delivered(store)
    assert [m.body for m in got] == [b"abs", b"ms", b"sec"]
    first = got[0]
    assert first.topic == "RealTopic" and first.queue_id == 2
    assert first.store_timestamp == START_MS + 1234
    assert first.properties[mc.PROPERTY_TIMER_OUT_MS] == at
    assert first.properties[mc.PROPERTY_TAGS] == "TagT"
    assert int(first.properties[mc.PROPERTY_TIMER_DEQUEUE_MS]) == START_MS + 1234
    assert mc.PROPERTY_REAL_TOPIC not in first.properties
    assert mc.PROPERTY_REAL_QUEUE_ID not in first.properties
    assert timers.delivered == 3


def test_precedence_sec_then_ms_then_deliver_ms(store_factory: StoreFactory) -> None:
    clock = ManualClock(START_MS)
    store = store_factory(clock=clock, start=False)
    props = {
        mc.PROPERTY_TIMER_DELAY_SEC: "1",
        mc.PROPERTY_TIMER_DELAY_MS: "5000",
        mc.PROPERTY_TIMER_DELIVER_MS: str(START_MS + 9000),
    }
    msg = _timer(b"x", props)
    assert store.put_message(msg).is_ok
    assert msg.properties[mc.PROPERTY_TIMER_OUT_MS] == str(START_MS + 1000)
    msg = _timer(b"y", {k: v for k, v in props.items() if k != mc.PROPERTY_TIMER_DELAY_SEC})
    assert store.put_message(msg).is_ok
    assert msg.properties[mc.PROPERTY_TIMER_OUT_MS] == str(START_MS + 5000)


def test_past_time_is_stored_at_once_and_beyond_the_max_is_refused(
    store_factory: StoreFactory,
) -> None:
    clock = ManualClock(START_MS)
    store = store_factory(clock=clock, start=False, timer_max_delay_sec=60)
    past = _timer(b"past", {mc.PROPERTY_TIMER_DELIVER_MS: str(START_MS)})
    assert store.put_message(past).is_ok
    assert past.topic == "RealTopic"
    far = _timer(b"far", {mc.PROPERTY_TIMER_DELAY_MS: "60001"})
    result = store.put_message(far)
    assert result.status is PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL
    assert result.remark == (
        "timer message illegal: TIMER_DELAY_MS=60001 is 60001 ms ahead, more than "
        "timerMaxDelaySec 60 (60000 ms)"
    )
    bad = store.put_message(_timer(b"bad", {mc.PROPERTY_TIMER_DELAY_SEC: "soon"}))
    assert bad.status is PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL
    assert bad.remark == "timer message illegal: TIMER_DELAY_SEC='soon' is not an integer"
    # A recall marker for a time passed: its timer is delivered already, or about to be.
    cancel = {mc.PROPERTY_TIMER_DELIVER_MS: str(START_MS), mc.PROPERTY_TIMER_DEL_UNIQKEY: "k"}
    refused = store.put_message(_timer(b"cancel", cancel))
    assert refused.status is PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL
    assert "TIMER_DEL_UNIQKEY" in (refused.remark or "")


def test_a_delay_level_wins_and_clears_the_timer_properties(
    store_factory: StoreFactory,
) -> None:
    clock = ManualClock(START_MS)
    store = store_factory(clock=clock, start=False)
    msg = _timer(b"lvl", {mc.PROPERTY_DELAY_TIME_LEVEL: "1", mc.PROPERTY_TIMER_DELAY_SEC: "100"})
    assert store.put_message(msg).is_ok
    assert msg.topic == RMQ_SYS_SCHEDULE_TOPIC
    assert mc.PROPERTY_TIMER_DELAY_SEC not in msg.properties
    store.reput_message_service.do_reput()
    record = store.select_one_message_by_offset(0)
    assert record is not None
    assert mc.PROPERTY_TIMER_DELAY_SEC not in decode_message(record).properties


def test_timer_wheel_disabled_refuses_timers(store_factory: StoreFactory) -> None:
    store = store_factory(start=False, timer_wheel_enable=False)
    result = store.put_message(_timer(b"x", {mc.PROPERTY_TIMER_DELAY_MS: "10"}))
    assert result.status is PutMessageStatus.WHEEL_TIMER_NOT_ENABLE
    assert "timerWheelEnable is false" in (result.remark or "")


def test_recovery_delivers_what_was_due_while_down_and_loses_nothing(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    root = tmp_path / "store"
    clock = ManualClock(START_MS)
    store = store_factory(root, clock=clock, start=False)
    timers = _timers(store, clock)
    for i in range(50):
        delay = 100 * (i + 1)  # one per 100 ms slot, up to 5 s
        assert store.put_message(_timer(b"t%d" % i, {mc.PROPERTY_TIMER_DELAY_MS: str(delay)})).is_ok
    _pass(store, timers)
    clock.advance(1000)
    _pass(store, timers)
    _checkpoint(store, timers)
    assert len(_delivered(store)) == 10
    # More filed after the last checkpoint, then a crash: no shutdown, no flush.
    for i in range(50, 60):
        assert store.put_message(_timer(b"t%d" % i, {mc.PROPERTY_TIMER_DELAY_MS: "500"})).is_ok
    _pass(store, timers)
    store.shutdown()

    clock.advance(10_000)  # everything fell due while the broker was down
    store = store_factory(root, clock=clock, start=False)
    timers = _timers(store, clock)
    _pass(store, timers)
    _pass(store, timers)
    bodies = {m.body for m in _delivered(store)}
    assert bodies == {b"t%d" % i for i in range(60)}
    saved = TimerCheckpoint.load(store.config.timer_check_file)
    assert saved.last_timer_queue_offset <= 60


def test_checkpoint_never_passes_an_undelivered_timer(store_factory: StoreFactory) -> None:
    clock = ManualClock(START_MS)
    store = store_factory(clock=clock, start=False)
    timers = _timers(store, clock)
    assert store.put_message(_timer(b"a", {mc.PROPERTY_TIMER_DELAY_MS: "280"})).is_ok
    _pass(store, timers)
    clock.advance(255)  # its slot has begun: it is read into memory but not due
    _pass(store, timers)
    assert timers.pending_ready == 1
    saved = _checkpoint(store, timers)
    assert saved.last_read_time_ms <= START_MS + 250  # the slot holding it
    assert saved.last_timer_queue_offset == 1
    clock.advance(25)
    _pass(store, timers)
    assert len(_delivered(store)) == 1
    # Delivered, but its copy in the real topic is not synced: the checkpoint waits.
    timers.flush()
    held = TimerCheckpoint.load(store.config.timer_check_file)
    assert held.last_read_time_ms == saved.last_read_time_ms
    saved = _checkpoint(store, timers)
    assert saved.last_read_time_ms > START_MS + 280


def test_the_loop_wakes_for_the_earliest_timer_or_filled_slot(store_factory: StoreFactory) -> None:
    clock = ManualClock(START_MS)  # 50 ms into a 100 ms slot
    store = store_factory(clock=clock, start=False)
    timers = _timers(store, clock)
    assert timers.step() == IDLE_WAIT_MS / 1000  # no timer: empty slots wake no one
    assert store.put_message(_timer(b"a", {mc.PROPERTY_TIMER_DELAY_MS: "280"})).is_ok
    store.reput_message_service.do_reput()
    assert timers.step() == 0.25  # its slot begins in 250 ms; the empty ones before are passed
    clock.advance(250)  # into the timer's slot: read into memory, due in 30 ms
    assert timers.step() == 0.03
    assert timers.pending_ready == 1
    clock.advance(30)
    timers.step()
    assert timers.delivered == 1
