"""Delayed messages are parked in SCHEDULE_TOPIC_XXXX, queue level - 1, with their delivery
time as the consume-queue tag code."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.common import message_const as mc
from orbitmq.store import GetMessageStatus, PutMessageStatus
from orbitmq.testing import ManualClock
from tests.component.store.records import file_name, parse_record, read_cq_units
from tests.conftest import StoreFactory
from tests.support import make_message

T0 = 1_700_000_000_000
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
LEVEL_MS = [
    1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000,
    420_000, 480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000,
]  # fmt: skip


@pytest.mark.parametrize(("level", "stored_level"), [(1, 1), (3, 3), (18, 18), (99, 18)])
def test_delayed_message_goes_to_the_schedule_topic(
    store_factory: StoreFactory, level: int, stored_level: int
) -> None:
    clock = ManualClock(T0)
    store = store_factory(clock=clock)
    msg = make_message(
        "OrderTopic",
        b"later",
        queue_id=5,
        tags="TagA",
        properties={mc.PROPERTY_DELAY_TIME_LEVEL: str(level)},
    )
    result = store.put_message(msg)
    assert result.status is PutMessageStatus.PUT_OK
    assert result.append_result is not None
    assert result.append_result.logics_offset == 0
    assert store.wait_for_dispatch()

    queue_id = stored_level - 1
    got = store.get_message("g", SCHEDULE_TOPIC, queue_id, 0, 32)
    assert got.status is GetMessageStatus.FOUND
    record = parse_record(got.message_buffers[0])
    assert record.topic == SCHEDULE_TOPIC
    assert record.queue_id == queue_id
    assert record.body == b"later"
    assert record.properties[mc.PROPERTY_REAL_TOPIC] == "OrderTopic"
    assert record.properties[mc.PROPERTY_REAL_QUEUE_ID] == "5"
    assert record.properties[mc.PROPERTY_DELAY_TIME_LEVEL] == str(stored_level)
    assert record.properties[mc.PROPERTY_TAGS] == "TagA"
    assert record.store_timestamp == T0
    # Nothing reaches the real topic yet.
    assert store.get_max_offset_in_queue("OrderTopic", 5) == 0

    # The tag code is the delivery time: store time + the level's delay.
    units = read_cq_units(
        Path(store.config.consume_queue_dir) / SCHEDULE_TOPIC / str(queue_id) / file_name(0)
    )
    assert units == [
        (
            result.append_result.wrote_offset,
            result.append_result.wrote_bytes,
            T0 + LEVEL_MS[stored_level - 1],
        )
    ]


def test_level_3_waits_ten_seconds(store_factory: StoreFactory) -> None:
    clock = ManualClock(T0 + 123)
    store = store_factory(clock=clock)
    for i in range(3):
        clock.advance(1000)
        msg = make_message(body=f"d{i}".encode(), properties={mc.PROPERTY_DELAY_TIME_LEVEL: "3"})
        assert store.put_message(msg).is_ok
    assert store.wait_for_dispatch()
    units = read_cq_units(
        Path(store.config.consume_queue_dir) / SCHEDULE_TOPIC / "2" / file_name(0)
    )
    assert [u[2] for u in units] == [T0 + 123 + (i + 1) * 1000 + 10_000 for i in range(3)]
    assert store.get_max_offset_in_queue(SCHEDULE_TOPIC, 2) == 3


def test_level_0_is_not_delayed(store_factory: StoreFactory) -> None:
    store = store_factory()
    msg = make_message(properties={mc.PROPERTY_DELAY_TIME_LEVEL: "0"})
    assert store.put_message(msg).is_ok
    assert store.wait_for_dispatch()
    assert store.get_max_offset_in_queue("TopicTest", 0) == 1
    assert store.find_consume_queue(SCHEDULE_TOPIC, 0) is None
