"""Delayed messages wait in SCHEDULE_TOPIC_XXXX and reach their real topic when due (R33)."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from orbitmq.broker import BrokerConfig, BrokerController, ScheduleMessageService
from orbitmq.common import MessageExtBrokerInner, decode_message
from orbitmq.common import message_const as mc
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.topic import RMQ_SYS_SCHEDULE_TOPIC
from orbitmq.store import BrokerRole, GetMessageStatus, MessageStore
from orbitmq.testing import ManualClock
from tests.conftest import StoreFactory
from tests.support import make_message, small_config

START_MS = 1_700_000_000_000


def _delayed(
    level: int, body: bytes, topic: str = "RealTopic", queue_id: int = 1
) -> MessageExtBrokerInner:
    return make_message(
        topic,
        body,
        queue_id=queue_id,
        tags="TagD",
        keys=body.decode(),
        properties={mc.PROPERTY_DELAY_TIME_LEVEL: str(level)},
    )


def _schedule(store: MessageStore, clock: Clock = SYSTEM_CLOCK) -> ScheduleMessageService:
    """The service as the broker makes it, with delayOffset.json loaded."""
    service = ScheduleMessageService(
        store,
        store.delay_levels_ms,
        store.config.config_file("delayOffset"),
        clock=clock,
        persist_interval_ms=store.config.flush_delay_offset_interval,
    )
    service.load()
    return service


def _bodies(store: MessageStore, topic: str = "RealTopic", queue_id: int = 1) -> list[bytes]:
    got = store.get_message("g", topic, queue_id, 0, 32)
    return [decode_message(b).body for b in got.message_buffers]


def test_a_message_arrives_in_its_real_topic_when_due(store_factory: StoreFactory) -> None:
    clock = ManualClock(START_MS)
    store = store_factory(clock=clock, start=False)
    schedule = _schedule(store, clock)
    assert store.put_message(_delayed(2, b"in-5s")).is_ok
    store.reput_message_service.do_reput()

    due = schedule.deliver_due()
    assert due is not None
    assert 4.9 <= due <= 5.0
    store.reput_message_service.do_reput()
    assert store.get_message("g", "RealTopic", 1, 0, 32).status is (
        GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    )

    clock.advance(5000)
    schedule.deliver_due()
    store.reput_message_service.do_reput()
    got = store.get_message("g", "RealTopic", 1, 0, 32)
    assert got.status is GetMessageStatus.FOUND
    delivered = decode_message(got.message_buffers[0])
    assert delivered.body == b"in-5s"
    assert mc.PROPERTY_DELAY_TIME_LEVEL not in delivered.properties
    assert delivered.properties[mc.PROPERTY_REAL_TOPIC] == "RealTopic"
    assert delivered.properties[mc.PROPERTY_TAGS] == "TagD"
    assert delivered.store_timestamp == START_MS + 5000
    assert schedule.offset_table[2] == 1
    found = store.query_message("RealTopic", "in-5s", 32, 0, 2**62)
    assert len(found.message_buffers) == 1


def test_levels_deliver_independently_and_in_order(store_factory: StoreFactory) -> None:
    clock = ManualClock(START_MS)
    store = store_factory(clock=clock, start=False)
    for body, level in ((b"a-10s", 3), (b"b-1s", 1), (b"c-1s", 1), (b"d-10s", 3)):
        assert store.put_message(_delayed(level, body)).is_ok
    store.reput_message_service.do_reput()
    schedule = _schedule(store, clock)
    clock.advance(1000)
    schedule.deliver_due()
    store.reput_message_service.do_reput()
    assert _bodies(store) == [b"b-1s", b"c-1s"]
    clock.advance(9000)
    schedule.deliver_due()
    store.reput_message_service.do_reput()
    assert _bodies(store) == [b"b-1s", b"c-1s", b"a-10s", b"d-10s"]
    assert schedule.offset_table == {1: 2, 3: 2}


def test_progress_survives_a_restart_without_delivering_twice(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    clock = ManualClock(START_MS)
    root = tmp_path / "store"
    store = store_factory(root, clock=clock, start=False)
    assert store.put_message(_delayed(1, b"once")).is_ok
    assert store.put_message(_delayed(4, b"later")).is_ok
    store.reput_message_service.do_reput()
    clock.advance(1000)
    schedule = _schedule(store, clock)
    schedule.deliver_due()
    schedule.persist()
    store.shutdown()
    saved = json.loads((root / "config" / "delayOffset.json").read_text())
    assert saved == {"offsetTable": {"1": 1, "4": 0}}

    reopened = store_factory(root, clock=clock, start=False)
    reopened_schedule = _schedule(reopened, clock)
    assert reopened_schedule.offset_table == {1: 1, 4: 0}
    clock.advance(30_000)
    reopened_schedule.deliver_due()
    reopened.reput_message_service.do_reput()
    assert _bodies(reopened) == [b"once", b"later"]


def test_a_delivery_time_beyond_the_level_is_treated_as_now(store_factory: StoreFactory) -> None:
    clock = ManualClock(START_MS + 3_600_000)
    store = store_factory(clock=clock, start=False)
    assert store.put_message(_delayed(1, b"from-the-future")).is_ok
    store.reput_message_service.do_reput()
    clock.set(START_MS)  # the clock stepped back an hour: due time is far beyond 1 s
    _schedule(store, clock).deliver_due()
    store.reput_message_service.do_reput()
    assert _bodies(store) == [b"from-the-future"]


def test_the_running_service_delivers_on_its_own(tmp_path: Path) -> None:
    arrived = threading.Event()

    def listener(topic: str, queue_id: int, max_offset: int, tags_codes: frozenset[int]) -> None:
        if topic == "RealTopic":
            arrived.set()

    store = MessageStore(small_config(tmp_path / "store"), message_arriving_listener=listener)
    store.load()
    store.start()
    schedule = _schedule(store)
    schedule.start()
    try:
        assert store.put_message(_delayed(1, b"auto")).is_ok
        assert store.get_max_offset_in_queue("RealTopic", 1) == 0
        assert arrived.wait(10), "a level-1 message was not delivered within 10 s"
        assert _bodies(store) == [b"auto"]
        assert store.get_max_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, 0) == 1
    finally:
        schedule.shutdown()
        store.shutdown()


async def test_the_broker_runs_the_schedule_and_a_restart_resumes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock(START_MS)
    store_config = small_config(tmp_path / "store")

    def make_broker() -> BrokerController:
        config = BrokerConfig(broker_name="broker-a", broker_ip1="127.0.0.1", listen_port=0)
        return BrokerController(config, store_config, clock=clock)

    broker = make_broker()
    await broker.start()
    try:
        arrived = threading.Event()
        hold_service = broker.pull_request_hold_service
        message_arriving = hold_service.message_arriving

        def watch(topic: str, queue_id: int, max_offset: int, tags_codes: frozenset[int]) -> None:
            message_arriving(topic, queue_id, max_offset, tags_codes)
            if topic == "RealTopic":
                arrived.set()

        monkeypatch.setattr(hold_service, "message_arriving", watch)
        assert broker.message_store.put_message(_delayed(1, b"once")).is_ok
        clock.advance(1000)
        assert await asyncio.to_thread(arrived.wait, 10), "not delivered within 10 s"
    finally:
        await broker.stop()
    saved = json.loads((tmp_path / "store" / "config" / "delayOffset.json").read_text())
    assert saved == {"offsetTable": {"1": 1}}

    reopened = make_broker()
    await reopened.start()
    try:
        assert reopened.schedule_message_service is not None
        assert reopened.schedule_message_service.offset_table == {1: 1}
        assert _bodies(reopened.message_store) == [b"once"]
    finally:
        await reopened.stop()


def test_a_slave_broker_has_no_schedule(tmp_path: Path) -> None:
    config = BrokerConfig(broker_name="broker-a", broker_ip1="127.0.0.1", listen_port=0)
    slave = BrokerController(config, small_config(tmp_path / "store", broker_role=BrokerRole.SLAVE))
    assert slave.schedule_message_service is None
