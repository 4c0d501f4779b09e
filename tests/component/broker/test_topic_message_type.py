"""Topic message types against a real broker: UPDATE_AND_CREATE_TOPIC with RocketMQ 5's
``attributes`` header, GET_ALL_TOPIC_CONFIG showing them, and the send check."""

from __future__ import annotations

import pytest

from orbitmq.broker import BrokerController
from orbitmq.common import message_const as mc
from orbitmq.common.sys_flag import TRANSACTION_PREPARED_TYPE
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import CreateTopicRequestHeader
from orbitmq.remoting import RemotingClient
from tests.component.broker.conftest import BrokerFactory, send, send_header, send_request
from tests.component.broker.test_admin import all_topics


def create_topic(topic: str, attributes: str | None, queue_nums: int = 4) -> RemotingCommand:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=queue_nums,
        write_queue_nums=queue_nums,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
        attributes=attributes,
    )
    return RemotingCommand.create_request(
        RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields()
    )


async def admin(
    client: RemotingClient, broker: BrokerController, topic: str, attributes: str | None
) -> RemotingCommand:
    return await send(client, broker, create_topic(topic, attributes))


async def send_to(
    client: RemotingClient,
    broker: BrokerController,
    topic: str,
    properties: dict[str, str],
    sys_flag: int = 0,
) -> RemotingCommand:
    header = send_header(topic, properties, sys_flag=sys_flag)
    return await send(client, broker, send_request(RequestCode.SEND_MESSAGE_V2, header, b"x"))


async def test_attributes_are_created_shown_changed_and_deleted(
    broker: BrokerController, client: RemotingClient
) -> None:
    response = await admin(client, broker, "TypedFifo", "+message.type=FIFO")
    assert response.code == ResponseCode.SUCCESS, response.remark
    table = (await all_topics(client, broker)).topic_config_table
    assert table["TypedFifo"].attributes == {"message.type": "FIFO"}
    # A 4.x admin tool's update sends no attributes: they stay.
    assert (await admin(client, broker, "TypedFifo", None)).code == ResponseCode.SUCCESS
    assert broker.topic_config_manager.select_topic_config("TypedFifo").attributes == {  # type: ignore[union-attr]
        "message.type": "FIFO"
    }
    response = await admin(client, broker, "TypedFifo", "+message.type=DELAY")
    assert response.code == ResponseCode.SUCCESS, response.remark
    table = (await all_topics(client, broker)).topic_config_table
    assert table["TypedFifo"].attributes == {"message.type": "DELAY"}
    response = await admin(client, broker, "TypedFifo", "-message.type")
    assert response.code == ResponseCode.SUCCESS, response.remark
    table = (await all_topics(client, broker)).topic_config_table
    assert table["TypedFifo"].attributes == {}


@pytest.mark.parametrize(
    ("attributes", "code", "remark"),
    [
        ("+message.type=FOO", ResponseCode.SYSTEM_ERROR, "value is not in set: message.type="),
        ("message.type=FIFO", ResponseCode.SYSTEM_ERROR, "add/alter attribute format is wrong"),
        ("-message.type", ResponseCode.SYSTEM_ERROR, "only add attribute is supported"),
        ("+colour=red", ResponseCode.SYSTEM_ERROR, "unsupported key: 'colour'"),
        ("+message.type=MIXED", ResponseCode.INVALID_PARAMETER, "MIXED message type is not"),
    ],
)
async def test_bad_attributes_are_refused_and_nothing_is_created(
    broker: BrokerController,
    client: RemotingClient,
    attributes: str,
    code: ResponseCode,
    remark: str,
) -> None:
    response = await admin(client, broker, "TypedBad", attributes)
    assert response.code == code
    assert response.remark is not None
    assert remark in response.remark, response.remark
    assert broker.topic_config_manager.select_topic_config("TypedBad") is None


async def test_an_unchangeable_attribute_is_refused_on_update(
    broker: BrokerController, client: RemotingClient
) -> None:
    response = await admin(client, broker, "TypedQueue", "+queue.type=SimpleCQ")
    assert response.code == ResponseCode.SUCCESS, response.remark
    response = await admin(client, broker, "TypedQueue", "+queue.type=BatchCQ")
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "attempt to update an unchangeable attribute. key: queue.type" in (response.remark or "")


