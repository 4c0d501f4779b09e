"""CONSUMER_SEND_MSG_BACK (retry and dead letters), QUERY_MESSAGE and VIEW_MESSAGE_BY_ID
against a real broker over TCP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.broker import BrokerConfig, BrokerController
from orbitmq.common import MessageExt, decode_message, decode_message_id, decode_messages
from orbitmq.common import message_const as mc
from orbitmq.common.topic import RMQ_SYS_SCHEDULE_TOPIC
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import (
    ConsumerSendMsgBackRequestHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from orbitmq.remoting import RemotingClient
from orbitmq.testing.manual_clock import ManualClock
from tests.component.broker.conftest import (
    BrokerFactory,
    pull_all,
    send,
    send_header,
    send_request,
    sent_header,
)
from tests.support import small_config

TOPIC = "TopicSendBack"
GROUP = "cg"
RETRY = "%RETRY%cg"
DLQ = "%DLQ%cg"
#: Delay level 3 is 10 s with the default levels.
LEVEL_3_MS = 10_000


@pytest.fixture
async def clock() -> ManualClock:
    return ManualClock(1_700_000_000_000)


@pytest.fixture
async def clocked_broker(tmp_path: Path, clock: ManualClock) -> AsyncIterator[BrokerController]:
    config = BrokerConfig(broker_name="broker-a", broker_ip1="127.0.0.1", listen_port=0)
    controller = BrokerController(config, small_config(tmp_path / "clocked"), clock=clock)
    await controller.start()
    yield controller
    await controller.stop()


async def send_one(
    client: RemotingClient,
    broker: BrokerController,
    properties: dict[str, str] | None = None,
    body: bytes = b"hello",
    topic: str = TOPIC,
    **extra: int,
) -> str:
    """Send one message; its offset message id."""
    header = send_header(topic, properties, **extra)
    response = await send(client, broker, send_request(RequestCode.SEND_MESSAGE, header, body))
    return sent_header(response).msg_id


def send_back_request(msg_id: str, delay_level: int = 0, **extra: object) -> RemotingCommand:
    _, offset = decode_message_id(msg_id)
    header = ConsumerSendMsgBackRequestHeader(
        offset=offset,
        group=GROUP,
        delay_level=delay_level,
        origin_msg_id=msg_id,
        origin_topic=TOPIC,
        **extra,  # type: ignore[arg-type]
    )
    return RemotingCommand.create_request(
        RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields()
    )


def stored_in(broker: BrokerController, topic: str, queue_id: int) -> list[MessageExt]:
    """Every message in one consume queue, read straight from the store."""
    store = broker.message_store
    assert store.wait_for_dispatch()
    queue = store.find_consume_queue(topic, queue_id)
    if queue is None:
        return []
    found = []
    for offset in range(queue.min_offset_in_queue, queue.max_offset_in_queue):
        unit = queue.read_unit(offset)
        assert unit is not None
        msg = store.look_message_by_offset(unit[0])
        assert msg is not None
        found.append(msg)
    return found


async def test_send_back_parks_the_message_at_level_3_then_delivers_it_to_retry(
    clocked_broker: BrokerController, client: RemotingClient, clock: ManualClock
) -> None:
    broker = clocked_broker
    msg_id = await send_one(client, broker, {mc.PROPERTY_KEYS: "k1", mc.PROPERTY_TAGS: "tagA"})

    response = await send(client, broker, send_back_request(msg_id))

    assert response.code == ResponseCode.SUCCESS, response.remark
    [parked] = stored_in(broker, RMQ_SYS_SCHEDULE_TOPIC, 2)  # level 3 -> queue 2
    assert parked.properties[mc.PROPERTY_REAL_TOPIC] == RETRY
    assert parked.properties[mc.PROPERTY_RETRY_TOPIC] == TOPIC
    assert parked.properties[mc.PROPERTY_ORIGIN_MESSAGE_ID] == msg_id
    assert parked.properties[mc.PROPERTY_DELAY_TIME_LEVEL] == "3"
    assert parked.properties[mc.PROPERTY_TAGS] == "tagA"
    assert parked.reconsume_times == 1
    assert parked.body == b"hello"
    assert broker.topic_config_manager.select_topic_config(RETRY) is not None

    clock.advance(LEVEL_3_MS + 1)
    [retried] = await pull_all(client, broker, RETRY, 1)

    assert retried.topic == RETRY
    assert retried.body == b"hello"
    assert retried.reconsume_times == 1
    assert retried.properties[mc.PROPERTY_RETRY_TOPIC] == TOPIC
    assert retried.properties[mc.PROPERTY_ORIGIN_MESSAGE_ID] == msg_id


async def test_second_send_back_uses_level_4_and_keeps_the_origin(
    clocked_broker: BrokerController, client: RemotingClient, clock: ManualClock
) -> None:
    broker = clocked_broker
    msg_id = await send_one(client, broker)
    assert (await send(client, broker, send_back_request(msg_id))).code == ResponseCode.SUCCESS
    clock.advance(LEVEL_3_MS + 1)
    [retried] = await pull_all(client, broker, RETRY, 1)

    again = await send(client, broker, send_back_request(retried.msg_id))

    assert again.code == ResponseCode.SUCCESS, again.remark
    [parked] = stored_in(broker, RMQ_SYS_SCHEDULE_TOPIC, 3)  # level 4 -> queue 3
    assert parked.reconsume_times == 2
    assert parked.properties[mc.PROPERTY_REAL_TOPIC] == RETRY
    assert parked.properties[mc.PROPERTY_RETRY_TOPIC] == TOPIC
    assert parked.properties[mc.PROPERTY_ORIGIN_MESSAGE_ID] == msg_id


async def test_client_delay_level_is_used(broker: BrokerController, client: RemotingClient) -> None:
    msg_id = await send_one(client, broker)

    response = await send(client, broker, send_back_request(msg_id, delay_level=5))

    assert response.code == ResponseCode.SUCCESS, response.remark
    [parked] = stored_in(broker, RMQ_SYS_SCHEDULE_TOPIC, 4)
    assert parked.properties[mc.PROPERTY_DELAY_TIME_LEVEL] == "5"


def assert_dead_letter(msg: MessageExt, msg_id: str, reconsume_times: int) -> None:
    assert msg.topic == DLQ
    assert msg.reconsume_times == reconsume_times
    assert msg.properties[mc.PROPERTY_RETRY_TOPIC] == TOPIC
    assert msg.properties[mc.PROPERTY_ORIGIN_MESSAGE_ID] == msg_id
    assert mc.PROPERTY_DELAY_TIME_LEVEL not in msg.properties
    assert mc.PROPERTY_REAL_TOPIC not in msg.properties


async def test_past_the_group_max_reconsume_times_goes_to_the_dlq(
    broker: BrokerController, client: RemotingClient
) -> None:
    msg_id = await send_one(client, broker, reconsume_times=16)

    response = await send(client, broker, send_back_request(msg_id))

    assert response.code == ResponseCode.SUCCESS, response.remark
    [dead] = stored_in(broker, DLQ, 0)
    assert_dead_letter(dead, msg_id, 17)
    assert stored_in(broker, RMQ_SYS_SCHEDULE_TOPIC, 2) == []
    dlq_config = broker.topic_config_manager.select_topic_config(DLQ)
    assert dlq_config is not None
    assert dlq_config.write_queue_nums == 1


async def test_the_client_max_reconsume_times_wins(
    broker: BrokerController, client: RemotingClient
) -> None:
    below = await send_one(client, broker, reconsume_times=1)
    at = await send_one(client, broker, reconsume_times=2)

    first = await send(client, broker, send_back_request(below, max_reconsume_times=2))
    second = await send(client, broker, send_back_request(at, max_reconsume_times=2))

    assert first.code == second.code == ResponseCode.SUCCESS
    [parked] = stored_in(broker, RMQ_SYS_SCHEDULE_TOPIC, 3)  # 3 + 1
    assert parked.properties[mc.PROPERTY_ORIGIN_MESSAGE_ID] == below
    [dead] = stored_in(broker, DLQ, 0)
    assert_dead_letter(dead, at, 3)


async def test_negative_delay_level_goes_straight_to_the_dlq(
    broker: BrokerController, client: RemotingClient
) -> None:
    msg_id = await send_one(client, broker)

    response = await send(client, broker, send_back_request(msg_id, delay_level=-1))

    assert response.code == ResponseCode.SUCCESS, response.remark
    [dead] = stored_in(broker, DLQ, 0)
    assert_dead_letter(dead, msg_id, 1)


async def test_unknown_group_without_auto_create(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await broker_factory(auto_create_subscription_group=False)
    msg_id = await send_one(client, broker)

    response = await send(client, broker, send_back_request(msg_id))

    assert response.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    assert response.remark is not None
    assert GROUP in response.remark


async def test_unknown_offset_is_a_system_error(
    broker: BrokerController, client: RemotingClient
) -> None:
    await send_one(client, broker)
    header = ConsumerSendMsgBackRequestHeader(offset=10**9, group=GROUP, delay_level=0)
    request = RemotingCommand.create_request(
        RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields()
    )

    response = await send(client, broker, request)

    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == f"look message by offset failed, {10**9}"


def query_request(key: str, topic: str = TOPIC, **ext: str) -> RemotingCommand:
    header = QueryMessageRequestHeader(
        topic=topic, key=key, max_num=32, begin_timestamp=0, end_timestamp=2**62
    )
    return RemotingCommand.create_request(
        RequestCode.QUERY_MESSAGE, {**header.to_ext_fields(), **ext}
    )


async def test_query_message_by_key(broker: BrokerController, client: RemotingClient) -> None:
    wanted = await send_one(client, broker, {mc.PROPERTY_KEYS: "order-1 order-2"}, b"one")
    await send_one(client, broker, {mc.PROPERTY_KEYS: "order-3"}, b"other")
    assert broker.message_store.wait_for_dispatch()

    response = await send(client, broker, query_request("order-2"))

    assert response.code == ResponseCode.SUCCESS, response.remark
    [found] = decode_messages(response.body)
    assert found.msg_id == wanted
    assert found.body == b"one"
    header = QueryMessageResponseHeader.from_ext_fields(response.ext_fields)
    assert header.index_last_update_phyoffset > 0
    assert header.index_last_update_timestamp > 0


async def test_query_message_by_key_answers_every_match(
    broker: BrokerController, client: RemotingClient
) -> None:
    ids = [await send_one(client, broker, {mc.PROPERTY_KEYS: "same"}) for _ in range(3)]
    assert broker.message_store.wait_for_dispatch()

    response = await send(client, broker, query_request("same"))

    assert response.code == ResponseCode.SUCCESS, response.remark
    assert sorted(m.msg_id for m in decode_messages(response.body)) == sorted(ids)


async def test_query_message_not_found(broker: BrokerController, client: RemotingClient) -> None:
    await send_one(client, broker, {mc.PROPERTY_KEYS: "present"})
    assert broker.message_store.wait_for_dispatch()

    missing = await send(client, broker, query_request("absent"))
    other_topic = await send(client, broker, query_request("present", topic="OtherTopic"))

    for response in (missing, other_topic):
        assert response.code == ResponseCode.QUERY_NOT_FOUND
        assert response.remark == "can not find message, maybe time range not correct"
        assert response.body == b""


def view_request(offset: int) -> RemotingCommand:
    header = ViewMessageRequestHeader(offset=offset)
    return RemotingCommand.create_request(RequestCode.VIEW_MESSAGE_BY_ID, header.to_ext_fields())


async def test_view_message_by_id(broker: BrokerController, client: RemotingClient) -> None:
    await send_one(client, broker, body=b"first")
    msg_id = await send_one(client, broker, {mc.PROPERTY_TAGS: "t"}, b"second")
    _, offset = decode_message_id(msg_id)

    response = await send(client, broker, view_request(offset))

    assert response.code == ResponseCode.SUCCESS, response.remark
    msg = decode_message(response.body)
    assert len(response.body) == msg.store_size
    assert msg.msg_id == msg_id
    assert msg.topic == TOPIC
    assert msg.body == b"second"
    assert msg.tags == "t"


async def test_view_message_by_unknown_offset(
    broker: BrokerController, client: RemotingClient
) -> None:
    await send_one(client, broker)

    response = await send(client, broker, view_request(10**9))

    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == f"can not find message by the offset, {10**9}"


def test_codes_are_registered(broker: BrokerController) -> None:
    codes = {code for code, _, _ in broker.registrations}
    assert {
        RequestCode.CONSUMER_SEND_MSG_BACK,
        RequestCode.QUERY_MESSAGE,
        RequestCode.VIEW_MESSAGE_BY_ID,
    } <= codes


async def test_send_backs_are_counted_under_the_first_topic(
    broker: BrokerController, client: RemotingClient
) -> None:
    """SNDBCK_PUT_NUMS by ``topic@group``, the topic the message was first sent to."""
    for _ in range(2):
        msg_id = await send_one(client, broker)
        response = await send(client, broker, send_back_request(msg_id))
        assert response.code == ResponseCode.SUCCESS, response.remark
    broker.broker_stats_manager.sampling_in_seconds()
    item = broker.broker_stats_manager.get_stats_item("SNDBCK_PUT_NUMS", f"{TOPIC}@{GROUP}")
    assert item is not None
    assert item.stats_data_in_minute().sum == 2
