"""Offsets by store time, earliest message time, and lookups by physical offset."""

from __future__ import annotations

from orbitmq.common import message_const as mc
from orbitmq.testing import ManualClock
from tests.component.store.records import parse_record
from tests.conftest import StoreFactory
from tests.support import make_message

T0 = 1_700_000_000_000


def test_offset_in_queue_by_time_is_the_first_stored_at_or_after(
    store_factory: StoreFactory,
) -> None:
    clock = ManualClock(T0)
    store = store_factory(clock=clock)
    # Store times T0, T0+1000, ..., two messages share T0+5000.
    stamps = [T0 + i * 1000 for i in range(6)] + [T0 + 5000] + [T0 + 9000 + i for i in range(13)]
    for i, stamp in enumerate(stamps):
        clock.set(stamp)
        assert store.put_message(make_message(body=f"m{i}".encode())).is_ok
    assert store.wait_for_dispatch()

    def by_time(timestamp: int) -> int:
        return store.get_offset_in_queue_by_time("TopicTest", 0, timestamp)

    assert by_time(0) == 0
    assert by_time(T0 - 1) == 0
    assert by_time(T0) == 0
    assert by_time(T0 + 1) == 1
    assert by_time(T0 + 1500) == 2
    assert by_time(T0 + 2000) == 2
    assert by_time(T0 + 5000) == 5  # the first of the two stored then
    assert by_time(T0 + 5001) == 7
    assert by_time(T0 + 9005) == 12
    assert by_time(T0 + 9012) == 19
    for offset, stamp in enumerate(stamps):
        assert stamps[by_time(stamp)] == stamp
        assert store.get_message_store_timestamp("TopicTest", 0, offset) == stamp
    assert by_time(T0 + 10**6) == len(stamps)  # every message is older: the max offset
    assert store.get_offset_in_queue_by_time("NoSuchTopic", 0, T0) == 0


def test_earliest_message_time(store_factory: StoreFactory) -> None:
    clock = ManualClock(T0 + 42)
    store = store_factory(clock=clock)
    assert store.put_message(make_message(queue_id=1)).is_ok
    clock.advance(5000)
    assert store.put_message(make_message(queue_id=1)).is_ok
    assert store.put_message(make_message(queue_id=2)).is_ok
    assert store.wait_for_dispatch()
    assert store.get_earliest_message_time("TopicTest", 1) == T0 + 42
    assert store.get_earliest_message_time("TopicTest", 2) == T0 + 5042
    assert store.get_earliest_message_time("TopicTest", 3) == -1


def test_look_message_by_offset_and_select_one_message_by_offset(
    store_factory: StoreFactory,
) -> None:
    clock = ManualClock(T0)
    store = store_factory(clock=clock)
    results = []
    for i in range(3):
        clock.set(T0 + i)
        msg = make_message(body=f"body-{i}".encode() * (i + 1), tags=f"T{i}", keys=f"k{i}")
        results.append(store.put_message(msg))
    assert store.wait_for_dispatch()
    for i, result in enumerate(results):
        append = result.append_result
        assert append is not None
        message = store.look_message_by_offset(append.wrote_offset)
        assert message is not None
        assert message.body == f"body-{i}".encode() * (i + 1)
        assert message.topic == "TopicTest"
        assert message.commit_log_offset == append.wrote_offset
        assert message.queue_offset == i
        assert message.store_timestamp == T0 + i
        assert message.properties[mc.PROPERTY_TAGS] == f"T{i}"
        assert message.msg_id == append.msg_id

        record = store.select_one_message_by_offset(append.wrote_offset)
        assert record is not None
        assert len(record) == append.wrote_bytes
        parsed = parse_record(record)
        assert parsed.physical_offset == append.wrote_offset
        assert parsed.body == message.body
        sized = store.select_one_message_by_offset(append.wrote_offset, append.wrote_bytes)
        assert sized is not None
        assert bytes(sized) == bytes(record)
    assert store.select_one_message_by_offset(store.max_phy_offset) is None
    assert store.look_message_by_offset(store.max_phy_offset + 10_000_000) is None
