"""The client registry against a real BrokerController over sockets: HEART_BEAT (34),
UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38), NOTIFY_CONSUMER_IDS_CHANGED (40)
sent by the broker, QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15), and pulls that
take their subscription from the heartbeat."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from orbitmq.broker import BrokerController
from orbitmq.common import decode_messages, java_string_hash
from orbitmq.protocol import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    MessageModel,
    ProducerData,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SubscriptionData,
)
from orbitmq.protocol.header import (
    GetConsumerListByGroupRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from orbitmq.remoting import ChannelContext, RemotingClient
from tests.component.broker.conftest import (
    BrokerFactory,
    pull_all,
    pull_request,
    send,
    send_header,
    send_request,
    sent_header,
)

GROUP = "cg-clients"
TOPIC = "TopicClients"


class NotifyRecorder:
    """A client-side processor for NOTIFY_CONSUMER_IDS_CHANGED: records each group told."""

    def __init__(self) -> None:
        self.groups: asyncio.Queue[str] = asyncio.Queue()

    def reject_request(self) -> bool:
        return False

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        assert request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED
        header = NotifyConsumerIdsChangedRequestHeader.from_ext_fields(request.ext_fields)
        await self.groups.put(header.consumer_group)
        return None

    async def next_group(self) -> str:
        async with asyncio.timeout(5):
            return await self.groups.get()


@pytest.fixture
async def consumer_client() -> AsyncIterator[tuple[RemotingClient, NotifyRecorder]]:
    """A second connection (another consumer process) that records notifications."""
    remoting_client = RemotingClient(connect_timeout_s=2.0)
    recorder = NotifyRecorder()
    remoting_client.table.register_processor(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, recorder)
    yield remoting_client, recorder
    await remoting_client.close()


def heartbeat(
    client_id: str,
    group: str = GROUP,
    topic: str = TOPIC,
    sub_string: str = "*",
    producer_group: str | None = None,
) -> RemotingCommand:
    tags = {t.strip() for t in sub_string.split("||")} if sub_string != "*" else set()
    data = HeartbeatData(
        client_id=client_id,
        consumer_data_set=[
            ConsumerData(
                group_name=group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                subscription_data_set=[
                    SubscriptionData(
                        topic=topic,
                        sub_string=sub_string,
                        tags_set=tags,
                        code_set={java_string_hash(t) for t in tags},
                    )
                ],
            )
        ],
        producer_data_set=[ProducerData(group_name=producer_group)] if producer_group else [],
    )
    return RemotingCommand.create_request(RequestCode.HEART_BEAT, body=data.to_json())


def consumer_list_request(group: str = GROUP) -> RemotingCommand:
    header = GetConsumerListByGroupRequestHeader(consumer_group=group)
    return RemotingCommand.create_request(
        RequestCode.GET_CONSUMER_LIST_BY_GROUP, header.to_ext_fields()
    )


async def consumer_ids(
    client: RemotingClient, broker: BrokerController, group: str = GROUP
) -> list[str]:
    response = await send(client, broker, consumer_list_request(group))
    assert response.code == ResponseCode.SUCCESS, response.remark
    return GetConsumerListByGroupResponseBody.from_json(response.body).consumer_id_list


async def test_heartbeat_registers_a_consumer_and_its_retry_topic(
    broker: BrokerController, client: RemotingClient
) -> None:
    response = await send(client, broker, heartbeat("10.0.0.1@1", producer_group="pg-clients"))
    assert response.code == ResponseCode.SUCCESS
    assert await consumer_ids(client, broker) == ["10.0.0.1@1"]
    retry = broker.topic_config_manager.select_topic_config(f"%RETRY%{GROUP}")
    assert retry is not None
    group_config = broker.subscription_group_manager.get(GROUP)
    assert group_config is not None
    assert retry.read_queue_nums == retry.write_queue_nums == group_config.retry_queue_nums
    assert retry.perm == 6  # read and write
    assert broker.producer_manager.groups() == ["pg-clients"]
    sub = broker.consumer_manager.find_subscription_data(GROUP, TOPIC)
    assert sub is not None and sub.sub_string == "*"
    # A second heartbeat from the same connection changes nothing.
    assert (await send(client, broker, heartbeat("10.0.0.1@1"))).code == ResponseCode.SUCCESS
    assert await consumer_ids(client, broker) == ["10.0.0.1@1"]


async def test_unknown_group_has_no_consumers(
    broker: BrokerController, client: RemotingClient
) -> None:
    response = await send(client, broker, consumer_list_request("nobody"))
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == "no consumer for this group, nobody"


async def test_a_new_consumer_and_a_closed_one_notify_the_group(
    broker: BrokerController,
    client: RemotingClient,
    consumer_client: tuple[RemotingClient, NotifyRecorder],
) -> None:
    first, recorder = consumer_client
    await send(first, broker, heartbeat("first@1"))
    assert await recorder.next_group() == GROUP  # its own arrival changed the group too

    second = RemotingClient(connect_timeout_s=2.0)
    try:
        await send(second, broker, heartbeat("second@1"))
        assert await recorder.next_group() == GROUP
        assert sorted(await consumer_ids(client, broker)) == ["first@1", "second@1"]
    finally:
        await second.close()
    # The broker sees the connection close, drops it and tells the one left.
    assert await recorder.next_group() == GROUP
    assert await consumer_ids(client, broker) == ["first@1"]


async def test_unregister_client_removes_the_consumer_and_producer(
    broker: BrokerController,
    client: RemotingClient,
    consumer_client: tuple[RemotingClient, NotifyRecorder],
) -> None:
    first, recorder = consumer_client
    await send(first, broker, heartbeat("first@1"))
    await recorder.next_group()
    await send(client, broker, heartbeat("leaver@1", producer_group="pg-leaver"))
    await recorder.next_group()

    header = UnregisterClientRequestHeader(
        client_id="leaver@1", producer_group="pg-leaver", consumer_group=GROUP
    )
    request = RemotingCommand.create_request(RequestCode.UNREGISTER_CLIENT, header.to_ext_fields())
    assert (await send(client, broker, request)).code == ResponseCode.SUCCESS
    assert await recorder.next_group() == GROUP
    assert await consumer_ids(client, broker) == ["first@1"]
    assert broker.producer_manager.groups() == []


async def test_notification_can_be_switched_off(
    broker_factory: BrokerFactory,
    consumer_client: tuple[RemotingClient, NotifyRecorder],
) -> None:
    broker = await broker_factory(notify_consumer_ids_changed_enable=False)
    first, recorder = consumer_client
    await send(first, broker, heartbeat("first@1"))
    second = RemotingClient(connect_timeout_s=2.0)
    try:
        await send(second, broker, heartbeat("second@1"))
        assert sorted(await consumer_ids(first, broker)) == ["first@1", "second@1"]
    finally:
        await second.close()
    # A request after the close: anything sent before it would have arrived first.
    await send(first, broker, heartbeat("first@1"))
    assert recorder.groups.empty()


async def test_query_and_update_consumer_offset(
    broker: BrokerController, client: RemotingClient
) -> None:
    def query(queue_id: int = 0, topic: str = TOPIC) -> RemotingCommand:
        header = QueryConsumerOffsetRequestHeader(
            consumer_group=GROUP, topic=topic, queue_id=queue_id
        )
        return RemotingCommand.create_request(
            RequestCode.QUERY_CONSUMER_OFFSET, header.to_ext_fields()
        )

    # No committed offset and the queue still begins at 0: start at 0 (RocketMQ 4.9).
    first = await send(client, broker, query())
    assert first.code == ResponseCode.SUCCESS
    assert QueryConsumerOffsetResponseHeader.from_ext_fields(first.ext_fields).offset == 0

    update = UpdateConsumerOffsetRequestHeader(
        consumer_group=GROUP, topic=TOPIC, queue_id=0, commit_offset=17
    )
    request = RemotingCommand.create_request(
        RequestCode.UPDATE_CONSUMER_OFFSET, update.to_ext_fields()
    )
    assert (await send(client, broker, request)).code == ResponseCode.SUCCESS
    assert broker.consumer_offset_manager.query_offset(GROUP, TOPIC, 0) == 17
    committed = await send(client, broker, query())
    assert QueryConsumerOffsetResponseHeader.from_ext_fields(committed.ext_fields).offset == 17


async def test_query_offset_not_found_once_the_queue_moved_on(
    broker: BrokerController, client: RemotingClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(broker.message_store, "get_min_offset_in_queue", lambda topic, qid: 5)
    header = QueryConsumerOffsetRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=0)
    request = RemotingCommand.create_request(
        RequestCode.QUERY_CONSUMER_OFFSET, header.to_ext_fields()
    )
    response = await send(client, broker, request)
    assert response.code == ResponseCode.QUERY_NOT_FOUND
    assert response.remark == "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"


async def test_pull_without_subscription_uses_the_heartbeat(
    broker: BrokerController, client: RemotingClient
) -> None:
    topic = "TopicHeartbeatSub"
    for i, tag in enumerate(["TagA", "TagB", "TagA"]):
        request = send_request(
            RequestCode.SEND_MESSAGE_V2, send_header(topic, {"TAGS": tag}), b"%d" % i
        )
        sent_header(await send(client, broker, request))
    await pull_all(client, broker, topic, 3)  # every message is dispatched

    unknown = await send(client, broker, pull_request(topic, group=GROUP, sys_flag=0))
    assert unknown.code == ResponseCode.SUBSCRIPTION_NOT_EXIST

    await send(client, broker, heartbeat("c@1", topic=topic, sub_string="TagA"))
    response = await send(client, broker, pull_request(topic, group=GROUP, sys_flag=0))
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert [m.body for m in decode_messages(response.body)] == [b"0", b"2"]


async def test_check_client_config_accepts_tags_and_refuses_sql(
    broker: BrokerController, client: RemotingClient
) -> None:
    def check(expression_type: str) -> RemotingCommand:
        body = (
            b'{"clientId":"c@1","group":"g","subscriptionData":{"topic":"T","subString":"a > 1",'
            b'"expressionType":"' + expression_type.encode() + b'"}}'
        )
        return RemotingCommand.create_request(RequestCode.CHECK_CLIENT_CONFIG, body=body)

    assert (await send(client, broker, check("TAG"))).code == ResponseCode.SUCCESS
    refused = await send(client, broker, check("SQL92"))
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert refused.remark == "The broker does not support consumer to filter message by SQL92"