async def test_mixed_topics_when_the_broker_allows_them(broker_factory: BrokerFactory) -> None:
    broker = await broker_factory(enable_mixed_message_type=True)
    client = RemotingClient(connect_timeout_s=2.0)
    try:
        response = await admin(client, broker, "TypedMixed", "+message.type=MIXED")
        assert response.code == ResponseCode.SUCCESS, response.remark
        for properties in (
            {},
            {mc.PROPERTY_SHARDING_KEY: "g"},
            {mc.PROPERTY_DELAY_TIME_LEVEL: "1"},
        ):
            sent = await send_to(client, broker, "TypedMixed", properties)
            assert sent.code == ResponseCode.SUCCESS, sent.remark
    finally:
        await client.close()


NORMAL: dict[str, str] = {}
FIFO = {mc.PROPERTY_SHARDING_KEY: "order-1"}
DELAY = {mc.PROPERTY_DELAY_TIME_LEVEL: "2"}
TIMER = {mc.PROPERTY_TIMER_DELAY_SEC: "60"}
TRANSACTION = {mc.PROPERTY_TRANSACTION_PREPARED: "true", mc.PROPERTY_PRODUCER_GROUP: "pg"}


@pytest.mark.parametrize(
    ("topic_type", "accepted", "refused"),
    [
        ("NORMAL", [NORMAL], [(FIFO, "FIFO"), (DELAY, "DELAY"), (TRANSACTION, "TRANSACTION")]),
        ("FIFO", [FIFO], [(NORMAL, "NORMAL"), (DELAY, "DELAY")]),
        ("DELAY", [DELAY, TIMER], [(NORMAL, "NORMAL"), (FIFO, "FIFO")]),
        ("TRANSACTION", [TRANSACTION], [(NORMAL, "NORMAL"), (TIMER, "DELAY")]),
    ],
)
async def test_a_send_must_be_of_the_topics_type(
    broker: BrokerController,
    client: RemotingClient,
    topic_type: str,
    accepted: list[dict[str, str]],
    refused: list[tuple[dict[str, str], str]],
) -> None:
    topic = f"Typed{topic_type.title()}"
    response = await admin(client, broker, topic, f"+message.type={topic_type}")
    assert response.code == ResponseCode.SUCCESS, response.remark
    for properties in accepted:
        prepared = mc.PROPERTY_TRANSACTION_PREPARED in properties
        sys_flag = TRANSACTION_PREPARED_TYPE if prepared else 0
        sent = await send_to(client, broker, topic, properties, sys_flag)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
    for properties, kind in refused:
        sent = await send_to(client, broker, topic, properties)
        assert sent.code == ResponseCode.MESSAGE_ILLEGAL
        assert sent.remark == (
            f"TopicMessageType validate failed, the expected type is {topic_type}, "
            f"but actual type is {kind}"
        )


async def test_topics_without_a_declared_type_take_every_kind(
    broker: BrokerController, client: RemotingClient
) -> None:
    # Made by a 4.x tool (or by a send from TBW102): as a RocketMQ broker, no check.
    assert (await admin(client, broker, "Untyped", None)).code == ResponseCode.SUCCESS
    for properties in (NORMAL, FIFO, DELAY, {**FIFO, mc.PROPERTY_TAGS: "t"}):
        sent = await send_to(client, broker, "Untyped", properties)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
    sent = await send_to(client, broker, "AutoCreatedUntyped", DELAY)
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    # Other attributes do not declare a type.
    response = await admin(client, broker, "QueueTyped", "+queue.type=SimpleCQ")
    assert response.code == ResponseCode.SUCCESS, response.remark
    sent = await send_to(client, broker, "QueueTyped", DELAY)
    assert sent.code == ResponseCode.SUCCESS, sent.remark


async def test_the_check_can_be_switched_off(broker_factory: BrokerFactory) -> None:
    broker = await broker_factory(enable_topic_message_type_check=False)
    client = RemotingClient(connect_timeout_s=2.0)
    try:
        assert (await admin(client, broker, "TypedOff", "+message.type=FIFO")).code == 0
        sent = await send_to(client, broker, "TypedOff", NORMAL)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
    finally:
        await client.close()
