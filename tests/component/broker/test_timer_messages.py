"""Timer messages through a real broker: each of the three properties, not visible before its
time and visible after in the right queue; past times at once; beyond the max refused with
RocketMQ's code; a restart with timers pending; a timer due while the broker was down."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from orbitmq.broker import BrokerConfig, BrokerController
from orbitmq.common import message_const as mc
from orbitmq.common.topic import RMQ_SYS_WHEEL_TIMER_TOPIC
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.remoting import RemotingClient
from tests.component.broker.conftest import (
    pull_all,
    send,
    send_header,
    send_request,
    sent_header,
)
from tests.support import small_config

TOPIC = "TopicTimer"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _timer_request(body: bytes, props: dict[str, str], queue_id: int = 1) -> RemotingCommand:
    return send_request(RequestCode.SEND_MESSAGE_V2, send_header(TOPIC, props, queue_id), body)


async def test_each_property_delivers_at_its_time_into_its_queue(
    broker: BrokerController, client: RemotingClient
) -> None:
    sent_at = _now_ms()
    requests = [
        _timer_request(b"sec", {mc.PROPERTY_TIMER_DELAY_SEC: "1"}),
        _timer_request(b"ms", {mc.PROPERTY_TIMER_DELAY_MS: "700"}),
        _timer_request(b"abs", {mc.PROPERTY_TIMER_DELIVER_MS: str(sent_at + 400)}),
    ]
    for request in requests:
        sent_header(await send(client, broker, request))
    store = broker.message_store
    assert store.get_max_offset_in_queue(TOPIC, 1) == 0  # not visible before its time
    got = await pull_all(client, broker, TOPIC, 3, queue_id=1)
    assert [m.body for m in got] == [b"abs", b"ms", b"sec"]
    for message in got:
        due = int(message.properties[mc.PROPERTY_TIMER_OUT_MS])
        assert message.store_timestamp >= due  # never early
        assert message.queue_id == 1 and message.topic == TOPIC
        assert mc.PROPERTY_REAL_TOPIC not in message.properties
    assert got[2].properties[mc.PROPERTY_TIMER_DELAY_SEC] == "1"
    assert store.get_max_offset_in_queue(RMQ_SYS_WHEEL_TIMER_TOPIC, 0) == 3


async def test_past_is_at_once_and_beyond_the_max_is_refused(
    broker: BrokerController, client: RemotingClient
) -> None:
    past = _timer_request(b"past", {mc.PROPERTY_TIMER_DELIVER_MS: "1000"})
    sent_header(await send(client, broker, past))
    assert broker.message_store.get_max_offset_in_queue(RMQ_SYS_WHEEL_TIMER_TOPIC, 0) == 0
    assert [m.body for m in await pull_all(client, broker, TOPIC, 1, queue_id=1)] == [b"past"]
    far = _timer_request(b"far", {mc.PROPERTY_TIMER_DELAY_SEC: "259201"})
    response = await send(client, broker, far)
    assert response.code == ResponseCode.MESSAGE_ILLEGAL
    assert response.remark == (
        "timer message illegal: TIMER_DELAY_SEC=259201 is 259201000 ms ahead, more than "
        "timerMaxDelaySec 259200 (259200000 ms)"
    )


async def test_timers_pending_over_a_restart_and_due_while_down(
    tmp_path: Path, client: RemotingClient
) -> None:
    def make() -> BrokerController:
        config = BrokerConfig(broker_name="broker-a", broker_ip1="127.0.0.1", listen_port=0)
        return BrokerController(config, small_config(tmp_path / "store"))

    broker = make()
    await broker.start()
    sent_at = _now_ms()
    due_while_down = _timer_request(b"down", {mc.PROPERTY_TIMER_DELAY_MS: "300"})
    after_restart = _timer_request(b"later", {mc.PROPERTY_TIMER_DELIVER_MS: str(sent_at + 2500)})
    sent_header(await send(client, broker, due_while_down))
    sent_header(await send(client, broker, after_restart))
    await broker.stop()
    await asyncio.sleep(0.5)  # the first falls due while no broker runs

    broker = make()
    await broker.start()
    try:
        got = await pull_all(client, broker, TOPIC, 1, queue_id=1)
        assert [m.body for m in got] == [b"down"]
        assert _now_ms() < sent_at + 2500  # the other waits for its own time
        got = await pull_all(client, broker, TOPIC, 2, queue_id=1)
        assert [m.body for m in got] == [b"down", b"later"]
        assert got[1].store_timestamp >= sent_at + 2500
    finally:
        await broker.stop()


async def test_a_delay_level_wins_over_timer_properties(
    broker: BrokerController, client: RemotingClient
) -> None:
    props = {mc.PROPERTY_DELAY_TIME_LEVEL: "1", mc.PROPERTY_TIMER_DELAY_SEC: "3600"}
    sent_at = _now_ms()
    sent_header(await send(client, broker, _timer_request(b"level", props)))
    assert broker.message_store.get_max_offset_in_queue(RMQ_SYS_WHEEL_TIMER_TOPIC, 0) == 0
    got = await pull_all(client, broker, TOPIC, 1, queue_id=1)  # level 1: 1 s, not an hour
    assert got[0].store_timestamp >= sent_at + 1000
    assert mc.PROPERTY_TIMER_DELAY_SEC not in got[0].properties
    assert mc.PROPERTY_TIMER_OUT_MS not in got[0].properties


async def test_timer_wheel_disabled_is_refused_as_rocketmq_does(
    client: RemotingClient, tmp_path: Path
) -> None:
    config = BrokerConfig(broker_name="broker-off", broker_ip1="127.0.0.1", listen_port=0)
    broker = BrokerController(config, small_config(tmp_path / "off", timer_wheel_enable=False))
    await broker.start()
    try:
        assert broker.timer_message_store is None
        response = await send(
            client, broker, _timer_request(b"x", {mc.PROPERTY_TIMER_DELAY_MS: "5"})
        )
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert response.remark == "accurate timer message is not enabled, timerWheelEnable is false"
    finally:
        await broker.stop()
